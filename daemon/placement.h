/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The daemon's placement: the watcher's consumer. For each managed process it asks the
 * placer (libtune/placement/plan.c) for CPUs and a memory node, pins every thread by role, moves the
 * memory after the rule's settle delay (rate-limited), verifies it from numa_maps, follows
 * threads as they come, rename and go, and gives affinities back on stop. */

#include "npu-tuned/plan.h"
#include "watcher.h"

struct Manager;
typedef struct Placement Placement;

int placement_new(struct Manager *m, Placement **ret);
Placement *placement_free(Placement *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Placement *, placement_free);

/* A new placer for the (reloaded) policy; only while no process is managed. */
int placement_reset(Placement *p);

/* What the watcher calls; userdata is the Placement. */
extern const watcher_ops placement_watcher_ops;

/* The managed process's current placement (NULL when not placed), for --explain/D-Bus. */
const tune_placement *placement_get(const Placement *p, const managed_process *mp);

/* The attributed accelerators of mp that exist in all (at most max), for the planner. */
unsigned placement_resolve_accels(const tune_accels *all, const managed_process *mp, const tune_accel **ret,
                                  unsigned max);

/* Key of a managed process: pid and start time together, so a reused pid is another key. */
uint64_t placement_key(pid_t pid, uint64_t start_time);

/* Give the processes recorded in state_dir's affinity records (by a daemon that did not
 * stop cleanly) their original CPU affinities back, where the process is still the one
 * recorded (pid and start time) and its rule said restore_on_stop, then remove the
 * records. Called by `npu-tuned --restore` and at start, before the watcher's first scan
 * places the processes again (which then records their true originals, not ours).
 * -EIO when some record could not be restored (it is kept); errors are logged. */
int placement_restore_records(const tune_ctx *ctx, const char *state_dir);
