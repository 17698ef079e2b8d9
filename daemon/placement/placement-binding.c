/* SPDX-License-Identifier: GPL-2.0-only */
/* The engine binds, or may (engine-binding.h): the watch window of a process under "auto"
 * without a switch, the step back when its threads bind themselves, and the report of
 * what the engine did. */
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "placement-internal.h"

#define BINDING_POLL_USEC (100 * 1000ULL)

void report_engine(Placement *p, managed_process *mp, placed_process *pp) {
        const tune_plan *pl = tune_placer_get(p->placer, pp->key);
        _cleanup_cpuset_ tune_cpuset near = {};
        _cleanup_free_ char *report = NULL;

        if (pl)
                TUNE_CPUSET_FOREACH(node, &pl->home_nodes) {
                        const tune_node *n = tune_topology_node(p->topology, node);
                        if (n && tune_cpuset_or(&near, &n->cpus) < 0)
                                return;
                }
        if (binding_report(p->ctx, p->affinity, mp->pid, pl, &near, &report) < 0)
                return;
        if (pp->engine_report && streq(pp->engine_report, report))
                return;
        log_info("pid %d: %s.", mp->pid, report);
        free(pp->engine_report);
        pp->engine_report = TAKE_PTR(report);
}

void step_back(Placement *p, managed_process *mp, placed_process *pp, pid_t tid, const tune_cpuset *mask,
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
        managed_process *mp = placement_find_process(p, pp->key);
        _cleanup_cpuset_ tune_cpuset mask = {};
        pid_t tid = 0;

        if (!mp || pp->binder != BINDER_WATCHING) {
                pp->binding_timer = sd_event_source_disable_unref(pp->binding_timer);
                return 0;
        }
        if (binding_threads_moved(p->ctx, p->affinity, mp->pid, &pp->start_mask, &tid, &mask)) {
                step_back(p, mp, pp, tid, &mask, "right after start");
                return 0;
        }
        if (placement_now_usec() >= pp->watch_until_usec) {
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

void watch_binding(Placement *p, placed_process *pp, unsigned ms) {
        int r;

        pp->watch_until_usec = placement_now_usec() + (uint64_t) ms * 1000;
        r = sd_event_add_time_relative(p->event, &pp->binding_timer, CLOCK_MONOTONIC, BINDING_POLL_USEC, 10 * 1000,
                                       on_binding_timer, pp);
        if (r < 0) {
                log_warning_errno(r, "Failed to watch pid %d for self-binding, pinning it now: %m", pp->pid);
                pp->binder = BINDER_DAEMON;
                return;
        }
        (void) sd_event_source_set_description(pp->binding_timer, "engine-binding-watch");
}
