/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The process watcher's insides, shared by its files (one per role, see
 * docs/process-watcher.md); nothing outside daemon/watcher/ includes this but
 * tests/test-watcher-events.c. The public interface is watcher.h.
 *
 * The files call one way: each uses only files before it here, so that each can be read,
 * and changed, knowing only those below it. A lower file that needs a higher one to act
 * says so through data instead (a source it enables, a victim it returns, the next
 * process it hands out), or the event loop calls the handler, which lives in the file of
 * its role. tests/watcher-file-order.py checks the compiled files against this list
 * (test watcher-file-order).
 *
 * Order (lowest first):
 *   proc-connector.c       the kernel's event stream; calls back through connector_callbacks
 *   watcher-registry.c     pid -> entry
 *   watcher-decide.c       the decisions, pure (no I/O)
 *   watcher-budget.c       entries per user, refused matches: counts and picks, frees nothing
 *   watcher-entry.c        entries, liveness, release (the consumer's last callback), the
 *                          exit reasons' names
 *   watcher-threads.c      a managed process's thread list
 *   watcher-ancestry.c     the environment inherited from ancestors: cached, budgeted
 *   watcher-driver.c       the driver query: run, read, killed at its deadline; its answer
 *                          makes the waiting processes' device-file retries due
 *   watcher-match.c        evaluate: match, environment, attribution, becoming managed; the
 *                          retry of refused matches; setting the reconcile timer's time
 *   watcher-debounce.c     renames folded per process; its timer evaluates
 *   watcher-reconcile.c    the reconcile timer's handler, device-file retries, the resync
 *   watcher-events.c       what each connector event means
 *   watcher-lifecycle.c    the interface of watcher.h: set-up, start, reload, release
 * The event handlers (debounce, reconcile, events, lifecycle) are the top: they decide when
 * to evaluate; below them nothing calls watcher_evaluate(). */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "proc-connector.h"
#include "npu-tuned/attribution.h"
#include "npu-tuned/match.h"
#include "npu-tuned/proc.h"
#include "watcher-driver.h"
#include "watcher-registry.h"
#include "watcher.h"

typedef enum eval_why {
        EVAL_EXEC,  /* an EXEC event: the environment is as the program was started */
        EVAL_COMM,  /* the main thread renamed itself (setproctitle) */
        EVAL_SCAN,  /* found by a /proc scan (start, overrun) */
} eval_why;

/* One process in the registry: managed (matched) or a candidate kept for its environment
 * (a descendant of a known process, or one that may match after a retitle). Consumers
 * only ever see &e->p of matched entries. */
typedef struct Entry {
        managed_process p; /* first */
        Watcher *w;
        bool matched;
        bool released;                /* watcher_release_pid(): not matched again until an exec */
        uid_t budget_uid;             /* the user whose budget counts it (its uid when added) */
        uint64_t last_comm_eval_usec; /* its last evaluation on a rename (watcher-debounce.c) */
        bool comm_pending;            /* a rename waits for the end of the debounce window */
        sd_event_source *exit_source; /* the pidfd became readable: the process is gone */
        uint64_t next_reconcile_usec;
        uint64_t next_device_usec;    /* 0: no device-file check pending */
        unsigned device_backoff_ms;
        uint64_t overruns_at_start;   /* w->stats.overruns when its start time was read (or, with
                                       * start_pending, when it was created) */
        /* Created at its FORK without reading its stat (handle_fork()): p.start_time is not
         * known until something reads the stat for another reason (its EXEC, a rename, a
         * scan) and entry_same_process() takes it from there. */
        bool start_pending;
        uint64_t fork_timestamp_ns;   /* with start_pending: its FORK event's kernel time
                                       * (CLOCK_MONOTONIC), 0 when unknown */
        bool leader_exited;           /* its main thread's EXIT came while others ran on */
} Entry;

/* An ancestor's environment as the ancestry walk found it (watcher-ancestry.c), kept
 * for its (pid, start time): usable or not, it is not read again. */
typedef struct watcher_ancestor {
        pid_t pid;
        uint64_t start_time;
        uid_t uid;            /* its real uid ((uid_t) -1: unknown) */
        bool kin;             /* a rule matches it, or may after a retitle */
        bool env_read;        /* env is what its environ showed */
        tune_env_capture env;
        size_t kids_len;      /* kids was looked for among its children for this size (0: not yet) */
        tune_env_capture kids; /* the environment its children of that size agree on */
} watcher_ancestor;

/* What a daemon before a restart captured of a process's environment (at its exec, or
 * inherited then), read back from the state directory by the manager. */
typedef struct watcher_remembered {
        pid_t pid;
        uint64_t start_time;
        tune_env_capture env;
} watcher_remembered;

/* One user's environment reads by the ancestry walk in the current second. */
typedef struct watcher_uid_reads {
        uid_t uid;
        uint64_t since; /* CLOCK_MONOTONIC usec the second began; 0: unused */
        uint64_t bytes;
        bool warned;
} watcher_uid_reads;

/* Entries (candidates and managed) of one user (watcher-budget.c). */
typedef struct watcher_uid_count {
        uid_t uid;
        unsigned entries;
} watcher_uid_count;

struct Watcher {
        sd_event *event;
        const tune_ctx *ctx;
        const tune_accels *accels;
        const tune_policy *policy;
        watcher_params params;
        watcher_ops ops;
        void *userdata;
        Connector *connector;
        Registry *registry;
        sd_event_source *timer;
        uint64_t timer_due_usec; /* 0: disabled */
        dev_t *accel_rdevs;      /* parallel to accels->items; 0 unknown */
        char **env_names;
        unsigned n_env_names;
        tune_env_name_index env_index; /* of env_names, built with them */
        watcher_stats stats;
        bool warned_full;
        watcher_uid_count *uid_counts;
        unsigned n_uid_counts;
        watcher_ancestor ancestors[64];   /* watcher-ancestry.c */
        unsigned next_ancestor;
        watcher_uid_reads uid_reads[16];
        watcher_remembered *remembered; /* environments a daemon before a restart captured (watcher_keep_attribution()) */
        unsigned n_remembered;
        /* The latest start time among them: a process started after it (every one started
         * since the restart) is none of them, and is not looked for. */
        uint64_t remembered_latest_start;
        struct { pid_t pid; uint64_t start_time; } *refused; /* matches refused for a full table, oldest first */
        unsigned n_refused;
        sd_event_source *retry_source; /* re-evaluates them once room frees up (watcher-match.c; enabled by
                                        * watcher_budget_room_freed()) */
        struct { pid_t pid; uint64_t start_time; } *comm_pending; /* renames folded (watcher-debounce.c) */
        unsigned n_comm_pending;
        sd_event_source *comm_timer;
        struct { pid_t pid; uint64_t start_time; uint64_t due; unsigned attempt; } *gave_up; /* matches that
                                        * gave up on a read, oldest first (watcher-match.c) */
        unsigned n_gave_up;
        unsigned gave_up_attempt;       /* of the one being evaluated again; 0: none */
        sd_event_source *gave_up_timer;
        unsigned gave_up_dropped;        /* forgotten since the last look (the queue was full);
                                          * watcher-reconcile.c asks for a resync */
        uint64_t gave_up_resync_gap_usec; /* the least wait before a resync for them; doubles */
        sd_event_source *resync_timer; /* a resync coalesced after overruns (watcher-reconcile.c) */
        uint64_t last_resync_usec;
        bool resync_pending;
        uint64_t budget_warned_usec; /* the last warning of a match refused for its user's share */
        DriverQuery driver;          /* watcher-driver.c */
};

static inline uint64_t watcher_now_usec(Watcher *w) {
        uint64_t t = 0;
        (void) sd_event_now(w->event, CLOCK_MONOTONIC, &t);
        return t;
}

static inline bool watcher_have_rules(const Watcher *w) {
        return w->policy && w->policy->n_rules > 0;
}

static inline int watcher_cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return x < y ? -1 : x > y;
}

/* Budgets: entries per user, room for a real match (watcher-budget.c). */
unsigned watcher_budget_per_uid(const Watcher *w);
/* Whether a match of rule by a process of real uid is vouched for by someone other than
 * the process (docs/trust.md, "Trust tiers"): root's, or the rule names its user or
 * cgroup. Such a match is exempt from the global caps (max_managed_processes): a table
 * that other users' look-alikes have filled does not keep root's server unmanaged. */
bool watcher_budget_vouched(const tune_policy_rule *rule, uid_t uid) _pure_;
unsigned watcher_budget_count(Watcher *w, uid_t uid);
int watcher_budget_add(Watcher *w, uid_t uid);
void watcher_budget_remove(Watcher *w, uid_t uid);
/* A mere candidate to free for a match: of_uid's, or (NULL) the heaviest user's if it has
 * one. -ENOSPC: none. The caller frees it. */
int watcher_budget_victim(Watcher *w, const uid_t *of_uid, Entry **ret);
void watcher_budget_warn_refused(Watcher *w, uid_t uid, pid_t pid);
/* A match refused because max_managed processes are managed: re-evaluated (oldest first,
 * as many as there is room for) soon after a managed process goes. Bounded: the oldest
 * are dropped beyond WATCHER_REFUSED_MAX. */
void watcher_budget_queue_refused(Watcher *w, pid_t pid, uint64_t start_time);
/* The next refused match to evaluate again, while there is room: its stat read now, and
 * its entry if it has one (a candidate with the same start time), else NULL. *done counts
 * the queued ones taken, 0 at first; false: none left, or no room. The caller evaluates it
 * (the budget calls nothing above it), then drops those taken with
 * watcher_budget_refused_done(). */
bool watcher_budget_refused_next(Watcher *w, unsigned *done, tune_proc_stat *ret, Entry **ret_entry);
void watcher_budget_refused_done(Watcher *w, unsigned done);
/* A managed process went: enable w->retry_source if a match waits for room. */
void watcher_budget_room_freed(Watcher *w);

/* Entries: one per process the watcher knows, and whether it still lives (pidfd, or start time) (watcher-entry.c). */
void entry_clear_threads(Entry *e);
void entry_drop_pidfd(Entry *e);
/* The status of the match (managed_process.status) is kept for the callback that
 * follows it only. */
void entry_drop_status(Entry *e);
void entry_free(Entry *e);
/* uid: whose process it is (the per-user budget). for_match: a rule matches it, so it may
 * evict a mere candidate when the table is full, and is not held to the user's budget;
 * vouched (watcher_budget_vouched()): it is taken even when the table is full. */
Entry *entry_new(Watcher *w, pid_t pid, uint64_t start_time, pid_t ppid, uid_t uid, bool for_match, bool vouched);
void entry_unmatch(Entry *e, watcher_exit_reason reason);
void entry_release(Entry *e, watcher_exit_reason reason);
int entry_alive(Entry *e);
/* Whether st (just read from /proc) is e's process: the same start time; or, for a start
 * time still pending, the stream's word while no event was lost since e was created (its
 * EXIT would have released it first), and e takes st's start time. */
bool entry_same_process(Entry *e, const tune_proc_stat *st);
/* For a path that needs e's start time known and reads nothing else of its stat: a pending
 * one is settled from a read (entry_same_process()). false: gone, or not e's process. */
bool entry_settle_start(Entry *e);
Entry *watcher_lookup_managed(Watcher *w, pid_t pid);
Entry *watcher_lookup_managed_event(Watcher *w, pid_t pid);
void entry_watch_pidfd(Entry *e);

/* Threads: the thread list of a managed process against /proc/PID/task (watcher-threads.c). */
/* Whether the names of e's threads are read (and so its threads' renames found at a
 * reconcile): where its rule's roles take threads by name, or the consumer asked for all.
 * Otherwise a thread's name is what its COMM events said ("" until one does), and while
 * no rule wants names none come: the socket filter drops them (watcher_wants_thread_comm()). */
bool entry_wants_thread_names(const Entry *e);
/* Whether any rule (or the probe's all_thread_names) wants the names of threads other
 * than a main one: else their COMM events are dropped by the connector's socket filter. */
bool watcher_wants_thread_comm(const Watcher *w);
managed_thread *entry_thread_add(Entry *e, pid_t tid, const char *comm);
void entry_emit_thread_exit(Entry *e, managed_thread *t);
int entry_threads_sync(Entry *e, bool emit);

/* The environment inherited from ancestors (watcher-ancestry.c). For e, found running with
 * its own environment wiped (own_len bytes of NULs; 0: unknown), the nearest stand-in of
 * the same user (or root), copied into *ret: an ancestor the watcher would have kept for
 * it (one a rule matches or may match after a retitle); or, while every process between
 * was given an environment of own_len bytes, any ancestor whose own has that size (it
 * passed it on unchanged), or the agreeing environments of that size of an ancestor's
 * other children (docs/trust.md). Bounded work (the file's comment). */
bool watcher_ancestor_env(Watcher *w, const Entry *e, size_t own_len, tune_env_capture *ret);
/* tune_proc_read_environ() of pid for a process of uid found running, charged to uid's
 * reads of the second: -EDQUOT when they are spent (said once a second). */
int watcher_read_environ_budgeted(Watcher *w, uid_t uid, pid_t pid, char **ret, size_t *ret_len, bool *ret_truncated);
void watcher_ancestry_done(Watcher *w);
/* What a daemon before a restart captured for (pid, start_time), copied into *ret
 * (restored): false when nothing was kept for it. */
bool watcher_remembered_env(Watcher *w, pid_t pid, uint64_t start_time, tune_env_capture *ret);
int watcher_remembered_add(Watcher *w, pid_t pid, uint64_t start_time, const tune_env_capture *env);
void watcher_remembered_done(Watcher *w);

/* Matching, environment, attribution: a process against the rules, and what changed on re-evaluation (watcher-match.c). */
/* Wake the reconcile timer by due, if it is not due earlier. */
void watcher_timer_schedule(Watcher *w, uint64_t due);
void entry_device_check_schedule(Entry *e, uint64_t now);
void watcher_evaluate(Watcher *w, Entry *e, const tune_proc_stat *st, const char *comm, eval_why why);
/* A match of pid that gave up on a read (tune_proc_facts.gave_up) and matched nothing: it is
 * evaluated again once its back-off is over (params.gave_up_retry_ms). At most
 * WATCHER_GAVE_UP_MAX wait so; past that the oldest is forgotten (counted in
 * gave_up_dropped, for a resync). */
#define WATCHER_GAVE_UP_MAX 256u
void watcher_queue_gave_up(Watcher *w, pid_t pid, uint64_t start_time);
/* pidfd: one opened for st->pid before st was read (handle_exec()), taken if the process
 * is managed (*pidfd then -1), or NULL. */
void watcher_evaluate_facts(Watcher *w, Entry *e, const tune_proc_stat *st, tune_proc_facts *facts, int *pidfd,
                            eval_why why);
void entry_device_check(Entry *e);

/* Renames: true when e's re-evaluation is folded into one at the end of its debounce
 * window (the caller then does nothing now) (watcher-debounce.c). */
bool watcher_comm_debounce(Watcher *w, Entry *e);

/* Timers: the periodic reconcile, device-file retries, and the resync after lost events (watcher-reconcile.c). */
/* The reconcile timer, off (watcher_new()); watcher_timer_schedule() sets its time. */
int watcher_reconcile_timer_new(Watcher *w);
void watcher_resync(Watcher *w);
void watcher_on_lost(Connector *c, void *userdata);

/* Event dispatch: what each proc connector event means for the processes the watcher knows (watcher-events.c). */
void watcher_on_event(Connector *c, const struct proc_event *ev, void *userdata);
