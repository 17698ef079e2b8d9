/* SPDX-License-Identifier: GPL-2.0-only */
/* The process watcher's decisions (daemon/watcher/watcher-decide.c), as data: thread-list diffs,
 * the device-file retry backoff, what a match means, what changed on re-evaluation. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "watcher-decide.h"

static managed_thread th(pid_t tid, const char *comm) {
        managed_thread t = { .tid = tid };
        snprintf(t.comm, sizeof t.comm, "%s", comm);
        return t;
}

static watcher_thread_seen seen(pid_t tid, const char *comm) {
        watcher_thread_seen s = { .tid = tid, .readable = comm != NULL };
        if (comm)
                snprintf(s.comm, sizeof s.comm, "%s", comm);
        return s;
}

static void assert_change(const watcher_thread_change *c, watcher_thread_change_kind kind, pid_t tid, const char *comm) {
        assert_int_equal(c->kind, kind);
        assert_int_equal(c->tid, tid);
        if (comm)
                assert_string_equal(c->comm, comm);
}

static void test_thread_diff_nothing(void **state) {
        managed_thread known[] = { th(10, "main"), th(11, "worker") };
        watcher_thread_seen now[] = { seen(10, "main"), seen(11, "worker") };
        _cleanup_free_ watcher_thread_change *c = NULL;
        size_t n = 99;

        assert_int_equal(watcher_thread_diff(known, 2, now, 2, &c, &n), 0);
        assert_int_equal(n, 0);
        assert_null(c);
        assert_int_equal(watcher_thread_diff(NULL, 0, NULL, 0, &c, &n), 0);
        assert_int_equal(n, 0);
}

static void test_thread_diff_all_kinds(void **state) {
        /* 12 vanished, 13 is exiting (comm unreadable), 11 renamed, 14 new, 15 exiting
         * and unknown: nothing. */
        managed_thread known[] = { th(13, "dying"), th(10, "main"), th(12, "gone"), th(11, "old") };
        watcher_thread_seen now[] = { seen(10, "main"), seen(11, "acl_thread"), seen(13, NULL), seen(14, "new"),
                                      seen(15, NULL) };
        _cleanup_free_ watcher_thread_change *c = NULL;
        size_t n = 0;

        assert_int_equal(watcher_thread_diff(known, 4, now, 5, &c, &n), 0);
        assert_int_equal(n, 4);
        /* Vanished ones first, in known order; then in tid order. */
        assert_change(&c[0], WATCHER_THREAD_GONE, 12, NULL);
        assert_change(&c[1], WATCHER_THREAD_RENAMED, 11, "acl_thread");
        assert_change(&c[2], WATCHER_THREAD_GONE, 13, NULL);
        assert_change(&c[3], WATCHER_THREAD_NEW, 14, "new");
}

static void test_thread_diff_from_nothing(void **state) {
        watcher_thread_seen now[] = { seen(20, "a"), seen(21, "b"), seen(22, "c") };
        _cleanup_free_ watcher_thread_change *c = NULL;
        size_t n = 0;

        assert_int_equal(watcher_thread_diff(NULL, 0, now, 3, &c, &n), 0);
        assert_int_equal(n, 3);
        for (size_t i = 0; i < n; i++)
                assert_change(&c[i], WATCHER_THREAD_NEW, (pid_t) (20 + i), now[i].comm);
}

static void test_thread_diff_all_gone(void **state) {
        managed_thread known[] = { th(30, "a"), th(31, "b") };
        _cleanup_free_ watcher_thread_change *c = NULL;
        size_t n = 0;

        assert_int_equal(watcher_thread_diff(known, 2, NULL, 0, &c, &n), 0);
        assert_int_equal(n, 2);
        assert_change(&c[0], WATCHER_THREAD_GONE, 30, NULL);
        assert_change(&c[1], WATCHER_THREAD_GONE, 31, NULL);
}

static void test_comm_change(void **state) {
        managed_thread t = th(5, "worker");

        assert_int_equal(watcher_thread_comm_change(NULL, "x"), WATCHER_THREAD_NEW);
        assert_int_equal(watcher_thread_comm_change(&t, "worker"), WATCHER_THREAD_NONE);
        assert_int_equal(watcher_thread_comm_change(&t, "worker2"), WATCHER_THREAD_RENAMED);
}

static void test_device_retry_backoff(void **state) {
        const unsigned want[] = { 500, 1000, 2000, 4000, 8000, 10000, 10000, 10000 };
        unsigned backoff = 0;

        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                assert_int_equal(watcher_device_retry_next(&backoff, 500, 10000), want[i]);
        /* The attribution changed: start again. */
        backoff = 0;
        assert_int_equal(watcher_device_retry_next(&backoff, 500, 10000), 500);
        /* A first delay above the cap is kept as it is. */
        backoff = 0;
        assert_int_equal(watcher_device_retry_next(&backoff, 3000, 1000), 3000);
        assert_int_equal(watcher_device_retry_next(&backoff, 3000, 1000), 3000);
        /* No overflow near the top of unsigned. */
        backoff = 0;
        assert_int_equal(watcher_device_retry_next(&backoff, 3000000000u, 4000000000u), 3000000000u);
        assert_int_equal(watcher_device_retry_next(&backoff, 3000000000u, 4000000000u), 4000000000u);
}

static void test_device_retry_wanted(void **state) {
        tune_policy_rule auto_rule = { .accel_mode = TUNE_ACCEL_AUTO }, explicit = { .accel_mode = TUNE_ACCEL_EXPLICIT };
        tune_attribution none = { .source = TUNE_ATTRIBUTION_NONE }, found = { .source = TUNE_ATTRIBUTION_DEVICE_FILES };

        assert_true(watcher_device_retry_wanted(&auto_rule, &none));
        assert_false(watcher_device_retry_wanted(&auto_rule, &found));
        assert_false(watcher_device_retry_wanted(&explicit, &none));
        assert_false(watcher_device_retry_wanted(NULL, &none));
}

static void test_match_decide(void **state) {
        /* matched, retitle candidate, known, managed */
        assert_int_equal(watcher_match_decide(false, false, false, false), WATCHER_MATCH_IGNORE);
        assert_int_equal(watcher_match_decide(false, true, false, false), WATCHER_MATCH_CANDIDATE);
        assert_int_equal(watcher_match_decide(false, false, true, false), WATCHER_MATCH_CANDIDATE);
        assert_int_equal(watcher_match_decide(false, false, true, true), WATCHER_MATCH_UNMATCH);
        assert_int_equal(watcher_match_decide(false, true, true, true), WATCHER_MATCH_UNMATCH);
        assert_int_equal(watcher_match_decide(true, false, false, false), WATCHER_MATCH_MANAGE);
        assert_int_equal(watcher_match_decide(true, false, true, false), WATCHER_MATCH_MANAGE);
        assert_int_equal(watcher_match_decide(true, false, true, true), WATCHER_MATCH_REEVALUATE);
}

static void test_changes(void **state) {
        tune_policy_rule a = {}, b = {};
        tune_attribution none = { .rank = -1 }, other = { .rank = 3 };

        assert_int_equal(watcher_changes(&a, -1, &none, &a, -5, &none, false), 0); /* every negative rank is none */
        assert_int_equal(watcher_changes(&a, 2, &none, &a, 2, NULL, false), 0);     /* unknown attribution: unchanged */
        assert_int_equal(watcher_changes(&a, 2, &none, &b, 2, &none, false), WATCHER_CHANGE_RULE);
        assert_int_equal(watcher_changes(&a, 2, &none, &a, 3, &none, false), WATCHER_CHANGE_RANK);
        assert_int_equal(watcher_changes(&a, -1, &none, &a, 0, &none, false), WATCHER_CHANGE_RANK);
        assert_int_equal(watcher_changes(&a, 2, &none, &a, 2, &none, true), WATCHER_CHANGE_EXEC);
        assert_int_equal(watcher_changes(&a, 1, &none, &b, 2, &none, true),
                         WATCHER_CHANGE_RULE | WATCHER_CHANGE_RANK | WATCHER_CHANGE_EXEC);
        assert_int_equal(watcher_changes(&a, 2, &none, &a, 2, &other, false), WATCHER_CHANGE_ACCELS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_thread_diff_nothing),
                cmocka_unit_test(test_thread_diff_all_kinds),
                cmocka_unit_test(test_thread_diff_from_nothing),
                cmocka_unit_test(test_thread_diff_all_gone),
                cmocka_unit_test(test_comm_change),
                cmocka_unit_test(test_device_retry_backoff),
                cmocka_unit_test(test_device_retry_wanted),
                cmocka_unit_test(test_match_decide),
                cmocka_unit_test(test_changes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
