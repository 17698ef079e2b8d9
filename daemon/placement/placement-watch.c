/* SPDX-License-Identifier: GPL-2.0-only */
/* The watcher's callbacks (watcher_ops): a process matched, changed or gone, a thread
 * new, renamed or gone; the reconcile tick is placement-reconcile.c's. */
#include <stdlib.h>

#include "log.h"
#include "placement-internal.h"

static void on_process_matched(Watcher *w, managed_process *mp, void *userdata) {
        Placement *p = userdata;
        placed_process *pp;

        pp = tune_alloc0(1, sizeof *pp);
        if (!pp) {
                log_oom();
                return;
        }
        pp->owner = p;
        pp->process = mp;
        pp->pid = mp->pid;
        pp->key = placement_key(mp->pid, mp->start_time);
        pp->matched_usec = placement_now_usec();
        pp->locality = -1;
        pp->originals.start_time = mp->start_time;
        pp->backend = recording_backend(pp);
        mp->userdata = pp;
        /* Its file from the run before a restart is there still (manager_keep_attributions()):
         * replaced or removed as one this run wrote. */
        pp->attribution_kept = watcher_keeps_attribution(w, mp->pid, mp->start_time);
        pp->binder = binding_decide(mp, pp->binding_why, sizeof pp->binding_why);
        /* Only the watch window compares against it (on_binding_timer()); a process we pin
         * now has its mask read once more, as its original, right before its first pin. */
        if (pp->binder == BINDER_WATCHING)
                (void) placement_get_affinity(p, mp->pid, &pp->start_mask);
        if (pp->binder != BINDER_DAEMON)
                log_info("pid %d: %s (%s); npu-tuned %s.", mp->pid,
                         pp->binder == BINDER_ENGINE ? "bound by the engine" : "the engine may bind it", pp->binding_why,
                         pp->binder == BINDER_ENGINE ? "does not pin its threads, only checks them and moves memory"
                                                     : "waits before pinning");
        uint64_t before = reaction_begin(p);
        (void) refresh_cpuset(p, mp, pp);
        if (replan(p, mp, "matched") >= 0 && !p->dry_run)
                log_debug("pid %d placed %llu us after it was matched.", mp->pid,
                          (unsigned long long) (placement_now_usec() - pp->matched_usec));
        reaction_end(p, REACTION_EXEC, mp->pid, before);
        if (pp->binder == BINDER_WATCHING && !p->dry_run)
                watch_binding(p, pp, mp->rule->binding_watch_ms);
        /* After its pin and its threads' (their events may be in hand already): a
         * restart's worth, not on the way to it. */
        attribution_keep_soon(p, mp);
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
                memory_reset(pp);
                /* Its record's text is out of date, until a new record says it again. */
                pp->attribution_in_record = false;
        }
        uint64_t before = reaction_begin(p);
        (void) refresh_cpuset(p, mp, pp);
        (void) replan(p, mp, "changed");
        if (changes & WATCHER_CHANGE_EXEC)
                reaction_end(p, REACTION_EXEC, mp->pid, before);
        if (changes & (WATCHER_CHANGE_RULE | WATCHER_CHANGE_ACCELS | WATCHER_CHANGE_EXEC))
                attribution_keep_soon(p, mp);
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
        bool keep_record = false, keep_attribution;

        if (!pp)
                return;
        /* Its record goes with the restore below: what it kept is written to a file of its
         * own for the next start, as a deferred one is. */
        keep_attribution = pp->attribution_due || (pp->attribution_in_record && !pp->attribution_kept);
        if ((reason == WATCHER_EXIT_STOP && mp->rule->restore_on_stop) || reason == WATCHER_EXIT_RELEASED) {
                tune_affinity_stats stats = {};
                int r = tune_affinity_restore(p->ctx, p->affinity, &pp->originals, &stats);
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
                (void) tune_affinity_restore(p->ctx, p->affinity, &pp->originals, NULL);
        }
        if (tune_placer_remove(p->placer, pp->key, &changed) >= 0 && reason != WATCHER_EXIT_STOP) {
                /* Its CPUs go back to the pool: the others on its nodes may grow. */
                apply_changed(p, &changed, mp->pid);
        }
        tune_keys_done(&changed);
        if (!keep_record)
                record_remove(p, pp);
        if (reason != WATCHER_EXIT_STOP)
                attribution_forget(p, pp);
        else if (keep_attribution) {
                /* The daemon stops: kept now, for the next start. */
                pp->attribution_due = false;
                attribution_keep(p, mp);
        }
        event_process_released(p->events, mp, watcher_exit_reason_to_string(reason));
        placed_process_free(pp);
        mp->userdata = NULL;
}

const watcher_ops placement_watcher_ops = {
        .on_process_matched = on_process_matched,
        .on_process_changed = on_process_changed,
        .on_thread_new = on_thread_new,
        .on_thread_renamed = on_thread_renamed,
        .on_thread_exit = on_thread_exit,
        .on_process_exit = on_process_exit,
        .on_process_reconciled = placement_on_reconciled,
};
