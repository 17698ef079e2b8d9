/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Host knobs npu-tuned owns while it runs: CPU governor per cpufreq policy, THP, IRQ
 * affinity, PCIe ASPM, kernel.numa_balancing.
 *
 * One backend per knob (libtune/knobs/knob-<name>.c) with plan (probe what the kernel offers and
 * holds now, decide the desired value from the policy and the topology), read and write.
 * The engine (libtune/knobs/knob-core.c) does the rest the same way for every knob: take the
 * original from the journal of a previous run or from the current value, persist the
 * journal, write, and later restore newest first. libtune does not log: every skip and
 * refusal comes back with its reason for the daemon to report. */

#include <stdbool.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/context.h"
#include "npu-tuned/cpuset.h"
#include "npu-tuned/journal.h"
#include "npu-tuned/policy.h"
#include "npu-tuned/topology.h"

/* ---- values ---------------------------------------------------------------------- */

/* The value a knob file's text stands for, as the kernel shows it: trimmed text (PLAIN),
 * the bracketed word (SELECTED; a single bare word is taken as itself, which is what a
 * plain file holds after a write, e.g. in a fake tree), the mask text (CPUMASK, validated).
 * -EBADMSG when the text is not of the format. */
int tune_knob_parse_value(tune_knob_format f, const char *text, char **ret);
/* Whether two values are the same knob setting: masks compare as sets. */
bool tune_knob_value_equal(tune_knob_format f, const char *a, const char *b) _pure_;
/* For SELECTED text "always [madvise] never": whether word is one of the choices. Text
 * without brackets lists no choices (a plain file after a write): any single word passes
 * and the write decides. */
bool tune_knob_selected_offers(const char *text, const char *word) _pure_;

/* ---- plan ------------------------------------------------------------------------ */

typedef struct tune_knob_backend tune_knob_backend;

/* Which knob a backend tunes, for code that treats one knob differently (IRQs come by the
 * hundred and are logged as a summary; only IRQs concern irqbalance). The name stays what
 * the journal and reports say; the kind is what code compares. */
typedef enum tune_knob_kind {
        TUNE_KNOB_KIND_CPUFREQ,
        TUNE_KNOB_KIND_THP,
        TUNE_KNOB_KIND_NUMA_BALANCING,
        TUNE_KNOB_KIND_ASPM,
        TUNE_KNOB_KIND_IRQ,
        _TUNE_KNOB_KIND_MAX,
} tune_knob_kind;

typedef enum tune_knob_outcome {
        TUNE_KNOB_PLANNED,  /* will be written */
        TUNE_KNOB_SKIPPED,  /* not tuned: skip/skip_reason say why (missing file, not offered...) */
        TUNE_KNOB_ALREADY,  /* already holds the desired value: nothing written */
        TUNE_KNOB_APPLIED,  /* written */
        TUNE_KNOB_REFUSED,  /* the kernel refused the write: error says how (never fatal) */
} tune_knob_outcome;

const char *tune_knob_outcome_to_string(tune_knob_outcome o) _pure_;

typedef struct tune_knob_item {
        const tune_knob_backend *backend;
        char *id;          /* unique and stable across runs (the journal key) */
        char *path;        /* the file as the kernel names it */
        int cpu;           /* cpufreq: the CPU libcpupower addresses the policy by; else -1 */
        tune_knob_format format;
        char *label;       /* for reports: "sq_send_trigger_irq of 0000:c1:00.0"; may be NULL */
        char *current;     /* value read by plan; NULL when unreadable */
        char *desired;     /* value the policy asks for; NULL when skipped */
        int skip;          /* < 0: not tuned, for the reason below */
        char *skip_reason;
        /* Set by the IRQ backend's plan, where it knows them, so that no one parses the id
         * or the label back: */
        int irq;           /* the IRQ number of irq/N; -1: not one IRQ (irq/default, other knobs) */
        int accel;         /* the accelerator whose vector this IRQ is, an index into the plan
                            * input's accels->items; -1: none */
        /* Set by tune_knobs_apply(): */
        tune_knob_outcome outcome;
        int error;         /* REFUSED: negative errno of the write */
        char *original;    /* what restore writes back (from the journal when adopted) */
        bool adopted;      /* the original came from a previous run's journal */
        bool adopted_changed; /* ... but someone else changed the knob since: current taken */
} tune_knob_item;

/* What a note is about, for code that acts on one kind of note: the message is for
 * people and may be reworded. */
typedef enum tune_knob_note_kind {
        TUNE_KNOB_NOTE_PLAIN,              /* only to be reported */
        TUNE_KNOB_NOTE_IRQBALANCE_RUNNING, /* irqbalance runs and will move IRQs back; moot
                                            * once the daemon has told it to leave them */
} tune_knob_note_kind;

/* Something about a knob as a whole: "no cpufreq driver", "irqbalance is running". */
typedef struct tune_knob_note {
        const char *backend;
        tune_knob_note_kind kind;
        int error;         /* negative errno of why the knob is left alone; 0: information */
        char *message;
} tune_knob_note;

typedef struct tune_knob_plan {
        tune_knob_item *items; /* in the order they are written */
        unsigned n, cap;
        tune_knob_note *notes;
        unsigned n_notes, cap_notes;
} tune_knob_plan;

void tune_knob_plan_done(tune_knob_plan *p);

/* What the plan is made from. The CPU sets are given by the caller (the daemon):
 * housekeeping: CPUs left to the OS (IRQs go there); see tune_knob_housekeeping_cpus().
 * inference: CPUs given to inference work (kept free of movable IRQs; the governor scope
 * "inference" covers their cpufreq policies). The placement code computes them; until it
 * does, tune_knob_default_inference_cpus() gives a fair stand-in. */
typedef struct tune_knob_plan_input {
        const tune_policy_host *host;
        const tune_topology *topology;
        const tune_accels *accels;
        const tune_cpuset *inference_cpus;
        const tune_cpuset *housekeeping_cpus;
} tune_knob_plan_input;

/* The first per_node usable CPUs of every node (by CPU number). */
int tune_knob_housekeeping_cpus(const tune_topology *t, unsigned per_node, tune_cpuset *ret);
/* Every usable CPU that is not housekeeping on a node that has an accelerator (for an
 * accelerator without a node: its local CPUs). Empty without accelerators. */
int tune_knob_default_inference_cpus(const tune_topology *t, const tune_accels *a, const tune_cpuset *housekeeping,
                                     tune_cpuset *ret);

/* Ask every backend for its items. Only allocation failures fail: a knob the kernel lacks
 * or refuses is a SKIPPED item or a note. */
int tune_knobs_plan(const tune_ctx *ctx, const tune_knob_plan_input *in, tune_knob_plan *ret);

/* ---- backends -------------------------------------------------------------------- */

struct tune_knob_backend {
        const char *name;
        tune_knob_kind kind;
        int (*plan)(const tune_ctx *ctx, const tune_knob_plan_input *in, tune_knob_plan *plan);
        /* Current value in the canonical form of format. */
        int (*read)(const tune_ctx *ctx, const char *path, int cpu, tune_knob_format format, char **ret);
        int (*write)(const tune_ctx *ctx, const char *path, int cpu, const char *value);
        /* The file an id of this backend names, as the plan would make it (no root prefix);
         * -EINVAL for an id the backend never makes. Restore writes only there: a journal
         * is read back as data, never trusted to say where to write (docs/trust.md). */
        int (*path_of)(const char *id, char *buf, size_t size);
};

extern const tune_knob_backend tune_knob_cpufreq;
extern const tune_knob_backend tune_knob_thp;
extern const tune_knob_backend tune_knob_irq;
extern const tune_knob_backend tune_knob_aspm;
extern const tune_knob_backend tune_knob_numa_balancing;

/* NULL if unknown. */
const tune_knob_backend *tune_knob_backend_by_name(const char *name) _pure_;
/* Why the kernel refuses a write to a knob of backend b (NULL: unknown), in words for
 * reports: "a managed IRQ (the kernel places it)", "the firmware keeps ASPM control", ...
 * or strerror. */
const char *tune_knob_refusal_reason(const tune_knob_backend *b, const char *id, int error);

int tune_knob_item_read(const tune_ctx *ctx, const tune_knob_item *item, char **ret);
int tune_knob_item_write(const tune_ctx *ctx, const tune_knob_item *item, const char *value);

/* Helpers for backends (knob-core.c). */
int tune_knob_plan_add(tune_knob_plan *p, const tune_knob_backend *b, const char *id, const char *path, int cpu,
                       tune_knob_format format, tune_knob_item **ret);
int tune_knob_item_skip(tune_knob_item *item, int error, const char *fmt, ...) _printf_(3, 4);
int tune_knob_plan_note(tune_knob_plan *p, const char *backend, tune_knob_note_kind kind, int error, const char *fmt,
                        ...) _printf_(5, 6);
/* Add a file knob: read it, validate desired against what the file offers (SELECTED), see
 * that it is writable (a file without write permission bits is read-only in sysfs/procfs,
 * e.g. a managed IRQ), and record why not. The item is returned for a label. */
int tune_knob_plan_file(const tune_ctx *ctx, tune_knob_plan *p, const tune_knob_backend *b, const char *id,
                        const char *path, tune_knob_format format, const char *desired, tune_knob_item **ret);
/* sysfs/procfs refuse writes to a file without write permission bits, even to root; a
 * fake tree would not, so plans look at the bits: -EROFS when there are none. */
int tune_knob_check_writable(const tune_ctx *ctx, const char *path);
int tune_knob_file_read(const tune_ctx *ctx, const char *path, int cpu, tune_knob_format format, char **ret);
int tune_knob_file_write(const tune_ctx *ctx, const char *path, int cpu, const char *value);
bool tune_knob_id_is_number(const char *s) _pure_;
/* path_of for a backend with a fixed list of ids: ids[i] names paths[i]. */
int tune_knob_path_from_table(const char *id, const char *const *ids, const char *const *paths, size_t n, char *buf,
                              size_t size);
/* On a live root, that path is a kernel file (sysfs or procfs, by filesystem magic), not
 * a file some other filesystem holds: -EXDEV otherwise. Below a test root: 0. */
int tune_knob_check_kernel_file(const tune_ctx *ctx, const char *path);

/* ---- cpufreq seam ---------------------------------------------------------------- */

/* A cpufreq policy: the CPUs that share one governor. */
typedef struct tune_cpufreq_policy {
        char name[32];     /* "policy0": the directory below /sys/devices/system/cpu/cpufreq */
        unsigned cpu;      /* a CPU of the policy (its lowest affected one) */
        tune_cpuset cpus;  /* affected_cpus: its online CPUs; empty when all are offline */
} tune_cpufreq_policy;

/* The same governor logic on two paths: libcpupower on the live host, the root resolver's
 * files (policyN/scaling_governor, scaling_available_governors, affected_cpus) below a
 * test root. Both address a policy by cpu; the sysfs path also by name. */
typedef struct tune_cpufreq_ops {
        const char *name;
        /* -ENOENT when the system has no cpufreq driver (nothing to tune). */
        int (*list)(const tune_ctx *ctx, const tune_topology *t, tune_cpufreq_policy **ret, unsigned *ret_n);
        /* Space separated, as scaling_available_governors. */
        int (*available)(const tune_ctx *ctx, const tune_cpufreq_policy *p, char **ret);
        int (*get)(const tune_ctx *ctx, const tune_cpufreq_policy *p, char **ret);
        int (*set)(const tune_ctx *ctx, const tune_cpufreq_policy *p, const char *governor);
} tune_cpufreq_ops;

extern const tune_cpufreq_ops tune_cpufreq_libcpupower;
extern const tune_cpufreq_ops tune_cpufreq_sysfs;
/* libcpupower when the root is live, else the sysfs files below the root. */
const tune_cpufreq_ops *tune_cpufreq_ops_for(const tune_ctx *ctx) _pure_;
void tune_cpufreq_policies_free(tune_cpufreq_policy *p, unsigned n);
/* affected_cpus/related_cpus text: CPU numbers separated by spaces ("0 1 2 3"). */
int tune_cpufreq_parse_cpus(const char *text, tune_cpuset *ret);

/* ---- IRQ helpers ----------------------------------------------------------------- */

/* One line of /proc/interrupts: the IRQ number and everything after the per-CPU counts
 * ("PCI-MSIX-0000:c1:00.0 0-edge sq_send_trigger_irq"), bounded. */
typedef struct tune_irq_desc {
        unsigned irq;
        char desc[128];
} tune_irq_desc;
/* Pure parser of /proc/interrupts; only numbered lines are returned. */
int tune_irq_parse_interrupts(const char *text, tune_irq_desc **ret, unsigned *ret_n);
/* The pid of a running irqbalance below the root (comm == "irqbalance"), 0 if none. */
int tune_irqbalance_find(const tune_ctx *ctx, int *ret_pid);

/* ---- apply and restore ----------------------------------------------------------- */

typedef enum tune_restore_outcome {
        TUNE_RESTORE_WRITTEN,    /* the original value is back */
        TUNE_RESTORE_UNCHANGED,  /* it already holds its original (never written, or refused) */
        TUNE_RESTORE_LEFT_ALONE, /* someone else set another value after us: theirs stays */
        TUNE_RESTORE_GONE,       /* the knob no longer exists (device removed, CPU offline) */
        TUNE_RESTORE_FAILED,     /* reading or writing failed: the entry stays in the journal */
        TUNE_RESTORE_REFUSED,    /* the entry's path is not the file of its backend and id, or
                                  * not a kernel file: nothing is written, the entry stays */
} tune_restore_outcome;

const char *tune_restore_outcome_to_string(tune_restore_outcome o) _pure_;

typedef struct tune_knob_hooks {
        /* Each numbered point of apply/restore (journal phases, before and after each write):
         * the crash tests stop the daemon there. */
        tune_step_fn step;
        /* The fate of each journal entry on restore. current: the value found. */
        void (*restored)(const tune_journal_entry *e, tune_restore_outcome o, int error, const char *current,
                         void *userdata);
        void *userdata;
} tune_knob_hooks;

/* Take ownership of the plan's knobs.
 * 1. Originals: an item that `previous` (a dead run's journal, may be NULL) holds keeps
 *    that run's original when the knob still shows its desired or original value, so a
 *    restart never records tuned values as originals; other items take the current value.
 * 2. Entries of `previous` the plan no longer covers are restored now.
 * 3. The journal (originals + desired values, state PENDING) is saved before any write.
 * 4. Each PLANNED item is written in order; the kernel refusing is recorded (REFUSED),
 *    not fatal. 5. The journal is saved again with the outcomes.
 * *ret_journal is the journal now on disk (NULL when nothing is owned). Returns 0, or a
 * negative errno when the journal cannot be written (then nothing has been written). */
int tune_knobs_apply(const tune_ctx *ctx, tune_knob_plan *plan, const char *state_dir, const tune_journal *previous,
                     const tune_knob_hooks *hooks, tune_journal **ret_journal);

/* Restore every entry of j, newest first: the original is written back only where the
 * knob still shows our value. Settled entries leave j; failed ones stay, and the journal
 * file is rewritten with them (or deleted when none is left). Returns 0 when every entry
 * is settled, else the first failure's negative errno. */
int tune_knobs_restore(const tune_ctx *ctx, tune_journal *j, const char *state_dir, const tune_knob_hooks *hooks);

