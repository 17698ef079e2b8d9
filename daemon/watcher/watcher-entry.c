/* SPDX-License-Identifier: GPL-2.0-only */
/* The process watcher's entries: one per process it knows (managed, or a candidate kept
 * for its environment), and whether that process still lives (its pidfd, or without one
 * its start time). Releasing an entry is the consumer's last callback for it. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"
#include "watcher-internal.h"

void entry_clear_threads(Entry *e) {
        free(e->p.threads);
        e->p.threads = NULL;
        e->p.n_threads = 0;
}

void entry_drop_pidfd(Entry *e) {
        e->exit_source = sd_event_source_disable_unref(e->exit_source);
        if (e->p.pidfd >= 0)
                close(e->p.pidfd);
        e->p.pidfd = -1;
}

void entry_drop_status(Entry *e) {
        free(e->p.status);
        e->p.status = NULL;
}

void entry_free(Entry *e) {
        if (!e)
                return;
        if (registry_get(e->w->registry, e->p.pid) == e)
                (void) registry_remove(e->w->registry, e->p.pid);
        if (e->matched)
                e->w->stats.managed--;
        else
                e->w->stats.candidates--;
        watcher_budget_remove(e->w, e->budget_uid);
        entry_drop_pidfd(e);
        entry_clear_threads(e);
        free(e->p.exe);
        free(e->p.cmdline);
        entry_drop_status(e);
        tune_attribution_done(&e->p.attribution);
        tune_env_capture_done(&e->p.env);
        free(e);
}

/* Free a mere candidate to make room for a process a rule matches (watcher_budget_victim()
 * says which). */
static int entry_evict(Watcher *w, const uid_t *of_uid) {
        Entry *victim;
        int r;

        r = watcher_budget_victim(w, of_uid, &victim);
        if (r < 0)
                return r;
        w->stats.evicted++;
        log_debug("evicted candidate pid=%d uid=%u to make room for a match", (int) victim->p.pid,
                  (unsigned) victim->budget_uid);
        entry_free(victim);
        return 0;
}

Entry *entry_new(Watcher *w, pid_t pid, uint64_t start_time, pid_t ppid, uid_t uid, bool for_match, bool vouched) {
        Entry *e;

        /* A user's share of entries bounds its matches too (one user starting thousands of
         * processes a rule takes must not fill the table against everyone else's): a
         * match may take the place of one of its user's own candidates, not more. Root's
         * matches are not counted against it: root needs no npu-tuned to take the host. */
        if (watcher_budget_count(w, uid) >= watcher_budget_per_uid(w) &&
            (!for_match || (uid != 0 && entry_evict(w, &uid) < 0))) {
                w->stats.skipped_budget++;
                if (for_match)
                        watcher_budget_warn_refused(w, uid, pid);
                return NULL;
        }
        if (w->stats.candidates >= w->params.max_managed && (!for_match || (!vouched && entry_evict(w, NULL) < 0))) {
                w->stats.skipped_full++;
                return NULL;
        }
        e = tune_alloc0(1, sizeof *e);
        if (!e)
                return NULL;
        e->w = w;
        e->p.pid = pid;
        e->p.start_time = start_time;
        e->p.ppid = ppid;
        e->p.pidfd = -1;
        e->p.rank = -1;
        e->p.uid = uid;
        e->budget_uid = uid;
        e->p.attribution.rank = -1;
        e->overruns_at_start = w->stats.overruns;
        if (watcher_budget_add(w, uid) < 0) {
                free(e);
                return NULL;
        }
        if (registry_put(w->registry, pid, e) < 0) {
                watcher_budget_remove(w, uid);
                free(e);
                return NULL;
        }
        w->stats.candidates++;
        return e;
}

/* Public (watcher.h), but here with the release that logs it: the lowest file that needs
 * the names, so that no file calls up for them. */
static const char *const exit_reason_names[_WATCHER_EXIT_REASON_MAX] = {
        [WATCHER_EXIT_EXITED] = "exited",
        [WATCHER_EXIT_UNMATCHED] = "unmatched",
        [WATCHER_EXIT_PID_REUSED] = "pid-reused",
        [WATCHER_EXIT_STOP] = "stop",
        [WATCHER_EXIT_RELEASED] = "released",
};

const char *watcher_exit_reason_to_string(watcher_exit_reason r) {
        return r >= 0 && r < _WATCHER_EXIT_REASON_MAX ? exit_reason_names[r] : NULL;
}

static void log_release(Entry *e, watcher_exit_reason reason) {
        log_debug("gone pid=%d start=%" PRIu64 " reason=%s", (int) e->p.pid, e->p.start_time,
                  watcher_exit_reason_to_string(reason));
}

/* Stop managing: the consumer's last callback. The entry stays (as a candidate) only for
 * UNMATCHED; otherwise it is freed. */
void entry_unmatch(Entry *e, watcher_exit_reason reason) {
        Watcher *w = e->w;

        if (!e->matched)
                return;
        log_release(e, reason);
        w->stats.exited++;
        if (w->ops.on_process_exit)
                w->ops.on_process_exit(w, &e->p, reason, w->userdata);
        e->p.userdata = NULL;
        e->matched = false;
        e->last_comm_eval_usec = 0; /* a candidate again: its next rename counts at once */
        w->stats.managed--;
        watcher_budget_room_freed(w);
        w->stats.candidates++;
        entry_drop_pidfd(e);
        entry_clear_threads(e);
        e->p.rule = NULL;
        e->next_device_usec = 0;
}

void entry_release(Entry *e, watcher_exit_reason reason) {
        entry_unmatch(e, reason);
        entry_free(e);
}

/* A pending entry after lost events: the stream no longer vouches for its pid, but its
 * FORK's kernel time still tells. The child that FORK announced began before the event
 * (the kernel stamps its start, then sends the event); a process that took the pid after
 * a lost EXIT began after it. stat's start time counts clock ticks of CLOCK_BOOTTIME, the
 * event's time ns of CLOCK_MONOTONIC: they differ by the time spent suspended, read now.
 * Within one tick (10 ms) the two cannot be told apart, and a pid reused that soon would
 * need the whole pid space to wrap meanwhile. Without this, a storm's overrun let go of
 * every child kept for the environment it inherited, and a worker that had wiped its own
 * by the time it was taken anew went unattributed (vm-suite's storm scenario). */
static bool entry_started_before_its_fork_event(const Entry *e, const tune_proc_stat *st) {
        const long tck = sysconf(_SC_CLK_TCK);
        uint64_t mono_usec = 0, boot_usec = 0;

        /* The loop's own reading of both clocks, taken together at this iteration. */
        if (e->fork_timestamp_ns == 0 || tck <= 0 || sd_event_now(e->w->event, CLOCK_MONOTONIC, &mono_usec) < 0 ||
            sd_event_now(e->w->event, CLOCK_BOOTTIME, &boot_usec) < 0)
                return false;
        uint64_t fork_boot_ns = e->fork_timestamp_ns + (boot_usec > mono_usec ? (boot_usec - mono_usec) * 1000 : 0);
        return st->start_time <= fork_boot_ns / (1000000000u / (uint64_t) tck);
}

bool entry_same_process(Entry *e, const tune_proc_stat *st) {
        if (!e->start_pending)
                return e->p.start_time == st->start_time;
        if (e->overruns_at_start != e->w->stats.overruns && !entry_started_before_its_fork_event(e, st))
                return false;
        e->p.start_time = st->start_time;
        e->start_pending = false;
        return true;
}

bool entry_settle_start(Entry *e) {
        tune_proc_stat st;

        return !e->start_pending || (tune_proc_read_stat(e->w->ctx, e->p.pid, &st) >= 0 && entry_same_process(e, &st));
}

/* 1: alive and still the same process, 0: gone. */
int entry_alive(Entry *e) {
        if (e->p.pidfd >= 0) {
                int r = tune_pidfd_exited(e->p.pidfd);
                if (r < 0)
                        return 1; /* cannot tell: assume alive, the start time check follows elsewhere */
                return r == 0;
        }
        tune_proc_stat st;
        return tune_proc_read_stat(e->w->ctx, e->p.pid, &st) >= 0 && entry_same_process(e, &st);
}

/* The entry for pid if it is a live managed process; a dead one is released. */
Entry *watcher_lookup_managed(Watcher *w, pid_t pid) {
        Entry *e = registry_get(w->registry, pid);

        if (!e || !e->matched)
                return NULL;
        if (!entry_alive(e)) {
                entry_release(e, WATCHER_EXIT_EXITED);
                return NULL;
        }
        return e;
}

/* watcher_lookup_managed() for an event about pid (a thread's FORK, a rename), with the
 * event stream as the witness where it can be one: events come in the order the kernel
 * sent them, and a process's main thread sends its EXIT before the pid is free for a
 * successor, whose events come after it. So while no event was lost since the entry's
 * start time was read and that EXIT has not come, pid is still this process and its
 * pidfd need not be asked (a poll per thread event). */
Entry *watcher_lookup_managed_event(Watcher *w, pid_t pid) {
        Entry *e = registry_get(w->registry, pid);

        if (!e || !e->matched)
                return NULL;
        if (e->overruns_at_start == w->stats.overruns && !e->leader_exited)
                return e;
        return watcher_lookup_managed(w, pid);
}

static int entry_on_pidfd(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Entry *e = userdata;

        entry_release(e, WATCHER_EXIT_EXITED);
        return 0;
}

/* Release e when its pidfd says the process is gone (once watched, until released). */
void entry_watch_pidfd(Entry *e) {
        int r;

        if (e->exit_source || e->p.pidfd < 0)
                return;
        r = sd_event_add_io(e->w->event, &e->exit_source, e->p.pidfd, EPOLLIN, entry_on_pidfd, e);
        if (r < 0)
                log_debug_errno(r, "Failed to watch pidfd of %d, relying on exit events: %m", (int) e->p.pid);
}
