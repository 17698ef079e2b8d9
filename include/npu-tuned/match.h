/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Policy rules against a process (libtune/process/match.c). The facts about the process are read
 * lazily: a rule stops at its first criterion that fails, and a fact nobody asks for is
 * never read, so a short-lived process costs a /proc read or two. */

#include <stdbool.h>
#include <sys/types.h>

#include "npu-tuned/attribution.h"
#include "npu-tuned/context.h"
#include "npu-tuned/policy.h"
#include "npu-tuned/proc.h"

/* The match.cmdline and rank regexes look at this much of the command line (a title and
 * its options come first); the rest of it is the process's to fill, and glibc's regexec()
 * can be quadratic in what it is given. */
#define TUNE_MATCH_REGEX_PREFIX 4096u

typedef enum tune_fact {
        TUNE_FACT_COMM = 1 << 0,
        TUNE_FACT_EXE = 1 << 1,
        TUNE_FACT_CMDLINE = 1 << 2,
        TUNE_FACT_UID = 1 << 3,
        TUNE_FACT_CGROUP = 1 << 4,
        TUNE_FACT_ENVIRON = 1 << 5, /* no rule asks for it; a caller that keeps the process may */
} tune_fact;

typedef struct tune_proc_facts tune_proc_facts;
struct tune_proc_facts {
        pid_t pid;
        unsigned loaded; /* TUNE_FACT_* present below */
        unsigned failed; /* TUNE_FACT_* that could not be read: criteria on them fail */
        unsigned gave_up; /* of failed, those whose read gave up (-ETIMEDOUT, -EBUSY: a slow
                           * reader's deadline, tune_ctx_set_slow_reader()): worth a later try */
        char comm[TUNE_COMM_MAX];
        char *exe;
        char *cmdline;   /* NULs as spaces */
        uid_t uid;       /* real uid */
        tune_status_facts *status; /* the /proc/PID/status uid was read from, parsed (NULL when given) */
        char *cgroup;    /* cgroup v2 path */
        char *environ;   /* the raw block (tune_proc_read_environ()) */
        size_t environ_len;
        bool environ_truncated;
        /* Set by the caller: the process will be kept (and its environment read) if the
         * facts of TUNE_FACT_* in pair_if_kept are wanted with the command line, so the
         * loader may read the command line and the environment with one hand-off
         * (tune_proc_read_cmdline_environ()). */
        unsigned pair_if_kept;
        /* Set by the matcher when it asks for the command line of a rule whose criteria
         * that survive a retitle all held: whatever the command line says, the process
         * is at least a retitle candidate (tune_policy_match()), which a caller keeps. */
        bool kept;
        /* Reads one missing fact into f (sets loaded or failed). NULL: facts are all given. */
        int (*load)(tune_proc_facts *f, tune_fact fact, void *userdata);
        void *userdata;
};

void tune_proc_facts_done(tune_proc_facts *f);
/* A loader reading /proc below the context's root; userdata is the tune_ctx. */
int tune_proc_facts_load_from_proc(tune_proc_facts *f, tune_fact fact, void *userdata);
/* Facts of pid read through ctx, lazily. comm may be given (e.g. from a COMM event or
 * /proc/PID/stat) or NULL. */
void tune_proc_facts_init(tune_proc_facts *f, const tune_ctx *ctx, pid_t pid, const char *comm);
/* Whether the fact is there, loading it if it is not yet (and a loader is set). */
bool tune_proc_facts_get(tune_proc_facts *f, tune_fact fact);
/* Forget the facts that change when a process retitles itself (comm, cmdline). */
void tune_proc_facts_forget_volatile(tune_proc_facts *f);

/* Whether every set criterion of the rule holds. A rule with no criterion at all never
 * matches (fail closed), and neither does one whose fact cannot be read. 1 or 0. */
int tune_rule_matches(const tune_policy_rule *rule, tune_proc_facts *f);

/* The first rule that matches (rules are sorted by priority), or NULL.
 * *ret_retitle_candidate (may be NULL): no rule matches, but one whose criteria that
 * survive a retitle (exe, uid, cgroup: at least one set) all hold fails only on comm or
 * cmdline. Such a process is worth keeping an eye on (and its environment) until it
 * renames itself. */
const tune_policy_rule *tune_policy_match(const tune_policy *p, tune_proc_facts *f, bool *ret_retitle_candidate);

/* The rank the rule takes from the process: the first capture group of rank_regex over
 * the cmdline or comm (TUNE_RANK_CMDLINE/COMM), or the decimal value of rank_env in the
 * environment captured at exec (TUNE_RANK_ENV). A non-negative int, or -ENOENT (no rank
 * in the rule, no match, not a number). */
int tune_rule_rank(const tune_policy_rule *rule, tune_proc_facts *f, const tune_env_capture *env);

/* Whether a cgroup path lies at or below prefix ("/a/b" is below "/a", "/ab" is not). */
bool tune_cgroup_has_prefix(const char *path, const char *prefix) _pure_;
/* fnmatch(pattern, s, 0) == 0 (the policy's globs: exe, comm, thread names), without
 * fnmatch's cost for the shapes rules are written in: a literal, or "*" followed by a
 * literal suffix (a path's last part), are compared as bytes (the daemon runs in the C
 * locale, where fnmatch compares bytes too); any other pattern goes to fnmatch. Run on
 * every exec on the host: fnmatch costs about a thousand instructions there, most of an
 * unmatched exec's. */
bool tune_glob_match(const char *pattern, const char *s) _pure_;
