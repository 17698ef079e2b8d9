/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The daemon's placement: the watcher's consumer. For each managed process it asks the
 * placer (libtune/placement/placer.c) for a plan (CPUs and a memory node), pins every thread
 * by role, moves the memory after the rule's settle delay (rate-limited), verifies it from numa_maps, follows
 * threads as they come, rename and go, and gives affinities back on stop. */

#include "npu-tuned/affinity.h"
#include "npu-tuned/memmove.h"
#include "npu-tuned/plan.h"
#include "process-cpuset.h"
#include "watcher.h"

typedef struct Placement Placement;

/* What placement works from; borrowed, and must outlive the Placement. */
typedef struct placement_inputs {
        sd_event *event;                /* the memory migration timers */
        const tune_ctx *ctx;
        tune_topology *topology;        /* its free memory is refreshed before each plan */
        const char *state_dir;          /* the affinity records */
        /* Of the current policy load (see placement_reset()): */
        const tune_policy *policy;      /* NULL: the defaults */
        const tune_accels *accels;
        bool dry_run;                   /* plan and log, pin and move nothing */
        const struct event_sink *events; /* where events go besides the log (events/events.h); may be NULL */
        /* How the kernel is reached: sched_{get,set}affinity and the page moves (NULL: the
         * kernel's own; a test passes fakes to place without root). */
        const tune_affinity_backend *affinity;
        const tune_memmove_backend *memmove;
} placement_inputs;

int placement_new(const placement_inputs *in, Placement **ret);
Placement *placement_free(Placement *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Placement *, placement_free);
/* The watcher whose consumer this is (created after the Placement, with it as userdata). */
void placement_attach_watcher(Placement *p, Watcher *w);

/* A new placer for the (reloaded) policy and its accelerators; only while no process is
 * managed. */
int placement_reset(Placement *p, const tune_policy *policy, const tune_accels *accels, bool dry_run);
/* What the watcher calls; userdata is the Placement. */
extern const watcher_ops placement_watcher_ops;

/* What the daemon knows of mp beyond its plan, added to its explanation
 * (daemon/common/explain-json.h): its container and cgroup cpuset, who binds its threads. */
struct json_object;
int placement_describe(const Placement *p, const managed_process *mp, struct json_object *j);

/* The managed process's current plan (NULL when not placed), for --explain/D-Bus. */
const tune_plan *placement_get(const Placement *p, const managed_process *mp);
/* placement_get() with the plan's reasons (planned again for them), into *ret
 * (tune_plan_done() it); -ENOENT when mp is not planned. */
int placement_explain_plan(const Placement *p, const managed_process *mp, tune_plan *ret);

/* % of mp's memory on its memory node(s) when last verified from numa_maps; < 0: not
 * measured (yet). */
double placement_locality(const managed_process *mp);

typedef struct placement_stats {
        uint64_t placements; /* processes placed (a re-plan that comes out the same does not count) */
        uint64_t migrations; /* memory migrations finished */
        uint64_t repins;     /* times threads of a placed process were pinned again */
        uint64_t migration_failures; /* memory migrations given up */
        uint64_t migrated_pages, migrated_kib; /* moved by finished and given-up migrations */
        uint64_t unmoved_pages; /* pages those could not move */
} placement_stats;
void placement_get_stats(const Placement *p, placement_stats *ret);

/* (Re)plan mp in placer: its rule, its accelerators (those of all), its claim verified from
 * its credentials below ctx (docs/trust.md), and its cgroup cpuset (cpuset, as
 * process_cpuset_read() gave it). The keys of other processes whose plans that changed are
 * added to *ret_changed (NULL: not wanted). What placement does at every re-plan, and
 * --explain for each process it plans. */
int placement_plan_process(tune_placer *placer, const tune_ctx *ctx, const tune_accels *all, const managed_process *mp,
                           const process_cpuset *cpuset, tune_keys *ret_changed);

/* Key of a managed process: pid and start time together, so a reused pid is another key. */
uint64_t placement_key(pid_t pid, uint64_t start_time);

/* The daemon's reaction times so far (kernel event to the last CPU affinity set for it,
 * per kind): for the D-Bus Stats property. Valid as long as p. */
const struct reaction_stats *placement_get_reactions(const Placement *p);
