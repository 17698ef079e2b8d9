/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The cgroup cpuset a managed process lives in (a container, a Kubernetes pod), as the
 * planner takes it, and which pod/container that is, for logs and explain. Read at match
 * and again on every reconcile tick: inotify does not report changes of cgroup v2's
 * cpuset.cpus.effective (nor of v1's when a parent changes), so the tick is the watch. */

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "npu-tuned/plan.h"
#include "npu-tuned/topology.h"

typedef struct process_cpuset {
        bool restricted;       /* narrower than what the daemon may use: plan inside it */
        tune_plan_cpuset plan; /* meaningful when restricted */
        int version;           /* cgroup version it came from; 0: none */
        char container[160];   /* "pod UID container containerd://ID", "" when none */
} process_cpuset;

void process_cpuset_done(process_cpuset *c);
/* -ESRCH when the process is gone; other errors leave *ret "not restricted" and are
 * returned for the caller to log. */
int process_cpuset_read(const tune_ctx *ctx, const tune_topology *t, pid_t pid, process_cpuset *ret);
/* Watch the mount table from the event loop, so that process_cpuset_read() need not ask
 * the kernel whether its cached cgroup mounts are current; without it (--explain), each
 * read polls. No-op below a test root. */
int process_cpuset_watch_mounts(sd_event *e, const tune_ctx *ctx);
void process_cpuset_unwatch_mounts(void);
/* The planner's view (NULL: not restricted). */
const tune_plan_cpuset *process_cpuset_for_plan(const process_cpuset *c) _pure_;
/* Add "container", and when restricted "cgroup_cpus", "cgroup_mems", "cgroup" to an
 * explanation (daemon/common/explain-json.h). */
struct json_object;
int process_cpuset_to_json(const process_cpuset *c, struct json_object *j);
/* " (pod ... container ...)" or "", to put beside a pid. */
const char *process_cpuset_label(const process_cpuset *c, char *buf, size_t size);
