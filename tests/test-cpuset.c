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
        /* Runs that cross word edges, end at one, and fill the last word of the set. */
        assert_list_roundtrip("63-64,127,128-129,191,255", "63-64,127-129,191,255");
        assert_list_roundtrip("0-8191", "0-8191");
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

/* Into a caller's buffer: every size from none to room for all, each a prefix of the whole
 * list cut as snprintf cuts, and the whole length returned; a list longer than
 * tune_cpuset_format_list()'s first buffer (256 bytes) comes out whole too. */
static void test_list_into(void **state) {
        _cleanup_cpuset_ tune_cpuset s = {};
        _cleanup_free_ char *whole = NULL, *many = NULL;
        char buf[64];
        (void) state;

        assert_int_equal(tune_cpuset_parse_list(&s, "0-3,8,10,12-13,100-200,4095"), 0);
        assert_int_equal(tune_cpuset_format_list(&s, &whole), 0);
        for (size_t size = 0; size <= strlen(whole) + 1; size++) {
                memset(buf, 'x', sizeof buf);
                assert_int_equal(tune_cpuset_format_list_into(&s, buf, size), strlen(whole));
                if (size > 0) {
                        assert_int_equal(strlen(buf), size - 1 < strlen(whole) ? size - 1 : strlen(whole));
                        assert_memory_equal(buf, whole, strlen(buf));
                }
                assert_int_equal(buf[size], 'x'); /* nothing past size */
        }
        /* Every even CPU below 400: 200 items, 689 bytes. */
        char list[1024];
        size_t o = 0;
        for (int cpu = 0; cpu < 400; cpu += 2)
                o += (size_t) snprintf(list + o, sizeof list - o, "%s%d", cpu ? "," : "", cpu);
        assert_true(o > 256 && o < sizeof list);
        tune_cpuset_done(&s);
        assert_int_equal(tune_cpuset_parse_list(&s, list), 0);
        assert_int_equal(tune_cpuset_format_list(&s, &many), 0);
        assert_string_equal(many, list);
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

        /* The first non-member from a number on: inside a word, across words, past the
         * last word, in an empty set. */
        assert_int_equal(tune_cpuset_parse_list(&c, "0-63,64-70,128-191"), 0);
        assert_int_equal(tune_cpuset_next_absent(&c, 0), 71);
        assert_int_equal(tune_cpuset_next_absent(&c, 71), 71);
        assert_int_equal(tune_cpuset_next_absent(&c, 128), 192);
        assert_int_equal(tune_cpuset_next_absent(&c, 500), 500);
        tune_cpuset_done(&c);
        assert_int_equal(tune_cpuset_next_absent(&c, 0), 0);
        assert_int_equal(tune_cpuset_next_absent(&c, 9), 9);
}

/* Sets up to TUNE_CPUSET_INLINE_WORDS words live in the set itself (words NULL), bigger
 * ones on the heap; every operation must give the same members either way, and a set must
 * stay whole when moved by assignment, memcpy or realloc of an array holding it. */
static void test_inline_and_heap(void **state) {
        _cleanup_cpuset_ tune_cpuset a = {}, b = {}, c = {};
        const unsigned inline_cpus = TUNE_CPUSET_INLINE_WORDS * 64;
        _cleanup_free_ char *l = NULL;
        (void) state;

        assert_int_equal(tune_cpuset_count(&a), 0);
        assert_int_equal(tune_cpuset_next(&a, 0), -1);
        assert_int_equal(tune_cpuset_add_range(&a, 0, inline_cpus - 1), 0);
        assert_null(a.words);
        assert_int_equal(tune_cpuset_count(&a), inline_cpus);
        /* One past the inline words: onto the heap, every member kept. */
        assert_int_equal(tune_cpuset_add(&a, inline_cpus), 0);
        assert_non_null(a.words);
        assert_int_equal(tune_cpuset_count(&a), inline_cpus + 1);
        assert_true(tune_cpuset_has(&a, 0) && tune_cpuset_has(&a, inline_cpus - 1) && tune_cpuset_has(&a, inline_cpus));
        assert_int_equal(tune_cpuset_format_list(&a, &l), 0);
        char want[32];
        snprintf(want, sizeof want, "0-%u", inline_cpus);
        assert_string_equal(l, want);

        /* Heap into an empty set, then a small set over it: the heap copy is its own,
         * and the small one goes back inline (ASan sees the heap words freed). */
        assert_int_equal(tune_cpuset_copy(&b, &a), 0);
        assert_non_null(b.words);
        assert_ptr_not_equal(b.words, a.words);
        tune_cpuset_remove(&a, 5);
        assert_true(tune_cpuset_has(&b, 5));
        assert_true(tune_cpuset_equal(&b, &b));
        assert_false(tune_cpuset_equal(&a, &b));
        assert_int_equal(tune_cpuset_parse_list(&c, "1,3,130"), 0);
        assert_null(c.words);
        assert_int_equal(tune_cpuset_copy(&b, &c), 0);
        assert_null(b.words);
        assert_true(tune_cpuset_equal(&b, &c));
        assert_int_equal(tune_cpuset_count(&b), 3);
        assert_int_equal(tune_cpuset_copy(&b, &b), 0);
        assert_int_equal(tune_cpuset_count(&b), 3);
        /* Inline into inline is a copy too, not a shared view. */
        tune_cpuset_add(&c, 2);
        assert_false(tune_cpuset_has(&b, 2));

        /* Mixed operations: an inline set or'ed with a heap one grows onto the heap. */
        assert_true(tune_cpuset_overlaps(&c, &a));
        assert_true(tune_cpuset_is_subset(&c, &a));
        assert_int_equal(tune_cpuset_or(&b, &a), 0);
        assert_non_null(b.words);
        assert_int_equal(tune_cpuset_count(&b), inline_cpus); /* a less 5 */
        tune_cpuset_andnot(&b, &c);
        assert_false(tune_cpuset_has(&b, 130));
        tune_cpuset_and(&c, &b);
        assert_int_equal(tune_cpuset_count(&c), 0);

        /* Emptied inline words are zero again when the set grows back over them. */
        tune_cpuset_done(&c);
        assert_int_equal(tune_cpuset_add(&c, 200), 0);
        assert_int_equal(tune_cpuset_count(&c), 1);
        tune_cpuset_done(&c);
        assert_int_equal(tune_cpuset_add_range(&c, 0, 127), 0);
        tune_cpuset_clear(&c);
        assert_int_equal(tune_cpuset_add(&c, 255), 0);
        assert_int_equal(tune_cpuset_count(&c), 1);
        assert_int_equal(tune_cpuset_add(&c, 1000), 0);
        assert_int_equal(tune_cpuset_count(&c), 2);

        /* Moved by assignment, by memcpy and inside a realloc'd array: inline and heap
         * sets keep their members, and each is freed once (ASan). */
        tune_cpuset small = {}, *arr = NULL, moved;
        assert_int_equal(tune_cpuset_parse_list(&small, "7,63-64"), 0);
        moved = small;
        small = (tune_cpuset) {};
        assert_int_equal(tune_cpuset_count(&moved), 3);
        arr = calloc(1, sizeof *arr);
        assert_non_null(arr);
        memcpy(&arr[0], &moved, sizeof moved);
        for (unsigned n = 2; n <= 64; n++) {
                tune_cpuset *g = realloc(arr, n * sizeof *arr);
                assert_non_null(g);
                arr = g;
                arr[n - 1] = (tune_cpuset) {};
                assert_int_equal(tune_cpuset_add(&arr[n - 1], n * 100), 0);
        }
        assert_int_equal(tune_cpuset_count(&arr[0]), 3);
        assert_true(tune_cpuset_has(&arr[0], 64));
        assert_int_equal(tune_cpuset_next(&arr[0], 8), 63);
        for (unsigned n = 2; n <= 64; n++) {
                assert_int_equal(tune_cpuset_next(&arr[n - 1], 0), (int) (n * 100));
                assert_int_equal(tune_cpuset_count(&arr[n - 1]), 1);
                assert_int_equal(arr[n - 1].words == NULL, n * 100 < inline_cpus);
        }
        for (unsigned n = 0; n < 64; n++)
                tune_cpuset_done(&arr[n]);
        free(arr);
        tune_cpuset_done(&small);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_list_parse),
                cmocka_unit_test(test_list_malformed),
                cmocka_unit_test(test_list_into),
                cmocka_unit_test(test_mask),
                cmocka_unit_test(test_ops),
                cmocka_unit_test(test_inline_and_heap),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
