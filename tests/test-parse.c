/* SPDX-License-Identifier: GPL-2.0-only */
/* The pure parsers, on real formats and on garbage. */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/parse.h"

static void test_meminfo(void **state) {
        uint64_t total, free_;
        (void) state;

        assert_int_equal(tune_parse_meminfo("Node 0 MemTotal:       33554432 kB\n"
                                            "Node 0 MemFree:         3355443 kB\n"
                                            "Node 0 MemUsed:        30198989 kB\n",
                                            &total, &free_), 0);
        assert_int_equal(total, 33554432);
        assert_int_equal(free_, 3355443);
        assert_int_equal(tune_parse_meminfo("MemTotal:        8000 kB\nMemFree:  100 kB\nMemAvailable: 3 kB\n", &total, &free_), 0);
        assert_int_equal(free_, 100);
        /* Node 12 with a two-digit number, and a MemFreeX key that must not match. */
        assert_int_equal(tune_parse_meminfo("Node 12 MemFreeX: 1 kB\nNode 12 MemTotal: 10 kB\nNode 12 MemFree: 5 kB\n", &total, &free_), 0);
        assert_int_equal(free_, 5);
        assert_int_equal(tune_parse_meminfo("", &total, &free_), -EBADMSG);
        assert_int_equal(tune_parse_meminfo("Node 0 MemTotal: 10 kB\n", &total, &free_), -EBADMSG);
        assert_int_equal(tune_parse_meminfo("Node 0 MemTotal: lots kB\nNode 0 MemFree: 1 kB\n", &total, &free_), -EBADMSG);
        assert_int_equal(tune_parse_meminfo("Node 0 MemTotal: 10 MB\nNode 0 MemFree: 1 kB\n", &total, &free_), -EBADMSG);
        assert_int_equal(tune_parse_meminfo("Node 0 MemTotal: 10 kB\nNode 0 MemFree: 11 kB\n", &total, &free_), -EBADMSG);
        assert_int_equal(tune_parse_meminfo("Node 0 MemTotal: 99999999999999999999999 kB\nNode 0 MemFree: 1 kB\n", &total, &free_), -ERANGE);
        assert_int_equal(tune_parse_meminfo(NULL, &total, &free_), -EINVAL);
        /* An overlong garbage line. */
        char *big = malloc(100001);
        memset(big, 'x', 100000);
        big[100000] = 0;
        assert_int_equal(tune_parse_meminfo(big, &total, &free_), -EBADMSG);
        free(big);
}

static void test_distances(void **state) {
        int row[8];
        size_t n;
        (void) state;

        assert_int_equal(tune_parse_distances("10 12 20 20 30 30 40 40\n", row, 8, &n), 0);
        assert_int_equal(n, 8);
        assert_int_equal(row[7], 40);
        assert_int_equal(tune_parse_distances("10 21 21 21 30\n", row, 4, &n), -E2BIG);
        assert_int_equal(tune_parse_distances("", row, 8, &n), -EINVAL);
        assert_int_equal(tune_parse_distances("10 x", row, 8, &n), -EINVAL);
        assert_int_equal(tune_parse_distances("10 -1", row, 8, &n), -EINVAL);
        assert_int_equal(tune_parse_distances("10 0", row, 8, &n), -EINVAL);
        assert_int_equal(tune_parse_distances("10 256", row, 8, &n), -EINVAL);
        assert_int_equal(tune_parse_distances("10 12abc", row, 8, &n), -EINVAL);
}

static const char nvidia_info[] =
        "Model: \t\t NVIDIA H100 80GB HBM3\n"
        "IRQ:   \t\t 171\n"
        "GPU UUID: \t GPU-3a0f7d0e-1b2c-4d5e-8f90-a1b2c3d4e5f6\n"
        "Video BIOS: \t 96.00.74.00.0d\n"
        "Bus Type: \t PCIe\n"
        "DMA Size: \t 52 bits\n"
        "DMA Mask: \t 0xfffffffffffff\n"
        "Bus Location: \t 0000:18:00.0\n"
        "Device Minor: \t 3\n"
        "GPU Excluded:\t No\n";

static void test_nvidia(void **state) {
        char uuid[64];
        int minor;
        (void) state;

        assert_int_equal(tune_parse_nvidia_minor(nvidia_info, &minor), 0);
        assert_int_equal(minor, 3);
        assert_int_equal(tune_parse_nvidia_uuid(nvidia_info, uuid, sizeof uuid), 0);
        assert_string_equal(uuid, "GPU-3a0f7d0e-1b2c-4d5e-8f90-a1b2c3d4e5f6");
        assert_int_equal(tune_parse_nvidia_uuid(nvidia_info, uuid, 8), -EBADMSG);
        assert_int_equal(tune_parse_nvidia_minor("", &minor), -ENOENT);
        assert_int_equal(tune_parse_nvidia_minor("Model: x\n", &minor), -ENOENT);
        assert_int_equal(tune_parse_nvidia_minor("Device Minor: \t abc\n", &minor), -EBADMSG);
        assert_int_equal(tune_parse_nvidia_minor("Device Minor: \t 999\n", &minor), -EBADMSG);
        assert_int_equal(tune_parse_nvidia_minor("Device Minor:\n", &minor), -EBADMSG);
        assert_int_equal(tune_parse_nvidia_uuid("GPU UUID: GPU-$(rm -rf)\n", uuid, sizeof uuid), -EBADMSG);
}

static void test_small(void **state) {
        uint32_t v;
        long l;
        char pci[13];
        (void) state;

        assert_int_equal(tune_parse_hex_u32("0x19e5\n", 0xffff, &v), 0);
        assert_int_equal(v, 0x19e5);
        assert_int_equal(tune_parse_hex_u32("0x120000\n", 0xffffff, &v), 0);
        assert_int_equal(tune_parse_hex_u32("0x1ffff", 0xffff, &v), -ERANGE);
        assert_int_equal(tune_parse_hex_u32("0x", 0xffff, &v), -EINVAL);
        assert_int_equal(tune_parse_hex_u32("0x12 junk", 0xffff, &v), -EINVAL);
        assert_int_equal(tune_parse_int("-1\n", -1, 100, &l), 0);
        assert_int_equal(l, -1);
        assert_int_equal(tune_parse_int("", -1, 100, &l), -EINVAL);
        assert_int_equal(tune_parse_int("101", -1, 100, &l), -ERANGE);
        assert_int_equal(tune_parse_pci_address("0000:C1:00.0", pci), 0);
        assert_string_equal(pci, "0000:c1:00.0");
        assert_int_equal(tune_parse_pci_address("0000:c1:00.8", pci), -EINVAL);
        assert_int_equal(tune_parse_pci_address("0000:c1:00", pci), -EINVAL);
        assert_int_equal(tune_parse_pci_address("../../../etc", pci), -EINVAL);
}

static void assert_key(const char *text, const char *key, const char *want) {
        const char *v;
        size_t len;
        int r = tune_find_key(text, key, &v, &len);

        if (!want) {
                assert_int_equal(r, -ENOENT);
                return;
        }
        assert_int_equal(r, 0);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(v, want, len);
}

static void test_find_key(void **state) {
        const char *status = "Name:\tUid\nUidx:\t5\nNgid:\t0\n  Uid :\t1\t2\t3\t4 \nGid:\t7\nGroups:";

        (void) state;
        assert_key(status, "Uid", "1\t2\t3\t4"); /* not Uidx, not the value "Uid"; blanks around */
        assert_key(status, "Gid", "7");
        assert_key(status, "Groups", "");   /* the last line, no newline, no value */
        assert_key(status, "Name", "Uid");
        assert_key(status, "Tgid", NULL);
        assert_key(status, "Ui", NULL);
        assert_key(":x\n", "", "x");
        assert_key("", "Uid", NULL);
        assert_int_equal(tune_find_key(NULL, "Uid", &(const char *) { NULL }, &(size_t) { 0 }), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_meminfo),
                cmocka_unit_test(test_distances),
                cmocka_unit_test(test_nvidia),
                cmocka_unit_test(test_small),
                cmocka_unit_test(test_find_key),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
