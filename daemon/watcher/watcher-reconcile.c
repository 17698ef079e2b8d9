/* SPDX-License-Identifier: GPL-2.0-only */
/* The process watcher's timers: the periodic reconcile of managed processes, device-file
 * retries, and the full /proc resync after the connector lost events. The timer runs only
 * while processes are managed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "watcher-internal.h"

static uint64_t entry_due(const Entry *e) {
        if (e->next_device_usec && e->next_device_usec < e->next_reconcile_usec)
                return e->next_device_usec;
        return e->next_reconcile_usec;
}

/* Full check of one managed process. tick: the periodic reconcile (or a rescan asked for),
 * which also lets the consumer check what it did (on_process_reconciled: a placement's
 * drift, its cgroup's cpuset) and sets the next one; a resync after lost events asks only
 * what events could have said (exit, threads, renames): the consumer's check reads every
 * thread's affinity, and a burst that overruns the socket has thousands of threads.
 * Returns false if it was released. */
static bool entry_reconcile(Entry *e, uint64_t now, bool tick) {
        Watcher *w = e->w;
        char comm[TUNE_COMM_MAX];
        int r;

        if (!entry_alive(e)) {
                entry_release(e, WATCHER_EXIT_EXITED);
                return false;
        }
        r = entry_threads_sync(e, true);
        if (r == -ESRCH) {
                entry_release(e, WATCHER_EXIT_EXITED);
                return false;
        }
        /* A retitle whose COMM event was lost. */
        if (tune_proc_read_comm(w->ctx, e->p.pid, 0, comm) >= 0 && !streq(comm, e->p.comm)) {
                tune_proc_stat st = { .pid = e->p.pid, .ppid = e->p.ppid, .start_time = e->p.start_time };
                watcher_evaluate(w, e, &st, comm, EVAL_COMM);
                if (registry_get(w->registry, st.pid) != e || !e->matched)
                        return false;
        }
        if (e->next_device_usec && e->next_device_usec <= now + 100 * 1000) {
                entry_device_check(e);
                entry_device_check_schedule(e, now);
        }
        if (!tick)
                return true;
        e->next_reconcile_usec = now + (uint64_t) w->params.reconcile_interval_ms * 1000;
        if (w->ops.on_process_reconciled)
                w->ops.on_process_reconciled(w, &e->p, w->userdata);
        return true;
}

static void request_resync(Watcher *w, uint64_t min_gap_usec);

/* Matches the retry queue forgot (watcher-match.c: it was full): a walk of /proc looks for
 * them, as after lost events, at least 1 s after the last walk; twice as long each time the
 * queue is more than half full still when another is asked for (a user who holds the maps
 * of hundreds of processes keeps it full), up to 32 s; back to 1 s once it has room. */
#define GAVE_UP_RESYNC_GAP_MIN_USEC (1000 * 1000ULL)
#define GAVE_UP_RESYNC_GAP_MAX_USEC (32 * 1000 * 1000ULL)

static void gave_up_followed(Watcher *w) {
        if (w->gave_up_resync_gap_usec == 0 || w->n_gave_up <= WATCHER_GAVE_UP_MAX / 2)
                w->gave_up_resync_gap_usec = GAVE_UP_RESYNC_GAP_MIN_USEC;
        if (w->gave_up_dropped == 0)
                return;
        if (w->resync_pending) { /* the walk to come looks for them */
                w->gave_up_dropped = 0;
                return;
        }
        log_info("%u process(es) whose match gave up on a read were more than the %u the retry queue holds: "
                 "a walk of /proc looks for them, at least %llu s after the last one.",
                 w->gave_up_dropped, WATCHER_GAVE_UP_MAX, (unsigned long long) (w->gave_up_resync_gap_usec / 1000000));
        w->gave_up_dropped = 0;
        request_resync(w, w->gave_up_resync_gap_usec);
        if (w->n_gave_up > WATCHER_GAVE_UP_MAX / 2 && (w->gave_up_resync_gap_usec *= 2) > GAVE_UP_RESYNC_GAP_MAX_USEC)
                w->gave_up_resync_gap_usec = GAVE_UP_RESYNC_GAP_MAX_USEC;
}

static int watcher_on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        _cleanup_free_ pid_t *pids = NULL;
        uint64_t now = watcher_now_usec(w), next = 0;
        /* Batch: whatever falls due within a tenth of the interval is done now. */
        uint64_t slack = (uint64_t) w->params.reconcile_interval_ms * 100;
        size_t n = 0;

        w->timer_due_usec = 0;
        gave_up_followed(w);
        if (registry_pids(w->registry, &pids, &n) < 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                Entry *e = registry_get(w->registry, pids[i]);
                if (!e || !e->matched)
                        continue;
                if (e->next_reconcile_usec <= now + slack) {
                        if (!entry_reconcile(e, now, true))
                                continue;
                } else if (e->next_device_usec && e->next_device_usec <= now + 100 * 1000) {
                        if (!entry_alive(e)) {
                                entry_release(e, WATCHER_EXIT_EXITED);
                                continue;
                        }
                        entry_device_check(e);
                        entry_device_check_schedule(e, now);
                }
                if (registry_get(w->registry, pids[i]) == e && e->matched && (next == 0 || entry_due(e) < next))
                        next = entry_due(e);
        }
        if (next)
                watcher_timer_schedule(w, next);
        else
                (void) sd_event_source_set_enabled(w->timer, SD_EVENT_OFF); /* idle: no wake-ups */
        return 0;
}

/* Made once, with the watcher, and off until something falls due: the files below this
 * one (a match, a device-file retry) only set its time (watcher_timer_schedule()), and the
 * loop brings it here, where a process may be evaluated again. Not made by the first
 * schedule: that file would then name this handler, a call up. */
int watcher_reconcile_timer_new(Watcher *w) {
        int r;

        r = sd_event_add_time(w->event, &w->timer, CLOCK_MONOTONIC, 0, 50 * 1000, watcher_on_timer, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(w->timer, SD_EVENT_OFF); /* idle: no wake-ups */
        (void) sd_event_source_set_description(w->timer, "watcher-reconcile");
        return 0;
}

/* One walk of /proc: entries whose process is gone released, managed ones reconciled
 * (tick: as entry_reconcile() says), every other process evaluated. */
static void resync(Watcher *w, bool tick) {
        _cleanup_free_ pid_t *pids = NULL, *known = NULL;
        size_t n = 0, n_known = 0;
        uint64_t now = watcher_now_usec(w);
        int r;

        w->stats.resyncs++;
        r = tune_proc_list_pids(w->ctx, &pids, &n);
        if (r < 0) {
                log_warning_errno(r, "Failed to list processes for a resync: %m");
                return;
        }
        /* Entries whose process is gone. */
        if (registry_pids(w->registry, &known, &n_known) >= 0)
                for (size_t i = 0; i < n_known; i++)
                        if (!bsearch(&known[i], pids, n, sizeof *pids, watcher_cmp_pid)) {
                                Entry *e = registry_get(w->registry, known[i]);
                                if (e)
                                        entry_release(e, WATCHER_EXIT_EXITED);
                        }
        for (size_t i = 0; i < n; i++) {
                Entry *e = registry_get(w->registry, pids[i]);
                tune_proc_stat st;

                if (!e && !watcher_have_rules(w))
                        continue;
                if (tune_proc_read_stat(w->ctx, pids[i], &st) < 0) {
                        if (e)
                                entry_release(e, WATCHER_EXIT_EXITED);
                        continue;
                }
                if (st.flags & TUNE_PF_KTHREAD)
                        continue;
                if (e && !entry_same_process(e, &st)) {
                        entry_release(e, WATCHER_EXIT_PID_REUSED);
                        e = NULL;
                }
                if (e && e->matched) {
                        (void) entry_reconcile(e, now, tick);
                        continue;
                }
                if (e) {
                        /* Events were lost, an EXEC among them perhaps, and the name can
                         * be the new program's already (a FORK read after the exec took
                         * it): evaluate every candidate again, not only renamed ones. */
                        watcher_evaluate(w, e, &st, NULL, EVAL_SCAN);
                        continue;
                }
                /* A child of a known process inherits its parent's environment capture. */
                Entry *parent = st.ppid > 0 ? registry_get(w->registry, st.ppid) : NULL;
                if (parent && (parent->matched || tune_env_capture_usable(&parent->p.env))) {
                        e = entry_new(w, st.pid, st.start_time, st.ppid, parent->budget_uid, false, false);
                        if (e && parent->p.env.state == TUNE_ENV_READ &&
                            tune_env_capture_copy(&e->p.env, &parent->p.env) >= 0) {
                                if (!e->p.env.inherited)
                                        e->p.env.from_pid = parent->p.pid;
                                e->p.env.inherited = true;
                        }
                }
                watcher_evaluate(w, e, &st, NULL, EVAL_SCAN);
        }
}

void watcher_resync(Watcher *w) {
        resync(w, true);
}

/* Resyncs after overruns come at most this often, counted from the end of the last one: a
 * user who forks fast enough to overflow the connector socket again and again must not
 * make the daemon walk /proc without end (a walk of thousands of processes takes a good
 * part of a second, and its own events overflow the socket again). Overruns in between are
 * coalesced into one resync when the gap is over: never dropped, as the events they lost
 * may be the only word of a process that started after the last walk listed /proc. */
#define RESYNC_MIN_GAP_USEC (1000 * 1000ULL)

static void resync_now(Watcher *w) {
        struct timespec ts;

        w->resync_pending = false;
        resync(w, false);
        /* The clock now, not the loop's (sd_event_now() is when this iteration began). */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        w->last_resync_usec = (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static int on_resync_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        resync_now(userdata);
        return 0;
}

static void request_resync(Watcher *w, uint64_t min_gap_usec) {
        uint64_t now = watcher_now_usec(w), gap = min_gap_usec > RESYNC_MIN_GAP_USEC ? min_gap_usec : RESYNC_MIN_GAP_USEC;
        int r;

        if (w->resync_pending) {
                w->stats.resyncs_coalesced++;
                return;
        }
        if (w->last_resync_usec == 0 || now >= w->last_resync_usec + gap) {
                resync_now(w);
                return;
        }
        w->stats.resyncs_coalesced++;
        w->resync_pending = true;
        if (!w->resync_timer) {
                r = sd_event_add_time(w->event, &w->resync_timer, CLOCK_MONOTONIC, w->last_resync_usec + gap, 10 * 1000,
                                      on_resync_timer, w);
                if (r < 0) {
                        log_warning_errno(r, "Failed to arm the resync timer, resyncing now: %m");
                        resync_now(w);
                        return;
                }
                (void) sd_event_source_set_description(w->resync_timer, "watcher-resync");
        } else {
                (void) sd_event_source_set_time(w->resync_timer, w->last_resync_usec + gap);
                (void) sd_event_source_set_enabled(w->resync_timer, SD_EVENT_ONESHOT);
        }
}

void watcher_on_lost(Connector *c, void *userdata) {
        Watcher *w = userdata;

        w->stats.overruns++;
        request_resync(w, RESYNC_MIN_GAP_USEC);
}
