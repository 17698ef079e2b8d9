/* SPDX-License-Identifier: GPL-2.0-only */
/* libtune/basic/text.c and the decimal formatters of npu-tuned/macro.h: the hand-made
 * replacements of snprintf on the placement path must write what snprintf wrote. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/text.h"

static void test_signed(void **state) {
        const int64_t values[] = { 0, 1, -1, 9, -10, 4194304, INT32_MIN, INT64_MAX, INT64_MIN };
        char d[TUNE_DECIMAL_MAX + 1], want[32];

        (void) state;
        for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
                snprintf(want, sizeof want, "%" PRId64, values[i]);
                assert_string_equal(tune_format_signed(d, values[i]), want);
        }
}

/* Every length from 1 to 20 digits, each digit pair, and the edges of each length. */
static void test_unsigned(void **state) {
        char d[TUNE_DECIMAL_MAX], want[32];
        uint64_t v = 1;

        (void) state;
        for (uint64_t i = 0; i < 1000; i++) {
                snprintf(want, sizeof want, "%" PRIu64, i);
                assert_string_equal(tune_format_decimal(d, i), want);
        }
        for (int k = 0; k < 20; k++, v *= 10) {
                const uint64_t values[] = { v - 1, v, v + 1, v * 9 + (v - 1), 1234567890123456789ULL % (v * 10) };
                for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
                        snprintf(want, sizeof want, "%" PRIu64, values[i]);
                        assert_string_equal(tune_format_decimal(d, values[i]), want);
                }
        }
        snprintf(want, sizeof want, "%" PRIu64, UINT64_MAX);
        assert_string_equal(tune_format_decimal(d, UINT64_MAX), want);
}

static void test_concat(void **state) {
        char buf[8];

        (void) state;
        assert_string_equal(tune_concat(buf, sizeof buf, "ab", "", "cd", NULL), "abcd");
        assert_string_equal(tune_concat(buf, sizeof buf, NULL), "");
        /* Cut where snprintf cuts: size - 1 bytes and the NUL. */
        assert_string_equal(tune_concat(buf, sizeof buf, "abcde", "fghij", NULL), "abcdefg");
        assert_string_equal(tune_concat(buf, sizeof buf, "abcdefgh", "ij", NULL), "abcdefg");
        buf[0] = 'x';
        assert_ptr_equal(tune_concat(buf, 0, "a", NULL), buf);
        assert_int_equal(buf[0], 'x');
}

/* snprintf() into want, through a va_list: its cuts are what is compared here. */
static __attribute__((format(printf, 3, 4))) void printed(char *want, size_t size, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(want, size, fmt, ap);
        va_end(ap);
}

static const char *counted(const char *s, int *calls) {
        (*calls)++;
        return s;
}

/* tune_concat() puts a literal in place (its length known where it is written) and any
 * other string through strnlen(): the same bytes as snprintf("%s%s...") either way, at
 * every size around the parts' lengths. */
static void test_concat_parts(void **state) {
        char buf[64], want[64];
        const char *dyn = "value";
        const char *none = NULL;
        int calls = 0;
        char *p;

        (void) state;
        for (size_t size = 1; size <= sizeof buf; size++) {
                printed(want, size, "%s%s%s%s%s", "NPU_TUNED_PID=", dyn, "", " (rule \"", "x\")");
                assert_string_equal(tune_concat(buf, size, "NPU_TUNED_PID=", dyn, "", " (rule \"", "x\")", NULL), want);
                printed(want, size, "%s%s%s", dyn, "0123456789abcdef", dyn);
                assert_string_equal(tune_concat(buf, size, dyn, "0123456789abcdef", dyn, NULL), want);
        }
        /* A NULL ends the list, whatever follows; the parts are each evaluated once. */
        assert_string_equal(tune_concat(buf, sizeof buf, "a", none, "b", NULL), "a");
        p = tune_concat(buf, sizeof buf, counted("a", &calls), counted("b", &calls), NULL);
        assert_ptr_equal(p, buf);
        assert_string_equal(buf, "ab");
        assert_int_equal(calls, 2);
        /* As many parts as the placement's log line and more (40 at most). */
        assert_string_equal(tune_concat(buf, sizeof buf, "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b",
                                        "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q",
                                        "r", "s", "t", "u", "v", "w", "x", "y", "z", dyn, "!", "?", NULL),
                            "0123456789abcdefghijklmnopqrstuvwxyzvalue!?");
}

static void test_text(void **state) {
        tune_text t = {};
        char *s = NULL, want[64];

        (void) state;
        assert_int_equal(tune_text_take(&t, &s), 0);
        assert_string_equal(s, "");
        free(s);
        for (int i = 0; i < 1000; i++) {
                tune_text_put_str(&t, "pid ");
                tune_text_put_i64(&t, -i);
                tune_text_put(&t, "\n", 1);
        }
        tune_text_put_u64(&t, UINT64_MAX);
        assert_int_equal(tune_text_take(&t, &s), 0);
        assert_null(t.buf);
        assert_non_null(strstr(s, "pid 0\npid -1\npid -2\n"));
        snprintf(want, sizeof want, "pid -999\n%" PRIu64, UINT64_MAX);
        assert_string_equal(s + strlen(s) - strlen(want), want);
        free(s);
        t.oom = true;
        tune_text_put_str(&t, "lost");
        assert_int_equal(tune_text_take(&t, &s), -ENOMEM);
        assert_null(t.buf);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_signed),
                cmocka_unit_test(test_unsigned),
                cmocka_unit_test(test_concat),
                cmocka_unit_test(test_concat_parts),
                cmocka_unit_test(test_text),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
