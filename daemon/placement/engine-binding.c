/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-binding.h"
#include "npu-tuned/affinity.h"
#include "npu-tuned/engine-binding.h"
#include "npu-tuned/proc.h"

binder binding_decide(const managed_process *mp, char *why, size_t size) {
        const char *kind = mp->attribution.n_accels > 0 ? mp->attribution.accels[0].kind : NULL;

        switch (mp->rule->binding) {
        case TUNE_BINDING_ENGINE:
                tune_copy_string(why, size, "the rule says the engine binds (\"binding\": \"engine\")");
                return BINDER_ENGINE;
        case TUNE_BINDING_AUTO:
                switch (tune_engine_binding_detect(mp->cmdline, &mp->env, kind, why, size)) {
                case TUNE_ENGINE_BINDS_YES:
                        return BINDER_ENGINE;
                case TUNE_ENGINE_BINDS_NO:
                        return BINDER_DAEMON;
                default:
                        snprintf(why, size, "no binding switch of a known engine; watching its threads for %u ms",
                                 mp->rule->binding_watch_ms);
                        return mp->rule->binding_watch_ms > 0 ? BINDER_WATCHING : BINDER_DAEMON;
                }
        default:
                tune_copy_string(why, size, "the rule says so (\"binding\": \"daemon\")");
                return BINDER_DAEMON;
        }
}

static int thread_mask(const tune_affinity_backend *backend, pid_t tid, tune_cpuset *ret) {
        if (!backend)
                backend = &tune_affinity_backend_kernel;
        return backend->get(backend->userdata, tid, ret);
}

bool binding_threads_moved(const tune_ctx *ctx, const tune_affinity_backend *backend, pid_t pid,
                           const tune_cpuset *start, pid_t *ret_tid, tune_cpuset *ret_mask) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;

        if (tune_proc_list_tasks(ctx, pid, &tids, &n) < 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                _cleanup_cpuset_ tune_cpuset m = {};
                if (thread_mask(backend, tids[i], &m) < 0 || tune_engine_binding_observed(&m, 1, start) == false)
                        continue;
                if (ret_tid)
                        *ret_tid = tids[i];
                if (ret_mask)
                        (void) tune_cpuset_copy(ret_mask, &m);
                return true;
        }
        return false;
}

int binding_report(const tune_ctx *ctx, const tune_affinity_backend *backend, pid_t pid, const tune_plan *pl,
                   const tune_cpuset *near_cpus, char **ret) {
        _cleanup_free_ pid_t *tids = NULL;
        _cleanup_cpuset_ tune_cpuset all = {};
        _cleanup_free_ char *cpus = NULL, *pool = NULL;
        unsigned n_seen = 0, outside_pool = 0, outside_near = 0;
        size_t n = 0;
        int r;

        r = tune_proc_list_tasks(ctx, pid, &tids, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                _cleanup_cpuset_ tune_cpuset m = {};
                if (thread_mask(backend, tids[i], &m) < 0)
                        continue;
                n_seen++;
                if (tune_cpuset_or(&all, &m) < 0)
                        return -ENOMEM;
                if (pl && pl->action == TUNE_PLAN_PLACE && !tune_cpuset_is_subset(&m, &pl->pool))
                        outside_pool++;
                if (near_cpus && !tune_cpuset_is_empty(near_cpus) && !tune_cpuset_is_subset(&m, near_cpus))
                        outside_near++;
        }
        if (tune_cpuset_format_list(&all, &cpus) < 0 ||
            (pl && tune_cpuset_format_list(&pl->pool, &pool) < 0))
                return -ENOMEM;
        if (asprintf(ret, "bound by the engine: %u thread(s) on CPUs %s; %u outside npu-tuned's plan %s; %u not on CPUs "
                          "near its accelerator(s)",
                     n_seen, cpus, outside_pool, pool && *pool ? pool : "-", outside_near) < 0)
                return -ENOMEM;
        return 0;
}

static int add(struct json_object *j, const char *key, struct json_object *v) {
        if (!v || json_object_object_add(j, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int binding_to_json(binder b, const char *why, const char *report, struct json_object *j) {
        int r = add(j, "binding",
                    json_object_new_string(b == BINDER_ENGINE ? "engine" : b == BINDER_DAEMON ? "daemon" : "watching"));
        if (r >= 0)
                r = add(j, "binding_reason", json_object_new_string(why ? why : ""));
        if (r >= 0 && report)
                r = add(j, "engine_report", json_object_new_string(report));
        return r;
}
