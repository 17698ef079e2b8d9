/* SPDX-License-Identifier: GPL-2.0-only */
/* The numa_maps parser on lines in the kernel's format, the streaming reader on a fake
 * tree (long files, over-long lines) and on this process. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "npu-tuned/numa-maps.h"

static int parse(const char *line, tune_numa_vma *v) {
        return tune_numa_maps_parse_line(line, strlen(line), v);
}

static void test_parse_line(void **state) {
        tune_numa_vma v = {};
        (void) state;

        /* Lines as this machine's kernel (6.18) prints them. */
        assert_int_equal(parse("7f0a7352d000 default file=/usr/lib/x86_64-linux-gnu/libc.so.6 anon=4 dirty=4 active=0 N0=4 kernelpagesize_kB=4", &v), 0);
        assert_true(v.start == 0x7f0a7352d000);
        assert_true(v.file);
        assert_int_equal(v.anon, 4);
        assert_int_equal(v.total, 4);
        assert_int_equal(v.max_node, 0);
        assert_int_equal(v.node_pages[0], 4);
        assert_int_equal(v.page_kib, 4);

        assert_int_equal(parse("55d062336000 default heap anon=4 dirty=4 active=0 N0=1 N3=3 kernelpagesize_kB=4", &v), 0);
        assert_true(v.heap);
        assert_false(v.file);
        assert_int_equal(v.total, 4);
        assert_int_equal(v.max_node, 3);
        assert_int_equal(v.node_pages[0], 1);
        assert_int_equal(v.node_pages[1], 0);
        assert_int_equal(v.node_pages[3], 3);

        /* The state of the previous line does not leak into the next. */
        assert_int_equal(parse("7f0a7354d000 default", &v), 0);
        assert_int_equal(v.total, 0);
        assert_int_equal(v.max_node, -1);
        assert_false(v.heap);
        assert_int_equal(v.page_kib, 4);

        /* hugetlbfs, policies with a node list or a space in the mode name. */
        assert_int_equal(parse("7f4c00000000 bind:1 file=/dev/hugepages/x huge dirty=2 N1=2 kernelpagesize_kB=2048", &v), 0);
        assert_true(v.huge);
        assert_int_equal(v.page_kib, 2048);
        assert_int_equal(v.node_pages[1], 2);
        assert_int_equal(parse("7ffd1000 prefer (many):0-1 stack anon=3 dirty=3 N1=3 kernelpagesize_kB=4", &v), 0);
        assert_true(v.stack);
        assert_int_equal(v.node_pages[1], 3);

        /* A file name cannot smuggle keys: the kernel escapes ' ' and '='. */
        assert_int_equal(parse("7f00 default file=/tmp/x\\040N9\\075999 mapped=1 N0=1 kernelpagesize_kB=4", &v), 0);
        assert_int_equal(v.max_node, 0);
        assert_int_equal(v.total, 1);

        /* Garbage. */
        assert_int_equal(parse("", &v), -EINVAL);
        assert_int_equal(parse("N0=5", &v), -EINVAL);
        assert_int_equal(parse("xyz default N0=5", &v), -EINVAL);
        assert_int_equal(parse("7f00000000000000a default", &v), -EINVAL);
        assert_int_equal(parse("7f00 default N0=", &v), -EINVAL);
        assert_int_equal(parse("7f00 default N0=x", &v), -EINVAL);
        assert_int_equal(parse("7f00 default N=5", &v), 0); /* not a node key: ignored */
        assert_int_equal(parse("7f00 default N1024=5", &v), -ERANGE);
        assert_int_equal(parse("7f00 default N1023=5", &v), 0);
        assert_int_equal(v.max_node, 1023);
        assert_int_equal(parse("7f00 default N0=99999999999999999999", &v), -ERANGE);
        assert_int_equal(parse("7f00 default N0=18446744073709551615 N0=1", &v), -ERANGE);
        assert_int_equal(parse("7f00 default anon=-1", &v), -EINVAL);
        assert_int_equal(parse("7f00 default kernelpagesize_kB=0", &v), -ERANGE);
        assert_int_equal(parse("7f00  default   N0=2  ", &v), 0);
        assert_int_equal(v.total, 2);
        /* Not NUL terminated: only len bytes count. */
        assert_int_equal(tune_numa_maps_parse_line("7f00 default N0=25", 17, &v), 0);
        assert_int_equal(v.total, 2);
        tune_numa_vma_done(&v);
}

static const char sample[] =
        "55d04644b000 default file=/usr/bin/app mapped=2 N0=2 kernelpagesize_kB=4\n"
        "55d062336000 default heap anon=1000 dirty=1000 N0=100 N2=900 kernelpagesize_kB=4\n"
        "7f4c00000000 default anon=512 dirty=512 N2=512 kernelpagesize_kB=4\n"
        "7f4d00000000 default file=/dev/shm/shared mapped=256 N0=256 kernelpagesize_kB=4\n"
        "7f4e00000000 default file=/dev/hugepages/h huge dirty=1 N2=1 kernelpagesize_kB=2048\n"
        "this is not a numa_maps line\n"
        "7ffd10000000 default stack anon=8 dirty=8 N0=8 kernelpagesize_kB=4\n"
        "ffffffffff600000 default\n";

static void test_usage(void **state) {
        tune_numa_usage u = {};
        _cleanup_cpuset_ tune_cpuset n2 = {}, n0 = {}, none = {};
        (void) state;

        assert_int_equal(tune_numa_maps_parse(sample, strlen(sample), &u), 0);
        assert_int_equal(u.n_vmas, 7);
        assert_int_equal(u.n_bad_lines, 1);
        assert_int_equal(u.n_nodes, 3);
        /* KiB: node 0: (2 + 100 + 256 + 8) * 4; node 2: (900 + 512) * 4 + 2048. */
        assert_int_equal(u.node_kib[0], 366 * 4);
        assert_int_equal(u.node_kib[1], 0);
        assert_int_equal(u.node_kib[2], 1412 * 4 + 2048);
        assert_int_equal(u.total_kib, 366 * 4 + 1412 * 4 + 2048);
        /* Anonymous VMAs only: heap, the anon mmap, the stack. */
        assert_int_equal(u.node_anon_kib[0], 108 * 4);
        assert_int_equal(u.node_anon_kib[2], 1412 * 4);
        assert_int_equal(u.anon_total_kib, 1520 * 4);

        assert_int_equal(tune_cpuset_add(&n2, 2), 0);
        assert_int_equal(tune_cpuset_add(&n0, 0), 0);
        assert_int_equal(tune_numa_usage_kib_on(&u, &n2, false), 1412 * 4 + 2048);
        assert_float_equal(tune_numa_usage_locality(&u, &n2, true), 100.0 * 1412 / 1520, 1e-9);
        assert_float_equal(tune_numa_usage_locality(&u, &n0, false) + tune_numa_usage_locality(&u, &n2, false), 100.0, 1e-9);
        assert_float_equal(tune_numa_usage_locality(&u, &none, false), 0.0, 1e-9);
        tune_numa_usage_done(&u);
        /* Nothing counted: fully local by definition. */
        assert_float_equal(tune_numa_usage_locality(&u, &none, false), 100.0, 1e-9);
}

static char *make_fake_root(void) {
        char *dir = strdup("/tmp/test-numa-maps-XXXXXX");
        assert_non_null(dir);
        assert_non_null(mkdtemp(dir));
        return dir;
}

static void write_file(const char *path, const char *data, size_t len) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t) len);
        close(fd);
}

/* A long file (many reads), an over-long line in the middle, no final newline. */
static void test_reader_fake_tree(void **state) {
        _cleanup_free_ char *root = make_fake_root(), *text = NULL;
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        char path[256];
        size_t len = 0, cap = 16 * 1024 * 1024;
        tune_numa_usage u = {};
        const unsigned n_lines = 20000;
        (void) state;

        text = malloc(cap);
        assert_non_null(text);
        for (unsigned i = 0; i < n_lines; i++) {
                len += (size_t) snprintf(text + len, cap - len, "%x default anon=3 N%u=1 N%u=2 kernelpagesize_kB=4\n",
                                         0x10000u + i * 0x1000u, i % 4, 4 + i % 4);
                /* Over-long lines: one that fits the read buffer, one that spans several. */
                if (i == n_lines / 2 || i == n_lines / 3) {
                        size_t n = i == n_lines / 2 ? 70000 : 300000;
                        len += (size_t) snprintf(text + len, cap - len, "7f00 default file=/");
                        memset(text + len, 'a', n);
                        len += n;
                        len += (size_t) snprintf(text + len, cap - len, " N0=1000000\n");
                }
        }
        len += (size_t) snprintf(text + len, cap - len, "ffff0000 default anon=1 N7=1 kernelpagesize_kB=4");

        snprintf(path, sizeof path, "%s/proc", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof path, "%s/proc/4242", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof path, "%s/proc/4242/numa_maps", root);
        write_file(path, text, len);

        assert_int_equal(tune_ctx_new(root, &ctx), 0);
        assert_int_equal(tune_numa_maps_read(ctx, 4242, &u), 0);
        assert_int_equal(u.n_vmas, n_lines + 1);
        assert_int_equal(u.n_bad_lines, 2);
        assert_int_equal(u.n_nodes, 8);
        assert_int_equal(u.total_kib, (uint64_t) n_lines * 3 * 4 + 4);
        for (unsigned n = 0; n < 4; n++) {
                assert_int_equal(u.node_kib[n], (uint64_t) n_lines / 4 * 4);
                assert_int_equal(u.node_kib[4 + n], (uint64_t) n_lines / 4 * 8 + (n == 3 ? 4 : 0));
        }
        tune_numa_usage_done(&u);

        assert_int_equal(tune_numa_maps_read(ctx, 4243, &u), -ESRCH);
        assert_int_equal(tune_numa_maps_read(ctx, 0, &u), -EINVAL);

        snprintf(path, sizeof path, "rm -rf -- '%s'", root);
        assert_int_equal(system(path), 0);
}

/* This process, live: 64 MiB touched shows up, on the nodes the kernel reports. */
static void test_reader_live(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        tune_numa_usage u = {};
        const size_t size = 64u << 20;
        uint64_t sum = 0;
        char *p;
        (void) state;

        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(p != MAP_FAILED);
        memset(p, 1, size);
        assert_int_equal(tune_ctx_new("/", &ctx), 0);
        assert_int_equal(tune_numa_maps_read(ctx, getpid(), &u), 0);
        assert_int_equal(u.n_bad_lines, 0);
        assert_true(u.anon_total_kib >= size / 1024);
        for (unsigned n = 0; n < u.n_nodes; n++)
                sum += u.node_kib[n];
        assert_int_equal(sum, u.total_kib);
        tune_numa_usage_done(&u);
        munmap(p, size);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_line),
                cmocka_unit_test(test_usage),
                cmocka_unit_test(test_reader_fake_tree),
                cmocka_unit_test(test_reader_live),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
