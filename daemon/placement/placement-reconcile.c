/* SPDX-License-Identifier: GPL-2.0-only */
/* The reconcile tick (watcher_ops.on_process_reconciled) of a placed process: its cgroup
 * cpuset rewritten (planned again inside the new one), its threads' affinities drifted
 * (pinned again, or left to the process, as its rule says). */
#include <stdlib.h>

#include "log.h"
#include "placement-internal.h"

/* The kernel before 6.2 (commit 8f9ea86fdf99) resets every task of a cpuset to the
 * cpuset's CPUs when the cpuset is written: a thread whose mask is now exactly its
 * cpuset's did not re-bind itself. */
static bool reset_by_cpuset(const placed_process *pp, pid_t tid) {
        _cleanup_cpuset_ tune_cpuset now = {};

        if (!pp->cpuset.restricted || placement_get_affinity(pp->owner, tid, &now) < 0)
                return false;
        return tune_cpuset_equal(&now, &pp->cpuset.plan.cpus);
}

void placement_on_reconciled(Watcher *w, managed_process *mp, void *userdata) {
        Placement *p = userdata;
        placed_process *pp = mp->userdata;
        unsigned drifted = 0;
        pid_t first = 0;
        char label[200];

        if (!pp || p->dry_run)
                return;
        /* Its cgroup's cpuset is rewritten by the kubelet or the runtime: plan again
         * inside the new one and pin again (inotify does not see cpuset.*.effective). */
        if (refresh_cpuset(p, mp, pp) > 0) {
                _cleanup_free_ char *cpus = NULL, *mems = NULL;
                (void) tune_cpuset_format_list(&pp->cpuset.plan.cpus, &cpus);
                (void) tune_cpuset_format_list(&pp->cpuset.plan.mems, &mems);
                log_notice("The cgroup cpuset of pid %d%s changed (now %s%s%s%s): planning it again.", mp->pid,
                           process_cpuset_label(&pp->cpuset, label, sizeof label),
                           pp->cpuset.restricted ? "CPUs " : "unrestricted", pp->cpuset.restricted && cpus ? cpus : "",
                           pp->cpuset.restricted ? ", memory nodes " : "", pp->cpuset.restricted && mems ? mems : "");
                (void) replan(p, mp, "its cgroup cpuset changed");
                return;
        }
        if (pp->binder == BINDER_ENGINE) {
                report_engine(p, mp, pp);
                return;
        }
        if (pp->binder != BINDER_DAEMON ||
            tune_affinity_check(p->ctx, p->affinity, &pp->originals, &drifted, &first) < 0 || drifted == 0)
                return;
        if (reset_by_cpuset(pp, first)) {
                log_notice("The kernel reset the CPU affinity of %u thread(s) of pid %d to its cpuset (a cpuset write on a "
                           "kernel before 6.2): pinning them again.", drifted, mp->pid);
                apply_process(p, mp);
                return;
        }
        if (mp->rule->binding == TUNE_BINDING_AUTO) {
                /* Two binders must never write one task: under auto the engine wins. */
                _cleanup_cpuset_ tune_cpuset mask = {};
                (void) placement_get_affinity(p, first, &mask);
                step_back(p, mp, pp, first, &mask, "after npu-tuned pinned it");
                return;
        }
        if (mp->rule->reassert_affinity) {
                if (!pp->drift_logged)
                        log_notice("pid %d changed the CPU affinity of %u thread(s) (first: %d); the policy says re-assert.",
                                   mp->pid, drifted, first);
                pp->drift_logged = true;
                apply_process(p, mp);
        } else if (!pp->drift_logged) {
                log_notice("pid %d changed the CPU affinity of %u thread(s) (first: %d) itself; respecting it, as the policy says.",
                           mp->pid, drifted, first);
                pp->drift_logged = true;
        }
}
