/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The daemon's counters for Prometheus, in node_exporter's textfile format (man
 * npu-tuned(8), METRICS). What the parts count is copied into a metrics_snapshot by the
 * manager (core/manager-metrics.c); this folder only turns a snapshot into text (pure,
 * metrics-format.c) and puts that text in place atomically (metrics-writer.c), so that the
 * format is tested without a daemon and the folder depends on no part. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The histogram buckets of the reaction time, in seconds (the "le" labels, +Inf beside). */
#define METRICS_LE_N 14
extern const double metrics_le_seconds[METRICS_LE_N];

typedef struct metrics_histogram {
        const char *kind;                  /* label value: "exec", "thread", "rename" */
        uint64_t buckets[METRICS_LE_N];    /* samples in (le[i-1], le[i]], not cumulative */
        uint64_t count;                    /* all samples, those above the last bound too */
        double sum_seconds;
} metrics_histogram;

/* Managed processes of one rule on one set of accelerators: a label pair that the policy
 * and the host bound, never a pid (cardinality). */
#define METRICS_GROUPS_MAX 256
#define METRICS_LABEL_MAX 128
typedef struct metrics_group {
        char rule[METRICS_LABEL_MAX];
        char accelerators[METRICS_LABEL_MAX]; /* "ascend:0,ascend:1"; "" none */
        unsigned processes;
        unsigned measured;             /* of them, with their memory locality measured */
        double locality_min;           /* ratio 0..1 over the measured ones */
        double locality_sum;
} metrics_group;

typedef struct metrics_snapshot {
        const char *version;
        bool dry_run;
        uint64_t process_events, overruns, resyncs;
        uint64_t placements, repins;
        uint64_t migrations, migration_failures, migrated_pages, migrated_bytes, unmoved_pages;
        unsigned knobs_owned, knobs_drifted;
        uint64_t reloads, reload_failures;
        uint64_t started_at_usec; /* CLOCK_REALTIME */
        metrics_group groups[METRICS_GROUPS_MAX];
        unsigned n_groups;
        metrics_histogram reaction[3];
        unsigned n_reaction;
} metrics_snapshot;

/* Count one managed process of rule on accelerators (either may be another user's text:
 * it is escaped when formatted), locality: ratio 0..1, < 0 when not measured. Beyond
 * METRICS_GROUPS_MAX groups, the rest share accelerators="other" of their rule or, failing
 * that, the last group. */
void metrics_snapshot_add_process(metrics_snapshot *s, const char *rule, const char *accelerators, double locality);
/* A reaction of ns nanoseconds that an upper bound limit_ns (exclusive) put in one bucket
 * of the daemon's own histogram: count samples bucketed there. */
void metrics_histogram_add(metrics_histogram *h, uint64_t limit_ns, uint64_t samples);

/* The snapshot in the text exposition format 0.0.4 (every line ends in "\n"). Returns 0 or
 * -ENOMEM; free *ret. */
int metrics_format(const metrics_snapshot *s, char **ret);
/* A label value as the format wants it: UTF-8 (other bytes and control characters as
 * \xNN, tune_escape_utf8()), '\' and '"' escaped, at most METRICS_LABEL_MAX - 1 bytes
 * before escaping. Returns 0 or -ENOMEM. */
int metrics_escape_label(const char *value, char **ret);

/* Replace path with text atomically: a new file beside it (O_EXCL, mode 0644), renamed
 * over it, so that a scrape reads the old file or the new one, never half of one. The
 * directory must be root's and writable by nobody else (a directory another user can write
 * could hold a trap for a root writer): -EPERM when not. */
int metrics_write_file(const char *path, const char *text);
