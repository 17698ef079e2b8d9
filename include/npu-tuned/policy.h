/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The policy, schema version 1: what npu-tuned tunes. Parsed from JSON files (see
 * man/npu-tuned.policy.5), merged, validated, then read-only for the rest of the daemon.
 * Every optional setting has an explicit "unset" value so that "leave the host alone" is
 * the default. */

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/context.h"
#include "npu-tuned/cpuset.h"
#include "npu-tuned/topology.h"

#define TUNE_POLICY_VERSION 1
#define TUNE_POLICY_FILE_MAX (1024 * 1024)
#define TUNE_POLICY_DEPTH_MAX 32

typedef enum tune_governor_scope {
        TUNE_GOVERNOR_ALL_CPUS,       /* every online CPU's cpufreq policy */
        TUNE_GOVERNOR_INFERENCE_CPUS, /* only the policies covering CPUs given to inference work */
} tune_governor_scope;

typedef enum tune_aspm_link {
        TUNE_ASPM_LINK_UNCHANGED,
        TUNE_ASPM_LINK_L1_ONLY, /* l1_aspm=1, l0s_aspm=0 (sub-states left alone) */
        TUNE_ASPM_LINK_OFF,     /* every l*_aspm = 0 */
} tune_aspm_link;

typedef struct tune_policy_host {
        char *governor;                  /* NULL: leave cpufreq alone */
        tune_governor_scope governor_scope;
        char *thp_enabled;               /* "always" | "madvise" | "never"; NULL: leave */
        char *thp_defrag;                /* "always" | "defer" | "defer+madvise" | "madvise" | "never" */
        int khugepaged_defrag;           /* 0 | 1; -1: leave */
        bool irq_manage;                 /* false: no IRQ affinity changes at all */
        unsigned irq_housekeeping_cpus_per_node; /* first N usable CPUs of each node stay for the OS */
        bool irq_keep_off_inference_cpus;
        bool irq_steer_accelerator_irqs; /* accelerator IRQs -> housekeeping CPUs of its node */
        char *aspm_policy;               /* "default" | "performance" | "powersave" | "powersupersave" */
        tune_aspm_link aspm_accelerator_link;
        int numa_balancing;              /* kernel.numa_balancing 0 | 1; -1: leave */
        bool reassert;                   /* re-apply a knob someone else changed while we own it */
} tune_policy_host;

typedef struct tune_policy_options {
        bool dry_run;
        unsigned reconcile_interval_ms;  /* while processes are managed; default 10000 */
        unsigned max_managed_processes;  /* default 4096 */
        unsigned proc_connector_rcvbuf_kib; /* default 4096 */
        char *metrics_textfile;          /* Prometheus textfile to keep current (an absolute
                                          * path ending in ".prom"); NULL: none (the default) */
} tune_policy_options;

/* A kind of accelerator declared by the policy (e.g. a new part, or QEMU's edu device in
 * tests). The embedded tune_accel_kind feeds tune_accels_discover(). */
typedef enum tune_visible_ids {
        TUNE_VISIBLE_IDS_LOGICAL,  /* ids are indexes of the kind's devices (CUDA_VISIBLE_DEVICES) */
        TUNE_VISIBLE_IDS_PHYSICAL, /* ids are device indexes as in /dev (ASCEND_VISIBLE_DEVICES) */
} tune_visible_ids;

typedef struct tune_policy_kind {
        tune_accel_kind kind;
        char *visible_env;       /* e.g. "EDU_VISIBLE_DEVICES"; NULL: none */
        tune_visible_ids visible_ids;
        unsigned merged_index;   /* position in the merged document (error attribution) */
} tune_policy_kind;

typedef struct tune_policy_node_override {
        char pci[13];            /* normalised "0000:c1:00.0" */
        int node;
        unsigned merged_index;   /* position in the merged document (error attribution) */
} tune_policy_node_override;

/* Which accelerators a matched process uses (and so which NUMA node it belongs on). With a
 * rank, it uses list[rank % length] of the list below (the visible-devices list, or the
 * rule's own list); without one, all of the list. When AUTO finds nothing, the process is
 * unattributed (see tune_unattributed). */
typedef enum tune_accel_mode {
        TUNE_ACCEL_AUTO,     /* from environment at exec, then open device files */
        TUNE_ACCEL_EXPLICIT, /* the rule's list */
        TUNE_ACCEL_NONE,     /* not accelerator work: place by unattributed settings */
} tune_accel_mode;

typedef struct tune_accel_ref {
        char kind[TUNE_ACCEL_KIND_MAX];
        int index;
} tune_accel_ref;

/* The rank of a process among the users of its accelerator list. A regex that does not
 * match, or an env variable that is absent or not a decimal number: rank unknown (use the
 * whole list). */
typedef enum tune_rank_source {
        TUNE_RANK_NONE,
        TUNE_RANK_CMDLINE, /* first capture group of rank_regex over the NUL-joined (space) cmdline */
        TUNE_RANK_COMM,    /* ... over comm (15 bytes: usually too short) */
        TUNE_RANK_ENV,     /* decimal value of rank_env in the environment at exec */
} tune_rank_source;

/* A role of threads inside a managed process. A thread is control when it is the main
 * thread and control.main_thread is set, or its comm matches a control glob; every other
 * thread is compute (compute has no globs and main_thread is false). A rule without a
 * "threads" section has no control members: the whole process is compute. */
typedef struct tune_policy_role {
        char **name_globs;  /* fnmatch() patterns on the thread's comm; NULL-terminated */
        bool main_thread;   /* the thread whose tid == pid belongs here */
        unsigned cpus;      /* CPUs in this role's sub-pool; 0 = the rest of the pool (control:
                             * >= 1 whenever it has members) */
} tune_policy_role;

/* Who binds the process's threads (policy key "binding"). */
typedef enum tune_binding {
        TUNE_BINDING_DAEMON, /* npu-tuned pins every thread by role (the default) */
        TUNE_BINDING_ENGINE, /* the engine binds: no pin, watch and report; memory and knobs stay npu-tuned's */
        TUNE_BINDING_AUTO,   /* the engine's switches, or threads that re-bind themselves, decide */
        _TUNE_BINDING_MAX,
} tune_binding;

const char *tune_binding_to_string(tune_binding b) _pure_;

typedef enum tune_unattributed {
        TUNE_UNATTRIBUTED_LEAVE, /* no accelerator found: leave the process alone */
        TUNE_UNATTRIBUTED_PLACE, /* place on unattributed_cpus / unattributed_nodes */
} tune_unattributed;

typedef struct tune_policy_rule {
        char *name;
        char *file;          /* the file it came from, for messages */
        char *key_path;      /* where in that file: "processes[2]" */
        unsigned merged_index; /* position in the merged document (error attribution) */
        int priority;        /* higher wins when several rules match; default 0 */

        /* Match criteria: every one that is set must hold. Globs are matched with
         * fnmatch(pattern, string, 0): '*' also matches '/'. At least one is set. */
        char *match_comm;    /* fnmatch glob on comm */
        char *match_exe;     /* fnmatch glob on the realpath of /proc/PID/exe */
        char *match_cmdline_src;
        regex_t match_cmdline; /* POSIX ERE over cmdline with NULs turned into spaces;
                                * compiled REG_EXTENDED | REG_NOSUB */
        bool has_match_cmdline;
        bool match_cmdline_literal; /* the ERE is plain printable ASCII text, no operator: a
                                     * substring search (memmem) gives regexec()'s answer */
        uid_t *match_uids;   /* any of these real uids; names resolved at load */
        unsigned n_match_uids;
        char *match_cgroup;  /* prefix of the process's cgroup v2 path, on a '/' boundary:
                              * "/a/b" matches "/a/b" and "/a/b/c", not "/a/bc". No trailing
                              * '/' except for "/" itself. */

        tune_accel_mode accel_mode;
        tune_accel_ref *accels; /* TUNE_ACCEL_EXPLICIT */
        unsigned n_accels;
        tune_rank_source rank_source;
        char *rank_regex_src;
        regex_t rank_regex;  /* REG_EXTENDED, re_nsub >= 1; compiled when rank_regex_src */
        char *rank_env;

        tune_policy_role control;
        tune_policy_role compute;

        /* The pool of a process is CPUs of its accelerators' nodes minus housekeeping CPUs,
         * shared fairly with other processes there (libtune/placement/plan.c); control.cpus and
         * compute.cpus are carved from it. Memory goes to the accelerator's node if it has
         * memory_min_free_kib free, else to the nearest node that has; the CPUs stay. */
        bool memory_migrate;
        unsigned memory_settle_delay_ms; /* default 30000 */
        uint64_t memory_min_free_kib;    /* a node takes the memory only with this much free;
                                          * 0: the accelerator's node always does */
        unsigned memory_rate_mib_s;      /* migration rate limit; 0 = as fast as the daemon's
                                          * steps go (still stepped: never one call) */
        bool memory_shared;              /* also pages other processes map and file-backed
                                          * mappings (MPOL_MF_MOVE_ALL); default: only the
                                          * process's own anonymous memory */

        bool claims_any;                 /* "claims": "any": every match is believed; default
                                          * "verified": a claim must be verified before it may
                                          * take CPUs a verified claim wants (docs/trust.md) */
        bool restore_on_stop;            /* give threads their original affinity back */
        bool reassert_affinity;          /* false: respect a process that re-binds itself */
        tune_binding binding;            /* who binds its threads */
        unsigned binding_watch_ms;       /* auto: how long to watch for self-binding before pinning; default 2000 */

        tune_unattributed unattributed;
        tune_cpuset unattributed_cpus;  /* the pool when set; no two rules overlap */
        tune_cpuset unattributed_nodes; /* memory goes there; the pool is their CPUs
                                         * when unattributed_cpus is empty */
} tune_policy_rule;

struct tune_policy_sources;

typedef struct tune_policy {
        int version;
        char **files;        /* the files merged, in order */
        unsigned n_files;
        bool embedded;       /* the compiled-in default, no file found */
        struct tune_policy_sources *sources; /* private: the texts, for error positions */
        tune_policy_options options;
        tune_policy_host host;
        tune_policy_kind *kinds;
        unsigned n_kinds;
        tune_policy_node_override *overrides;
        unsigned n_overrides;
        tune_policy_rule *rules; /* sorted by priority, highest first; file order breaks ties */
        unsigned n_rules;
} tune_policy;

/* One problem found while loading or validating. */
typedef struct tune_policy_error {
        char *file;      /* NULL for whole-policy problems */
        char *key_path;  /* "processes[2].threads.control.cpus"; "" for the file itself */
        int line, column; /* 0 when unknown */
        bool warning;    /* a warning (e.g. CPUs not on this host in --check-policy) */
        char *message;
} tune_policy_error;

typedef struct tune_policy_errors {
        tune_policy_error *items;
        unsigned n;
} tune_policy_errors;

/* Loading (libtune/policy/policy*.c). Every function returns 0 or a negative errno; problems in
 * the files are reported in *errors (never logged: libtune does not log), and a policy
 * with any error (not warning) is never returned. */
typedef int (*tune_policy_resolve_user_t)(const char *name, uid_t *ret, void *userdata);

typedef struct tune_policy_load_params {
        const char *const *dirs; /* NULL: the shipped dir, then /etc/npu-tuned/policies.d.
                                  * An entry may also be a single file (--check-policy).
                                  * With several, the first stands for the shipped dir:
                                  * a later file overriding its values gets no warning. */
        unsigned n_dirs;
        bool check_owner;        /* refuse files not owned by root or group/world-writable */
        bool owner_warnings;     /* with check_owner: report those as warnings (a check run
                                  * by another user than the daemon's) */
        bool host_warnings;      /* unknown user names are warnings, not errors (--check-policy) */
        tune_policy_resolve_user_t resolve_user; /* NULL: getpwnam_r() */
        void *userdata;
} tune_policy_load_params;

/* Load and merge the files of params->dirs (see man npu-tuned.policy(5), LOADING).
 * -ENOENT (and no error entries) when no *.json file was found in any of them: the
 * caller then uses tune_policy_load_embedded(). -EINVAL when *errors has errors. */
int tune_policy_load(const tune_policy_load_params *params, tune_policy **ret, tune_policy_errors *errors);
/* The compiled-in default policy (policies/10-default.json). */
int tune_policy_load_embedded(tune_policy **ret, tune_policy_errors *errors);
extern const char tune_policy_default_json[];
/* One JSON document; filename only names it in errors. */
int tune_policy_parse_string(const char *json, const char *filename, tune_policy **ret, tune_policy_errors *errors);
/* The same with load parameters (user resolution, warnings) and an explicit length (the
 * text needs no NUL terminator; an embedded NUL is an error). */
int tune_policy_parse_buffer(const char *json, size_t len, const char *filename, const tune_policy_load_params *params,
                             tune_policy **ret, tune_policy_errors *errors);
tune_policy *tune_policy_free(tune_policy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(tune_policy *, tune_policy_free);
void tune_policy_errors_done(tune_policy_errors *errors);
/* Where each effective value of a loaded policy comes from (libtune/policy-origin.c):
 * the file that set it last, and the earlier files whose value it replaced. */
typedef struct tune_policy_origin_lost {
        char *value;      /* JSON text */
        const char *file; /* owned by the policy */
        int line;         /* 0: unknown */
        bool shipped;     /* a shipped file's value: replacing it is what drop-ins are for */
} tune_policy_origin_lost;

typedef struct tune_policy_origin {
        char *key_path;   /* "processes[vllm-worker].memory.min_free_mib": list entries by name */
        char *value;      /* the effective value, JSON text */
        const char *file; /* owned by the policy */
        int line;
        tune_policy_origin_lost *overridden; /* earlier files' other values, in file order */
        unsigned n_overridden;
} tune_policy_origin;

/* Every value the policy's files set (comments left out), in document order. The
 * embedded policy has none of these (*ret_n 0). */
int tune_policy_origins(const tune_policy *p, tune_policy_origin **ret, unsigned *ret_n);
void tune_policy_origins_free(tune_policy_origin *l, unsigned n);

/* Number of entries that are errors (not warnings). */
unsigned tune_policy_errors_count(const tune_policy_errors *errors) _pure_;
/* "FILE: key.path: message (line L, column C)", with "warning: " before the message for
 * warnings; parts that are unknown are left out. Caller frees. */
int tune_policy_error_format(const tune_policy_error *e, char **ret);

/* Check the policy against this host: CPUs, NUMA nodes and accelerators it names, role
 * sizes against node sizes, NUMA overrides. Problems go to *errors, as warnings when
 * as_warnings (--check-policy: policies are often checked on another machine). Returns 0,
 * -EINVAL when it added errors (not warnings), or -ENOMEM. */
int tune_policy_validate_host(const tune_policy *p, const tune_topology *t, const tune_accels *a, bool as_warnings,
                              tune_policy_errors *errors);

/* The policy's accelerator kinds as the array tune_accels_discover() takes (pointers into
 * p: valid while p lives). Caller frees the array. */
int tune_policy_accel_kinds(const tune_policy *p, tune_accel_kind **ret, unsigned *ret_n);
/* Apply accelerators.numa_node_overrides to a; an override naming a device or node that
 * does not exist is an error in *errors (tune_policy_validate_host() reports the same). */
int tune_policy_apply_node_overrides(const tune_policy *p, const tune_topology *t, tune_accels *a, tune_policy_errors *errors);

/* Everything a daemon needs from a policy source in one step: load params' files (or the
 * embedded default when there are none: the policy's embedded is then true), discover the
 * accelerators below ctx with the policy's kinds, apply the NUMA overrides and validate
 * against t. On failure nothing is returned and *errors says why. */
int tune_policy_prepare(const tune_ctx *ctx, const tune_policy_load_params *params, const tune_topology *t,
                        tune_policy **ret_policy, tune_accels *ret_accels, tune_policy_errors *errors);
/* Reload (D-Bus Reload, SIGHUP): tune_policy_prepare() into new objects and, only when it
 * succeeds, free *policy and *accels and put the new ones in their place. On failure the
 * previous policy and accelerators stay untouched and *errors says why. */
int tune_policy_reload(const tune_ctx *ctx, const tune_policy_load_params *params, const tune_topology *t,
                       tune_policy **policy, tune_accels *accels, tune_policy_errors *errors);

/* The effective policy as a JSON document in the schema's own form (every key, defaults
 * filled in, unset knobs as null): the output of --print-policy, which loads back to the
 * same policy (not so for one loaded with host_warnings: users unknown on this host are not
 * in it). Caller frees. */
int tune_policy_to_json(const tune_policy *p, char **ret);
