/* SPDX-License-Identifier: GPL-2.0-only */
#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "knobs.h"
#include "log.h"
#include "manager.h"
#include "npu-tuned/container.h"
#include "manager-bus.h"
#include "npu-tuned/state-dir.h"
#include "npu-tuned/policy.h"
#include "placement.h"
#include "proc-guard.h"
#include "attribution-store.h"
#include "released-list.h"
#include "restore.h"
#include "watcher.h"

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        manager_metrics_stop(m);
        bus_server_free(m->bus);
        watcher_free(m->watcher);
        placement_free(m->placement);
        knobs_free(m->knobs);
        tune_accels_done(&m->accels);
        tune_policy_free(m->policy);
        tune_topology_free(m->topology);
        tune_ctx_free(m->ctx);
        proc_guard_free(m->guard);
        state_dir_free(m->state_dir);
        sd_event_unref(m->event);
        free(m->last_reload_message);
        free(m);
        return NULL;
}

int manager_new(const daemon_options *o, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        m = calloc(1, sizeof *m);
        if (!m)
                return log_oom();
        m->options = o;
        struct timespec ts;
        if (clock_gettime(CLOCK_REALTIME, &ts) >= 0)
                m->started_at_usec = (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
        r = state_dir_new(o->state_dir, &m->state_dir);
        if (r >= 0)
                r = bus_server_new(&m->bus);
        if (r < 0)
                return log_oom();
        m->bus_events = bus_server_event_sink(m->bus);
        m->events = manager_event_sink(m);
        /* A loop of our own, not sd_event_default(): the default loop checks its thread with
         * a gettid() system call on every iteration, one more per process event. */
        r = sd_event_new(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate event loop: %m");
        r = tune_ctx_new(o->root, &m->ctx);
        if (r < 0)
                return log_error_errno(r, "Failed to open root directory %s: %m", o->root);
        /* Reads of a process that can hold them (cmdline, environ, numa_maps: the process's
         * mmap_lock) go to a worker with a deadline: a user must not stop the loop. */
        r = proc_guard_new(m->ctx, &m->guard);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the /proc readers: %m");
        proc_guard_install(m->guard, m->ctx);
        m->live = tune_ctx_is_live(m->ctx) && !o->no_watch;
        r = tune_topology_load(m->ctx, &m->topology);
        if (r < 0)
                return log_error_errno(r, "Failed to read CPU/NUMA topology below %s: %m", o->root);
        /* The policy, then the accelerators with the policy's kinds and NUMA overrides. */
        r = manager_load_policy(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

bool manager_dry_run(const Manager *m) {
        return m->options->dry_run || (m->policy && m->policy->options.dry_run);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        log_info("Received %s, stopping.", strsignal((int) si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(m->event, 0);
}

/* Processes D-Bus Release() let go of before a restart stay released (a restart is no
 * exec); the list keeps only those still running. */
static void manager_keep_released(Manager *m) {
        _cleanup_free_ released_process *l = NULL;
        size_t n = 0, kept = 0;
        int r;

        r = released_list_load(state_dir_path(m->state_dir), &l, &n);
        if (r < 0) {
                log_warning_errno(r, "Failed to read the released processes in %s, ignoring: %m",
                                  state_dir_path(m->state_dir));
                return;
        }
        for (size_t i = 0; i < n; i++)
                if (watcher_keep_released(m->watcher, l[i].pid, l[i].start_time) >= 0)
                        l[kept++] = l[i];
        if (kept > 0)
                log_info("%zu process(es) released before the restart stay released until they exec again.", kept);
        if (kept != n)
                (void) released_list_save(state_dir_path(m->state_dir), l, kept);
}

void manager_keep_attributions(Manager *m, bool prune) {
        attribution_saved *l = NULL;
        size_t n = 0, kept = 0;
        int r;

        r = attribution_store_load(m->options->state_dir, prune, &l, &n);
        if (r < 0) {
                /* --explain of a user who may not read the directory: as a start without it. */
                log_full_errno(prune ? LOG_WARNING : LOG_DEBUG, r,
                               "Failed to read what processes were attributed from in %s, ignoring: %m",
                               m->options->state_dir);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                r = watcher_keep_attribution(m->watcher, l[i].pid, l[i].start_time, l[i].env_start, l[i].env_end,
                                             &l[i].env);
                if (r >= 0)
                        kept++;
                else if (prune)
                        (void) attribution_store_remove(m->options->state_dir, l[i].pid);
        }
        if (kept > 0 && prune)
                log_info("%zu process(es) attributed before the restart: what they were attributed from is taken again "
                         "where their own environment is gone.",
                         kept);
        attribution_saved_free_all(l, n);
}

static int manager_start_watcher(Manager *m) {
        const struct tune_policy *policy = m->policy;
        watcher_params params;
        int r;

        watcher_params_from_policy(policy, &params);
        params.driver_query = m->options->driver_query;
        params.driver_library_dir = m->options->driver_library_dir;
        if (!manager_dry_run(m)) {
                /* A daemon killed before it could restore left affinity records: give those
                 * processes their originals back BEFORE the first scan places them again,
                 * so that the new records hold their true originals, not our old values. */
                r = state_dir_acquire(m->state_dir, "affinity records of a previous run are left as they are");
                if (r < 0)
                        return r;
                if (r > 0)
                        (void) restore_affinity_records(m->ctx, state_dir_path(m->state_dir));
        }
        placement_inputs in = {
                .event = m->event,
                .ctx = m->ctx,
                .topology = m->topology,
                .state_dir = m->options->state_dir,
                .policy = policy,
                .accels = &m->accels,
                .dry_run = manager_dry_run(m),
                .events = &m->events,
                .memmove = proc_guard_memmove_backend(m->guard),
        };
        r = placement_new(&in, &m->placement);
        if (r < 0)
                return r;
        r = watcher_new(m->event, m->ctx, &m->accels, policy, &params, &placement_watcher_ops, m->placement, &m->watcher);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the process watcher: %m");
        placement_attach_watcher(m->placement, m->watcher);
        if (!manager_dry_run(m) && state_dir_locked(m->state_dir)) {
                manager_keep_released(m);
                manager_keep_attributions(m, true);
        }
        return watcher_start(m->watcher);
}

bool manager_reload_keeps_placements(const Manager *m, const tune_policy *next) {
        const tune_policy *cur = m->policy;

        /* The placer is built with the housekeeping CPUs; a dry run places nothing. */
        return cur && next && cur->host.irq_housekeeping_cpus_per_node == next->host.irq_housekeeping_cpus_per_node &&
               cur->options.dry_run == next->options.dry_run;
}

void manager_release_processes(Manager *m) {
        if (m->watcher)
                watcher_release_all(m->watcher);
}

static knobs_inputs knobs_inputs_of(Manager *m) {
        return (knobs_inputs){
                .event = m->event,
                .ctx = m->ctx,
                .topology = m->topology,
                .accels = &m->accels,
                .policy = m->policy,
                .state_dir = m->state_dir,
                .dry_run = manager_dry_run(m),
                .events = &m->events,
        };
}

/* Memory npu-tuned moves and the kernel's NUMA balancing pull in different directions
 * (docs/placement.md): said once per policy, after the knobs (a policy that turns the
 * balancing off has done so by now), when a rule moves memory and the balancing is on. */
static void manager_note_numa_balancing(Manager *m) {
        const tune_policy_rule *migrating = NULL;
        long v;

        if (!m->policy)
                return;
        for (unsigned i = 0; i < m->policy->n_rules && !migrating; i++)
                if (m->policy->rules[i].memory_migrate)
                        migrating = &m->policy->rules[i];
        if (!migrating || tune_read_int(m->ctx, "/proc/sys/kernel/numa_balancing", &v) < 0 || v == 0)
                return;
        log_notice("kernel.numa_balancing is %ld and rule \"%s\" moves memory: the kernel moves the pages a "
                   "thread touches toward that thread's node, undoing memory placed on another node than "
                   "the process's CPUs, and on some kernels move_pages(2) cannot move the pages it has just "
                   "unmapped for hinting faults. host.numa_balancing: 0 in the policy leaves memory to npu-tuned.",
                   v, migrating->name);
}

int manager_start_knobs(Manager *m) {
        knobs_inputs in = knobs_inputs_of(m);

        assert(!m->knobs);
        return knobs_start(&in, &m->knobs);
}

int manager_reapply(Manager *m, bool placements_kept) {
        knobs_inputs in = knobs_inputs_of(m);
        Knobs *old = TAKE_PTR(m->knobs);
        int r, ret = 0;

        if (m->placement && !placements_kept) {
                r = placement_reset(m->placement, m->policy, &m->accels, manager_dry_run(m));
                if (r < 0)
                        ret = r;
        }
        /* Processes still matching are planned again with their new rule: a thread whose
         * CPUs come out the same is not touched. */
        if (m->watcher) {
                r = watcher_reload(m->watcher, &m->accels, m->policy);
                if (r < 0)
                        ret = log_error_errno(r, "Failed to match processes against the new policy: %m");
        }
        r = knobs_reload(old, &in, &m->knobs);
        manager_note_numa_balancing(m);
        return r < 0 ? r : ret;
}

/* SIGHUP (systemctl reload): the policy files again. Only the difference is applied (see
 * manager_reapply()): a reload on a serving host that changes nothing moves nothing. */
static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        int r;

        (void) sd_notify(false, "RELOADING=1\nSTATUS=Reloading the policy.");
        log_info("Received SIGHUP, reloading the policy.");
        r = manager_reload_policy(m, NULL);
        (void) sd_notify(false, r < 0 ? "READY=1\nSTATUS=Running (policy reload failed, previous policy kept)."
                                      : "READY=1\nSTATUS=Running.");
        return 0;
}

/* SIGTERM and SIGINT stop the daemon, SIGHUP reloads the policy. */
static int manager_watch_signals(Manager *m) {
        static const struct {
                int signo;
                const char *name, *description;
                sd_event_signal_handler_t handler;
        } signals[] = {
                { SIGTERM, "SIGTERM", "sigterm", on_signal },
                { SIGINT, "SIGINT", "sigint", on_signal },
                { SIGHUP, "SIGHUP", "sighup", on_sighup },
        };
        sigset_t mask;
        int r;

        sigemptyset(&mask);
        for (size_t i = 0; i < ELEMENTSOF(signals); i++)
                sigaddset(&mask, signals[i].signo);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Failed to block signals: %m");
        for (size_t i = 0; i < ELEMENTSOF(signals); i++) {
                sd_event_source *s = NULL;

                r = sd_event_add_signal(m->event, &s, signals[i].signo, signals[i].handler, m);
                if (r < 0)
                        return log_error_errno(r, "Failed to watch %s: %m", signals[i].name);
                (void) sd_event_source_set_description(s, signals[i].description);
                sd_event_source_set_floating(s, true);
                sd_event_source_unref(s);
        }
        return 0;
}

/* A DaemonSet pod or a container run by hand: said once, with what the container needs
 * (the host's PID and network namespaces, the host's state directory). The missing system
 * bus is said by the bus (bus_server_open()). */
static void manager_note_container(Manager *m) {
        tune_container c;

        if (!m->live)
                return;
        tune_container_detect(m->ctx, getenv("container"), getenv("KUBERNETES_SERVICE_HOST"), &c);
        if (!c.engine[0])
                return;
        if (c.host_pid_ns == 0) {
                log_warning("Running in a container (%s) with its own PID namespace: the host's processes are out of "
                            "reach (run it with the host's PID namespace: hostPID: true, podman --pid=host).",
                            c.engine);
                return;
        }
        log_info("Running in a container (%s) in the host's PID namespace: placing the host's processes; "
                 "%s must be the host's directory for a later container to restore after a kill.",
                 c.engine, m->options->state_dir);
        if (c.host_net_ns == 0)
                log_warning("Not in the host's network namespace: the proc connector delivers nothing here "
                            "(run it with hostNetwork: true, podman --network=host).");
}

int manager_start(Manager *m) {
        int r;

        manager_note_container(m);

        r = manager_watch_signals(m);
        if (r < 0)
                return r;
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                log_warning_errno(r, "Failed to enable the service watchdog, ignoring: %m");
        /* The watcher first: if it cannot run (not in the host's namespaces), the daemon
         * exits before it has touched any knob. */
        if (m->live) {
                r = manager_start_watcher(m);
                if (r < 0)
                        return r;
        }
        r = manager_start_knobs(m);
        if (r < 0)
                return r;
        manager_note_numa_balancing(m);
        r = manager_metrics_start(m);
        if (r < 0)
                return r;
        /* Last: the bus shows a daemon that has started. */
        return bus_server_open(m->bus, m->options->bus, m->event, manager_vtable, m);
}

int manager_run(Manager *m) {
        int r;

        (void) sd_notify(false, "READY=1\nSTATUS=Running.");
        log_info("Running: %u NUMA node(s), %u accelerator(s), root %s%s.", m->topology->n_nodes, m->accels.n,
                 tune_ctx_root(m->ctx), m->live ? "" : ", process watcher off");
        if (m->accels.n == 0)
                log_notice("No accelerator found: rules that place processes next to their accelerators leave them "
                           "alone here; only rules with \"accelerators\": \"none\" or an \"unattributed\" action "
                           "of \"place\" place anything (npu-tuned --print-topology shows what was found).");
        r = sd_event_loop(m->event);
        /* What is given back, said once at the end (the lines before it give the details). */
        watcher_stats st = {};
        const tune_knob_plan *plan = knobs_get_plan(m->knobs);
        unsigned owned = 0;
        if (m->watcher)
                watcher_get_stats(m->watcher, &st);
        for (unsigned i = 0; i < plan->n; i++) {
                knob_status s = knobs_item_status(m->knobs, &plan->items[i], NULL);
                owned += s == KNOB_STATUS_APPLIED || s == KNOB_STATUS_CHANGED_BY_OTHER;
        }
        /* Processes still running get their affinity back where the policy says so. */
        if (m->watcher)
                watcher_release_all(m->watcher);
        (void) knobs_stop(m->knobs);
        manager_metrics_stop(m);
        log_info("Stopped: %u managed process(es) released (their original CPU affinity back where their rule says "
                 "restore_on_stop), %u host knob(s) given back%s.",
                 st.managed, owned, owned == 0 ? " (none was changed)" : "");
        return r;
}
