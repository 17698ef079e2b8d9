/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine-binding.h"
#include "events.h"
#include "log.h"
#include "npu-tuned/affinity.h"
#include "npu-tuned/affinity-record.h"
#include "npu-tuned/memmove.h"
#include "npu-tuned/numa-maps.h"
#include "npu-tuned/state-dir.h"
#include "placement.h"
#include "reaction-time.h"
#include "process-cpuset.h"

/* Memory is moved in steps of this period, rate_mib_s * period each. */
#define MIGRATE_STEP_USEC (100 * 1000ULL)
/* Without a rate limit, a step moves at most this much (some tens of ms of copying), and
 * the loop runs between steps. */
#define UNLIMITED_STEP_KIB (128 * 1024ULL)
#define UNLIMITED_STEP_GAP_USEC 1000ULL

struct Placement {
        sd_event *event;
        const tune_ctx *ctx;
        tune_topology *topology;
        const char *state_dir;
        /* The state directory, held open for the affinity records once a walk from "/"
         * has accepted it (tune_state_dir_open()): a first record is then one write (into
         * the ready record, or a create and a write), its removal one unlink. < 0 until
         * then, and again after a failed write, so that the next one walks anew (a
         * directory removed meanwhile is recreated). */
        int state_dfd;
        /* The ready record (affinity-record.h), made after a pin for the next process's
         * first record, which is then one pwrite() before that process's first pin: < 0
         * when there is none (before the first record, after a failure). ready_pid: the
         * process it was just filled for, renamed to that one's record right after its set
         * (0: empty). */
        int ready_fd;
        pid_t ready_pid;
        bool ready_failed;
        const tune_accels *accels; /* of the current policy load */
        bool dry_run;
        Watcher *watcher;
        tune_placer *placer;
        char *boot_id;          /* for the affinity records */
        bool record_error_logged;
        const event_sink *events; /* where events go besides the log; may be NULL */
        placement_stats stats;
        uint64_t last_set_ns;   /* CLOCK_MONOTONIC of the last sched_setaffinity */
        reaction_stats reactions;
};

/* Per managed process: managed_process.userdata. */
typedef struct placed_process {
        Placement *owner;
        pid_t pid;
        uint64_t key;
        tune_affinity_originals originals;
        /* What STATE_DIR/affinity-PID.json holds (see record_before_set()). */
        tune_affinity_record record;
        bool recorded;
        bool restore_on_stop;   /* the rule's, for the record */
        tune_affinity_backend backend; /* the kernel's, recording before each set */
        sd_event_source *memory_timer; /* the settle delay, then migration steps */
        tune_memmove *memmove;
        uint64_t matched_usec;
        bool memory_done;
        double locality;        /* % of its memory on its memory node(s) when last verified; < 0: not measured */
        bool drift_logged;
        bool refusal_logged;
        process_cpuset cpuset;  /* its cgroup's, as last read (match, reconcile) */
        bool cpuset_error_logged;
        /* Who binds its threads (daemon/binding.h): only BINDER_DAEMON pins. */
        binder binder;
        char binding_why[192];
        tune_cpuset start_mask;        /* BINDER_WATCHING: the main thread's mask at match, before anyone placed it */
        sd_event_source *binding_timer; /* BINDER_WATCHING: the watch window */
        uint64_t watch_until_usec;
        char *engine_report;           /* last report of what the engine did (logged on change) */
} placed_process;

#define BINDING_POLL_USEC (100 * 1000ULL)

uint64_t placement_key(pid_t pid, uint64_t start_time) {
        /* pid_max is at most 2^22. */
        return (start_time << 22) | ((uint64_t) pid & ((UINT64_C(1) << 22) - 1));
}

static pid_t key_pid(uint64_t key) {
        return (pid_t) (key & ((UINT64_C(1) << 22) - 1));
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static void placed_process_free(placed_process *pp) {
        if (!pp)
                return;
        sd_event_source_disable_unref(pp->memory_timer);
        sd_event_source_disable_unref(pp->binding_timer);
        tune_cpuset_done(&pp->start_mask);
        free(pp->engine_report);
        tune_memmove_free(pp->memmove);
        tune_affinity_originals_done(&pp->originals);
        tune_affinity_record_done(&pp->record);
        process_cpuset_done(&pp->cpuset);
        free(pp);
}

const tune_plan *placement_get(const Placement *p, const managed_process *mp) {
        return tune_placer_get(p->placer, placement_key(mp->pid, mp->start_time));
}

int placement_explain_plan(const Placement *p, const managed_process *mp, tune_plan *ret) {
        return tune_placer_explain(p->placer, placement_key(mp->pid, mp->start_time), ret);
}

double placement_locality(const managed_process *mp) {
        const placed_process *pp = mp->userdata;
        return pp ? pp->locality : -1;
}

void placement_get_stats(const Placement *p, placement_stats *ret) {
        *ret = p->stats;
}

/* The managed process behind a key, if it is still that process. */
static managed_process *find_process(Placement *p, uint64_t key) {
        managed_process *mp = watcher_find(p->watcher, key_pid(key));
        if (!mp || !mp->userdata || ((placed_process *) mp->userdata)->key != key)
                return NULL;
        return mp;
}

static void log_placement(const Placement *p, const managed_process *mp, const tune_plan *pl, bool dry_run) {
        _cleanup_free_ char *pool = NULL, *control = NULL, *compute = NULL, *mem = NULL, *accels = NULL;
        const placed_process *pp = mp->userdata;
        _cleanup_(tune_plan_done) tune_plan explained = {};
        char label[200];

        /* The placer plans without reasons (new_placer()): where this says them, plan
         * again with them. */
        if (pl->no_reasons && (pl->action != TUNE_PLAN_PLACE || pl->cpuset_far || log_get_max_level() >= LOG_DEBUG) &&
            tune_placer_explain(p->placer, pp->key, &explained) >= 0)
                pl = &explained;

        (void) tune_attribution_format_accels(&mp->attribution, &accels);
        process_cpuset_label(&pp->cpuset, label, sizeof label);
        if (pl->action != TUNE_PLAN_PLACE) {
                log_info("Not placing pid %d%s (rule \"%s\", accelerators %s from %s): %s.", mp->pid, label, mp->rule->name,
                         accels && *accels ? accels : "none", tune_attribution_source_to_string(mp->attribution.source),
                         pl->n_reasons > 0 ? pl->reasons[pl->n_reasons - 1] : tune_plan_action_to_string(pl->action));
                return;
        }
        (void) tune_cpuset_format_list(&pl->pool, &pool);
        (void) tune_cpuset_format_list(tune_plan_role_cpus(pl, TUNE_ROLE_CONTROL), &control);
        (void) tune_cpuset_format_list(tune_plan_role_cpus(pl, TUNE_ROLE_COMPUTE), &compute);
        (void) tune_cpuset_format_list(&pl->mem_nodes, &mem);
        /* Placing for real: the event reports it (events.c), once pinned. */
        if (dry_run)
                log_info("Dry run: would place pid %d%s (rule \"%s\", accelerators %s from %s): CPUs %s, control %s, "
                         "compute %s, memory %s.",
                         mp->pid, label, mp->rule->name, accels && *accels ? accels : "none",
                 tune_attribution_source_to_string(mp->attribution.source), pool ? pool : "?",
                 control && *control ? control : "-", compute && *compute ? compute : "-",
                 mem && *mem ? mem : "left where it is");
        for (unsigned i = 0; i < pl->n_reasons; i++)
                log_debug("  pid %d: %s", mp->pid, pl->reasons[i]);
        if (pl->cpuset_far)
                log_notice("pid %d%s: its cpuset has no CPU near its accelerator(s); placed inside it. %s", mp->pid, label,
                           pl->n_reasons > 0 ? "npu-tuned --explain PID says how to fix it." : "");
}

/* Read mp's cgroup cpuset again. 1: it differs from what the placer plans with. */
static int refresh_cpuset(Placement *p, managed_process *mp, placed_process *pp) {
        process_cpuset now = {};
        int r;

        r = process_cpuset_read(p->ctx, p->topology, mp->pid, &now);
        if (r == -ESRCH)
                return 0;
        if (r < 0) {
                if (!pp->cpuset_error_logged)
                        log_warning_errno(r, "Failed to read the cgroup cpuset of pid %d, planning without it: %m", mp->pid);
                pp->cpuset_error_logged = true;
        }
        bool same = now.restricted == pp->cpuset.restricted &&
                    (!now.restricted || tune_plan_cpuset_equal(&now.plan, &pp->cpuset.plan));
        process_cpuset_done(&pp->cpuset);
        pp->cpuset = now;
        return !same;
}

/* ---- the affinity record: originals persisted before the first pin ----
 *
 * The in-memory originals (pp->originals) are what SIGTERM restores; the record in the state
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

static void record_remove(Placement *p, placed_process *pp);

/* The ready record goes (its directory is walked anew, the daemon stops). */
static void ready_drop(Placement *p) {
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
        return 0;
}

static int recording_get(void *userdata, pid_t tid, tune_cpuset *ret) {
        return tune_affinity_backend_kernel.get(tune_affinity_backend_kernel.userdata, tid, ret);
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
        r = tune_affinity_backend_kernel.set(tune_affinity_backend_kernel.userdata, tid, cpus);
        if (r >= 0)
                pp->owner->last_set_ns = now_ns();
        ready_after_set(pp->owner, pp);
        return r;
}

/* ---- reaction times: the event's kernel timestamp to the last set made for it ---- */

/* Call before handling an event; pass what it returns to reaction_end(). */
static uint64_t reaction_begin(const Placement *p) {
        return p->last_set_ns;
}

static void reaction_end(Placement *p, reaction_kind kind, pid_t pid, uint64_t set_before) {
        uint64_t ts = p->watcher ? watcher_event_timestamp_ns(p->watcher) : 0;
        uint64_t began = p->watcher ? watcher_event_handling_ns(p->watcher) : 0;

        if (ts == 0 || p->last_set_ns == set_before || p->last_set_ns < ts)
                return; /* not from an event (a scan), or nothing was set */
        if (began < ts || began > p->last_set_ns)
                began = ts; /* not taken: all of it counts as handling */
        reaction_stats_add(&p->reactions, kind, p->last_set_ns - ts, p->last_set_ns - began);
        log_debug("pid %d: %s placed %llu us after the kernel's event, %llu us after its handling began.", pid,
                  reaction_kind_to_string(kind), (unsigned long long) (p->last_set_ns - ts) / 1000,
                  (unsigned long long) (p->last_set_ns - began) / 1000);
}

const reaction_stats *placement_get_reactions(const Placement *p) {
        return &p->reactions;
}

static void record_remove(Placement *p, placed_process *pp) {
        int r;

        if (!pp->recorded)
                return;
        r = p->state_dfd >= 0 ? tune_affinity_record_delete_at(p->state_dfd, pp->pid)
                              : tune_affinity_record_delete(p->state_dir, pp->pid);
        if (r < 0)
                log_warning_errno(r, "Failed to remove the affinity record of pid %d from %s: %m", pp->pid,
                                  p->state_dir);
        pp->recorded = false;
}

/* Pin every thread of mp by role. */
static void apply_process(Placement *p, managed_process *mp) {
        placed_process *pp = mp->userdata;
        const tune_plan *pl = tune_placer_get(p->placer, pp->key);
        tune_affinity_stats stats = {};
        int r;

        /* Only when npu-tuned binds (daemon/binding.h): never two binders on one task. */
        if (!pl || pp->binder != BINDER_DAEMON)
                return;
        if (pl->action != TUNE_PLAN_PLACE) {
                /* Placed before and not now (e.g. an unverified claim whose CPUs a verified
                 * one took): it must not keep CPUs that are someone else's now. */
                if (pp->originals.n > 0) {
                        uint64_t start_time = pp->originals.start_time;
                        r = tune_affinity_restore(p->ctx, NULL, &pp->originals, &stats);
                        if (r < 0 && r != -ESRCH)
                                log_warning_errno(r, "Failed to give pid %d its original CPU affinity back: %m", mp->pid);
                        else
                                log_info("pid %d is no longer placed: gave %u thread(s) their original CPU affinity back.",
                                         mp->pid, stats.set);
                        tune_affinity_originals_done(&pp->originals);
                        pp->originals.start_time = start_time;
                        record_remove(p, pp);
                }
                return;
        }
        tune_thread_target target = { .plan = pl, .rule = mp->rule };
        pp->restore_on_stop = mp->rule->restore_on_stop;
        /* The watcher's thread list, not a listing of our own: it listed them when it took
         * the process on, and every thread started since has its FORK event queued, which
         * places it (on_thread_new). */
        _cleanup_free_ tune_affinity_known *known = calloc(mp->n_threads ? mp->n_threads : 1, sizeof *known);
        if (!known) {
                log_oom();
                return;
        }
        for (unsigned i = 0; i < mp->n_threads; i++)
                known[i] = (tune_affinity_known){ .tid = mp->threads[i].tid,
                                                  .comm = mp->threads[i].comm[0] ? mp->threads[i].comm : NULL };
        r = tune_affinity_apply_known(p->ctx, &pp->backend, mp->pid, mp->pidfd, known, mp->n_threads,
                                      tune_thread_target_choose, &target, &pp->originals, &stats);
        if (r == -ESRCH)
                return; /* gone: its exit event follows */
        if (r < 0)
                log_warning_errno(r, "Failed to set the CPU affinity of %u of the %u threads of pid %d, ignoring: %m",
                                  stats.failed, stats.seen, mp->pid);
        log_debug("pid %d: %u thread(s), %u pinned, %u already right, %u gone, %u walk(s).", mp->pid, stats.seen,
                  stats.set, stats.unchanged, stats.vanished, stats.rounds);
}

/* The placer changed other processes' CPUs: re-pin those. */
static void apply_changed(Placement *p, const tune_keys *changed) {
        for (unsigned i = 0; i < changed->n; i++) {
                managed_process *other = find_process(p, changed->keys[i]);
                if (other)
                        apply_process(p, other);
        }
}

static void verify_memory(Placement *p, managed_process *mp, const tune_plan *pl, const tune_memmove_stats *moved) {
        tune_numa_usage u = {};
        int r;

        r = tune_numa_maps_read(p->ctx, mp->pid, &u);
        if (r < 0) {
                if (r != -ESRCH)
                        log_warning_errno(r, "Failed to read numa_maps of pid %d: %m", mp->pid);
                return;
        }
        ((placed_process *) mp->userdata)->locality = tune_numa_usage_locality(&u, &pl->mem_nodes, false);
        log_info("Memory of pid %d: %.1f%% of %llu MiB on its memory node(s) (anonymous memory: %.1f%%); %llu page(s) could not move.",
                 mp->pid, tune_numa_usage_locality(&u, &pl->mem_nodes, false), (unsigned long long) (u.total_kib / 1024),
                 tune_numa_usage_locality(&u, &pl->mem_nodes, true), (unsigned long long) tune_memmove_stats_not_moved(moved));
        /* Pages the kernel's NUMA balancing has unmapped: move_pages(2) cannot move them, the
         * balancing moves each toward the node of the CPU that next touches it (docs/placement.md). */
        if (moved->hinted > 0)
                log_info("Memory of pid %d: %llu page(s) left where they are to the kernel's NUMA balancing, "
                         "which had unmapped them for a hinting fault (kernel.numa_balancing=1); they move when "
                         "next touched (host.numa_balancing: 0 in the policy leaves none such).",
                         mp->pid, (unsigned long long) moved->hinted);
        tune_numa_usage_done(&u);
}

static void memory_finish(Placement *p, managed_process *mp, placed_process *pp, const tune_plan *pl) {
        const tune_memmove_stats moved = *tune_memmove_get_stats(pp->memmove);

        pp->memory_done = true;
        p->stats.migrations++;
        pp->memory_timer = sd_event_source_disable_unref(pp->memory_timer);
        pp->memmove = tune_memmove_free(pp->memmove);
        verify_memory(p, mp, pl, &moved);
}

/* The settle delay is over, or a rate-limited migration has work left: move memory. */
static int on_memory_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        placed_process *pp = userdata;
        Placement *p = pp->owner;
        managed_process *mp = find_process(p, pp->key);
        const tune_plan *pl = tune_placer_get(p->placer, pp->key);
        const tune_policy_rule *rule;
        int r;

        if (!mp || !pl || pl->action != TUNE_PLAN_PLACE || tune_cpuset_is_empty(&pl->mem_nodes)) {
                pp->memory_timer = sd_event_source_disable_unref(pp->memory_timer);
                return 0;
        }
        rule = mp->rule;
        /* Always stepped, also without a rate limit: one migrate_pages() of tens of GiB
         * would hold the event loop past the watchdog (docs/trust.md). */
        if (!pp->memmove) {
                tune_memmove_params params = { .move_shared = rule->memory_shared, .move_file = rule->memory_shared };
                r = tune_memmove_new(p->ctx, mp->pid, &pl->mem_nodes, &params, &pp->memmove);
                if (r < 0) {
                        if (r != -ESRCH)
                                log_warning_errno(r, "Failed to plan the memory migration of pid %d, leaving it: %m", mp->pid);
                        pp->memory_timer = sd_event_source_disable_unref(pp->memory_timer);
                        return 0;
                }
                log_info("Moving %llu MiB of pid %d to node(s) at %u MiB/s (0: no limit, in steps)%s.",
                         (unsigned long long) (tune_memmove_get_stats(pp->memmove)->planned_kib / 1024), mp->pid,
                         rule->memory_rate_mib_s, rule->memory_shared ? ", shared pages too" : "");
        }
        r = tune_memmove_step(pp->memmove, rule->memory_rate_mib_s == 0 ? UNLIMITED_STEP_KIB
                                                                        : (uint64_t) rule->memory_rate_mib_s * 1024 *
                                                                                  MIGRATE_STEP_USEC / 1000000);
        if (r < 0 || watcher_check_process(p->watcher, mp) == 0) {
                if (r < 0 && r != -ESRCH)
                        log_warning_errno(r, "Failed to migrate the memory of pid %d, leaving the rest: %m", mp->pid);
                pp->memory_timer = sd_event_source_disable_unref(pp->memory_timer);
                pp->memmove = tune_memmove_free(pp->memmove);
                return 0;
        }
        if (r == 0) {
                memory_finish(p, mp, pp, pl);
                return 0;
        }
        r = sd_event_source_set_time_relative(s, rule->memory_rate_mib_s == 0 ? UNLIMITED_STEP_GAP_USEC : MIGRATE_STEP_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r < 0) {
                log_warning_errno(r, "Failed to re-arm the migration timer of pid %d: %m", mp->pid);
                pp->memory_timer = sd_event_source_disable_unref(pp->memory_timer);
        }
        return 0;
}

static void arm_memory(Placement *p, managed_process *mp, placed_process *pp, const tune_plan *pl) {
        int r;

        if (pp->memory_done || pp->memory_timer || !mp->rule->memory_migrate || pl->action != TUNE_PLAN_PLACE ||
            tune_cpuset_is_empty(&pl->mem_nodes))
                return;
        r = sd_event_add_time_relative(p->event, &pp->memory_timer, CLOCK_MONOTONIC,
                                       (uint64_t) mp->rule->memory_settle_delay_ms * 1000, 10 * 1000, on_memory_timer, pp);
        if (r < 0) {
                log_warning_errno(r, "Failed to arm the memory timer of pid %d, its memory stays where it is: %m", mp->pid);
                return;
        }
        (void) sd_event_source_set_description(pp->memory_timer, "memory-migration");
}

unsigned placement_resolve_accels(const tune_accels *all, const managed_process *mp, const tune_accel **ret,
                                  unsigned max) {
        unsigned n = 0;

        for (unsigned i = 0; i < mp->attribution.n_accels && n < max; i++) {
                const tune_accel *a = tune_accels_find(all, mp->attribution.accels[i].kind, mp->attribution.accels[i].index);
                if (a)
                        ret[n++] = a;
        }
        return n;
}

static bool placement_same(const tune_plan *a, const tune_plan *b) {
        if (a->action != b->action || !tune_cpuset_equal(&a->pool, &b->pool) || !tune_cpuset_equal(&a->mem_nodes, &b->mem_nodes))
                return false;
        for (tune_role r = 0; r < _TUNE_ROLE_MAX; r++)
                if (!tune_cpuset_equal(&a->role_cpus[r], &b->role_cpus[r]))
                        return false;
        return true;
}

/* (Re)plan mp with its current rule and accelerators, and apply the outcome. */
static void place(Placement *p, managed_process *mp) {
        placed_process *pp = mp->userdata;
        tune_keys changed = {};
        int r;

        /* Free memory only decides where memory of a rule that moves it goes (and the
         * other processes' homes were decided when they were placed). */
        if (mp->rule->memory_migrate)
                (void) tune_topology_refresh_memory(p->ctx, p->topology);
        (void) refresh_cpuset(p, mp, pp);
        const tune_plan *before = tune_placer_get(p->placer, pp->key);
        tune_plan old = {};
        bool had = before && tune_plan_copy(&old, before) >= 0;
        r = placement_set_process(p->placer, p->ctx, p->accels, mp, pp->key, &changed);
        if (r >= 0) {
                tune_keys more = {};
                r = tune_placer_set_cpuset(p->placer, pp->key, process_cpuset_for_plan(&pp->cpuset), &more);
                for (unsigned i = 0; r >= 0 && i < more.n; i++)
                        if (more.keys[i] != pp->key && !tune_keys_contain(&changed, more.keys[i]))
                                r = tune_keys_add(&changed, more.keys[i]);
                tune_keys_done(&more);
        }
        if (r < 0) {
                tune_plan_done(&old);
                tune_keys_done(&changed);
                log_warning_errno(r, "Failed to plan pid %d, leaving it alone: %m", mp->pid);
                return;
        }
        const tune_plan *pl = tune_placer_get(p->placer, pp->key);
        /* A re-plan that comes out the same (a reload, a retitle) is no news. */
        bool same = had && placement_same(&old, pl);
        tune_plan_done(&old);
        if (p->dry_run) {
                /* The plan is logged; nothing is pinned or moved. */
                if (same)
                        log_debug("pid %d planned again: its placement is unchanged.", mp->pid);
                else
                        log_placement(p, mp, pl, true);
                tune_keys_done(&changed);
                return;
        }
        /* Pin first, say so after: the threads the process starts meanwhile are the ones
         * that must be moved one by one. */
        apply_process(p, mp);
        if (same)
                log_debug("pid %d planned again: its placement is unchanged.", mp->pid);
        else
                log_placement(p, mp, pl, false);
        apply_changed(p, &changed);
        tune_keys_done(&changed);
        arm_memory(p, mp, pp, pl);
        if (pl->action == TUNE_PLAN_PLACE && !same) {
                p->stats.placements++;
                event_process_placed(p->events, mp, pl, pp->cpuset.container);
        }
        log_debug("pid %d placed %llu us after it was matched.", mp->pid,
                  (unsigned long long) (now_usec() - pp->matched_usec));
}

/* The engine binds: say what it did, checked against the plan, when it changes. */
static void report_engine(Placement *p, managed_process *mp, placed_process *pp) {
        const tune_plan *pl = tune_placer_get(p->placer, pp->key);
        _cleanup_cpuset_ tune_cpuset near = {};
        _cleanup_free_ char *report = NULL;

        if (pl)
                TUNE_CPUSET_FOREACH(node, &pl->home_nodes) {
                        const tune_node *n = tune_topology_node(p->topology, node);
                        if (n && tune_cpuset_or(&near, &n->cpus) < 0)
                                return;
                }
        if (binding_report(p->ctx, mp->pid, pl, &near, &report) < 0)
                return;
        if (pp->engine_report && streq(pp->engine_report, report))
                return;
        log_info("pid %d: %s.", mp->pid, report);
        free(pp->engine_report);
        pp->engine_report = TAKE_PTR(report);
}

static void step_back(Placement *p, managed_process *mp, placed_process *pp, pid_t tid, const tune_cpuset *mask,
                      const char *when) {
        _cleanup_free_ char *cpus = NULL;

        (void) tune_cpuset_format_list(mask, &cpus);
        snprintf(pp->binding_why, sizeof pp->binding_why, "its threads bind themselves (thread %d set CPUs %s %s)", tid,
                 cpus ? cpus : "?", when);
        pp->binder = BINDER_ENGINE;
        pp->binding_timer = sd_event_source_disable_unref(pp->binding_timer);
        log_notice("pid %d binds its own threads (thread %d set CPUs %s %s): npu-tuned steps back, bound by the engine.",
                   mp->pid, tid, cpus ? cpus : "?", when);
        report_engine(p, mp, pp);
}

static int on_binding_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        placed_process *pp = userdata;
        Placement *p = pp->owner;
        managed_process *mp = find_process(p, pp->key);
        _cleanup_cpuset_ tune_cpuset mask = {};
        pid_t tid = 0;

        if (!mp || pp->binder != BINDER_WATCHING) {
                pp->binding_timer = sd_event_source_disable_unref(pp->binding_timer);
                return 0;
        }
        if (binding_threads_moved(p->ctx, mp->pid, &pp->start_mask, &tid, &mask)) {
                step_back(p, mp, pp, tid, &mask, "right after start");
                return 0;
        }
        if (now_usec() >= pp->watch_until_usec) {
                pp->binding_timer = sd_event_source_disable_unref(pp->binding_timer);
                snprintf(pp->binding_why, sizeof pp->binding_why,
                         "no binding switch of a known engine, and its threads did not bind themselves within %u ms",
                         mp->rule->binding_watch_ms);
                pp->binder = BINDER_DAEMON;
                log_info("pid %d did not bind its threads within %u ms: npu-tuned pins them.", mp->pid,
                         mp->rule->binding_watch_ms);
                apply_process(p, mp);
                return 0;
        }
        if (sd_event_source_set_time_relative(s, BINDING_POLL_USEC) < 0 || sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) < 0)
                pp->binding_timer = sd_event_source_disable_unref(pp->binding_timer);
        return 0;
}

static void watch_binding(Placement *p, placed_process *pp, unsigned ms) {
        int r;

        pp->watch_until_usec = now_usec() + (uint64_t) ms * 1000;
        r = sd_event_add_time_relative(p->event, &pp->binding_timer, CLOCK_MONOTONIC, BINDING_POLL_USEC, 10 * 1000,
                                       on_binding_timer, pp);
        if (r < 0) {
                log_warning_errno(r, "Failed to watch pid %d for self-binding, pinning it now: %m", pp->pid);
                pp->binder = BINDER_DAEMON;
                return;
        }
        (void) sd_event_source_set_description(pp->binding_timer, "engine-binding-watch");
}

int placement_describe(const Placement *p, const managed_process *mp, struct json_object *j) {
        const placed_process *pp = mp->userdata;
        int r;

        if (!pp)
                return 0;
        r = process_cpuset_to_json(&pp->cpuset, j);
        if (r >= 0)
                r = binding_to_json(pp->binder, pp->binding_why, pp->binder == BINDER_ENGINE ? pp->engine_report : NULL, j);
        return r;
}

/* ---- the watcher's callbacks ---- */

static void on_process_matched(Watcher *w, managed_process *mp, void *userdata) {
        Placement *p = userdata;
        placed_process *pp;

        pp = calloc(1, sizeof *pp);
        if (!pp) {
                log_oom();
                return;
        }
        pp->owner = p;
        pp->pid = mp->pid;
        pp->key = placement_key(mp->pid, mp->start_time);
        pp->matched_usec = now_usec();
        pp->locality = -1;
        pp->originals.start_time = mp->start_time;
        pp->backend = (tune_affinity_backend){ .get = recording_get, .set = recording_set, .userdata = pp };
        mp->userdata = pp;
        pp->binder = binding_decide(mp, pp->binding_why, sizeof pp->binding_why);
        /* Only the watch window compares against it (on_binding_timer()); a process we pin
         * now has its mask read once more, as its original, right before its first pin. */
        if (pp->binder == BINDER_WATCHING)
                (void) tune_affinity_backend_kernel.get(tune_affinity_backend_kernel.userdata, mp->pid, &pp->start_mask);
        if (pp->binder != BINDER_DAEMON)
                log_info("pid %d: %s (%s); npu-tuned %s.", mp->pid,
                         pp->binder == BINDER_ENGINE ? "bound by the engine" : "the engine may bind it", pp->binding_why,
                         pp->binder == BINDER_ENGINE ? "does not pin its threads, only checks them and moves memory"
                                                     : "waits before pinning");
        uint64_t before = reaction_begin(p);
        place(p, mp);
        reaction_end(p, REACTION_EXEC, mp->pid, before);
        if (pp->binder == BINDER_WATCHING && !p->dry_run)
                watch_binding(p, pp, mp->rule->binding_watch_ms);
}

static void on_process_changed(Watcher *w, managed_process *mp, unsigned changes, void *userdata) {
        Placement *p = userdata;
        placed_process *pp = mp->userdata;

        if (!pp)
                return;
        log_debug("pid %d changed (%s%s%s%s), planning it again.", mp->pid,
                  changes & WATCHER_CHANGE_RULE ? " rule" : "", changes & WATCHER_CHANGE_RANK ? " rank" : "",
                  changes & WATCHER_CHANGE_ACCELS ? " accelerators" : "", changes & WATCHER_CHANGE_EXEC ? " exec" : "");
        if (changes & (WATCHER_CHANGE_RULE | WATCHER_CHANGE_ACCELS | WATCHER_CHANGE_EXEC)) {
                /* Its memory home may have changed with its accelerators. */
                pp->memory_done = false;
                pp->memory_timer = sd_event_source_disable_unref(pp->memory_timer);
                pp->memmove = tune_memmove_free(pp->memmove);
        }
        uint64_t before = reaction_begin(p);
        place(p, mp);
        if (changes & WATCHER_CHANGE_EXEC)
                reaction_end(p, REACTION_EXEC, mp->pid, before);
}

static void apply_one_thread(Placement *p, managed_process *mp, managed_thread *t) {
        placed_process *pp = mp->userdata;
        const tune_plan *pl;
        tune_affinity_stats stats = {};
        int r;

        if (!pp || !(pl = tune_placer_get(p->placer, pp->key)) || pl->action != TUNE_PLAN_PLACE ||
            p->dry_run || pp->binder != BINDER_DAEMON)
                return;
        tune_thread_target target = { .plan = pl, .rule = mp->rule };
        pp->restore_on_stop = mp->rule->restore_on_stop;
        /* The watcher's name for it is the one it just read or a COMM event just gave. */
        r = tune_affinity_apply_thread(p->ctx, &pp->backend, mp->pid, t->tid, t->comm[0] ? t->comm : NULL,
                                       tune_thread_target_choose, &target,
                                       &pp->originals, &stats);
        if (r < 0 && r != -ESRCH)
                log_warning_errno(r, "Failed to set the CPU affinity of thread %d of pid %d, ignoring: %m", t->tid, mp->pid);
}

static void on_thread_new(Watcher *w, managed_process *mp, managed_thread *t, void *userdata) {
        uint64_t before = reaction_begin(userdata);
        apply_one_thread(userdata, mp, t);
        reaction_end(userdata, REACTION_THREAD, mp->pid, before);
}

static void on_thread_renamed(Watcher *w, managed_process *mp, managed_thread *t, const char *old_comm, void *userdata) {
        /* A rename can change the thread's role (acl_thread, a worker taking its title),
         * but only under a rule whose roles take threads by name. */
        if (!mp->rule || !tune_rule_picks_threads_by_name(mp->rule))
                return;
        uint64_t before = reaction_begin(userdata);
        apply_one_thread(userdata, mp, t);
        reaction_end(userdata, REACTION_RENAME, mp->pid, before);
}

static void on_thread_exit(Watcher *w, managed_process *mp, managed_thread *t, void *userdata) {
        placed_process *pp = mp->userdata;
        if (pp)
                tune_affinity_originals_forget(&pp->originals, t->tid);
}

static void on_process_exit(Watcher *w, managed_process *mp, watcher_exit_reason reason, void *userdata) {
        Placement *p = userdata;
        placed_process *pp = mp->userdata;
        tune_keys changed = {};
        bool keep_record = false;

        if (!pp)
                return;
        if ((reason == WATCHER_EXIT_STOP && mp->rule->restore_on_stop) || reason == WATCHER_EXIT_RELEASED) {
                tune_affinity_stats stats = {};
                int r = tune_affinity_restore(p->ctx, NULL, &pp->originals, &stats);
                if (r < 0 && r != -ESRCH) {
                        log_warning_errno(r, "Failed to give pid %d its original CPU affinity back: %m%s", mp->pid,
                                          pp->recorded ? "; its record is kept for npu-tuned --restore" : "");
                        keep_record = true;
                }
                else if (stats.set > 0 || stats.skipped > 0)
                        log_info("Gave %u thread(s) of pid %d their original CPU affinity back%s.", stats.set, mp->pid,
                                 stats.skipped ? " (threads that re-bound themselves were left alone)" : "");
        } else if (reason == WATCHER_EXIT_UNMATCHED && mp->rule->restore_on_stop) {
                /* It is no longer what the policy manages: it gets its own affinity back. */
                (void) tune_affinity_restore(p->ctx, NULL, &pp->originals, NULL);
        }
        if (tune_placer_remove(p->placer, pp->key, &changed) >= 0 && reason != WATCHER_EXIT_STOP) {
                /* Its CPUs go back to the pool: the others on its nodes may grow. */
                apply_changed(p, &changed);
        }
        tune_keys_done(&changed);
        if (!keep_record)
                record_remove(p, pp);
        event_process_released(p->events, mp, watcher_exit_reason_to_string(reason));
        placed_process_free(pp);
        mp->userdata = NULL;
}

/* The kernel before 6.2 (commit 8f9ea86fdf99) resets every task of a cpuset to the
 * cpuset's CPUs when the cpuset is written: a thread whose mask is now exactly its
 * cpuset's did not re-bind itself. */
static bool reset_by_cpuset(const placed_process *pp, pid_t tid) {
        _cleanup_cpuset_ tune_cpuset now = {};

        if (!pp->cpuset.restricted || tune_affinity_backend_kernel.get(tune_affinity_backend_kernel.userdata, tid, &now) < 0)
                return false;
        return tune_cpuset_equal(&now, &pp->cpuset.plan.cpus);
}

static void on_process_reconciled(Watcher *w, managed_process *mp, void *userdata) {
        Placement *p = userdata;
        placed_process *pp = mp->userdata;
        unsigned drifted = 0;
        pid_t first = 0;
        char label[200];

        if (!pp || p->dry_run)
                return;
        /* Its cgroup's cpuset is rewritten by the kubelet or the runtime: plan again
         * inside the new one and pin again (inotify does not see cpuset.*.effective). */
        if (refresh_cpuset(p, mp, pp) > 0) {
                tune_keys changed = {};
                _cleanup_free_ char *cpus = NULL, *mems = NULL;
                (void) tune_cpuset_format_list(&pp->cpuset.plan.cpus, &cpus);
                (void) tune_cpuset_format_list(&pp->cpuset.plan.mems, &mems);
                log_notice("The cgroup cpuset of pid %d%s changed (now %s%s%s%s): planning it again.", mp->pid,
                           process_cpuset_label(&pp->cpuset, label, sizeof label),
                           pp->cpuset.restricted ? "CPUs " : "unrestricted", pp->cpuset.restricted && cpus ? cpus : "",
                           pp->cpuset.restricted ? ", memory nodes " : "", pp->cpuset.restricted && mems ? mems : "");
                _cleanup_cpuset_ tune_cpuset old_mem = {};
                const tune_plan *pl = tune_placer_get(p->placer, pp->key);
                if ((pl && tune_cpuset_copy(&old_mem, &pl->mem_nodes) < 0) ||
                    tune_placer_set_cpuset(p->placer, pp->key, process_cpuset_for_plan(&pp->cpuset), &changed) < 0) {
                        log_oom();
                        return;
                }
                pl = tune_placer_get(p->placer, pp->key);
                if (!pl)
                        return;
                if (pl->action == TUNE_PLAN_PLACE)
                        event_process_placed(p->events, mp, pl, pp->cpuset.container);
                else
                        log_placement(p, mp, pl, false);
                apply_process(p, mp);
                apply_changed(p, &changed);
                tune_keys_done(&changed);
                if (!tune_cpuset_equal(&old_mem, &pl->mem_nodes)) {
                        /* Its memory nodes moved with its cpuset's mems: move the pages again. */
                        pp->memory_done = false;
                        pp->memory_timer = sd_event_source_disable_unref(pp->memory_timer);
                        pp->memmove = tune_memmove_free(pp->memmove);
                        arm_memory(p, mp, pp, pl);
                }
                return;
        }
        if (pp->binder == BINDER_ENGINE) {
                report_engine(p, mp, pp);
                return;
        }
        if (pp->binder != BINDER_DAEMON ||
            tune_affinity_check(p->ctx, NULL, &pp->originals, &drifted, &first) < 0 || drifted == 0)
                return;
        if (reset_by_cpuset(pp, first)) {
                log_notice("The kernel reset the CPU affinity of %u thread(s) of pid %d to its cpuset (a cpuset write on a "
                           "kernel before 6.2): pinning them again.", drifted, mp->pid);
                apply_process(p, mp);
                return;
        }
        if (mp->rule->binding == TUNE_BINDING_AUTO) {
                /* Two binders must never write one task: under auto the engine wins. */
                _cleanup_cpuset_ tune_cpuset mask = {};
                (void) tune_affinity_backend_kernel.get(tune_affinity_backend_kernel.userdata, first, &mask);
                step_back(p, mp, pp, first, &mask, "after npu-tuned pinned it");
                return;
        }
        if (mp->rule->reassert_affinity) {
                if (!pp->drift_logged)
                        log_notice("pid %d changed the CPU affinity of %u thread(s) (first: %d); the policy says re-assert.",
                                   mp->pid, drifted, first);
                pp->drift_logged = true;
                apply_process(p, mp);
        } else if (!pp->drift_logged) {
                log_notice("pid %d changed the CPU affinity of %u thread(s) (first: %d) itself; respecting it, as the policy says.",
                           mp->pid, drifted, first);
                pp->drift_logged = true;
        }
}

const watcher_ops placement_watcher_ops = {
        .on_process_matched = on_process_matched,
        .on_process_changed = on_process_changed,
        .on_thread_new = on_thread_new,
        .on_thread_renamed = on_thread_renamed,
        .on_thread_exit = on_thread_exit,
        .on_process_exit = on_process_exit,
        .on_process_reconciled = on_process_reconciled,
};

static int new_placer(const tune_topology *topology, const tune_policy *policy, tune_placer **ret) {
        tune_plan_params params = {
                .housekeeping_cpus_per_node = policy ? policy->host.irq_housekeeping_cpus_per_node : 0,
                /* Each (re)plan, before a new process's first pin among others, formats
                 * no reasons; an explain or a log line that shows them plans again. */
                .no_reasons = true,
        };
        int r = tune_placer_new(topology, &params, ret);
        if (r < 0)
                return log_error_errno(r, "Failed to set up placement: %m");
        return 0;
}

int placement_reset(Placement *p, const tune_policy *policy, const tune_accels *accels, bool dry_run) {
        tune_placer *placer;
        int r;

        if (tune_placer_count(p->placer) > 0)
                return log_error_errno(EBUSY, "Placement still manages processes; not resetting it.");
        r = new_placer(p->topology, policy, &placer);
        if (r < 0)
                return r;
        tune_placer_free(p->placer);
        p->placer = placer;
        p->accels = accels;
        p->dry_run = dry_run;
        return 0;
}

int placement_new(const placement_inputs *in, Placement **ret) {
        _cleanup_(placement_freep) Placement *p = NULL;
        int r;

        p = calloc(1, sizeof *p);
        if (!p)
                return log_oom();
        p->event = in->event;
        p->ctx = in->ctx;
        p->topology = in->topology;
        p->state_dir = in->state_dir;
        p->state_dfd = -EBADF;
        p->ready_fd = -EBADF;
        p->accels = in->accels;
        p->dry_run = in->dry_run;
        p->events = in->events;
        r = new_placer(in->topology, in->policy, &p->placer);
        if (r < 0)
                return r;
        (void) tune_boot_id(in->ctx, &p->boot_id);
        if (p->event) {
                r = process_cpuset_watch_mounts(p->event, p->ctx);
                if (r < 0)
                        log_debug_errno(r, "Failed to watch the mount table, asking the kernel at each cgroup read: %m");
        }
        *ret = TAKE_PTR(p);
        return 0;
}

void placement_attach_watcher(Placement *p, Watcher *w) {
        p->watcher = w;
}

Placement *placement_free(Placement *p) {
        _cleanup_free_ char *reactions = NULL, *handling = NULL;

        if (!p)
                return NULL;
        /* At the default level when anything was placed: a bench reads them without the
         * debug log, whose lines are written while an event is handled and would be part
         * of what they measure. */
        bool any = false;
        for (int k = 0; k < _REACTION_KIND_MAX; k++)
                any = any || p->reactions.kinds[k].count > 0;
        int level = any ? LOG_INFO : LOG_DEBUG;
        if (reaction_stats_format(p->reactions.kinds, &reactions) >= 0)
                log_full(level, "Reaction times (kernel event to the last CPU affinity set): %s.", reactions);
        if (reaction_stats_format(p->reactions.handling, &handling) >= 0)
                log_full(level, "Handling times (start of the event's handling to the last CPU affinity set): %s.",
                         handling);
        if (p->event)
                process_cpuset_unwatch_mounts();
        tune_placer_free(p->placer);
        ready_drop(p);
        if (p->state_dfd >= 0)
                close(p->state_dfd);
        free(p->boot_id);
        free(p);
        return NULL;
}
