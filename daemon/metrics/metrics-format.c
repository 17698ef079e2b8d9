/* SPDX-License-Identifier: GPL-2.0-only */
/* The snapshot as Prometheus text (exposition format 0.0.4): base units (seconds, bytes,
 * ratios), counters named *_total, one HELP and TYPE per family, label values escaped.
 * Pure: tested in test-metrics-format without a daemon. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "npu-tuned/macro.h"
#include "npu-tuned/proc.h"

const double metrics_le_seconds[METRICS_LE_N] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                  0.025,  0.05,    0.1,    0.25,  0.5,    1,     5 };

void metrics_snapshot_add_process(metrics_snapshot *s, const char *rule, const char *accelerators, double locality) {
        metrics_group *g = NULL;

        rule = rule ? rule : "";
        accelerators = accelerators ? accelerators : "";
        for (unsigned i = 0; i < s->n_groups && !g; i++)
                if (strncmp(s->groups[i].rule, rule, METRICS_LABEL_MAX - 1) == 0 &&
                    strncmp(s->groups[i].accelerators, accelerators, METRICS_LABEL_MAX - 1) == 0)
                        g = &s->groups[i];
        /* Full: the rest of a rule's processes go to its "other" group, the very last one
         * is kept free for that. */
        if (!g && s->n_groups >= METRICS_GROUPS_MAX - 1) {
                for (unsigned i = 0; i < s->n_groups && !g; i++)
                        if (strncmp(s->groups[i].rule, rule, METRICS_LABEL_MAX - 1) == 0 &&
                            streq(s->groups[i].accelerators, "other"))
                                g = &s->groups[i];
                if (!g && s->n_groups == METRICS_GROUPS_MAX)
                        g = &s->groups[METRICS_GROUPS_MAX - 1];
                accelerators = "other";
        }
        if (!g) {
                g = &s->groups[s->n_groups++];
                *g = (metrics_group){ .locality_min = 1 };
                snprintf(g->rule, sizeof g->rule, "%s", rule);
                snprintf(g->accelerators, sizeof g->accelerators, "%s", accelerators);
        }
        g->processes++;
        if (locality >= 0) {
                if (locality > 1)
                        locality = 1;
                g->measured++;
                g->locality_sum += locality;
                if (locality < g->locality_min)
                        g->locality_min = locality;
        }
}

void metrics_histogram_add(metrics_histogram *h, uint64_t limit_ns, uint64_t samples) {
        /* Every sample of that bucket is below limit_ns: it counts in the first bound at or
         * above the limit, so that each cumulative count is a lower bound, never more. */
        h->count += samples;
        for (unsigned i = 0; i < METRICS_LE_N; i++)
                if ((double) limit_ns <= metrics_le_seconds[i] * 1e9) {
                        h->buckets[i] += samples;
                        return;
                }
}

int metrics_escape_label(const char *value, char **ret) {
        char cut[METRICS_LABEL_MAX];
        _cleanup_free_ char *utf8 = NULL;
        char *out, *o;
        int r;

        snprintf(cut, sizeof cut, "%s", value ? value : "");
        r = tune_escape_utf8(cut, true, &utf8);
        if (r < 0)
                return r;
        out = malloc(2 * strlen(utf8) + 1);
        if (!out)
                return -ENOMEM;
        o = out;
        for (const char *p = utf8; *p; p++) {
                if (*p == '\\' || *p == '"')
                        *o++ = '\\';
                if (*p == '\n') {
                        *o++ = '\\';
                        *o++ = 'n';
                        continue;
                }
                *o++ = *p;
        }
        *o = 0;
        *ret = out;
        return 0;
}

typedef struct text {
        FILE *f;
        char *buf;
        size_t len;
} text;

static void family(text *t, const char *name, const char *type, const char *help) {
        fprintf(t->f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(text *t, const char *name, uint64_t v) {
        fprintf(t->f, "%s %llu\n", name, (unsigned long long) v);
}

static int format_groups(text *t, const metrics_snapshot *s) {
        static const struct {
                const char *name, *help;
                int what;
        } families[] = {
                { "npu_tuned_managed_processes", "Processes a rule matches, by rule and accelerators.", 0 },
                { "npu_tuned_memory_measured_processes",
                  "Managed processes whose memory locality was measured after their migration.", 1 },
                { "npu_tuned_memory_locality_min_ratio",
                  "Lowest share of a managed process's memory on its memory node(s), of the measured ones.", 2 },
                { "npu_tuned_memory_locality_mean_ratio",
                  "Mean share of the managed processes' memory on their memory node(s), of the measured ones.", 3 },
        };

        for (size_t f = 0; f < ELEMENTSOF(families); f++) {
                family(t, families[f].name, "gauge", families[f].help);
                for (unsigned i = 0; i < s->n_groups; i++) {
                        const metrics_group *g = &s->groups[i];
                        _cleanup_free_ char *rule = NULL, *accels = NULL;
                        int r;

                        if (families[f].what >= 2 && g->measured == 0)
                                continue;
                        r = metrics_escape_label(g->rule, &rule);
                        if (r >= 0)
                                r = metrics_escape_label(g->accelerators, &accels);
                        if (r < 0)
                                return r;
                        fprintf(t->f, "%s{rule=\"%s\",accelerators=\"%s\"} ", families[f].name, rule, accels);
                        if (families[f].what == 0)
                                fprintf(t->f, "%u\n", g->processes);
                        else if (families[f].what == 1)
                                fprintf(t->f, "%u\n", g->measured);
                        else if (families[f].what == 2)
                                fprintf(t->f, "%.6g\n", g->locality_min);
                        else
                                fprintf(t->f, "%.6g\n", g->locality_sum / g->measured);
                }
        }
        return 0;
}

static void format_histograms(text *t, const metrics_snapshot *s) {
        static const char name[] = "npu_tuned_reaction_seconds";

        family(t, name, "histogram",
               "From the kernel's process event to npu-tuned's last CPU affinity change for it, by kind of event.");
        for (unsigned k = 0; k < s->n_reaction; k++) {
                const metrics_histogram *h = &s->reaction[k];
                uint64_t cumulative = 0;

                for (unsigned i = 0; i < METRICS_LE_N; i++) {
                        cumulative += h->buckets[i];
                        fprintf(t->f, "%s_bucket{kind=\"%s\",le=\"%g\"} %llu\n", name, h->kind, metrics_le_seconds[i],
                                (unsigned long long) cumulative);
                }
                fprintf(t->f, "%s_bucket{kind=\"%s\",le=\"+Inf\"} %llu\n", name, h->kind, (unsigned long long) h->count);
                fprintf(t->f, "%s_sum{kind=\"%s\"} %.9f\n", name, h->kind, h->sum_seconds);
                fprintf(t->f, "%s_count{kind=\"%s\"} %llu\n", name, h->kind, (unsigned long long) h->count);
        }
}

/* The families of one sample without labels, in the order they are written. */
#define U64(field) offsetof(metrics_snapshot, field), false
#define UNS(field) offsetof(metrics_snapshot, field), true
static const struct {
        const char *name;
        bool counter;
        size_t offset;
        bool is_unsigned;
        const char *help;
} scalars[] = {
        { "npu_tuned_placements_total", true, U64(placements),
          "Processes placed (a re-plan that comes out the same does not count)." },
        { "npu_tuned_repins_total", true, U64(repins),
          "Times threads of a placed process were pinned again (their plan changed, or they drifted)." },
        { "npu_tuned_memory_migrations_total", true, U64(migrations), "Memory migrations of managed processes that finished." },
        { "npu_tuned_memory_migration_failures_total", true, U64(migration_failures),
          "Memory migrations given up (an error, a step past its deadline)." },
        { "npu_tuned_memory_migrated_pages_total", true, U64(migrated_pages), "Pages moved to their process's memory node(s)." },
        { "npu_tuned_memory_migrated_bytes_total", true, U64(migrated_bytes), "Bytes moved to their process's memory node(s)." },
        { "npu_tuned_memory_unmoved_pages_total", true, U64(unmoved_pages),
          "Pages a migration could not move (pinned, busy, target full, other processes')." },
        { "npu_tuned_knobs_owned", false, UNS(knobs_owned), "Host knobs holding npu-tuned's value, to be given back on stop." },
        { "npu_tuned_knobs_drifted", false, UNS(knobs_drifted), "Owned host knobs someone else has written since." },
        { "npu_tuned_process_events_total", true, U64(process_events), "Process events the kernel's proc connector reported." },
        { "npu_tuned_process_event_overruns_total", true, U64(overruns), "Times the kernel dropped process events (ENOBUFS)." },
        { "npu_tuned_resyncs_total", true, U64(resyncs), "Full scans of /proc after the kernel dropped process events." },
        { "npu_tuned_policy_reloads_total", true, U64(reloads), "Policy reloads asked for (SIGHUP, Reload())." },
        { "npu_tuned_policy_reload_failures_total", true, U64(reload_failures),
          "Policy reloads refused (the new policy was invalid; the previous one was kept)." },
};

int metrics_format(const metrics_snapshot *s, char **ret) {
        _cleanup_free_ char *version = NULL;
        text t = {};
        int r;

        r = metrics_escape_label(s->version, &version);
        if (r < 0)
                return r;
        t.f = open_memstream(&t.buf, &t.len);
        if (!t.f)
                return -ENOMEM;
        family(&t, "npu_tuned_build_info", "gauge", "The npu-tuned that writes these metrics (always 1).");
        fprintf(t.f, "npu_tuned_build_info{version=\"%s\"} 1\n", version);
        family(&t, "npu_tuned_start_time_seconds", "gauge", "When npu-tuned started, in seconds since the epoch.");
        fprintf(t.f, "npu_tuned_start_time_seconds %.3f\n", (double) s->started_at_usec / 1e6);
        family(&t, "npu_tuned_dry_run", "gauge", "1 when npu-tuned only reports what it would do.");
        sample(&t, "npu_tuned_dry_run", s->dry_run);
        r = format_groups(&t, s);
        for (size_t i = 0; i < ELEMENTSOF(scalars); i++) {
                const char *field = (const char *) s + scalars[i].offset;
                uint64_t v = scalars[i].is_unsigned ? *(const unsigned *) field : *(const uint64_t *) field;
                family(&t, scalars[i].name, scalars[i].counter ? "counter" : "gauge", scalars[i].help);
                sample(&t, scalars[i].name, v);
        }
        format_histograms(&t, s);
        if (fclose(t.f) != 0 || r < 0) {
                free(t.buf);
                return r < 0 ? r : -ENOMEM;
        }
        *ret = t.buf;
        return 0;
}
