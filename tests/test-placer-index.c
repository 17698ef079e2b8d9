/* SPDX-License-Identifier: GPL-2.0-only */
/* The placer finds a process's entry through a key index (libtune/placement/placer.c:
 * open addressing, entries moved back on removal). Thousands of keys shaped like the
 * daemon's (a pid and a start time packed, low bits alike), removed in a random order and
 * added again: every present key must find its plan, every removed one none, and the count must
 * match. (That the survivors keep their arrival order is the random walks' of
 * test-placer-incremental.c.) Pure: no sysfs, no processes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "fake-topology.h"
#include "plan-assert.h"
#include "npu-tuned/plan.h"

#define N_KEYS 3000u

/* Like the daemon's: the pid high, the start time low; start times close together. */
static uint64_t key_of(unsigned i) {
        return ((uint64_t) (1000 + i * 7) << 32) | (uint64_t) (500000 + (i % 5) * 1024);
}

static unsigned next(unsigned *seed) {
        *seed = *seed * 1103515245u + 12345u;
        return *seed >> 8;
}

static void assert_present_as(const tune_placer *p, const bool *present) {
        unsigned n = 0;

        for (unsigned i = 0; i < N_KEYS; i++) {
                const tune_plan *pl = tune_placer_get(p, key_of(i));
                if (present[i]) {
                        assert_non_null(pl);
                        n++;
                } else
                        assert_null(pl);
        }
        assert_int_equal(tune_placer_count(p), n);
}

static void test_index_churn(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_topology_new(2, 4, NULL, NULL, 8 * GIB_KIB);
        tune_plan_params params = { .no_reasons = true };
        tune_policy_rule rule = plan_test_rule(1, 1);
        static bool present[N_KEYS];
        static unsigned order[N_KEYS];
        unsigned seed = 4242;
        tune_placer *p;

        (void) state;
        /* Planned alone (plan.h: independent), so that thousands of entries cost no re-plans. */
        rule.accel_mode = TUNE_ACCEL_NONE;
        rule.unattributed = TUNE_UNATTRIBUTED_LEAVE;
        assert_int_equal(tune_placer_new(t, &params, &p), 0);
        for (unsigned i = 0; i < N_KEYS; i++) {
                assert_int_equal(tune_placer_set(p, key_of(i), &rule, NULL, 0, NULL), 0);
                present[i] = true;
                order[i] = i;
        }
        assert_present_as(p, present);
        assert_int_equal(tune_placer_remove(p, key_of(N_KEYS) /* never added */, NULL), -ENOENT);

        /* Two thirds out, in a random order; then a third of all back in. */
        for (unsigned i = N_KEYS - 1; i > 0; i--) {
                unsigned j = next(&seed) % (i + 1), x = order[i];
                order[i] = order[j];
                order[j] = x;
        }
        for (unsigned i = 0; i < 2 * N_KEYS / 3; i++) {
                assert_int_equal(tune_placer_remove(p, key_of(order[i]), NULL), 0);
                present[order[i]] = false;
                if (i % 97 == 0)
                        assert_present_as(p, present);
        }
        assert_present_as(p, present);
        assert_int_equal(tune_placer_remove(p, key_of(order[0]), NULL), -ENOENT);
        for (unsigned i = 0; i < N_KEYS / 3; i++) {
                assert_int_equal(tune_placer_set(p, key_of(order[i]), &rule, NULL, 0, NULL), 0);
                present[order[i]] = true;
        }
        assert_present_as(p, present);

        /* Replacing an entry in place keeps it findable and counted once. */
        assert_int_equal(tune_placer_set(p, key_of(order[0]), &rule, NULL, 0, NULL), 0);
        assert_present_as(p, present);

        for (unsigned i = 0; i < N_KEYS; i++)
                if (present[i]) {
                        assert_int_equal(tune_placer_remove(p, key_of(i), NULL), 0);
                        present[i] = false;
                }
        assert_present_as(p, present);
        tune_placer_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_index_churn),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
