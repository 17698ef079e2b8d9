/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "npu-tuned/cpuset.h"

static void assert_list_roundtrip(const char *in, const char *out) {
        _cleanup_cpuset_ tune_cpuset s = {};
        _cleanup_free_ char *f = NULL;

        assert_int_equal(tune_cpuset_parse_list(&s, in), 0);
        assert_int_equal(tune_cpuset_format_list(&s, &f), 0);
        assert_string_equal(f, out);
}

static void test_list_parse(void **state) {
        (void) state;
        assert_list_roundtrip("0-23,48\n", "0-23,48");
        assert_list_roundtrip("  3,1,2 ", "1-3");
        assert_list_roundtrip("", "");
        assert_list_roundtrip("\n", "");
        assert_list_roundtrip("0,2,4-5,100-101", "0,2,4-5,100-101");
        assert_list_roundtrip("8191", "8191");
        /* Longer than the first buffer (64 bytes). */
        assert_list_roundtrip("0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36,38,40,42,44,1000-8191",
                              "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36,38,40,42,44,1000-8191");
}

static void test_list_malformed(void **state) {
        _cleanup_cpuset_ tune_cpuset s = {};
        (void) state;
        assert_int_equal(tune_cpuset_parse_list(&s, "garbage"), -EINVAL);
        assert_int_equal(tune_cpuset_parse_list(&s, "1-"), -EINVAL);
        assert_int_equal(tune_cpuset_parse_list(&s, "5-3"), -EINVAL);
        assert_int_equal(tune_cpuset_parse_list(&s, "1,,2"), -EINVAL);
        assert_int_equal(tune_cpuset_parse_list(&s, "1,"), -EINVAL);
        assert_int_equal(tune_cpuset_parse_list(&s, ",1"), -EINVAL);
        assert_int_equal(tune_cpuset_parse_list(&s, "-1"), -EINVAL);
        assert_int_equal(tune_cpuset_parse_list(&s, "1 2"), -EINVAL);
        assert_int_equal(tune_cpuset_parse_list(&s, "0-8192"), -ERANGE);
        assert_int_equal(tune_cpuset_parse_list(&s, "99999999999999999999"), -ERANGE);
        assert_int_equal(tune_cpuset_parse_list(&s, NULL), -EINVAL);
        /* An overlong line of valid items is fine as long as the numbers are in range. */
        char big[20000] = "";
        for (int i = 0; i < 2000; i += 2) {
                char item[16];
                snprintf(item, sizeof item, "%s%d", i ? "," : "", i);
                strcat(big, item);
        }
        assert_int_equal(tune_cpuset_parse_list(&s, big), 0);
        assert_int_equal(tune_cpuset_count(&s), 1000);
}

static void test_mask(void **state) {
        _cleanup_cpuset_ tune_cpuset s = {};
        _cleanup_free_ char *f = NULL, *l = NULL;
        (void) state;

        assert_int_equal(tune_cpuset_parse_mask(&s, "00000000,00000001,00000003\n"), 0);
        assert_int_equal(tune_cpuset_format_list(&s, &l), 0);
        assert_string_equal(l, "0-1,32");
        assert_int_equal(tune_cpuset_format_mask(&s, 96, &f), 0);
        assert_string_equal(f, "00000000,00000001,00000003");
        free(f);
        /* nr_cpu_ids = 48: the kernel prints the top group 4 hex digits wide. */
        assert_int_equal(tune_cpuset_parse_list(&s, "0-47"), 0);
        assert_int_equal(tune_cpuset_format_mask(&s, 48, &f), 0);
        assert_string_equal(f, "ffff,ffffffff");
        free(f);
        assert_int_equal(tune_cpuset_parse_list(&s, "1"), 0);
        assert_int_equal(tune_cpuset_format_mask(&s, 2, &f), 0);
        assert_string_equal(f, "2");
        free(f);
        f = NULL;
        assert_int_equal(tune_cpuset_parse_mask(&s, "ff"), 0);
        assert_int_equal(tune_cpuset_count(&s), 8);
        assert_int_equal(tune_cpuset_parse_mask(&s, ""), -EINVAL);
        assert_int_equal(tune_cpuset_parse_mask(&s, "xyz"), -EINVAL);
        assert_int_equal(tune_cpuset_parse_mask(&s, "ff,"), -EINVAL);
        assert_int_equal(tune_cpuset_parse_mask(&s, ",ff"), -EINVAL);
        assert_int_equal(tune_cpuset_parse_mask(&s, "123456789"), -EINVAL);
}

static void test_ops(void **state) {
        _cleanup_cpuset_ tune_cpuset a = {}, b = {}, c = {};
        (void) state;

        assert_int_equal(tune_cpuset_parse_list(&a, "0-7"), 0);
        assert_int_equal(tune_cpuset_parse_list(&b, "4-11,200"), 0);
        assert_true(tune_cpuset_overlaps(&a, &b));
        assert_int_equal(tune_cpuset_copy(&c, &a), 0);
        tune_cpuset_and(&c, &b);
        assert_int_equal(tune_cpuset_count(&c), 4);
        assert_true(tune_cpuset_is_subset(&c, &a));
        assert_false(tune_cpuset_is_subset(&b, &a));
        tune_cpuset_andnot(&a, &b);
        assert_int_equal(tune_cpuset_next(&a, 0), 0);
        assert_int_equal(tune_cpuset_next(&a, 4), -1);
        assert_int_equal(tune_cpuset_or(&a, &b), 0);
        assert_true(tune_cpuset_has(&a, 200));
        assert_false(tune_cpuset_equal(&a, &b));
        tune_cpuset_remove(&a, 200);
        assert_false(tune_cpuset_has(&a, 200));
        assert_int_equal(tune_cpuset_add(&a, TUNE_CPU_MAX), -ERANGE);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_list_parse),
                cmocka_unit_test(test_list_malformed),
                cmocka_unit_test(test_mask),
                cmocka_unit_test(test_ops),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
