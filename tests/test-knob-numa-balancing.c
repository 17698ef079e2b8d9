/* SPDX-License-Identifier: GPL-2.0-only */
/* kernel.numa_balancing: set only when the policy asks, restored, absent on kernels
 * without NUMA balancing. */
#include "knobs/knob-test.h"

#define NB "proc/sys/kernel/numa_balancing"

static void test_apply_restore(void **state) {
        knob_test *t = knob_test_new("numab");
        (void) state;

        fake_write(t->root, NB, "1\n", 0644);
        knob_test_load(t, 1);
        knob_test_plan(t);
        assert_int_equal(t->plan.n, 0); /* the policy did not ask */

        t->host.numa_balancing = 0;
        knob_test_plan(t);
        assert_int_equal(t->plan.n, 1);
        knob_test_apply(t, NULL);
        _cleanup_free_ char *v = knob_test_file(t, NB);
        assert_string_equal(v, "0");
        assert_int_equal(knob_test_restore(t), 0);
        _cleanup_free_ char *back = knob_test_file(t, NB);
        assert_string_equal(back, "1");
        knob_test_free(t);
}

static void test_missing(void **state) {
        knob_test *t = knob_test_new("numab-missing");
        (void) state;

        t->host.numa_balancing = 0;
        knob_test_load(t, 1);
        knob_test_plan(t);
        assert_int_equal(t->plan.n, 1);
        assert_int_equal(t->plan.items[0].skip, -ENOENT);
        knob_test_apply(t, NULL);
        assert_null(t->journal);
        knob_test_free(t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_apply_restore),
                cmocka_unit_test(test_missing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
