/* SPDX-License-Identifier: GPL-2.0-only */
/* The Prometheus text of a snapshot (daemon/metrics/metrics-format.c): every family once
 * with HELP and TYPE, label values from processes escaped and bounded, the reaction time
 * as a cumulative histogram, and no pid label whatever the number of processes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "metrics.h"

static char *format(const metrics_snapshot *s) {
        char *text = NULL;
        assert_int_equal(metrics_format(s, &text), 0);
        assert_non_null(text);
        return text;
}

static unsigned count_lines_with(const char *text, const char *prefix) {
        unsigned n = 0;
        size_t len = strlen(prefix);
        const char *p = text;
        while (*p) {
                const char *eol = strchr(p, '\n');
                n += strncmp(p, prefix, len) == 0;
                if (!eol)
                        break;
                p = eol + 1;
        }
        return n;
}

static void test_families(void **state) {
        metrics_snapshot *s = calloc(1, sizeof *s);
        (void) state;

        s->version = "1.2.3";
        s->placements = 7;
        s->migrated_bytes = 4096ULL * 1000;
        s->knobs_owned = 3;
        s->knobs_drifted = 1;
        s->reload_failures = 2;
        metrics_snapshot_add_process(s, "vllm-worker", "ascend:0", 0.5);
        metrics_snapshot_add_process(s, "vllm-worker", "ascend:0", 0.9);
        metrics_snapshot_add_process(s, "vllm-worker", "ascend:1", -1);
        char *t = format(s);
        assert_non_null(strstr(t, "npu_tuned_build_info{version=\"1.2.3\"} 1\n"));
        assert_non_null(strstr(t, "npu_tuned_placements_total 7\n"));
        assert_non_null(strstr(t, "npu_tuned_memory_migrated_bytes_total 4096000\n"));
        assert_non_null(strstr(t, "npu_tuned_knobs_owned 3\n"));
        assert_non_null(strstr(t, "npu_tuned_knobs_drifted 1\n"));
        assert_non_null(strstr(t, "npu_tuned_policy_reload_failures_total 2\n"));
        assert_non_null(strstr(t, "npu_tuned_managed_processes{rule=\"vllm-worker\",accelerators=\"ascend:0\"} 2\n"));
        assert_non_null(strstr(t, "npu_tuned_managed_processes{rule=\"vllm-worker\",accelerators=\"ascend:1\"} 1\n"));
        assert_non_null(strstr(t, "npu_tuned_memory_locality_min_ratio{rule=\"vllm-worker\",accelerators=\"ascend:0\"} 0.5\n"));
        assert_non_null(strstr(t, "npu_tuned_memory_locality_mean_ratio{rule=\"vllm-worker\",accelerators=\"ascend:0\"} 0.7\n"));
        /* Not measured: no locality sample for that group. */
        assert_null(strstr(t, "npu_tuned_memory_locality_min_ratio{rule=\"vllm-worker\",accelerators=\"ascend:1\"}"));
        /* Each family once; every counter ends in _total. */
        assert_int_equal(count_lines_with(t, "# TYPE npu_tuned_managed_processes "), 1);
        unsigned counters = 0;
        for (size_t at = 0; t[at]; at += strcspn(t + at, "\n") + (t[at + strcspn(t + at, "\n")] != 0)) {
                size_t len = strcspn(t + at, "\n");
                if (strncmp(t + at, "# TYPE ", 7) == 0 && len > 14 && strncmp(t + at + len - 8, " counter", 8) == 0) {
                        assert_memory_equal(t + at + len - 14, "_total", 6);
                        counters++;
                }
        }
        assert_true(counters >= 10);
        assert_null(strstr(t, "pid="));
        free(t);
        free(s);
}

static void test_escaped_labels(void **state) {
        metrics_snapshot *s = calloc(1, sizeof *s);
        char *e = NULL;
        (void) state;

        assert_int_equal(metrics_escape_label("a\"b\\c\nd\xff", &e), 0);
        /* The quote escaped; the backslash, the newline and the invalid byte as \xNN
         * (with their backslash escaped): one line, valid UTF-8. */
        assert_string_equal(e, "a\\\"b\\\\x5cc\\\\x0ad\\\\xff");
        free(e);
        char long_name[400];
        memset(long_name, 'x', sizeof long_name - 1);
        long_name[sizeof long_name - 1] = 0;
        assert_int_equal(metrics_escape_label(long_name, &e), 0);
        assert_int_equal(strlen(e), METRICS_LABEL_MAX - 1);
        free(e);

        s->version = "v";
        metrics_snapshot_add_process(s, "r", "evil\"} 1\nnpu_tuned_fake 1", 1);
        char *t = format(s);
        assert_null(strstr(t, "\nnpu_tuned_fake"));
        free(t);
        free(s);
}

static void test_bounded_groups(void **state) {
        metrics_snapshot *s = calloc(1, sizeof *s);
        char accels[32];
        (void) state;

        s->version = "v";
        /* 10,000 processes, each claiming accelerators of its own: the groups stay bounded
         * and every process is counted. */
        for (unsigned i = 0; i < 10000; i++) {
                snprintf(accels, sizeof accels, "x:%u", i);
                metrics_snapshot_add_process(s, "r", accels, -1);
        }
        assert_true(s->n_groups <= METRICS_GROUPS_MAX);
        unsigned total = 0;
        for (unsigned i = 0; i < s->n_groups; i++)
                total += s->groups[i].processes;
        assert_int_equal(total, 10000);
        char *t = format(s);
        assert_non_null(strstr(t, "npu_tuned_managed_processes{rule=\"r\",accelerators=\"other\"} "));
        free(t);
        free(s);
}

static void test_histogram(void **state) {
        metrics_snapshot *s = calloc(1, sizeof *s);
        (void) state;

        s->version = "v";
        s->n_reaction = 1;
        metrics_histogram *h = &s->reaction[0];
        h->kind = "exec";
        metrics_histogram_add(h, 90 * 1000, 2);          /* < 90 us: le 0.0001 */
        metrics_histogram_add(h, 300 * 1000, 3);         /* < 300 us: le 0.0005 */
        metrics_histogram_add(h, 100ULL * 1000000000, 1); /* < 100 s: only +Inf */
        h->sum_seconds = 100.001;
        char *t = format(s);
        assert_non_null(strstr(t, "npu_tuned_reaction_seconds_bucket{kind=\"exec\",le=\"0.0001\"} 2\n"));
        assert_non_null(strstr(t, "npu_tuned_reaction_seconds_bucket{kind=\"exec\",le=\"0.00025\"} 2\n"));
        assert_non_null(strstr(t, "npu_tuned_reaction_seconds_bucket{kind=\"exec\",le=\"0.0005\"} 5\n"));
        assert_non_null(strstr(t, "npu_tuned_reaction_seconds_bucket{kind=\"exec\",le=\"5\"} 5\n"));
        assert_non_null(strstr(t, "npu_tuned_reaction_seconds_bucket{kind=\"exec\",le=\"+Inf\"} 6\n"));
        assert_non_null(strstr(t, "npu_tuned_reaction_seconds_count{kind=\"exec\"} 6\n"));
        assert_non_null(strstr(t, "npu_tuned_reaction_seconds_sum{kind=\"exec\"} 100.001"));
        free(t);
        free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_families),
                cmocka_unit_test(test_escaped_labels),
                cmocka_unit_test(test_bounded_groups),
                cmocka_unit_test(test_histogram),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
