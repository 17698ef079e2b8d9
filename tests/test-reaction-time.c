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
        assert_int_equal(reaction_bucket_of(0), 0);
        assert_int_equal(reaction_bucket_of(1), 1);
        assert_int_equal(reaction_bucket_of(2), 2);
        assert_int_equal(reaction_bucket_of(3), 2);
        assert_int_equal(reaction_bucket_of(4), 3);
        assert_int_equal(reaction_bucket_of(1023), 10);
        assert_int_equal(reaction_bucket_of(1024), 11);
        assert_int_equal(reaction_bucket_of(UINT64_MAX), REACTION_BUCKETS - 1);
        /* Every value lies below its bucket's limit and at or above the previous one's. */
        for (uint64_t v = 1; v < (UINT64_C(1) << 36); v = v * 3 + 1) {
                unsigned b = reaction_bucket_of(v);
                assert_true(v < reaction_bucket_limit(b));
                assert_true(b == 0 || v >= reaction_bucket_limit(b - 1));
        }
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
                reaction_stats_add(&s, REACTION_THREAD, v[i]);
        }
        qsort(v, 1000, sizeof *v, cmp_u64);
        assert_int_equal(s.kinds[REACTION_THREAD].count, 1000);
        assert_int_equal(s.kinds[REACTION_THREAD].max_ns, v[999]);
        assert_int_equal(s.kinds[REACTION_EXEC].count, 0);
        for (unsigned i = 0; i < sizeof qs / sizeof *qs; i++) {
                uint64_t truth = v[(size_t) (qs[i] * 1000 + 0.5) - 1];
                uint64_t bound = reaction_hist_quantile(&s.kinds[REACTION_THREAD], qs[i]);
                assert_true(bound >= truth);
                assert_true(bound <= 2 * truth);
        }
        assert_int_equal(reaction_hist_quantile(&s.kinds[REACTION_EXEC], 0.5), 0);
}

static void test_format(void **state) {
        reaction_stats s = {};
        char *line = NULL;
        (void) state;

        reaction_stats_add(&s, REACTION_EXEC, 100000);  /* 100 us: bucket [65.5, 131) us */
        reaction_stats_add(&s, REACTION_EXEC, 120000);
        reaction_stats_add(&s, REACTION_RENAME, 5000);
        reaction_stats_add(&s, (reaction_kind) 7, 1); /* ignored */
        assert_int_equal(reaction_stats_format(&s, &line), 0);
        assert_string_equal(line, "exec n=2 p50<=120us p99<=120us max=120us; thread n=0; rename n=1 p50<=5us p99<=5us max=5us");
        free(line);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_buckets),
                cmocka_unit_test(test_quantiles_bound_the_truth),
                cmocka_unit_test(test_format),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
