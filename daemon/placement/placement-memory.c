/* SPDX-License-Identifier: GPL-2.0-only */
/* A placed process's memory: moved to its memory node(s) after the rule's settle delay,
 * in steps (rate-limited or not), then verified from numa_maps. */
#include <errno.h>

#include "log.h"
#include "npu-tuned/numa-maps.h"
#include "placement-internal.h"

/* Memory is moved in steps of this period, rate_mib_s * period each. */
#define MIGRATE_STEP_USEC (100 * 1000ULL)
/* Without a rate limit, a step moves at most this much (some tens of ms of copying), and
 * the loop runs between steps. */
#define UNLIMITED_STEP_KIB (128 * 1024ULL)
#define UNLIMITED_STEP_GAP_USEC 1000ULL

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

static void count_moved(Placement *p, const tune_memmove_stats *moved) {
        p->stats.migrated_pages += moved->moved;
        p->stats.migrated_kib += moved->moved_kib;
        p->stats.unmoved_pages += tune_memmove_stats_not_moved(moved);
}

static void memory_finish(Placement *p, managed_process *mp, placed_process *pp, const tune_plan *pl) {
        const tune_memmove_stats moved = *tune_memmove_get_stats(pp->memmove);

        pp->memory_done = true;
        p->stats.migrations++;
        count_moved(p, &moved);
        pp->memory_timer = sd_event_source_disable_unref(pp->memory_timer);
        pp->memmove = tune_memmove_free(pp->memmove);
        verify_memory(p, mp, pl, &moved);
}

/* The settle delay is over, or a rate-limited migration has work left: move memory. */
static int on_memory_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        placed_process *pp = userdata;
        Placement *p = pp->owner;
        managed_process *mp = placement_find_process(p, pp->key);
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
                tune_memmove_params params = { .backend = p->memmove, .move_shared = pl->memory_shared,
                                                .move_file = pl->memory_shared };
                r = tune_memmove_new(p->ctx, mp->pid, &pl->mem_nodes, &params, &pp->memmove);
                if (r < 0) {
                        if (r != -ESRCH)
                                log_warning_errno(r, "Failed to plan the memory migration of pid %d, leaving it: %m", mp->pid);
                        pp->memory_timer = sd_event_source_disable_unref(pp->memory_timer);
                        return 0;
                }
                log_info("Moving %llu MiB of pid %d to node(s) at %u MiB/s (0: no limit, in steps)%s.",
                         (unsigned long long) (tune_memmove_get_stats(pp->memmove)->planned_kib / 1024), mp->pid,
                         rule->memory_rate_mib_s, pl->memory_shared ? ", shared pages too" : "");
        }
        r = tune_memmove_step(pp->memmove, rule->memory_rate_mib_s == 0 ? UNLIMITED_STEP_KIB
                                                                        : (uint64_t) rule->memory_rate_mib_s * 1024 *
                                                                                  MIGRATE_STEP_USEC / 1000000);
        if (r < 0 || watcher_check_process(p->watcher, mp) == 0) {
                if (r == -ETIMEDOUT || r == -EBUSY)
                        /* A step past its deadline, or one no worker may take, is given up
                         * (common/proc-guard.h): the process holds its memory map, maybe on
                         * purpose, and the loop does not wait for it. */
                        log_warning("Gave up moving the memory of pid %d: %s, leaving the rest where it is for now.",
                                    mp->pid, r == -ETIMEDOUT ? "a step did not finish in time (its memory map is held)"
                                                             : "too many reads of its user's processes are stuck");
                else if (r < 0 && r != -ESRCH)
                        log_warning_errno(r, "Failed to migrate the memory of pid %d, leaving the rest: %m", mp->pid);
                if (r < 0 && r != -ESRCH && pp->memmove) {
                        p->stats.migration_failures++;
                        count_moved(p, tune_memmove_get_stats(pp->memmove));
                }
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

void arm_memory(Placement *p, managed_process *mp, placed_process *pp, const tune_plan *pl) {
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

void memory_reset(placed_process *pp) {
        pp->memory_done = false;
        pp->memory_timer = sd_event_source_disable_unref(pp->memory_timer);
        pp->memmove = tune_memmove_free(pp->memmove);
}
