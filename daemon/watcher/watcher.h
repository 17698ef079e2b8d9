/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The process watcher: learns every exec, fork, thread, rename and exit from the kernel's
 * process connector, matches processes against the policy's rules, attributes
 * accelerators, tracks the threads of the processes it manages, and tells its consumer
 * (the placement code) through watcher_ops. It costs nothing while idle: a socket, and a
 * reconcile timer that only runs while processes are managed.
 *
 * The story of one managed process, as the consumer sees it:
 *   on_process_matched      once, with p->threads already filled
 *   on_thread_new / _renamed / _exit, on_process_changed, on_process_reconciled   any number
 *   on_process_exit         once, last; p is freed after it returns
 * Every callback gets a live process: before calling, the watcher checks its pidfd (or
 * start time), so a pid that now belongs to another process is never handed out. The
 * consumer still acts by pid (sched_setaffinity, migrate_pages): it should call
 * watcher_check_process() after acting, and undo nothing if the process is gone. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/context.h"
#include "npu-tuned/policy.h"
#include "npu-tuned/process.h"

typedef struct Watcher Watcher;

typedef enum watcher_exit_reason {
        WATCHER_EXIT_EXITED,     /* the process exited */
        WATCHER_EXIT_UNMATCHED,  /* it exec'd or retitled itself into something no rule matches */
        WATCHER_EXIT_PID_REUSED, /* found gone when its pid turned up with another start time */
        WATCHER_EXIT_STOP,       /* the watcher stops (watcher_release_all) */
        WATCHER_EXIT_RELEASED,   /* let go on request (watcher_release_pid): not managed until it execs */
        _WATCHER_EXIT_REASON_MAX,
} watcher_exit_reason;

const char *watcher_exit_reason_to_string(watcher_exit_reason r) _pure_;

typedef enum watcher_change {
        WATCHER_CHANGE_RULE = 1 << 0,   /* another rule matches now (a retitle) */
        WATCHER_CHANGE_RANK = 1 << 1,
        WATCHER_CHANGE_ACCELS = 1 << 2, /* p->attribution changed (e.g. device files found) */
        WATCHER_CHANGE_EXEC = 1 << 3,   /* it exec'd another program that still matches */
} watcher_change;

/* Every member may be NULL. userdata is watcher_new()'s. */
typedef struct watcher_ops {
        void (*on_process_matched)(Watcher *w, managed_process *p, void *userdata);
        void (*on_process_changed)(Watcher *w, managed_process *p, unsigned changes, void *userdata);
        void (*on_thread_new)(Watcher *w, managed_process *p, managed_thread *t, void *userdata);
        void (*on_thread_renamed)(Watcher *w, managed_process *p, managed_thread *t, const char *old_comm,
                                  void *userdata);
        /* t is removed from p->threads after this returns. */
        void (*on_thread_exit)(Watcher *w, managed_process *p, managed_thread *t, void *userdata);
        /* Last call for p: free p->userdata and the threads' userdata here. */
        void (*on_process_exit)(Watcher *w, managed_process *p, watcher_exit_reason reason, void *userdata);
        /* The periodic check found p alive and brought p->threads up to date (threads that
         * appeared or vanished unseen were reported first): re-assert placement if wanted. */
        void (*on_process_reconciled)(Watcher *w, managed_process *p, void *userdata);
} watcher_ops;

typedef struct watcher_params {
        unsigned rcvbuf_kib;            /* connector receive buffer; 0: 4096 */
        unsigned ack_timeout_ms;        /* 0: 2000 */
        unsigned reconcile_interval_ms; /* 0: 10000 */
        unsigned device_retry_ms;       /* first re-check of open device files; 0: 500, doubling up to the reconcile interval */
        unsigned max_managed;           /* matched processes at most; 0: 4096 */
        unsigned gave_up_retry_ms;      /* a process whose match gave up on a read is evaluated again
                                         * this much later, doubling each time it gives up again;
                                         * 0: the slow reader's first back-off and 100 ms */
        bool all_thread_names;          /* read every managed thread's name (the probe), not only
                                         * where the rule's roles take threads by name */
        const char *driver_query;       /* npu-tuned-driver-query to run for a matched process with no
                                         * accelerator (watcher-driver.h); NULL: never */
        const char *driver_library_dir; /* passed to it as --library-dir; NULL: the system's */
        unsigned driver_query_interval_ms; /* at most one query per; 0: 30000 */
} watcher_params;

/* The policy's options section, with defaults. p may be NULL. */
void watcher_params_from_policy(const tune_policy *p, watcher_params *ret);

typedef struct watcher_stats {
        uint64_t events;       /* proc connector events handled */
        uint64_t overruns;     /* ENOBUFS: events lost */
        uint64_t resyncs;      /* full /proc scans (start, overruns) */
        uint64_t resyncs_coalesced; /* overruns folded into a later resync (at most one a second) */
        uint64_t comm_coalesced; /* renames folded into a later evaluation (one per 100 ms a process) */
        uint64_t matched;      /* processes that were matched, in total */
        uint64_t exited;       /* on_process_exit calls */
        uint64_t skipped_full; /* matches dropped because max_managed was reached */
        uint64_t skipped_budget; /* candidates not kept, matches (not root's) not managed: their user has its share of entries */
        uint64_t evicted;      /* candidates dropped to make room for a process a rule matches */
        uint64_t retried;      /* refused matches evaluated again once room freed up */
        uint64_t ancestry_limited; /* ancestry walks cut short by their user's budget of reads a second */
        unsigned managed;      /* matched now */
        unsigned candidates;   /* unmatched processes kept for their environment (descendants, retitle candidates) */
        bool filter;           /* kernel event filter in use */
        bool socket_filter;    /* the connector's socket filter is attached */
        int rcvbuf;
        uint64_t event_timestamp_ns; /* CLOCK_MONOTONIC stamp of the event being handled (0: none) */
        uint64_t event_handling_ns;  /* CLOCK_MONOTONIC when its handling began (0: not taken) */
} watcher_stats;

/* accels, policy and ctx must outlive the watcher. policy may be NULL (no rules: nothing is
 * matched, but the connector still runs). */
int watcher_new(sd_event *e, const tune_ctx *ctx, const tune_accels *accels, const tune_policy *policy,
                const watcher_params *params, const watcher_ops *ops, void *userdata, Watcher **ret);
/* Subscribe to the connector (waits for the kernel's ack), then scan /proc for processes
 * that already exist. Needs the live root, root privileges and the initial namespaces;
 * logs the cause and returns a negative errno otherwise (-ETIMEDOUT: no ack). */
int watcher_start(Watcher *w);
/* A new policy (and accelerator list; either may be the same as before): every known
 * process is matched again (on_process_changed with WATCHER_CHANGE_RULE for those still
 * matching, since their rule pointer is new; on_process_exit(UNMATCHED) for those that no
 * longer match), then /proc is scanned for processes the new rules match. Afterwards no
 * managed_process points into the old policy: free it only after this returns. */
int watcher_reload(Watcher *w, const tune_accels *accels, const tune_policy *policy);
/* Evaluate one process now, as the start-up scan would (its environment as /proc shows it
 * now): for --explain. Works on a watcher that was not started (no events then). Returns
 * 0 with *ret (owned by the watcher) if a rule matches, -ENOENT if none does, -ESRCH if
 * there is no such process. */
int watcher_evaluate_pid(Watcher *w, pid_t pid, managed_process **ret);
/* on_process_exit(WATCHER_EXIT_STOP) for every managed process, then forget them all. */
void watcher_release_all(Watcher *w);
/* Frees without callbacks (call watcher_release_all() first if the consumer needs them). */
Watcher *watcher_free(Watcher *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(Watcher *, watcher_free);

/* 1: p is still the process it was matched as (its pidfd has not signalled an exit, or
 * without one, the start time still matches); 0: it is gone. Cheap (one poll()). */
int watcher_check_process(Watcher *w, const managed_process *p);
/* The managed process with this pid, or NULL (also when it just exited). Never calls back. */
managed_process *watcher_find(Watcher *w, pid_t pid);
void watcher_get_stats(const Watcher *w, watcher_stats *ret);

/* The pids of the managed processes, sorted (for listings: look each up with
 * watcher_find(), which skips one that exited meanwhile). The caller frees *ret. */
int watcher_managed_pids(Watcher *w, pid_t **ret, size_t *ret_n);
/* Before watcher_start(): pid (if it is still the process that began at start_time) was
 * released by a previous run and stays so until it execs again. -ESRCH: not that process. */
int watcher_keep_released(Watcher *w, pid_t pid, uint64_t start_time);

/* Before watcher_start(): what a previous run captured of pid's environment (at its exec,
 * or inherited then; the state directory kept it), for pid if it is still the process
 * that began at start_time, running the same exec (its environment where env_start and
 * env_end say, tune_proc_stat). A process found running whose own environment is no longer
 * usable (setproctitle wiped it) takes it before any ancestor's, and says so
 * (env.restored). -ESRCH: not that process; -ENOSPC: max_managed kept already. */
int watcher_keep_attribution(Watcher *w, pid_t pid, uint64_t start_time, uint64_t env_start, uint64_t env_end,
                             const tune_env_capture *env);
/* Whether a previous run's capture of pid (started at start_time) was kept so. */
bool watcher_keeps_attribution(Watcher *w, pid_t pid, uint64_t start_time);

/* Why a process a rule matches is not managed, in words for explain: released (Release(),
 * until it execs again), refused for a full table, over its user's share, or "" when the
 * watcher has no such word for it (it was not looked at as it is now). */
const char *watcher_unmanaged_reason(Watcher *w, pid_t pid);

/* Scan /proc again now, as after an overrun (D-Bus Rescan()). */
void watcher_rescan(Watcher *w);
/* Stop managing pid: on_process_exit(WATCHER_EXIT_RELEASED), and leave it alone until it
 * execs again (a rename or a rescan does not match it again). -ESRCH: not managed. */
int watcher_release_pid(Watcher *w, pid_t pid);
/* The kernel's CLOCK_MONOTONIC timestamp of the event being handled now, in ns; 0 outside
 * an event (a scan, a timer). For the consumer's reaction times. */
uint64_t watcher_event_timestamp_ns(const Watcher *w);
/* When the watcher began to handle that event (CLOCK_MONOTONIC, ns): taken for an exec, a
 * managed process's new thread, and a rename of a managed thread or of a process's main
 * thread, the events a reaction can follow; 0 otherwise. */
uint64_t watcher_event_handling_ns(const Watcher *w);
