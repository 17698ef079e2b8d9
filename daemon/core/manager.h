/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "npu-tuned/context.h"
#include "npu-tuned/topology.h"
#include "npu-tuned/accel.h"
#include "bus-server.h"
#include "events.h"
#include "options.h"
#include "proc-guard.h"
#include "state-owner.h"

/* The daemon's state: one per process. Event sources hang off m->event; each part of the
 * daemon (knobs, watcher, placement, bus) keeps its own state behind a pointer here. Only
 * the manager's files (manager*.c) see this struct: the parts get the inputs they use. */
typedef struct Manager {
        const daemon_options *options;
        sd_event *event;
        tune_ctx *ctx;
        ProcGuard *guard; /* ctx's slow reader: /proc reads with a deadline (common/proc-guard.h) */
        tune_topology *topology;
        tune_accels accels;
        struct tune_policy *policy;
        struct Knobs *knobs; /* host knobs: daemon/knobs/knobs.c */
        bool live; /* root is "/" and the watcher may act on real processes */
        struct Watcher *watcher; /* the process watcher; NULL unless live */
        struct Placement *placement; /* the watcher's consumer: daemon/placement/placement.c */
        StateDir *state_dir; /* the journal and records, and their lock */
        BusServer *bus; /* D-Bus: bus/bus-server.c, answered by core/manager-bus.c */
        event_sink events; /* what the parts report: the metrics are told, then the bus (manager-metrics.c) */
        event_sink bus_events; /* the bus's signals */
        uint64_t memory_read_usec; /* when free memory was last read for a bus caller */
        bool reloading; /* in manager_reload_policy() */
        /* For `npu-tunectl status` (bus properties StartedAt, LastReload, PolicyWarnings):
         * what an admin asks first and the journal answers only by searching. */
        uint64_t started_at_usec;    /* CLOCK_REALTIME at start */
        uint64_t last_reload_usec;   /* CLOCK_REALTIME of the last reload; 0: none yet */
        bool last_reload_ok;
        char *last_reload_message;   /* the PolicyReloaded message of that reload */
        unsigned policy_warnings;    /* warnings of the policy in use */
        uint64_t reloads, reload_failures; /* for the metrics */
        struct ManagerMetrics *metrics; /* the Prometheus textfile (manager-metrics.c); NULL: none */
} Manager;

int manager_new(const daemon_options *o, Manager **ret);
/* --dry-run, or the policy's options.dry_run: report what would change, change nothing. */
bool manager_dry_run(const Manager *m);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);
int manager_start(Manager *m);
/* The knob part's start (with --dry-run: it prints current -> desired and changes nothing). */
int manager_start_knobs(Manager *m);
/* For the one-shot modes that plan what runs now (--explain without a daemon, --dry-run):
 * m->watcher set up without a consumer, and an empty placer as the daemon's. */
int manager_offline_planner(Manager *m, struct tune_placer **ret);
/* Before the watcher's first look: what processes still running were attributed from
 * before a restart (the state directory's attribution files) is handed to it. prune (the
 * daemon, holding the directory's lock): files of processes gone, or unreadable, are
 * removed. */
void manager_keep_attributions(Manager *m, bool prune);
/* Plan mp in placer as the daemon would: its claim, inside its cgroup's cpuset; *cs (may
 * be NULL) gets the cpuset. */
struct process_cpuset;
int manager_plan_process(Manager *m, struct tune_placer *placer, managed_process *mp, struct process_cpuset *cs);
/* manager-dry-run.c: npu-tuned --dry-run, one shot: the exit status. */
int manager_dry_run_once(const daemon_options *o);
int manager_run(Manager *m);
/* manager-policy.c: load the policy and discover the accelerators with its kinds (at
 * start: a bad policy is an error), or reload both (a bad policy keeps the old ones). */
int manager_load_policy(Manager *m);
/* Load the policy again (SIGHUP, D-Bus Reload()); a bad one is reported and the previous
 * one kept. *ret_message (may be NULL): one line for the PolicyReloaded signal and the
 * D-Bus error, "" on success (the caller frees it). */
int manager_reload_policy(Manager *m, char **ret_message);
/* manager-explain.c: what this daemon applied to pid, as explain-json.h's object, for
 * asker: root (0) or a process's owner gets its explanation; anyone else -EACCES, so that
 * nothing of another user's process (values from its environment, whether a rule matches
 * its executable, user or cgroup) is told that /proc would not show (docs/trust.md).
 * -ESRCH: no such process. */
struct json_object;
int manager_explain(Manager *m, pid_t pid, uid_t asker, struct json_object **ret);
/* npu-tuned --explain without a daemon to ask: the same, from a Manager of its own that
 * evaluates and plans every process as the start-up scan does. Messages are printed;
 * -EOPNOTSUPP below a --root (a usage error), -ESRCH no such process. */
int manager_explain_offline(const daemon_options *o, struct json_object **ret);
/* Reload, in three steps around the swap of m->policy: whether the placements can be
 * carried over to next (else the processes are released first, while their old rules
 * still exist, and placed afresh); then apply the new policy's difference: processes
 * re-matched and re-planned (threads whose CPUs stay the same are not touched), knobs
 * whose desired value is unchanged left alone (knobs_reload()). */
/* manager-metrics.c: the Prometheus textfile (--metrics-textfile, the policy's
 * options.metrics_textfile), kept current while the daemon runs: written when something it
 * counts changed, at most once a second, and never while nothing happens (no timer runs
 * then). start: after the parts (again after a reload: the path may have changed). */
int manager_metrics_start(Manager *m);
/* Something the metrics count changed outside the event loop's view (a reload). */
void manager_metrics_changed(Manager *m);
void manager_metrics_stop(Manager *m);
/* The sink the parts report to: marks the metrics changed, then m->bus_events. */
event_sink manager_event_sink(Manager *m);
bool manager_reload_keeps_placements(const Manager *m, const struct tune_policy *next);
void manager_release_processes(Manager *m);
int manager_reapply(Manager *m, bool placements_kept);
