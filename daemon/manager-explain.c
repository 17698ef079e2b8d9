/* SPDX-License-Identifier: GPL-2.0-only */
/* manager_explain(): what this daemon applied to a process, from its own state (the
 * watcher's registry and the placer), for the D-Bus Explain() call. A second process
 * computing the same would plan without knowing what this one decided. */
#include <errno.h>
#include <stdio.h>

#include "explain-json.h"
#include "manager.h"
#include "npu-tuned/match.h"
#include "npu-tuned/proc.h"
#include "placement.h"
#include "watcher.h"

int manager_explain(Manager *m, pid_t pid, json_object **ret) {
        managed_process *mp = m->watcher ? watcher_find(m->watcher, pid) : NULL;
        const tune_policy_rule *rule;
        tune_proc_stat st;
        tune_proc_facts f;
        char reason[256];
        bool retitle = false;

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
        /* Not managed: say whether the rules would match it now (read-only: the watcher's
         * registry is not touched). */
        tune_proc_facts_init(&f, m->ctx, pid, st.comm);
        rule = m->policy ? tune_policy_match(m->policy, &f, &retitle) : NULL;
        tune_proc_facts_done(&f);
        if (rule)
                snprintf(reason, sizeof reason,
                         "it matches rule \"%s\" but is not managed (released until it execs again, or the "
                         "max_managed_processes limit was reached)", rule->name);
        else
                snprintf(reason, sizeof reason, "it matches no rule of the policy: npu-tuned leaves it alone");
        return explain_unmanaged_to_json(pid, EXPLAIN_SOURCE_DAEMON, reason, ret);
}
