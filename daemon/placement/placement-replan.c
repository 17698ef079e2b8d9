/* SPDX-License-Identifier: GPL-2.0-only */
/* Planning a managed process, one way whatever the cause (its match, a change of its rule
 * or accelerators, its cgroup cpuset rewritten), and pinning its threads by the plan. */
#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "placement-internal.h"

/* Placing for real says nothing here unless asked: the event reports it (events.c), once
 * pinned. */
static bool said_by_event_only(const tune_plan *pl, bool dry_run) {
        return pl->action == TUNE_PLAN_PLACE && !dry_run && !pl->cpuset_far && !log_wants(LOG_DEBUG);
}

static void log_placement_words(const Placement *p, const managed_process *mp, const tune_plan *pl, bool dry_run) {
        _cleanup_free_ char *pool = NULL, *control = NULL, *compute = NULL, *mem = NULL, *accels = NULL;
        const placed_process *pp = mp->userdata;
        _cleanup_(tune_plan_done) tune_plan explained = {};
        char label[200], origin[96];

        /* The placer plans without reasons (new_placer()): where this says them, plan
         * again with them. */
        if (pl->no_reasons && (pl->action != TUNE_PLAN_PLACE || pl->cpuset_far || log_wants(LOG_DEBUG)) &&
            tune_placer_explain(p->placer, pp->key, &explained) >= 0)
                pl = &explained;

        if (said_by_event_only(pl, dry_run)) /* of the plan explained */
                return;
        (void) tune_attribution_format_accels(&mp->attribution, &accels);
        tune_attribution_describe_source(&mp->attribution, &mp->env, origin, sizeof origin);
        process_cpuset_label(&pp->cpuset, label, sizeof label);
        if (pl->action != TUNE_PLAN_PLACE) {
                log_info("Not placing pid %d%s (rule \"%s\", accelerators %s %s): %s.", mp->pid, label, mp->rule->name,
                         accels && *accels ? accels : "none", origin,
                         pl->n_reasons > 0 ? pl->reasons[pl->n_reasons - 1] : tune_plan_action_to_string(pl->action));
                return;
        }
        if (dry_run) {
                (void) tune_cpuset_format_list(&pl->pool, &pool);
                (void) tune_cpuset_format_list(tune_plan_role_cpus(pl, TUNE_ROLE_CONTROL), &control);
                (void) tune_cpuset_format_list(tune_plan_role_cpus(pl, TUNE_ROLE_COMPUTE), &compute);
                (void) tune_cpuset_format_list(&pl->mem_nodes, &mem);
                log_info("Dry run: would place pid %d%s (rule \"%s\", accelerators %s %s): CPUs %s, control %s, "
                         "compute %s, memory %s.",
                         mp->pid, label, mp->rule->name, accels && *accels ? accels : "none", origin, pool ? pool : "?",
                         control && *control ? control : "-", compute && *compute ? compute : "-",
                         mem && *mem ? mem : "left where it is");
        }
        for (unsigned i = 0; i < pl->n_reasons; i++)
                log_debug("  pid %d: %s", mp->pid, pl->reasons[i]);
        if (pl->cpuset_far)
                log_notice("pid %d%s: its cpuset has no CPU near its accelerator(s); placed inside it. %s", mp->pid, label,
                           pl->n_reasons > 0 ? "npu-tuned --explain PID says how to fix it." : "");
}

void log_placement(const Placement *p, const managed_process *mp, const tune_plan *pl, bool dry_run) {
        /* Nothing to put into words, nor a plan to explain or free; log_placement_words()
         * asks again of the plan it explained. */
        if (said_by_event_only(pl, dry_run))
                return;
        log_placement_words(p, mp, pl, dry_run);
}

int refresh_cpuset(Placement *p, managed_process *mp, placed_process *pp) {
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

/* A re-planned process's new CPUs, for the debug log. */
static void log_placement_debug(const Placement *p, const managed_process *mp) {
        const tune_plan *pl = tune_placer_get(p->placer, ((const placed_process *) mp->userdata)->key);
        _cleanup_free_ char *pool = NULL;

        if (log_get_max_level() < LOG_DEBUG || !pl || pl->action != TUNE_PLAN_PLACE)
                return;
        (void) tune_cpuset_format_list(&pl->pool, &pool);
        log_debug("pid %d re-planned: CPUs %s.", mp->pid, pool ? pool : "?");
}

void apply_process(Placement *p, managed_process *mp) {
        placed_process *pp = mp->userdata;
        const tune_plan *pl = tune_placer_get(p->placer, pp->key);
        tune_affinity_stats stats = {};
        int r;

        /* Only when npu-tuned binds (daemon/placement/engine-binding.h): never two binders on one task. */
        if (!pl || pp->binder != BINDER_DAEMON)
                return;
        if (pl->action != TUNE_PLAN_PLACE) {
                /* Placed before and not now (e.g. an unverified claim whose CPUs a verified
                 * one took): it must not keep CPUs that are someone else's now. */
                if (pp->originals.n > 0) {
                        uint64_t start_time = pp->originals.start_time;
                        r = tune_affinity_restore(p->ctx, p->affinity, &pp->originals, &stats);
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
        _cleanup_free_ tune_affinity_known *known = tune_alloc0(mp->n_threads ? mp->n_threads : 1, sizeof *known);
        if (!known) {
                log_oom();
                return;
        }
        for (unsigned i = 0; i < mp->n_threads; i++)
                known[i] = (tune_affinity_known){ .tid = mp->threads[i].tid,
                                                  .comm = mp->threads[i].comm[0] ? mp->threads[i].comm : NULL };
        bool pinned_before = pp->originals.n > 0;
        r = tune_affinity_apply_known(p->ctx, &pp->backend, mp->pid, mp->pidfd, known, mp->n_threads,
                                      tune_thread_target_choose, &target, &pp->originals, &stats);
        if (pinned_before && stats.set > 0)
                p->stats.repins++;
        if (r == -ESRCH)
                return; /* gone: its exit event follows */
        if (r < 0)
                log_warning_errno(r, "Failed to set the CPU affinity of %u of the %u threads of pid %d, ignoring: %m",
                                  stats.failed, stats.seen, mp->pid);
        log_debug("pid %d: %u thread(s), %u pinned, %u already right, %u gone, %u walk(s).", mp->pid, stats.seen,
                  stats.set, stats.unchanged, stats.vanished, stats.rounds);
}

void apply_changed(Placement *p, const tune_keys *changed, pid_t cause) {
        char pids[128] = "";
        size_t len = 0;
        unsigned moved = 0;

        for (unsigned i = 0; i < changed->n; i++) {
                managed_process *other = placement_find_process(p, changed->keys[i]);
                if (!other)
                        continue;
                apply_process(p, other);
                log_placement_debug(p, other);
                /* Named in one line per cause, not an event each: in a burst every arrival
                 * moves all the others on its node, and a line (or a signal) each would
                 * make the log quadratic in the burst. */
                if (moved++ < 8 && len < sizeof pids)
                        len += (size_t) snprintf(pids + len, sizeof pids - len, "%s%d", moved > 1 ? ", " : "",
                                                 other->pid);
        }
        /* Their shares moved because of another process: said (a placement that changes
         * without a word is a mystery to an operator); each one's CPUs are in the debug log
         * and in Explain(). */
        if (moved > 0 && !p->dry_run)
                log_info("pid %d changed what its nodes' processes share: re-planned %u other process(es): %s%s.",
                         (int) cause, moved, pids, moved > 8 ? ", ..." : "");
}

static bool placement_same(const tune_plan *a, const tune_plan *b) {
        if (a->action != b->action || !tune_cpuset_equal(&a->pool, &b->pool) || !tune_cpuset_equal(&a->mem_nodes, &b->mem_nodes))
                return false;
        for (tune_role r = 0; r < _TUNE_ROLE_MAX; r++)
                if (!tune_cpuset_equal(&a->role_cpus[r], &b->role_cpus[r]))
                        return false;
        return true;
}

int replan(Placement *p, managed_process *mp, const char *why) {
        placed_process *pp = mp->userdata;
        _cleanup_(tune_keys_done) tune_keys changed = {};
        _cleanup_(tune_plan_done) tune_plan old = {};
        int r;

        /* Free memory only decides where memory of a rule that moves it goes (and the
         * other processes' homes were decided when they were placed). */
        if (mp->rule->memory_migrate)
                (void) tune_topology_refresh_memory(p->ctx, p->topology);
        const tune_plan *before = tune_placer_get(p->placer, pp->key);
        bool had = before && tune_plan_copy(&old, before) >= 0;
        r = placement_plan_process(p->placer, p->ctx, p->accels, mp, &pp->cpuset, &changed);
        if (r < 0)
                return log_warning_errno(r, "Failed to plan pid %d (%s), leaving it alone: %m", mp->pid, why);
        const tune_plan *pl = tune_placer_get(p->placer, pp->key);
        /* A re-plan that comes out the same (a reload, a retitle) is no news. */
        bool same = had && placement_same(&old, pl);
        if (p->dry_run) {
                /* The plan is logged; nothing is pinned or moved. */
                if (same)
                        log_debug("pid %d planned again (%s): its placement is unchanged.", mp->pid, why);
                else
                        log_placement(p, mp, pl, true);
                return 0;
        }
        /* Pin first, say so after: the threads the process starts meanwhile are the ones
         * that must be moved one by one. */
        apply_process(p, mp);
        if (same)
                log_debug("pid %d planned again (%s): its placement is unchanged.", mp->pid, why);
        else
                log_placement(p, mp, pl, false);
        apply_changed(p, &changed, mp->pid);
        if (had && !tune_cpuset_equal(&old.mem_nodes, &pl->mem_nodes))
                /* Its memory nodes moved (with its accelerators, its cpuset's mems): what
                 * was moved went to the old ones. */
                memory_reset(pp);
        arm_memory(p, mp, pp, pl);
        if (pl->action == TUNE_PLAN_PLACE && !same) {
                p->stats.placements++;
                event_process_placed(p->events, mp, pl, pp->cpuset.container);
        }
        return 0;
}
