/* SPDX-License-Identifier: GPL-2.0-only */
/* The affinity record: originals persisted before the first pin, and the ready record
 * that makes a process's first record one write. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "npu-tuned/state-dir.h"
#include "placement-internal.h"

/* The in-memory originals (pp->originals) are what SIGTERM restores; the record in the state
 * directory is what `npu-tuned --restore` and the next start restore after a SIGKILL.
 * Writing it before every sched_setaffinity would mean one fsync'ed file per thread in
 * the burst at match time, so it is written before a set only when the record would no
 * longer describe the thread after it:
 *   - the process has no record yet (its first pin);
 *   - the thread is in the record with an applied set that does not hold the new one, or
 *     another original (a re-plan);
 *   - the thread is not in the record and either gets a set outside every set the record
 *     lists (the plan's role sets and the applied ones: tune_affinity_restore() recognises
 *     threads missing from the record by them), or has an original other than the
 *     process's (it had re-bound itself before we came: its own original would be lost).
 * So a placement writes once, before the main thread's pin: every thread placed after
 * gets one of the recorded role sets. A re-plan that changes them writes again, before
 * the first thread moves. Exited threads stay in the record until the next write
 * (harmless: restore skips threads that are gone).
 * A rule with restore_on_stop: false restores nothing, so nothing is written for it at
 * all (and a record left from when its rule said true is removed). The write is not
 * fsync'ed: see affinity-record.h for why that loses nothing on SIGKILL. */

static bool record_needs_write(const placed_process *pp, const tune_affinity_entry *live, const tune_cpuset *cpus) {
        const tune_affinity_entry *rec;
        const tune_cpuset *process_original;

        if (!pp->recorded || pp->record.restore_on_stop != pp->restore_on_stop)
                return true;
        rec = tune_affinity_originals_find(&pp->record.originals, live->tid);
        if (rec)
                return !tune_cpuset_is_subset(cpus, &rec->applied) || !tune_cpuset_equal(&rec->original, &live->original);
        process_original = tune_affinity_originals_process_original(&pp->record.originals);
        return !tune_affinity_originals_cover(&pp->record.originals, cpus) || !process_original ||
               !tune_cpuset_equal(process_original, &live->original);
}

/* The plan's role sets, listed in the record so that threads placed after it on one of
 * them need no write of their own. */
static int record_set_plan_sets(const placed_process *pp, tune_affinity_originals *j) {
        const tune_plan *pl = tune_placer_get(pp->owner->placer, pp->key);

        if (!pl || pl->action != TUNE_PLAN_PLACE)
                return 0;
        for (unsigned i = 0; i < _TUNE_ROLE_MAX && j->n_sets < TUNE_AFFINITY_SETS_MAX; i++) {
                bool dup = tune_cpuset_is_empty(&pl->role_cpus[i]);
                for (unsigned k = 0; k < j->n_sets && !dup; k++)
                        dup = tune_cpuset_equal(&j->sets[k], &pl->role_cpus[i]);
                if (dup)
                        continue;
                int r = tune_cpuset_copy(&j->sets[j->n_sets], &pl->role_cpus[i]);
                if (r < 0)
                        return r;
                j->n_sets++;
        }
        return 0;
}

/* What the process was attributed from, in the same write (placement-attribution.c): no
 * second file to write and remove for each placed process. Left out when it cannot be
 * had: then its own file keeps it (attribution_keep_soon()). */
static void record_set_attribution(const placed_process *pp, tune_affinity_record *rec) {
        (void) attribution_text(pp->owner, pp->process, &rec->attribution); /* NULL on failure */
}

void ready_drop(Placement *p) {
        if (p->ready_fd < 0)
                return;
        if (p->state_dfd >= 0)
                (void) tune_affinity_record_drop_ready_at(p->state_dfd);
        close(p->ready_fd);
        p->ready_fd = -EBADF;
        p->ready_pid = 0;
}

/* Write pp's record in the held state directory (first: its first record, into the ready
 * record when there is one), walking to it anew once when the held one fails. */
static int record_save(Placement *p, const tune_affinity_record *rec, bool first) {
        int r = -EBADF;

        if (first && p->ready_fd >= 0 && p->state_dfd >= 0) {
                r = tune_affinity_record_fill_ready(p->ready_fd, rec);
                if (r >= 0) {
                        p->ready_pid = rec->originals.pid;
                        return 0;
                }
                /* Too long for one write, or the write failed (the file is left empty):
                 * the create way. */
        }
        for (unsigned attempt = 0; attempt < 2; attempt++) {
                if (p->state_dfd < 0)
                        p->state_dfd = tune_state_dir_open(p->state_dir, true);
                if (p->state_dfd < 0)
                        return p->state_dfd;
                r = tune_affinity_record_save_at(p->state_dfd, rec, first);
                if (r >= 0)
                        return r;
                ready_drop(p);
                close(p->state_dfd);
                p->state_dfd = -EBADF;
        }
        return r;
}

/* After the set that pp's first record was for: the ready record it was written into
 * becomes pp's (a rename), and a new one is made for the next process; or, after a first
 * record written the create way, the first ready record is made. Neither sits before a pin
 * of a process that has no record yet. */
static void ready_after_set(Placement *p, placed_process *pp) {
        int r;

        if (p->ready_pid > 0) {
                pid_t pid = p->ready_pid;

                p->ready_pid = 0;
                r = tune_affinity_record_commit_ready_at(p->state_dfd, pid);
                if (r < 0) {
                        /* It holds pp's record still: written anew under its own name
                         * first, then emptied and removed (a filled one left behind would
                         * be adopted over a newer record at the next start). */
                        log_warning_errno(r, "Failed to rename the ready affinity record to that of pid %d in %s, "
                                             "writing it the create way from now on: %m",
                                          pid, p->state_dir);
                        if (tune_affinity_record_save_at(p->state_dfd, &pp->record, false) >= 0 &&
                            ftruncate(p->ready_fd, 0) >= 0)
                                (void) tune_affinity_record_drop_ready_at(p->state_dfd);
                        p->ready_failed = true;
                }
                close(p->ready_fd);
                p->ready_fd = -EBADF;
        }
        if (p->ready_fd >= 0 || p->ready_failed || p->state_dfd < 0 || !pp->recorded)
                return;
        r = tune_affinity_record_ready_at(p->state_dfd);
        if (r < 0) {
                log_debug_errno(r, "Failed to make a ready affinity record in %s, writing first records the create "
                                   "way: %m",
                                p->state_dir);
                p->ready_failed = true;
                return;
        }
        p->ready_fd = r;
}

/* Persist what thread tid of pp will have after sched_setaffinity(cpus): called by the
 * recording backend right before it. An error refuses the set (no unrecorded pin). */
static int record_before_set(placed_process *pp, pid_t tid, const tune_cpuset *cpus) {
        Placement *p = pp->owner;
        const tune_affinity_entry *live = tune_affinity_originals_find(&pp->originals, tid);
        tune_affinity_record next = { .restore_on_stop = pp->restore_on_stop };
        tune_affinity_entry *e;
        int r;

        if (!live)
                return -EINVAL; /* affinity.c records a thread before it sets it */
        if (!pp->restore_on_stop) {
                record_remove(p, pp);
                return 0;
        }
        if (!record_needs_write(pp, live, cpus))
                return 0;
        next.boot_id = strdup(p->boot_id ? p->boot_id : "");
        if (!next.boot_id)
                return -ENOMEM;
        /* The thread's entry says the set it has now (empty if we never set it) or cpus:
         * a SIGKILL between this write and the set leaves it on the former, and restore
         * gives back only what it finds inside a recorded applied set. The next write
         * narrows it to what was set by then. */
        r = tune_affinity_originals_copy(&next.originals, &pp->originals);
        if (r >= 0) {
                e = (tune_affinity_entry *) tune_affinity_originals_find(&next.originals, tid);
                r = tune_cpuset_or(&e->applied, cpus);
        }
        if (r >= 0)
                r = record_set_plan_sets(pp, &next.originals);
        if (r >= 0)
                record_set_attribution(pp, &next);
        if (r >= 0)
                r = record_save(p, &next, !pp->recorded);
        if (r < 0) {
                if (!p->record_error_logged)
                        log_warning_errno(r, "Failed to record the original CPU affinities of pid %d in %s: %m; its "
                                             "threads are left as they are.",
                                          pp->pid, p->state_dir);
                p->record_error_logged = true;
                tune_affinity_record_done(&next);
                return r;
        }
        tune_affinity_record_done(&pp->record);
        pp->record = next;
        pp->recorded = true;
        pp->attribution_in_record = next.attribution != NULL;
        /* Its file, if it has one, is older than the record now: gone, so that a restart
         * takes the record's (restore.c adopts it only where there is no file). */
        if (pp->attribution_in_record)
                attribution_forget(p, pp);
        return 0;
}

static int recording_get(void *userdata, pid_t tid, tune_cpuset *ret) {
        placed_process *pp = userdata;
        return placement_get_affinity(pp->owner, tid, ret);
}

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static int recording_set(void *userdata, pid_t tid, const tune_cpuset *cpus) {
        placed_process *pp = userdata;
        int r = record_before_set(pp, tid, cpus);
        if (r < 0)
                return r;
        r = pp->owner->affinity->set(pp->owner->affinity->userdata, tid, cpus);
        if (r >= 0)
                pp->owner->last_set_ns = now_ns();
        ready_after_set(pp->owner, pp);
        return r;
}

tune_affinity_backend recording_backend(placed_process *pp) {
        return (tune_affinity_backend){ .get = recording_get, .set = recording_set, .userdata = pp };
}

void record_remove(Placement *p, placed_process *pp) {
        int r;

        if (!pp->recorded)
                return;
        r = p->state_dfd >= 0 ? tune_affinity_record_delete_at(p->state_dfd, pp->pid)
                              : tune_affinity_record_delete(p->state_dir, pp->pid);
        if (r < 0)
                log_warning_errno(r, "Failed to remove the affinity record of pid %d from %s: %m", pp->pid,
                                  p->state_dir);
        pp->recorded = false;
        pp->attribution_in_record = false;
}
