/* SPDX-License-Identifier: GPL-2.0-only */
/* The reaction-time histograms: bucket edges, quantile bounds against sorted samples, and
 * the summary line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "reaction-time.h"

static void test_buckets(void **state) {
        (void) state;
        /* Under 8 ns one bucket each, then eight per octave. */
        assert_int_equal(reaction_bucket_of(0), 0);
        assert_int_equal(reaction_bucket_of(7), 7);
        assert_int_equal(reaction_bucket_limit(7), 8);
        assert_int_equal(reaction_bucket_of(8), 8);
        assert_int_equal(reaction_bucket_limit(8), 9);
        assert_int_equal(reaction_bucket_of(16), 16);
        assert_int_equal(reaction_bucket_of(17), 16);
        assert_int_equal(reaction_bucket_limit(16), 18);
        /* 100 us = 100000 ns: octave [65536, 131072) in eighths of 8192, the fifth. */
        assert_int_equal(reaction_bucket_limit(reaction_bucket_of(100000)), 106496);
        assert_int_equal(reaction_bucket_of(UINT64_C(1) << 38), REACTION_BUCKETS - 1);
        assert_int_equal(reaction_bucket_of((UINT64_C(1) << 38) - 1), REACTION_BUCKETS - 2);
        assert_int_equal(reaction_bucket_limit(REACTION_BUCKETS - 2), UINT64_C(1) << 38);
        assert_int_equal(reaction_bucket_of(UINT64_MAX), REACTION_BUCKETS - 1);
        assert_true(reaction_bucket_limit(REACTION_BUCKETS - 1) == UINT64_MAX);
        /* Every value lies below its bucket's limit, at or above the previous one's, and
         * the limit is at most 1/8 above it. */
        for (uint64_t v = 1; v < (UINT64_C(1) << 38); v = v * 3 / 2 + 1) {
                unsigned b = reaction_bucket_of(v);
                assert_true(v < reaction_bucket_limit(b));
                assert_true(b == 0 || v >= reaction_bucket_limit(b - 1));
                assert_true(reaction_bucket_limit(b) <= v + v / 8 + 1);
        }
        /* The limits rise with the index. */
        for (unsigned i = 1; i < REACTION_BUCKETS; i++)
                assert_true(reaction_bucket_limit(i) > reaction_bucket_limit(i - 1));
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static void test_quantiles_bound_the_truth(void **state) {
        static uint64_t v[1000];
        reaction_stats s = {};
        const double qs[] = { 0.01, 0.5, 0.9, 0.99, 1.0 };
        (void) state;

        srand(7);
        for (unsigned i = 0; i < 1000; i++) {
                v[i] = (uint64_t) (rand() % 5000000) + 1; /* up to 5 ms */
                reaction_stats_add(&s, REACTION_THREAD, v[i], v[i] / 2);
        }
        qsort(v, 1000, sizeof *v, cmp_u64);
        assert_int_equal(s.kinds[REACTION_THREAD].count, 1000);
        assert_int_equal(s.kinds[REACTION_THREAD].max_ns, v[999]);
        assert_int_equal(s.kinds[REACTION_EXEC].count, 0);
        for (unsigned i = 0; i < sizeof qs / sizeof *qs; i++) {
                uint64_t truth = v[(size_t) (qs[i] * 1000 + 0.5) - 1];
                uint64_t bound = reaction_hist_quantile(&s.kinds[REACTION_THREAD], qs[i]);
                assert_true(bound >= truth);
                assert_true(bound <= truth + truth / 8 + 1);
        }
        assert_int_equal(reaction_hist_quantile(&s.kinds[REACTION_EXEC], 0.5), 0);
        /* The handling part, half of each: its own histogram. */
        assert_int_equal(s.handling[REACTION_THREAD].count, 1000);
        assert_int_equal(s.handling[REACTION_THREAD].max_ns, v[999] / 2);
        assert_int_equal(s.handling[REACTION_EXEC].count, 0);
}

/* A handling time longer than its reaction (a clock read out of order) counts as the whole
 * reaction. */
static void test_handling_at_most_the_reaction(void **state) {
        reaction_stats s = {};
        (void) state;

        reaction_stats_add(&s, REACTION_EXEC, 1000, 5000);
        assert_int_equal(s.handling[REACTION_EXEC].max_ns, 1000);
        assert_int_equal(s.handling[REACTION_EXEC].sum_ns, 1000);
        reaction_stats_add(&s, REACTION_EXEC, 3000, 0);
        assert_int_equal(s.handling[REACTION_EXEC].count, 2);
        assert_int_equal(s.handling[REACTION_EXEC].buckets[0], 1);
}

static void test_format(void **state) {
        reaction_stats s = {};
        char *line = NULL;
        (void) state;

        reaction_stats_add(&s, REACTION_EXEC, 100000, 40000);  /* 100 us: bucket [98.3, 106.5) us */
        reaction_stats_add(&s, REACTION_EXEC, 120000, 40000);
        reaction_stats_add(&s, REACTION_EXEC, 130000, 50000);
        reaction_stats_add(&s, REACTION_RENAME, 5000, 5000);
        reaction_stats_add(&s, (reaction_kind) 7, 1, 1); /* ignored */
        assert_int_equal(reaction_stats_format(s.kinds, &line), 0);
        assert_string_equal(line, "exec n=3 p50<=123us p99<=130us max=130us; thread n=0; rename n=1 p50<=5us p99<=5us max=5us");
        free(line);
        assert_int_equal(reaction_stats_format(s.handling, &line), 0);
        assert_string_equal(line, "exec n=3 p50<=41us p99<=50us max=50us; thread n=0; rename n=1 p50<=5us p99<=5us max=5us");
        free(line);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_buckets),
                cmocka_unit_test(test_quantiles_bound_the_truth),
                cmocka_unit_test(test_handling_at_most_the_reaction),
                cmocka_unit_test(test_format),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
