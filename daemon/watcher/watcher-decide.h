/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The process watcher's decisions, as pure functions (no I/O, no callbacks, no clock):
 * the rest of daemon/watcher-*.c reads /proc and the connector, asks these what it means,
 * and acts. Unit-tested without root in tests/test-watcher-decide.c. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "npu-tuned/attribution.h"
#include "npu-tuned/policy.h"
#include "npu-tuned/process.h"
#include "watcher.h"

/* ---- threads ---- */

typedef enum watcher_thread_change_kind {
        WATCHER_THREAD_NONE,    /* nothing to do */
        WATCHER_THREAD_GONE,    /* it exited (or is exiting: its comm no longer reads) */
        WATCHER_THREAD_NEW,     /* a thread not seen before */
        WATCHER_THREAD_RENAMED, /* it has another comm now */
} watcher_thread_change_kind;

/* A thread as /proc/PID/task shows it now. */
typedef struct watcher_thread_seen {
        pid_t tid;
        bool readable;             /* its comm could be read */
        char comm[TUNE_COMM_MAX];
} watcher_thread_seen;

typedef struct watcher_thread_change {
        watcher_thread_change_kind kind;
        pid_t tid;
        char comm[TUNE_COMM_MAX];  /* NEW, RENAMED: the comm it has now */
} watcher_thread_change;

/* A COMM event (or a fresh read) for a thread: t is the thread as known, NULL when it is
 * not known. NEW, RENAMED, or NONE when the name did not change. */
watcher_thread_change_kind watcher_thread_comm_change(const managed_thread *t, const char *comm) _pure_;

/* What brings the known thread list to the one seen (seen sorted by tid, as
 * tune_proc_list_tasks() gives it), in the order to apply: the known threads that are not
 * seen, in known order; then for each seen thread in tid order: GONE when it is known but
 * its comm did not read, NEW when it is not known and its comm did read, RENAMED when the
 * comm changed. *ret holds *ret_n changes (NULL when none); -ENOMEM. */
int watcher_thread_diff(const managed_thread *known, unsigned n_known, const watcher_thread_seen *seen,
                        size_t n_seen, watcher_thread_change **ret, size_t *ret_n);

/* ---- device-file retries ---- */

/* The delay until the next look at a process's open device files, while it has no
 * accelerator yet (a server opens its device only after loading a model): first_ms, then
 * doubling up to cap_ms. *backoff_ms is the state (0: start again from first_ms, e.g.
 * after the attribution changed). */
unsigned watcher_device_retry_next(unsigned *backoff_ms, unsigned first_ms, unsigned cap_ms);

/* Whether a managed process still waits for its device files: its rule takes accelerators
 * from what it runs on (auto) and none was found yet. */
bool watcher_device_retry_wanted(const tune_policy_rule *rule, const tune_attribution *a) _pure_;

/* ---- matching ---- */

typedef enum watcher_match_action {
        WATCHER_MATCH_IGNORE,      /* not known, matches nothing, not worth keeping: forget it */
        WATCHER_MATCH_CANDIDATE,   /* keep (or go on keeping) it unmanaged, for its environment */
        WATCHER_MATCH_UNMATCH,     /* managed, and no rule matches any more: let the consumer go */
        WATCHER_MATCH_MANAGE,      /* a rule matches a process not managed yet */
        WATCHER_MATCH_REEVALUATE,  /* managed and still matching: see watcher_changes() */
} watcher_match_action;

/* matched: a rule matches now. retitle_candidate: none does, but one might after the
 * process renames itself (tune_policy_match()). known: the watcher has an entry for it;
 * managed: that entry is managed. */
watcher_match_action watcher_match_decide(bool matched, bool retitle_candidate, bool known, bool managed) _pure_;

/* What changed for a managed process matched again (WATCHER_CHANGE_*): another rule, rank
 * or accelerator list, or an exec. new_attribution NULL: it could not be worked out (the
 * accelerators then count as unchanged). Ranks < 0 mean none. */
unsigned watcher_changes(const tune_policy_rule *old_rule, int old_rank, const tune_attribution *old_attribution,
                         const tune_policy_rule *new_rule, int new_rank, const tune_attribution *new_attribution,
                         bool exec) _pure_;
