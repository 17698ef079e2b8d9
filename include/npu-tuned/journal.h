/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The knob journal: the original value of every host knob npu-tuned owns, persisted in
 * the state directory BEFORE the first write to that knob, so that a restart after
 * SIGKILL, a crash or a power cut of the daemon restores the values the host had before
 * npu-tuned, never the values npu-tuned set (the trap tuned falls into).
 *
 * The file is STATE_DIR/knobs.journal, rewritten whole each time: temp file, fsync,
 * rename, fsync of the directory. Its format (version 1, text, one knob per line, an
 * end line with a count and a checksum) is described in libtune/knobs/journal.c and
 * docs/journal.md. A journal that does not parse (truncated, corrupt, from a newer
 * version) is an error: callers leave every knob as it is rather than guess. */

#include <stdbool.h>
#include <stddef.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/state-file.h"

#define TUNE_JOURNAL_VERSION 1
#define TUNE_JOURNAL_FILE "knobs.journal"
/* A journal larger than this is refused as corrupt. */
#define TUNE_JOURNAL_SIZE_MAX (16u * 1024u * 1024u)

/* How a knob's value reads back, and so how two values compare. */
typedef enum tune_knob_format {
        TUNE_KNOB_PLAIN,    /* the file's text, trimmed: "1", "performance" */
        TUNE_KNOB_SELECTED, /* a bracketed choice "always [madvise] never": the bracketed word */
        TUNE_KNOB_CPUMASK,  /* a hex CPU mask "ff,ffffffff": compared as sets of CPUs */
        _TUNE_KNOB_FORMAT_MAX,
} tune_knob_format;

const char *tune_knob_format_to_string(tune_knob_format f) _pure_;
/* -EINVAL for an unknown name. */
int tune_knob_format_from_string(const char *s) _pure_;

typedef enum tune_journal_state {
        TUNE_JOURNAL_PENDING, /* original persisted, the write may or may not have happened */
        TUNE_JOURNAL_APPLIED, /* the desired value was written (or was already there) */
        TUNE_JOURNAL_REFUSED, /* the kernel refused the write (managed IRQ, firmware-owned ASPM...) */
        _TUNE_JOURNAL_STATE_MAX,
} tune_journal_state;

const char *tune_journal_state_to_string(tune_journal_state s) _pure_;
int tune_journal_state_from_string(const char *s) _pure_;

typedef struct tune_journal_entry {
        unsigned seq;          /* order of taking ownership; restore goes newest (highest) first */
        char *backend;         /* "cpufreq", "thp", "irq", "aspm", "numa-balancing" */
        char *id;              /* unique and stable: "thp/enabled", "irq/36", "cpufreq/policy0" */
        char *path;            /* the file as the kernel names it */
        int cpu;               /* cpufreq: the CPU libcpupower addresses the policy by; else -1 */
        tune_knob_format format;
        tune_journal_state state;
        int error;             /* REFUSED: the negative errno of the write; else 0 */
        char *original;        /* the value before npu-tuned, as written back on restore */
        char *desired;         /* the value npu-tuned writes */
        char *prior;           /* a value an earlier (killed) run wrote, which the knob may still
                                * show until desired is written; "" when none. Also ours. */
} tune_journal_entry;

typedef struct tune_journal {
        int version;           /* of the file it was read from; TUNE_JOURNAL_VERSION when new */
        char *boot_id;         /* /proc/sys/kernel/random/boot_id when written; "" unknown */
        char *root;            /* the root the knobs live below ("/" on a real host) */
        tune_journal_entry *entries; /* sorted by seq */
        unsigned n, cap;
        unsigned next_seq;
} tune_journal;

int tune_journal_new(const char *root, const char *boot_id, tune_journal **ret);
tune_journal *tune_journal_free(tune_journal *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(tune_journal *, tune_journal_free);
/* Copies the strings of e; a seq of 0 takes the next one. -EEXIST if the id is there. */
int tune_journal_add(tune_journal *j, const tune_journal_entry *e);
tune_journal_entry *tune_journal_find(const tune_journal *j, const char *id) _pure_;
void tune_journal_remove(tune_journal *j, unsigned index);

/* Text form (pure). */
int tune_journal_format(const tune_journal *j, char **ret);
/* Parse the text form (pure). -EBADMSG for a truncated or corrupt journal (*ret_line: the
 * 1-based line at fault, 0 for the whole file), -EPROTONOSUPPORT for a newer version. */
int tune_journal_parse(const char *text, size_t len, tune_journal **ret, unsigned *ret_line);

/* The file in state_dir. load: -ENOENT when there is none, else as tune_journal_parse().
 * save: as tune_state_file_write(). */
int tune_journal_load(const char *state_dir, tune_journal **ret, unsigned *ret_line);
int tune_journal_save(const char *state_dir, const tune_journal *j, tune_step_fn step, void *userdata);
/* Unlink the journal and fsync the directory; 0 if there was none. */
int tune_journal_delete(const char *state_dir);
