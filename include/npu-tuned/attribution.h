/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Which accelerators a process uses, and how we know. Pure: the caller gives the
 * environment captured at exec, the rank, the char devices the process holds open; this
 * decides and records the source (libtune/process/attribution.c). */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/driver-procs.h"
#include "npu-tuned/policy.h"

/* ---- The environment, captured at exec ---- */

typedef enum tune_env_state {
        TUNE_ENV_NOT_READ,   /* never read (e.g. a forked child that did not exec) */
        TUNE_ENV_READ,       /* read at exec (or, for a process found by a scan, later) */
        TUNE_ENV_WIPED,      /* readable but holds no NAME=value entry: overwritten by setproctitle */
        TUNE_ENV_UNREADABLE, /* the read failed (process gone, no permission, ...) */
        _TUNE_ENV_STATE_MAX,
} tune_env_state;

const char *tune_env_state_to_string(tune_env_state s) _pure_;

#define TUNE_ENV_VALUE_MAX 4096 /* longer values are dropped, not cut */

/* Only the variables that matter (visible-devices lists, CUDA_DEVICE_ORDER, ranks), as
 * "NAME=value" strings. Small, so children can inherit a copy. */
typedef struct tune_env_capture {
        tune_env_state state;
        bool truncated;  /* environ was longer than the read bound */
        bool inherited;  /* copied from an ancestor's capture (this process's own was not usable) */
        bool restored;   /* read back from the state directory: what a daemon before a restart
                          * captured (the process's own at its exec, or inherited) */
        pid_t from_pid;  /* the process whose exec it was captured at */
        size_t len;      /* bytes of environ read (setproctitle leaves the size, all NULs): the
                          * ancestry walk compares a wiped one's size with its relatives' */
        char **vars;
        unsigned n;
} tune_env_capture;

/* Keep those of names[] (n_names) that appear in the raw environ block (NUL-separated,
 * len bytes; an unterminated last entry counts). The first occurrence of a name wins, as
 * with getenv(). state becomes TUNE_ENV_WIPED when len > 0 and no entry has the form
 * NAME=value. */
int tune_env_capture_parse(const char *buf, size_t len, bool truncated, const char *const *names,
                           unsigned n_names, tune_env_capture *ret);
/* Which of a list of names start with each byte (bit i: names[i]; bit 63: names[63] and
 * every one after it; names no NAME=value entry can have left out), and which have each
 * byte second ('=' for a name of one byte: the entry's second byte then): built once per
 * list, by whoever parses many environments with it (the watcher, once per policy), where
 * tune_env_capture_parse() builds it for each. */
typedef struct tune_env_name_index {
        uint64_t first_byte[256];
        uint64_t second_byte[256];
        size_t len[63]; /* strlen(names[i]) for the names below 63, looked at per candidate entry */
} tune_env_name_index;
void tune_env_name_index_build(tune_env_name_index *idx, const char *const *names, unsigned n_names);
/* tune_env_capture_parse() with idx built from names. */
int tune_env_capture_parse_indexed(const char *buf, size_t len, bool truncated, const char *const *names,
                                   unsigned n_names, const tune_env_name_index *idx, tune_env_capture *ret);
const char *tune_env_capture_get(const tune_env_capture *e, const char *name) _pure_;
int tune_env_capture_copy(tune_env_capture *dst, const tune_env_capture *src);
void tune_env_capture_done(tune_env_capture *e);
/* Whether the capture can stand for the process's environment (read, not wiped). */
bool tune_env_capture_usable(const tune_env_capture *e) _pure_;
/* Whether two captures hold the same variables (names and values, in any order). */
bool tune_env_capture_same_vars(const tune_env_capture *a, const tune_env_capture *b) _pure_;

/* The variable names worth capturing for this policy: the built-in visible-devices
 * variables, CUDA_DEVICE_ORDER, the policy kinds' visible_env and the rules' rank_env.
 * NULL-terminated; free with tune_strv_free(). p may be NULL. */
int tune_attribution_env_names(const tune_policy *p, char ***ret, unsigned *ret_n);
void tune_strv_free(char **l);

/* ---- Attribution ---- */

typedef enum tune_attribution_source {
        TUNE_ATTRIBUTION_NONE,          /* nothing decided (yet) */
        TUNE_ATTRIBUTION_RULE,          /* the rule's explicit list */
        TUNE_ATTRIBUTION_ENV,           /* a visible-devices variable in the environment at exec */
        TUNE_ATTRIBUTION_ENV_INHERITED, /* ... recorded at an ancestor's exec */
        TUNE_ATTRIBUTION_RANK,          /* no variable: the rank picked one of all devices of the host's only kind */
        TUNE_ATTRIBUTION_DEVICE_FILES,  /* the accelerator device files the process holds open */
        TUNE_ATTRIBUTION_DRIVER,        /* the vendor driver's list of processes per device (variable: "nvml", "dcmi") */
        _TUNE_ATTRIBUTION_SOURCE_MAX,
} tune_attribution_source;

const char *tune_attribution_source_to_string(tune_attribution_source s) _pure_;

typedef struct tune_attribution {
        tune_attribution_source source;
        char variable[96];     /* the variable(s) that decided ("ASCEND_VISIBLE_DEVICES+ASCEND_RT_VISIBLE_DEVICES") */
        tune_accel_ref *accels; /* existing accelerators only, in the process's logical order */
        unsigned n_accels;
        unsigned n_visible;    /* entries of the visible list before the rank picked one */
        int rank;              /* -1: no rank */
        bool rank_picked;      /* accels holds the one entry the rank picked */
        unsigned n_unknown;    /* ids that name no accelerator here, or are malformed */
        bool order_assumed;    /* CUDA's default FASTEST_FIRST order taken as PCI order on a
                                * host whose GPUs are not all the same model */
        bool rank_refused;     /* a rank, one kind of device, but the visible-devices list is
                                * unknown (the environment was not read, wiped or unreadable,
                                * and no ancestor's stood in): the rank was NOT used as a device
                                * index, since visible[rank] need not be device rank */
} tune_attribution;

void tune_attribution_done(tune_attribution *a);
int tune_attribution_copy(tune_attribution *dst, const tune_attribution *src);
bool tune_attribution_equal(const tune_attribution *a, const tune_attribution *b) _pure_;
/* Whether a's decision came from an environment a daemon captured before its restart
 * (env->restored): what explain and the log call "attributed before the restart". */
bool tune_attribution_restored(const tune_attribution *a, const tune_env_capture *env) _pure_;
/* Where a's accelerators came from, for a log line: "from env-inherited", or "attributed
 * before the restart (from env)" (tune_attribution_restored()). */
void tune_attribution_describe_source(const tune_attribution *a, const tune_env_capture *env, char *buf, size_t size);
/* "ascend:0,ascend:3" ("" when none). Caller frees. */
int tune_attribution_format_accels(const tune_attribution *a, char **ret);
/* The same list appended to t (the attribution file writes it in place). */
typedef struct tune_text tune_text;
void tune_attribution_put_accels(tune_text *t, const tune_attribution *a);

typedef struct tune_attribution_input {
        const tune_policy_rule *rule;       /* NULL: as TUNE_ACCEL_AUTO */
        const tune_accels *accels;          /* the host's */
        const tune_policy_kind *kinds;      /* policy-declared kinds and their visible_env */
        unsigned n_kinds;
        const tune_env_capture *env;        /* NULL: none */
        int rank;                           /* -1: none */
        const dev_t *open_devices;          /* char devices the process holds; NULL: not scanned */
        size_t n_open_devices;
        const dev_t *accel_rdevs;           /* parallel to accels->items; 0: unknown */
        const tune_driver_procs *driver;    /* what the driver said; NULL: not asked. Only for a
                                             * pid the caller checked was this process when the
                                             * driver was asked */
        pid_t pid;                          /* the process, for driver */
} tune_attribution_input;

/* Decide. In order: the rule's list (TUNE_ACCEL_EXPLICIT; nothing else is looked at);
 * TUNE_ACCEL_NONE decides nothing; otherwise the first visible-devices variable (ascend,
 * nvidia, amd, then the policy kinds) that names at least one existing device of a kind
 * this host has; else, with a rank, a single kind of accelerator on the host and an
 * environment known to set no such variable (env usable: read, own or inherited), that
 * entry of all its devices (with the environment unknown: rank_refused, no guess); else
 * the device files; else what the driver says the process uses. A rank picks entry rank % n of the
 * list it applies to (the rule's or a variable's). Returns 0 (also when nothing decided:
 * source NONE) or -ENOMEM. */
int tune_attribute(const tune_attribution_input *in, tune_attribution *ret);

/* How tune_visible_list_parse() reads a list. */
typedef enum tune_visible_flags {
        TUNE_VISIBLE_CUDA_STOP = 1 << 0, /* stop at the first invalid entry (CUDA and HIP runtimes);
                                          * otherwise invalid entries are skipped */
        TUNE_VISIBLE_UUID = 1 << 1,      /* entries may be UUIDs or unique prefixes ("GPU-8f3c") */
        TUNE_VISIBLE_PHYSICAL = 1 << 2,  /* numbers are device indexes (/dev/davinciN), not positions */
        TUNE_VISIBLE_RANGES = 1 << 3,    /* "0-3" ranges (Ascend container runtime syntax) */
} tune_visible_flags;

/* The visible-devices list of one variable value, as a pure function (exposed for tests
 * and --explain). base[] are indexes into accels->items: the devices the list's ids count
 * over, in logical order. ret[] (room for n_base) receives indexes into accels->items in
 * the list's order, without duplicates; *ret_unknown counts entries that are malformed or
 * name no device of base. */
int tune_visible_list_parse(const char *value, const tune_accels *accels, const unsigned *base, unsigned n_base,
                            unsigned flags, unsigned *ret, unsigned *ret_n, unsigned *ret_unknown);
