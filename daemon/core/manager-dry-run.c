/* SPDX-License-Identifier: GPL-2.0-only */
/* npu-tuned --dry-run: what the daemon would do on this host now, printed, and exit. Each
 * host knob as current -> desired (the knob part's own dry run, knobs.c), then each running
 * process a rule matches, with the CPUs of each role and the memory node it would get,
 * planned together as the daemon's start-up scan would. Nothing is changed. With --follow
 * the daemon runs on dry instead (npu-tuned.c): it logs what it would do as processes
 * come and go. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "manager.h"
#include "npu-tuned/proc.h"
#include "placement.h"
#include "watcher.h"

static const char *or_dash(const char *s) {
        return s && *s ? s : "-";
}

static void print_plan(const managed_process *mp, const tune_plan *pl) {
        _cleanup_free_ char *pool = NULL, *control = NULL, *compute = NULL, *mem = NULL, *accels = NULL, *comm = NULL;

        (void) tune_escape_utf8(mp->comm, true, &comm);
        (void) tune_attribution_format_accels(&mp->attribution, &accels);
        printf("pid %d (%s): rule \"%s\", accelerators %s: ", mp->pid, or_dash(comm), mp->rule->name, or_dash(accels));
        if (!pl || pl->action != TUNE_PLAN_PLACE) {
                const char *why = pl && pl->n_reasons > 0 ? pl->reasons[pl->n_reasons - 1] : "no plan";
                printf("left alone: %s\n", why);
                return;
        }
        (void) tune_cpuset_format_list(&pl->pool, &pool);
        (void) tune_cpuset_format_list(tune_plan_role_cpus(pl, TUNE_ROLE_CONTROL), &control);
        (void) tune_cpuset_format_list(tune_plan_role_cpus(pl, TUNE_ROLE_COMPUTE), &compute);
        (void) tune_cpuset_format_list(&pl->mem_nodes, &mem);
        printf("CPUs %s, control %s, compute %s, memory %s\n", or_dash(pool), or_dash(control), or_dash(compute),
               mem && *mem ? mem : "left where it is");
}

static int dry_run_processes(Manager *m) {
        _cleanup_(tune_placer_freep) tune_placer *placer = NULL;
        _cleanup_free_ managed_process **planned = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0, n_planned = 0;
        int r;

        if (!m->live) {
                printf("# processes: not looked at (--root or --no-watch: /proc is not this host's)\n");
                return 0;
        }
        r = manager_offline_planner(m, &placer);
        if (r < 0)
                return r;
        r = tune_proc_list_pids(m->ctx, &pids, &n);
        if (r < 0)
                return log_error_errno(r, "Failed to list processes: %m");
        planned = calloc(n + 1, sizeof *planned);
        if (!planned)
                return log_oom();
        /* In pid order, as the start-up scan serves them. */
        for (size_t i = 0; i < n; i++) {
                managed_process *mp;
                if (watcher_evaluate_pid(m->watcher, pids[i], &mp) < 0)
                        continue;
                r = manager_plan_process(m, placer, mp, NULL);
                if (r < 0)
                        return log_error_errno(r, "Failed to plan pid %d: %m", mp->pid);
                planned[n_planned++] = mp;
        }
        printf("# processes a rule matches: %zu, as npu-tuned would place them now\n", n_planned);
        for (size_t i = 0; i < n_planned; i++)
                print_plan(planned[i], tune_placer_get(placer, placement_key(planned[i]->pid, planned[i]->start_time)));
        return 0;
}

int manager_dry_run_once(const daemon_options *o) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        r = manager_new(o, &m);
        if (r < 0)
                return 1;
        if (m->accels.n == 0)
                printf("# no accelerator found: rules place only processes with \"accelerators\": \"none\" or an "
                       "\"unattributed\" action of \"place\"\n");
        r = manager_start_knobs(m);
        if (r >= 0)
                r = dry_run_processes(m);
        fflush(stdout);
        return r < 0 ? 1 : 0;
}
