/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Thread roles inside a managed process: which sub-pool of the process's CPUs a thread
 * gets, decided from its comm (the 15-byte name set by prctl(PR_SET_NAME) /
 * pthread_setname_np) and from whether it is the main thread. Pure: no I/O. A thread is
 * classified again on every COMM event (renames are how runtimes announce roles). */

#include <stdbool.h>
#include <sys/types.h>

#include "npu-tuned/policy.h"

typedef enum tune_role {
        TUNE_ROLE_CONTROL,
        TUNE_ROLE_COMPUTE,
        TUNE_ROLE_OTHER, /* neither role claims it: the thread gets the whole pool */
        _TUNE_ROLE_MAX,
} tune_role;

const char *tune_role_to_string(tune_role r) _pure_;

/* Which role a thread has under a rule. In order:
 *   1. the main thread (tid == pid) goes to the role with main_thread set (control first);
 *   2. a comm matching one of control's name_globs (fnmatch, no flags) -> control;
 *   3. a comm matching one of compute's name_globs -> compute;
 *   4. the catch-all role: the one role that has neither name_globs nor main_thread (e.g.
 *      control = {globs: ["acl_thread", "hccl_*"], main_thread}, compute = {} puts every
 *      unnamed OpenMP worker in compute). With no such role, or with two, -> other.
 * comm may be NULL (unreadable): only rules 1 and 4 apply. */
tune_role tune_thread_classify(const tune_policy_rule *rule, pid_t pid, pid_t tid, const char *comm);

/* True when the rule's roles select threads at all (some role has globs or main_thread).
 * Without selectors, the process is pinned as a whole to its pool. */
bool tune_rule_has_role_selectors(const tune_policy_rule *rule) _pure_;
/* Whether a role of the rule takes threads by name ("name" globs): only then does a
 * thread's name, or a rename, change where it goes. */
bool tune_rule_picks_threads_by_name(const tune_policy_rule *rule) _pure_;
/* Whether tune_thread_classify() of this thread looks at its name at all: false for a
 * rule whose roles pick no thread by name, and for a main thread a main_thread role takes. */
bool tune_thread_role_needs_name(const tune_policy_rule *rule, pid_t pid, pid_t tid) _pure_;
