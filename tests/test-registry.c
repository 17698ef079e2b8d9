/* SPDX-License-Identifier: GPL-2.0-only */
/* The watcher's pid table against a plain array, through growth, collisions and
 * backward-shift deletions. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "watcher-registry.h"

#define SPACE 40000

static void test_basic(void **state) {
        _cleanup_(registry_freep) Registry *r = NULL;
        int a, b;
        (void) state;

        assert_int_equal(registry_new(&r), 0);
        assert_null(registry_get(r, 5));
        assert_int_equal(registry_put(r, 5, &a), 0);
        assert_int_equal(registry_put(r, 5, &b), -EEXIST);
        assert_int_equal(registry_put(r, 0, &b), -EINVAL);
        assert_int_equal(registry_put(r, -3, &b), -EINVAL);
        assert_ptr_equal(registry_get(r, 5), &a);
        assert_ptr_equal(registry_remove(r, 5), &a);
        assert_null(registry_remove(r, 5));
        assert_int_equal(registry_size(r), 0);
}

static void test_random_against_array(void **state) {
        _cleanup_(registry_freep) Registry *r = NULL;
        static void *ref[SPACE];
        static char tokens[SPACE];
        size_t n = 0;
        (void) state;

        srand(12345);
        assert_int_equal(registry_new(&r), 0);
        for (int step = 0; step < 400000; step++) {
                /* Small pid range early for dense clusters, the full range later. */
                pid_t pid = 1 + rand() % (step < 200000 ? 3000 : SPACE - 1);
                int op = rand() % 3;
                if (op < 2 && !ref[pid]) {
                        assert_int_equal(registry_put(r, pid, &tokens[pid]), 0);
                        ref[pid] = &tokens[pid];
                        n++;
                } else if (op < 2) {
                        assert_int_equal(registry_put(r, pid, &tokens[pid]), -EEXIST);
                } else {
                        assert_ptr_equal(registry_remove(r, pid), ref[pid]);
                        if (ref[pid])
                                n--;
                        ref[pid] = NULL;
                }
                if (step % 10000 == 0)
                        for (pid_t p = 1; p < SPACE; p++)
                                assert_ptr_equal(registry_get(r, p), ref[p]);
        }
        assert_int_equal(registry_size(r), n);

        pid_t *pids;
        size_t m;
        assert_int_equal(registry_pids(r, &pids, &m), 0);
        assert_int_equal(m, n);
        for (size_t i = 0; i < m; i++) {
                assert_non_null(ref[pids[i]]);
                if (i > 0)
                        assert_true(pids[i - 1] < pids[i]);
        }
        free(pids);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_basic),
                cmocka_unit_test(test_random_against_array),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
