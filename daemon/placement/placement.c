/* SPDX-License-Identifier: GPL-2.0-only */
/* The Placement: what it works from, its life, what it reports. The rest is in the files
 * placement-internal.h lists. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "placement-internal.h"

uint64_t placement_key(pid_t pid, uint64_t start_time) {
        /* pid_max is at most 2^22. */
        return (start_time << 22) | ((uint64_t) pid & ((UINT64_C(1) << 22) - 1));
}

static pid_t key_pid(uint64_t key) {
        return (pid_t) (key & ((UINT64_C(1) << 22) - 1));
}

uint64_t placement_now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

void placed_process_free(placed_process *pp) {
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

managed_process *placement_find_process(Placement *p, uint64_t key) {
        managed_process *mp = watcher_find(p->watcher, key_pid(key));
        if (!mp || !mp->userdata || ((placed_process *) mp->userdata)->key != key)
                return NULL;
        return mp;
}

/* Reaction times: the event's kernel timestamp to the last set made for it. */
uint64_t reaction_begin(const Placement *p) {
        return p->last_set_ns;
}

void reaction_end(Placement *p, reaction_kind kind, pid_t pid, uint64_t set_before) {
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
        p->affinity = in->affinity ? in->affinity : &tune_affinity_backend_kernel;
        p->memmove = in->memmove ? in->memmove : &tune_memmove_backend_kernel;
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
        attribution_soon_done(p);
        tune_placer_free(p->placer);
        ready_drop(p);
        if (p->state_dfd >= 0)
                close(p->state_dfd);
        free(p->boot_id);
        free(p);
        return NULL;
}
