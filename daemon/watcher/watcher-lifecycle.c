/* SPDX-License-Identifier: GPL-2.0-only */
/* The process watcher's public interface (watcher.h): set-up, start, reload, release and
 * queries. The other roles are in the other daemon/watcher-*.c files. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"
#include "proc-guard.h"
#include "watcher-internal.h"

void watcher_params_from_policy(const tune_policy *p, watcher_params *ret) {
        *ret = (watcher_params){};
        if (p) {
                ret->rcvbuf_kib = p->options.proc_connector_rcvbuf_kib;
                ret->reconcile_interval_ms = p->options.reconcile_interval_ms;
                ret->max_managed = p->options.max_managed_processes;
        }
}

int watcher_new(sd_event *e, const tune_ctx *ctx, const tune_accels *accels, const tune_policy *policy,
                const watcher_params *params, const watcher_ops *ops, void *userdata, Watcher **ret) {
        static const tune_accels no_accels = {};
        _cleanup_(watcher_freep) Watcher *w = NULL;
        int r;

        w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        w->event = sd_event_ref(e);
        w->ctx = ctx;
        w->accels = accels ? accels : &no_accels;
        w->policy = policy;
        if (params)
                w->params = *params;
        if (w->params.reconcile_interval_ms == 0)
                w->params.reconcile_interval_ms = 10000;
        if (w->params.device_retry_ms == 0)
                w->params.device_retry_ms = 500;
        if (w->params.max_managed == 0)
                w->params.max_managed = 4096;
        if (w->params.gave_up_retry_ms == 0)
                w->params.gave_up_retry_ms = (unsigned) (PROC_GUARD_FIRST_BACKOFF_USEC / 1000) + 100;
        if (w->params.driver_query_interval_ms == 0)
                w->params.driver_query_interval_ms = 30000;
        w->driver.fd = -EBADF;
        if (ops)
                w->ops = *ops;
        w->userdata = userdata;
        r = registry_new(&w->registry);
        if (r < 0)
                return r;
        r = tune_attribution_env_names(policy, &w->env_names, &w->n_env_names);
        if (r < 0)
                return r;
        tune_env_name_index_build(&w->env_index, (const char *const *) w->env_names, w->n_env_names);
        r = watcher_reconcile_timer_new(w);
        if (r < 0) /* as before, when the first schedule made it: the watcher works without */
                log_warning_errno(r, "Failed to arm the reconcile timer, reconciling on events only: %m");
        *ret = TAKE_PTR(w);
        return 0;
}

/* The device numbers of the accelerators' nodes, for the open-device-files source. */
static int read_accel_rdevs(Watcher *w) {
        free(w->accel_rdevs);
        w->accel_rdevs = NULL;
        if (w->accels->n == 0 || !tune_ctx_is_live(w->ctx))
                return 0;
        w->accel_rdevs = calloc(w->accels->n, sizeof *w->accel_rdevs);
        if (!w->accel_rdevs)
                return -ENOMEM;
        for (unsigned i = 0; i < w->accels->n; i++)
                if (w->accels->items[i].dev_path[0] &&
                    tune_read_rdev(w->ctx, w->accels->items[i].dev_path, &w->accel_rdevs[i]) < 0)
                        w->accel_rdevs[i] = 0;
        return 0;
}

static void raise_fd_limit(void) {
        struct rlimit rl;

        /* A pidfd per managed process. */
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_debug_errno(errno, "Failed to raise the open file limit: %m");
}

int watcher_start(Watcher *w) {
        const connector_callbacks cb = { .event = watcher_on_event, .lost = watcher_on_lost };
        const connector_params cp = {
                .rcvbuf_kib = w->params.rcvbuf_kib,
                .ack_timeout_ms = w->params.ack_timeout_ms,
                .thread_comm = watcher_wants_thread_comm(w),
        };
        connector_stats cs;
        int r;

        if (!tune_ctx_is_live(w->ctx))
                return log_error_errno(EOPNOTSUPP, "The process watcher needs the live root \"/\".");
        raise_fd_limit();
        r = read_accel_rdevs(w);
        if (r < 0)
                return log_oom();
        r = connector_new(w->event, &cp, &cb, w, &w->connector);
        if (r < 0)
                return log_oom();
        /* Subscribe first and only then scan: a process started in between is seen by
         * one or the other. */
        r = connector_subscribe(w->connector);
        if (r < 0)
                return r;
        watcher_resync(w);
        w->stats.resyncs = 0; /* the start-up scan is not a resync */
        connector_get_stats(w->connector, &cs);
        /* The kernel doubles SO_RCVBUF for its bookkeeping and reports the double: the
         * policy's proc_connector_rcvbuf_kib is what was asked for, and what is said. */
        log_info("Watching processes: %u rule(s), %u managed after the initial scan, event filter %s, threads' renames "
                 "%s, receive buffer %d KiB (proc_connector_rcvbuf_kib; the kernel reserves %d KiB for it).",
                 w->policy ? w->policy->n_rules : 0, w->stats.managed, cs.filter ? "on" : "off",
                 !cs.socket_filter || cp.thread_comm ? "heard" : "dropped in the kernel (no rule picks threads by name)",
                 cs.rcvbuf / 2 / 1024, cs.rcvbuf / 1024);
        return 0;
}

int watcher_reload(Watcher *w, const tune_accels *accels, const tune_policy *policy) {
        static const tune_accels no_accels = {};
        _cleanup_free_ pid_t *pids = NULL;
        char **names = NULL;
        unsigned n_names = 0;
        size_t n = 0;
        int r;

        r = tune_attribution_env_names(policy, &names, &n_names);
        if (r < 0)
                return r;
        watcher_driver_reset(w); /* a driver installed since may answer now */
        r = registry_pids(w->registry, &pids, &n);
        if (r < 0) {
                tune_strv_free(names);
                return r;
        }
        tune_strv_free(w->env_names);
        w->env_names = names;
        w->n_env_names = n_names;
        tune_env_name_index_build(&w->env_index, (const char *const *) names, n_names);
        w->policy = policy;
        /* Renames dropped until now are not heard again: the resync below reads the names
         * of the managed processes' threads where a rule now wants them. */
        if (w->connector)
                connector_set_thread_comm(w->connector, watcher_wants_thread_comm(w));
        /* What the ancestry walk kept was read with the old rules and variable names. */
        watcher_ancestry_done(w);
        memset(w->ancestors, 0, sizeof w->ancestors);
        w->accels = accels ? accels : &no_accels;
        if (read_accel_rdevs(w) < 0)
                log_oom();
        for (size_t i = 0; i < n; i++) {
                Entry *e = registry_get(w->registry, pids[i]);
                char comm[TUNE_COMM_MAX];
                tune_proc_stat st;

                if (!e)
                        continue;
                if (!watcher_have_rules(w) || tune_proc_read_comm(w->ctx, e->p.pid, 0, comm) < 0 ||
                    !entry_settle_start(e)) {
                        entry_release(e, watcher_have_rules(w) ? WATCHER_EXIT_EXITED : WATCHER_EXIT_UNMATCHED);
                        continue;
                }
                /* Still valid during this call (the caller frees the old policy after it):
                 * on_process_exit(UNMATCHED) sees the rule the process had. */
                st = (tune_proc_stat){ .pid = e->p.pid, .ppid = e->p.ppid, .start_time = e->p.start_time };
                watcher_evaluate(w, e, &st, comm, EVAL_SCAN);
        }
        if (w->connector)
                watcher_resync(w);
        log_info("Process rules reloaded: %u rule(s), %u process(es) managed.", policy ? policy->n_rules : 0,
                 w->stats.managed);
        return 0;
}

int watcher_evaluate_pid(Watcher *w, pid_t pid, managed_process **ret) {
        Entry *e = registry_get(w->registry, pid);
        tune_proc_stat st;

        if (!w->accel_rdevs && read_accel_rdevs(w) < 0)
                return -ENOMEM;
        if (tune_proc_read_stat(w->ctx, pid, &st) < 0)
                return -ESRCH;
        if (e && !entry_same_process(e, &st)) {
                entry_release(e, WATCHER_EXIT_PID_REUSED);
                e = NULL;
        }
        if (!e || !e->matched)
                watcher_evaluate(w, e, &st, NULL, EVAL_SCAN);
        e = registry_get(w->registry, pid);
        if (!e || !e->matched)
                return -ENOENT;
        *ret = &e->p;
        return 0;
}

void watcher_release_all(Watcher *w) {
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;

        if (!w || registry_pids(w->registry, &pids, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                Entry *e = registry_get(w->registry, pids[i]);
                if (e)
                        entry_release(e, WATCHER_EXIT_STOP);
        }
}

Watcher *watcher_free(Watcher *w) {
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;

        if (!w)
                return NULL;
        w->connector = connector_free(w->connector);
        if (w->registry && registry_pids(w->registry, &pids, &n) >= 0)
                for (size_t i = 0; i < n; i++)
                        entry_free(registry_get(w->registry, pids[i]));
        registry_free(w->registry);
        sd_event_source_disable_unref(w->resync_timer);
        sd_event_source_disable_unref(w->timer);
        watcher_ancestry_done(w);
        watcher_remembered_done(w);
        free(w->refused);
        sd_event_source_disable_unref(w->retry_source);
        free(w->gave_up);
        sd_event_source_disable_unref(w->gave_up_timer);
        free(w->comm_pending);
        sd_event_source_disable_unref(w->comm_timer);
        free(w->uid_counts);
        tune_strv_free(w->env_names);
        free(w->accel_rdevs);
        watcher_driver_done(w);
        sd_event_unref(w->event);
        free(w);
        return NULL;
}

int watcher_check_process(Watcher *w, const managed_process *p) {
        Entry *e = registry_get(w->registry, p->pid);

        if (!e || &e->p != p || !e->matched)
                return 0;
        return entry_alive(e);
}

managed_process *watcher_find(Watcher *w, pid_t pid) {
        Entry *e = registry_get(w->registry, pid);

        /* No release here (the pidfd source does that): no callback from inside a
         * consumer's call. */
        return e && e->matched && entry_alive(e) ? &e->p : NULL;
}

void watcher_get_stats(const Watcher *w, watcher_stats *ret) {
        *ret = w->stats;
        if (w->connector) {
                connector_stats cs;
                connector_get_stats(w->connector, &cs);
                ret->filter = cs.filter;
                ret->socket_filter = cs.socket_filter;
                ret->rcvbuf = cs.rcvbuf;
        }
}

int watcher_managed_pids(Watcher *w, pid_t **ret, size_t *ret_n) {
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0, k = 0;
        int r;

        r = registry_pids(w->registry, &pids, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                Entry *e = registry_get(w->registry, pids[i]);
                if (e && e->matched)
                        pids[k++] = pids[i];
        }
        *ret = TAKE_PTR(pids);
        *ret_n = k;
        return 0;
}

void watcher_rescan(Watcher *w) {
        watcher_resync(w);
}

int watcher_release_pid(Watcher *w, pid_t pid) {
        Entry *e = watcher_lookup_managed(w, pid);

        if (!e)
                return -ESRCH;
        entry_unmatch(e, WATCHER_EXIT_RELEASED);
        e->released = true;
        return 0;
}

uint64_t watcher_event_timestamp_ns(const Watcher *w) {
        return w->stats.event_timestamp_ns;
}

uint64_t watcher_event_handling_ns(const Watcher *w) {
        return w->stats.event_handling_ns;
}

const char *watcher_unmanaged_reason(Watcher *w, pid_t pid) {
        const Entry *e = registry_get(w->registry, pid);

        if (e && e->released)
                return "released (D-Bus Release()): not managed until it execs again";
        for (unsigned i = 0; i < w->n_refused; i++)
                if (w->refused[i].pid == pid)
                        return "refused: max_managed_processes processes are managed; taken when one goes";
        for (unsigned i = 0; i < w->n_gave_up; i++)
                if (w->gave_up[i].pid == pid)
                        return "a read of it gave up (its memory map held, or the host too busy): looked at again "
                               "once its back-off is over";
        return "not managed yet: the watcher has not looked at it as it is now (a rescan, a rename or an exec will), "
               "or its user is over its share of max_managed_processes";
}

int watcher_keep_attribution(Watcher *w, pid_t pid, uint64_t start_time, uint64_t env_start, uint64_t env_end,
                             const tune_env_capture *env) {
        tune_proc_stat st;

        /* Another start time: another process. Another place of the environment: it exec'd
         * another program since (an exec keeps pid and start time). */
        if (tune_proc_read_stat(w->ctx, pid, &st) < 0 || st.start_time != start_time || st.env_start != env_start ||
            st.env_end != env_end)
                return -ESRCH;
        return watcher_remembered_add(w, pid, start_time, env);
}

int watcher_keep_released(Watcher *w, pid_t pid, uint64_t start_time) {
        tune_proc_status status;
        tune_proc_stat st;
        Entry *e;

        if (tune_proc_read_stat(w->ctx, pid, &st) < 0 || st.start_time != start_time ||
            tune_proc_read_status(w->ctx, pid, &status) < 0)
                return -ESRCH;
        if (registry_get(w->registry, pid))
                return -EEXIST;
        e = entry_new(w, pid, st.start_time, st.ppid, status.ruid, false, false);
        if (!e)
                return -ENOMEM;
        e->released = true;
        return 0;
}
