/* SPDX-License-Identifier: GPL-2.0-only */
/* manager_explain(): what this daemon applied to a process, from its own state (the
 * watcher's registry and the placer), for the D-Bus Explain() call. A second process
 * computing the same would plan without knowing what this one decided.
 *
 * manager_explain_offline(): the same computed by a Manager of its own when no daemon
 * answers (npu-tuned --explain): the plan depends on every other managed process (they
 * share the nodes' CPUs), so this evaluates every process on the host with the policy's
 * rules, in pid order, as the daemon's start-up scan does, and plans them all together.
 * It reads; it changes nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine-binding.h"
#include "explain-json.h"
#include "log.h"
#include "manager.h"
#include "npu-tuned/affinity-record.h"
#include "npu-tuned/match.h"
#include "npu-tuned/plan.h"
#include "npu-tuned/proc.h"
#include "placement.h"
#include "process-cpuset.h"
#include "watcher.h"

int manager_explain(Manager *m, pid_t pid, uid_t asker, json_object **ret) {
        managed_process *mp = m->watcher ? watcher_find(m->watcher, pid) : NULL;
        const tune_policy_rule *rule;
        tune_proc_status status;
        tune_proc_stat st;
        tune_proc_facts f;
        char reason[256];
        bool retitle = false;

        if (mp && asker != 0 && mp->uid != asker)
                return -EACCES;
        if (mp) {
                _cleanup_(tune_plan_done) tune_plan pl = {};
                bool planned = m->placement && placement_explain_plan(m->placement, mp, &pl) >= 0;
                int r = explain_process_to_json(mp, planned ? &pl : NULL, placement_locality(mp), EXPLAIN_SOURCE_DAEMON,
                                                ret);
                if (r >= 0 && m->placement && (r = placement_describe(m->placement, mp, *ret)) < 0) {
                        json_object_put(*ret);
                        *ret = NULL;
                }
                return r;
        }
        if (!m->watcher) /* below a --root, /proc is not this host's either */
                return explain_unmanaged_to_json(pid, EXPLAIN_SOURCE_DAEMON,
                                                 "the process watcher is off (--root or --no-watch)", ret);
        if (pid <= 0 || tune_proc_read_stat(m->ctx, pid, &st) < 0)
                return -ESRCH;
        /* Whether a rule would match it says something of its executable, user and cgroup:
         * its owner's (the real uid, as the rules match it) to know. */
        if (asker != 0 && (tune_proc_read_status(m->ctx, pid, &status) < 0 || status.ruid != asker))
                return -EACCES;
        /* Not managed: say whether the rules would match it now (read-only: the watcher's
         * registry is not touched). */
        tune_proc_facts_init(&f, m->ctx, pid, st.comm);
        rule = m->policy ? tune_policy_match(m->policy, &f, &retitle) : NULL;
        tune_proc_facts_done(&f);
        if (rule) {
                const char *why = watcher_unmanaged_reason(m->watcher, pid);
                snprintf(reason, sizeof reason, "it matches rule \"%s\" but is not managed%s%s", rule->name,
                         *why ? ": " : "", why);
        }
        else
                snprintf(reason, sizeof reason, "it matches no rule of the policy: npu-tuned leaves it alone");
        return explain_unmanaged_to_json(pid, EXPLAIN_SOURCE_DAEMON, reason, ret);
}

/* Plan mp as the daemon would (its claim, inside its cgroup's cpuset); *cs (may be NULL)
 * gets the cpuset. */
int manager_plan_process(Manager *m, tune_placer *placer, managed_process *mp, process_cpuset *cs) {
        process_cpuset own = {};
        int r;

        r = process_cpuset_read(m->ctx, m->topology, mp->pid, &own);
        if (r < 0 && r != -ESRCH)
                log_warning_errno(r, "Failed to read the cgroup cpuset of pid %d, planning without it: %m", mp->pid);
        r = placement_plan_process(placer, m->ctx, &m->accels, mp, &own, NULL);
        if (cs) {
                process_cpuset_done(cs);
                *cs = own;
        } else
                process_cpuset_done(&own);
        return r;
}

int manager_offline_planner(Manager *m, tune_placer **ret) {
        watcher_params params;
        int r;

        watcher_params_from_policy(m->policy, &params);
        r = watcher_new(m->event, m->ctx, &m->accels, m->policy, &params, NULL, NULL, &m->watcher);
        if (r < 0)
                return log_error_errno(r, "Failed to set up process matching: %m");
        /* As a start would see them: what a running daemon kept is read, not changed. */
        manager_keep_attributions(m, false);
        tune_plan_params pp = { .housekeeping_cpus_per_node = m->policy ? m->policy->host.irq_housekeeping_cpus_per_node : 0 };
        r = tune_placer_new(m->topology, &pp, ret);
        return r < 0 ? log_oom() : 0;
}

/* Who binds mp's threads, as the daemon would see it now: the rule and the engine's
 * switches; under "auto" without a switch, the daemon's affinity record (it pinned them)
 * or threads whose masks are narrower than what they may use (they bound themselves). */
static binder explain_binding(const char *state_dir, const tune_ctx *ctx, const tune_topology *t, const managed_process *mp,
                              const process_cpuset *cs, char *why, size_t size) {
        _cleanup_(tune_affinity_record_done) tune_affinity_record rec = {};
        binder b = binding_decide(mp, why, size);

        if (b != BINDER_WATCHING)
                return b;
        if (tune_affinity_record_load(state_dir, mp->pid, &rec) >= 0 && rec.originals.start_time == mp->start_time) {
                snprintf(why, size, "%s", "its threads did not bind themselves; npu-tuned pinned them");
                return BINDER_DAEMON;
        }
        if (binding_threads_moved(ctx, NULL, mp->pid, cs->restricted ? &cs->plan.cpus : &t->usable, NULL, NULL)) {
                snprintf(why, size, "%s", "its threads set their own CPU affinity");
                return BINDER_ENGINE;
        }
        return b;
}

int manager_explain_offline(const daemon_options *o, json_object **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_(tune_placer_freep) tune_placer *placer = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        Watcher *w;
        managed_process *target = NULL;
        _cleanup_(process_cpuset_done) process_cpuset target_cpuset = {};
        size_t n = 0;
        int r;

        r = manager_new(o, &m);
        if (r < 0)
                return r;
        if (!tune_ctx_is_live(m->ctx)) {
                fprintf(stderr, "npu-tuned: --explain looks at live processes; it cannot be used with --root\n");
                return -EOPNOTSUPP;
        }
        /* A process that holds its memory map cannot hold --explain either: what could not
         * be read in time is said on stderr, and the explanation goes on without it. */
        proc_guard_set_note(m->guard, "explained without it (counted as unreadable)");
        r = manager_offline_planner(m, &placer);
        if (r < 0)
                return r;
        w = m->watcher;

        r = watcher_evaluate_pid(w, o->explain_pid, &target);
        if (r == -ESRCH) {
                fprintf(stderr, "npu-tuned: no process %d\n", o->explain_pid);
                return r;
        }
        if (r == -ENOENT)
                return explain_unmanaged_to_json(o->explain_pid, EXPLAIN_SOURCE_COMPUTED,
                                                 "it matches no rule of the policy: npu-tuned leaves it alone", ret) < 0
                               ? log_oom()
                               : 0;
        if (r < 0)
                return log_error_errno(r, "Failed to evaluate process %d: %m", o->explain_pid);
        /* Everything else the policy manages, in pid order, then the process itself last:
         * the daemon serves earlier arrivals first. */
        r = tune_proc_list_pids(m->ctx, &pids, &n);
        if (r < 0)
                return log_error_errno(r, "Failed to list processes: %m");
        for (size_t i = 0; i < n; i++) {
                managed_process *other;
                if (pids[i] == o->explain_pid || watcher_evaluate_pid(w, pids[i], &other) < 0)
                        continue;
                if (manager_plan_process(m, placer, other, NULL) < 0)
                        return log_oom();
        }
        r = watcher_evaluate_pid(w, o->explain_pid, &target);
        if (r < 0) {
                fprintf(stderr, "npu-tuned: process %d went away\n", o->explain_pid);
                return r;
        }
        r = manager_plan_process(m, placer, target, &target_cpuset);
        if (r < 0)
                return log_error_errno(r, "Failed to plan process %d: %m", o->explain_pid);
        const tune_plan *pl = tune_placer_get(placer, placement_key(target->pid, target->start_time));
        char why[192];
        binder b = explain_binding(o->state_dir, m->ctx, m->topology, target, &target_cpuset, why, sizeof why);
        _cleanup_free_ char *report = NULL;
        if (b == BINDER_ENGINE)
                (void) binding_report(m->ctx, NULL, target->pid, pl, NULL, &report);
        r = explain_process_to_json(target, pl, -1, EXPLAIN_SOURCE_COMPUTED, ret);
        if (r >= 0)
                r = process_cpuset_to_json(&target_cpuset, *ret);
        if (r >= 0)
                r = binding_to_json(b, why, report, *ret);
        if (r < 0)
                return log_oom();
        return 0;
}
