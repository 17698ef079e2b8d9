/* SPDX-License-Identifier: GPL-2.0-only */
/* The Prometheus textfile (daemon/metrics/): what the parts count, copied into a snapshot
 * and written when it changed. No timer runs while nothing happens (the daemon's idle
 * promise, bench/idle.sh): a post source, which sd-event runs only after it dispatched
 * something else, compares a signature of the counters, and only a change arms a one-shot
 * timer that writes a second later, so a burst of events is one write. Events (a process
 * placed, a knob changed, a reload) mark the file changed through the sink the parts are
 * given, which hands them on to the bus. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "knobs.h"
#include "log.h"
#include "manager.h"
#include "metrics.h"
#include "npu-tuned/attribution.h"
#include "npu-tuned/policy.h"
#include "placement.h"
#include "reaction-time.h"
#include "watcher.h"

/* How long changes gather before one write. */
#define METRICS_COALESCE_USEC (1000 * 1000ULL)

typedef struct ManagerMetrics {
        char *path;
        sd_event_source *post;    /* after every dispatch: did a counter change? */
        sd_event_source *timer;   /* armed by a change: the write */
        uint64_t signature;       /* of the counters last written */
        bool changed;             /* an event said so */
        bool error_logged;
} ManagerMetrics;

static uint64_t mix(uint64_t h, uint64_t v) {
        return (h ^ v) * 0x100000001b3ULL;
}

/* Every counter the text shows that moves without an event: a change of any changes this
 * (the managed processes' locality moves with the migrations counted here). */
static uint64_t counters_signature(const Manager *m) {
        watcher_stats ws = {};
        placement_stats ps = {};
        uint64_t h = 0xcbf29ce484222325ULL;

        if (m->watcher)
                watcher_get_stats(m->watcher, &ws);
        if (m->placement) {
                const reaction_stats *rs = placement_get_reactions(m->placement);
                placement_get_stats(m->placement, &ps);
                for (int k = 0; k < _REACTION_KIND_MAX; k++)
                        h = mix(h, rs->kinds[k].count);
        }
        h = mix(h, ws.events);
        h = mix(h, ws.overruns);
        h = mix(h, ws.resyncs);
        h = mix(h, ws.managed);
        h = mix(h, ps.placements);
        h = mix(h, ps.repins);
        h = mix(h, ps.migrations);
        h = mix(h, ps.migration_failures);
        h = mix(h, ps.migrated_pages);
        return h;
}

/* The accelerators label of mp. The file is readable by every user (the collector runs as
 * its own), so it shows what ListProcesses() shows everyone (docs/trust.md): the
 * accelerators when the rule named them; when they came from the process's environment
 * or open files, which /proc shows its owner only, just their kinds. */
static int accelerators_label(const managed_process *mp, char **ret) {
        const tune_attribution *a = &mp->attribution;
        char kinds[METRICS_LABEL_MAX] = "";
        size_t len = 0;

        if (a->source == TUNE_ATTRIBUTION_RULE || a->source == TUNE_ATTRIBUTION_NONE)
                return tune_attribution_format_accels(a, ret);
        for (unsigned i = 0; i < a->n_accels; i++) {
                bool seen = false;
                for (unsigned k = 0; k < i && !seen; k++)
                        seen = streq(a->accels[k].kind, a->accels[i].kind);
                if (!seen && len < sizeof kinds)
                        len += (size_t) snprintf(kinds + len, sizeof kinds - len, "%s%s", len ? "," : "", a->accels[i].kind);
        }
        *ret = strdup(kinds);
        return *ret ? 0 : -ENOMEM;
}

static int snapshot_take(Manager *m, metrics_snapshot *s) {
        const tune_knob_plan *plan = knobs_get_plan(m->knobs);
        watcher_stats ws = {};
        placement_stats ps = {};
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;
        int r;

        s->version = PACKAGE_VERSION;
        s->dry_run = manager_dry_run(m);
        s->started_at_usec = m->started_at_usec;
        s->reloads = m->reloads;
        s->reload_failures = m->reload_failures;
        if (m->watcher)
                watcher_get_stats(m->watcher, &ws);
        s->process_events = ws.events;
        s->overruns = ws.overruns;
        s->resyncs = ws.resyncs;
        if (m->placement) {
                const reaction_stats *rs = placement_get_reactions(m->placement);
                placement_get_stats(m->placement, &ps);
                for (int k = 0; k < _REACTION_KIND_MAX && k < (int) ELEMENTSOF(s->reaction); k++) {
                        metrics_histogram *h = &s->reaction[s->n_reaction++];
                        h->kind = reaction_kind_to_string((reaction_kind) k);
                        for (unsigned i = 0; i < REACTION_BUCKETS; i++)
                                if (rs->kinds[k].buckets[i] > 0)
                                        metrics_histogram_add(h, reaction_bucket_limit(i), rs->kinds[k].buckets[i]);
                        h->sum_seconds = (double) rs->kinds[k].sum_ns / 1e9;
                }
        }
        s->placements = ps.placements;
        s->repins = ps.repins;
        s->migrations = ps.migrations;
        s->migration_failures = ps.migration_failures;
        s->migrated_pages = ps.migrated_pages;
        s->migrated_bytes = ps.migrated_kib * 1024;
        s->unmoved_pages = ps.unmoved_pages;
        for (unsigned i = 0; plan && i < plan->n; i++) {
                knob_status st = knobs_item_status(m->knobs, &plan->items[i], NULL);
                s->knobs_owned += st == KNOB_STATUS_APPLIED || st == KNOB_STATUS_CHANGED_BY_OTHER;
                s->knobs_drifted += st == KNOB_STATUS_CHANGED_BY_OTHER;
        }
        if (m->watcher) {
                r = watcher_managed_pids(m->watcher, &pids, &n);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                const managed_process *mp = watcher_find(m->watcher, pids[i]);
                _cleanup_free_ char *accels = NULL;
                if (!mp)
                        continue;
                r = accelerators_label(mp, &accels);
                if (r < 0)
                        return r;
                double locality = placement_locality(mp);
                metrics_snapshot_add_process(s, mp->rule->name, accels, locality < 0 ? -1 : locality / 100);
        }
        return 0;
}

static int metrics_write(Manager *m) {
        ManagerMetrics *mm = m->metrics;
        _cleanup_free_ metrics_snapshot *s = calloc(1, sizeof *s);
        _cleanup_free_ char *text = NULL;
        int r;

        if (!s)
                return log_oom();
        mm->signature = counters_signature(m);
        mm->changed = false;
        r = snapshot_take(m, s);
        if (r >= 0)
                r = metrics_format(s, &text);
        if (r >= 0)
                r = metrics_write_file(mm->path, text);
        if (r < 0 && !mm->error_logged) {
                if (r == -EPERM)
                        log_warning("Not writing the metrics to %s: its directory must be root's and writable by "
                                    "no one else.", mm->path);
                else
                        log_warning_errno(r, "Failed to write the metrics to %s (said once; tried again at each "
                                             "change): %m", mm->path);
        }
        mm->error_logged = r < 0;
        return r;
}

static int on_metrics_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) metrics_write(userdata);
        return 0;
}

static void arm(Manager *m) {
        ManagerMetrics *mm = m->metrics;
        int enabled = SD_EVENT_OFF;
        int r;

        if (sd_event_source_get_enabled(mm->timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                return; /* a write is coming */
        r = sd_event_source_set_time_relative(mm->timer, METRICS_COALESCE_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(mm->timer, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the metrics timer: %m");
}

static int on_metrics_post(sd_event_source *s, void *userdata) {
        Manager *m = userdata;

        if (m->metrics->changed || counters_signature(m) != m->metrics->signature)
                arm(m);
        return 0;
}

void manager_metrics_changed(Manager *m) {
        if (m->metrics)
                m->metrics->changed = true;
}

static ManagerMetrics *metrics_free(ManagerMetrics *mm) {
        if (!mm)
                return NULL;
        sd_event_source_disable_unref(mm->post);
        sd_event_source_disable_unref(mm->timer);
        free(mm->path);
        free(mm);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(ManagerMetrics *, metrics_free);

void manager_metrics_stop(Manager *m) {
        ManagerMetrics *mm = TAKE_PTR(m->metrics);

        if (!mm)
                return;
        /* A stopped daemon counts nothing: no file, rather than numbers that look current
         * (node_exporter's scrape then lacks npu_tuned_build_info: absent() alerts). */
        if (unlink(mm->path) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove the metrics file %s: %m", mm->path);
        metrics_free(mm);
}

int manager_metrics_start(Manager *m) {
        const char *path = m->options->metrics_textfile;
        _cleanup_(metrics_freep) ManagerMetrics *mm = NULL;
        int r;

        if (!path && m->policy)
                path = m->policy->options.metrics_textfile;
        if (m->metrics && path && streq(m->metrics->path, path)) {
                manager_metrics_changed(m);
                return 0;
        }
        manager_metrics_stop(m);
        if (!path || !*path)
                return 0;
        mm = calloc(1, sizeof *mm);
        if (!mm || !(mm->path = strdup(path)))
                return log_oom();
        r = sd_event_add_post(m->event, &mm->post, on_metrics_post, m);
        if (r >= 0)
                r = sd_event_add_time_relative(m->event, &mm->timer, CLOCK_MONOTONIC, METRICS_COALESCE_USEC,
                                               100 * 1000, on_metrics_timer, m);
        if (r >= 0)
                r = sd_event_source_set_enabled(mm->timer, SD_EVENT_OFF);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the metrics of %s: %m", path);
        (void) sd_event_source_set_description(mm->post, "metrics-changed");
        (void) sd_event_source_set_description(mm->timer, "metrics-write");
        m->metrics = TAKE_PTR(mm);
        log_info("Writing metrics for Prometheus to %s when they change.", path);
        (void) metrics_write(m);
        return 0;
}

/* ---- the parts' event sink: the metrics are told, then the bus ---- */

static void on_process_placed(void *userdata, const managed_process *mp, const tune_plan *pl) {
        Manager *m = userdata;
        manager_metrics_changed(m);
        if (m->bus_events.process_placed)
                m->bus_events.process_placed(m->bus_events.userdata, mp, pl);
}

static void on_process_released(void *userdata, const managed_process *mp, const char *reason) {
        Manager *m = userdata;
        manager_metrics_changed(m);
        if (m->bus_events.process_released)
                m->bus_events.process_released(m->bus_events.userdata, mp, reason);
}

static void on_knob_changed(void *userdata, const char *id, const char *path, const char *value, bool restored) {
        Manager *m = userdata;
        manager_metrics_changed(m);
        if (m->bus_events.knob_changed)
                m->bus_events.knob_changed(m->bus_events.userdata, id, path, value, restored);
}

static void on_knob_drift(void *userdata, const char *id, const char *path, const char *expected, const char *found) {
        Manager *m = userdata;
        manager_metrics_changed(m);
        if (m->bus_events.knob_drift)
                m->bus_events.knob_drift(m->bus_events.userdata, id, path, expected, found);
}

static void on_policy_reloaded(void *userdata, bool ok, const char *message) {
        Manager *m = userdata;
        manager_metrics_changed(m);
        if (m->bus_events.policy_reloaded)
                m->bus_events.policy_reloaded(m->bus_events.userdata, ok, message);
}

event_sink manager_event_sink(Manager *m) {
        return (event_sink){
                .userdata = m,
                .process_placed = on_process_placed,
                .process_released = on_process_released,
                .knob_changed = on_knob_changed,
                .knob_drift = on_knob_drift,
                .policy_reloaded = on_policy_reloaded,
        };
}
