/* SPDX-License-Identifier: GPL-2.0-only */
/* npu-tuned --explain PID: what the daemon would do with a process, and why: the rule it
 * matches, its accelerators and where they came from, the nodes, the CPU pool of each
 * role and the memory node with its free-memory reasoning.
 *
 * The plan depends on every other managed process (they share the nodes' CPUs), so this
 * evaluates every process on the host with the policy's rules, in pid order, as the
 * daemon's start-up scan does, and plans them all together. It reads; it changes nothing. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain.h"
#include "log.h"
#include "manager.h"
#include "npu-tuned/plan.h"
#include "npu-tuned/proc.h"
#include "placement.h"
#include "watcher.h"

static int plan_process(const tune_accels *all, tune_placer *placer, managed_process *mp) {
        const tune_accel *accels[64];
        unsigned n = placement_resolve_accels(all, mp, accels, ELEMENTSOF(accels));

        return tune_placer_set(placer, placement_key(mp->pid, mp->start_time), mp->rule, accels, n, NULL);
}

static void print_text(const managed_process *mp, const tune_plan *pl) {
        _cleanup_free_ char *accels = NULL, *pool = NULL, *mem = NULL;

        (void) tune_attribution_format_accels(&mp->attribution, &accels);
        printf("Process %d (%s)\n", mp->pid, mp->comm);
        printf("  rule:          %s (%s)\n", mp->rule->name, mp->rule->file ? mp->rule->file : "embedded");
        printf("  accelerators:  %s (source: %s%s%s)\n", accels && *accels ? accels : "none",
               tune_attribution_source_to_string(mp->attribution.source), mp->attribution.variable[0] ? ", " : "",
               mp->attribution.variable);
        if (mp->rank >= 0)
                printf("  rank:          %d\n", mp->rank);
        printf("  action:        %s\n", tune_plan_action_to_string(pl->action));
        if (pl->action == TUNE_PLAN_PLACE) {
                (void) tune_cpuset_format_list(&pl->pool, &pool);
                (void) tune_cpuset_format_list(&pl->mem_nodes, &mem);
                printf("  CPU pool:      %s\n", pool ? pool : "?");
                for (tune_role r = 0; r < _TUNE_ROLE_MAX; r++) {
                        _cleanup_free_ char *cpus = NULL;
                        (void) tune_cpuset_format_list(tune_plan_role_cpus(pl, r), &cpus);
                        printf("  %-14s %s\n", tune_role_to_string(r), cpus && *cpus ? cpus : "-");
                }
                printf("  memory nodes:  %s\n", mem && *mem ? mem : "left where it is");
        }
        printf("  why:\n");
        for (unsigned i = 0; i < pl->n_reasons; i++)
                printf("    - %s\n", pl->reasons[i]);
}

int run_explain(const daemon_options *o) {
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_(tune_placer_freep) tune_placer *placer = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        Watcher *w = NULL;
        watcher_params params;
        managed_process *target = NULL;
        size_t n = 0;
        int r;

        r = manager_new(o, &m);
        if (r < 0)
                return 1;
        if (!tune_ctx_is_live(m->ctx)) {
                fprintf(stderr, "npu-tuned: --explain looks at live processes; it cannot be used with --root\n");
                return 2;
        }
        watcher_params_from_policy(m->policy, &params);
        r = watcher_new(m->event, m->ctx, &m->accels, m->policy, &params, NULL, NULL, &w);
        if (r < 0) {
                log_error_errno(r, "Failed to set up process matching: %m");
                return 1;
        }
        m->watcher = w;
        tune_plan_params pp = { .housekeeping_cpus_per_node = m->policy ? m->policy->host.irq_housekeeping_cpus_per_node : 0 };
        r = tune_placer_new(m->topology, &pp, &placer);
        if (r < 0)
                return log_oom(), 1;

        r = watcher_evaluate_pid(w, o->explain_pid, &target);
        if (r == -ESRCH) {
                fprintf(stderr, "npu-tuned: no process %d\n", o->explain_pid);
                return 1;
        }
        if (r == -ENOENT) {
                printf("Process %d matches no rule of the policy: npu-tuned leaves it alone.\n", o->explain_pid);
                return 0;
        }
        if (r < 0) {
                log_error_errno(r, "Failed to evaluate process %d: %m", o->explain_pid);
                return 1;
        }
        /* Everything else the policy manages, in pid order, then the process itself last:
         * the daemon serves earlier arrivals first. */
        r = tune_proc_list_pids(m->ctx, &pids, &n);
        if (r < 0) {
                log_error_errno(r, "Failed to list processes: %m");
                return 1;
        }
        for (size_t i = 0; i < n; i++) {
                managed_process *other;
                if (pids[i] == o->explain_pid || watcher_evaluate_pid(w, pids[i], &other) < 0)
                        continue;
                if (plan_process(&m->accels, placer, other) < 0)
                        return log_oom(), 1;
        }
        r = watcher_evaluate_pid(w, o->explain_pid, &target);
        if (r < 0) {
                fprintf(stderr, "npu-tuned: process %d went away\n", o->explain_pid);
                return 1;
        }
        r = plan_process(&m->accels, placer, target);
        if (r < 0) {
                log_error_errno(r, "Failed to plan process %d: %m", o->explain_pid);
                return 1;
        }
        const tune_plan *pl = tune_placer_get(placer, placement_key(target->pid, target->start_time));
        if (o->json) {
                json_object *j = NULL;
                _cleanup_free_ char *accels = NULL;
                r = tune_plan_to_json(pl, &j);
                if (r < 0)
                        return log_oom(), 1;
                (void) tune_attribution_format_accels(&target->attribution, &accels);
                json_object_object_add(j, "pid", json_object_new_int(target->pid));
                json_object_object_add(j, "rule", json_object_new_string(target->rule->name));
                json_object_object_add(j, "accelerators", json_object_new_string(accels ? accels : ""));
                json_object_object_add(j, "accelerator_source",
                                       json_object_new_string(tune_attribution_source_to_string(target->attribution.source)));
                puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
                json_object_put(j);
        } else
                print_text(target, pl);
        return 0;
}
