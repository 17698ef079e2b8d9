/* SPDX-License-Identifier: GPL-2.0-only */
/* The root resolver and its bounded readers, on a small tree made here: missing files,
 * empty files, oversize files, NUL bytes, and symlinks that try to leave the root. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#ifndef SYS_openat2
#define SYS_openat2 437 /* glibc < 2.32 lacks the name; the number is the same on every architecture */
#endif

#include "npu-tuned/context.h"
#include "npu-tuned/topology.h"

static char root[] = "/tmp/npu-tuned-ctx-XXXXXX";

static void put(const char *rel, const char *data, size_t len) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", root, rel);
        char *slash = strrchr(path, '/');
        *slash = 0;
        char cmd[600];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
        assert_int_equal(system(cmd), 0);
        *slash = '/';
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t) len);
        close(fd);
}

static int setup(void **state) {
        (void) state;
        if (!mkdtemp(root))
                return -1;
        put("sys/a", "hello\n", 6);
        put("sys/empty", "", 0);
        put("sys/padded", "0-7\n\0\0\0", 7);
        put("sys/hidden", "0-7\0rm -rf", 10);
        put("sys/int", " 42\n", 4);
        put("sys/notint", "42x\n", 4);
        char *big = malloc(TUNE_READ_MAX + 10);
        memset(big, 'x', TUNE_READ_MAX + 10);
        put("sys/big", big, TUNE_READ_MAX + 10);
        free(big);
        char link[512];
        snprintf(link, sizeof link, "%s/sys/escape", root);
        assert_int_equal(symlink("/etc/hostname", link), 0);
        snprintf(link, sizeof link, "%s/sys/inside", root);
        assert_int_equal(symlink("/sys/a", link), 0);
        return 0;
}

static int teardown(void **state) {
        char cmd[600];
        (void) state;
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        return system(cmd) == 0 ? 0 : -1;
}

static void test_reads(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        char *s;
        long v;
        (void) state;

        assert_int_equal(tune_ctx_new(root, &ctx), 0);
        assert_false(tune_ctx_is_live(ctx));
        assert_int_equal(tune_read_string(ctx, "/sys/a", &s), 0);
        assert_string_equal(s, "hello");
        free(s);
        assert_int_equal(tune_read_string(ctx, "/sys/empty", &s), 0);
        assert_string_equal(s, "");
        free(s);
        assert_int_equal(tune_read_string(ctx, "/sys/padded", &s), 0);
        assert_string_equal(s, "0-7");
        free(s);
        assert_int_equal(tune_read_string(ctx, "/sys/hidden", &s), -EBADMSG);
        assert_int_equal(tune_read_string(ctx, "/sys/missing", &s), -ENOENT);
        assert_int_equal(tune_read_string(ctx, "/sys/big", &s), -EFBIG);
        assert_int_equal(tune_read_int(ctx, "/sys/int", &v), 0);
        assert_int_equal(v, 42);
        assert_int_equal(tune_read_int(ctx, "/sys/notint", &v), -EINVAL);
        assert_int_equal(tune_read_int(ctx, "/sys/empty", &v), -EINVAL);
        /* The same rules into a caller's buffer; what does not fit is -EFBIG. */
        char small[16];
        assert_int_equal(tune_read_string_into(ctx, "/sys/a", small, sizeof small), 0);
        assert_string_equal(small, "hello");
        assert_int_equal(tune_read_string_into(ctx, "/sys/empty", small, sizeof small), 0);
        assert_string_equal(small, "");
        assert_int_equal(tune_read_string_into(ctx, "/sys/padded", small, sizeof small), 0);
        assert_string_equal(small, "0-7");
        assert_int_equal(tune_read_string_into(ctx, "/sys/hidden", small, sizeof small), -EBADMSG);
        assert_int_equal(tune_read_string_into(ctx, "/sys/missing", small, sizeof small), -ENOENT);
        assert_int_equal(tune_read_string_into(ctx, "/sys/big", small, sizeof small), -EFBIG);
        assert_int_equal(tune_read_string_into(ctx, "/sys/a", small, 6), -EFBIG); /* "hello\n" */
        assert_int_equal(tune_read_string_into(ctx, "/sys/a", small, 7), 0);
        assert_string_equal(small, "hello");
        /* Paths with or without the leading slash mean the same file below the root. */
        assert_int_equal(tune_read_string(ctx, "sys/a", &s), 0);
        free(s);

        /* Into a caller's buffer: whole when it fits in size - 1 bytes, else cut and said. */
        char buf[8];
        size_t len = 99;
        bool truncated = true;
        assert_int_equal(tune_read_prefix_into(ctx, "/sys/a", buf, sizeof buf, &len, &truncated), 0);
        assert_string_equal(buf, "hello\n");
        assert_int_equal(len, 6);
        assert_false(truncated);
        assert_int_equal(tune_read_prefix_into(ctx, "/sys/a", buf, 7, &len, &truncated), 0);
        assert_string_equal(buf, "hello\n");
        assert_false(truncated);
        assert_int_equal(tune_read_prefix_into(ctx, "/sys/a", buf, 6, &len, &truncated), 0);
        assert_string_equal(buf, "hello");
        assert_int_equal(len, 5);
        assert_true(truncated);
        assert_int_equal(tune_read_prefix_into(ctx, "/sys/empty", buf, sizeof buf, &len, NULL), 0);
        assert_string_equal(buf, "");
        assert_int_equal(len, 0);
        assert_int_equal(tune_read_prefix_into(ctx, "/sys/missing", buf, sizeof buf, NULL, NULL), -ENOENT);
        assert_int_equal(tune_read_prefix_into(ctx, "/sys/a", buf, 1, NULL, NULL), -EINVAL);
}

static void test_stays_inside_root(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        char *s;
        (void) state;

        assert_int_equal(tune_ctx_new(root, &ctx), 0);
        /* An absolute link resolves below the root ("/etc/hostname" is not in the tree). */
        assert_int_equal(tune_read_string(ctx, "/sys/escape", &s), -ENOENT);
        assert_false(tune_exists(ctx, "/sys/escape"));
        assert_int_equal(tune_read_string(ctx, "/sys/inside", &s), 0);
        assert_string_equal(s, "hello");
        free(s);
        /* ".." cannot climb out of the root either. */
        assert_int_equal(tune_read_string(ctx, "/../../../../etc/hostname", &s), -ENOENT);
        assert_int_equal(tune_readlink(ctx, "/sys/escape", &s), 0);
        assert_string_equal(s, "/etc/hostname");
        free(s);
}

/* A kernel without openat2 (before 5.6: openEuler 20.03's 4.19, CentOS 7's 3.10/4.14), as
 * a seccomp filter makes it: openat2 fails with ENOSYS. The root must stay confined all
 * the same (before: a plain openat() followed "/etc/hostname" out of the tree). In a
 * child, as a seccomp filter cannot be taken back. */
static int without_openat2(void) {
        struct sock_filter filter[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = (unsigned short) ELEMENTSOF(filter), .filter = filter };

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                return -errno;
        return syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0) < 0 && errno == ENOSYS ? 0 : -EIO;
}

static void test_stays_inside_root_without_openat2(void **state) {
        char link[512], deep[512];
        int status;
        pid_t pid;
        (void) state;

        /* More ways out: a relative link climbing past the root, a link to a directory
         * outside, a chain of links, ".." inside a link's target. */
        snprintf(link, sizeof link, "%s/sys/climb", root);
        assert_int_equal(symlink("../../../../../../etc/hostname", link), 0);
        snprintf(link, sizeof link, "%s/sys/etcdir", root);
        assert_int_equal(symlink("/etc", link), 0);
        snprintf(link, sizeof link, "%s/sys/chain", root);
        assert_int_equal(symlink("inside", link), 0);
        snprintf(deep, sizeof deep, "%s/sys/d", root);
        assert_int_equal(mkdir(deep, 0755), 0);
        snprintf(link, sizeof link, "%s/sys/d/up", root);
        assert_int_equal(symlink("../a", link), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                tune_ctx *ctx = NULL;
                char *s = NULL;
                int fails = 0;
                if (without_openat2() < 0)
                        _exit(77);
#define CHECK(cond) fails += !(cond) && fprintf(stderr, "without openat2: failed: %s\n", #cond) > 0
                CHECK(tune_ctx_new(root, &ctx) == 0);
                CHECK(tune_read_string(ctx, "/sys/escape", &s) == -ENOENT);
                CHECK(tune_read_string(ctx, "/sys/climb", &s) == -ENOENT);
                CHECK(tune_read_string(ctx, "/sys/etcdir/hostname", &s) == -ENOENT);
                CHECK(tune_read_string(ctx, "/../../../../etc/hostname", &s) == -ENOENT);
                CHECK(!tune_exists(ctx, "/sys/escape"));
                CHECK(tune_read_string(ctx, "/sys/inside", &s) == 0 && streq(s, "hello"));
                free(s);
                CHECK(tune_read_string(ctx, "/sys/chain", &s) == 0 && streq(s, "hello"));
                free(s);
                CHECK(tune_read_string(ctx, "/sys/d/up", &s) == 0 && streq(s, "hello"));
                free(s);
                CHECK(tune_read_string(ctx, "/sys/d/../a", &s) == 0 && streq(s, "hello"));
                free(s);
                CHECK(tune_write_string(ctx, "/sys/climb", "x") == -ENOENT);
#undef CHECK
                tune_ctx_free(ctx);
                _exit(fails ? 1 : 0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                skip();
        assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_writes(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        char *s;
        (void) state;

        assert_int_equal(tune_ctx_new(root, &ctx), 0);
        assert_int_equal(tune_write_string(ctx, "/sys/a", "bye"), 0);
        assert_int_equal(tune_read_string(ctx, "/sys/a", &s), 0);
        assert_string_equal(s, "bye");
        free(s);
        /* Writing never creates files: a missing knob is a missing kernel feature. */
        assert_int_equal(tune_write_string(ctx, "/sys/newfile", "x"), -ENOENT);
}

static void test_not_sysfs(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        tune_topology *t = NULL;
        (void) state;

        assert_int_equal(tune_ctx_new("/nonexistent-npu-tuned-root", &ctx), -ENOENT);
        assert_int_equal(tune_ctx_new(root, &ctx), 0);
        assert_int_equal(tune_topology_load(ctx, &t), -ENOENT);
        assert_null(t);
}

static void test_live(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_topology_freep) tune_topology *t = NULL;
        (void) state;

        /* The live system: this machine's own sysfs must always parse. */
        assert_int_equal(tune_ctx_new("/", &ctx), 0);
        assert_true(tune_ctx_is_live(ctx));
        assert_int_equal(tune_topology_load(ctx, &t), 0);
        assert_true(t->n_nodes >= 1);
        assert_int_equal(tune_cpuset_count(&t->online), (unsigned) sysconf(_SC_NPROCESSORS_ONLN));
}

/* tune_path(): what snprintf would make, its own formatter or not, and a path that does
 * not fit refused, never cut. */
static void test_path(void **state) {
        char buf[32], want[64];

        assert_int_equal(tune_path(buf, sizeof buf, "/proc/%d/task/%d", 1234, 1240), 0);
        assert_string_equal(buf, "/proc/1234/task/1240");
        assert_int_equal(tune_path(buf, sizeof buf, "irq/%u/%ld/%d", 4294967295u, -9223372036854775807L - 1, -5), -ENAMETOOLONG);
        assert_int_equal(tune_path(want, sizeof want, "irq/%u/%ld/%d", 4294967295u, -9223372036854775807L - 1, -5), 0);
        assert_string_equal(want, "irq/4294967295/-9223372036854775808/-5");
        assert_int_equal(tune_path(buf, sizeof buf, "%s%s/%s", "/sys/fs/cgroup", "", "cpuset.cpus"), 0);
        assert_string_equal(buf, "/sys/fs/cgroup/cpuset.cpus");
        assert_int_equal(tune_path(buf, sizeof buf, "/proc/%d/comm", 0), 0);
        assert_string_equal(buf, "/proc/0/comm");
        /* Other conversions: vsnprintf's. */
        assert_int_equal(tune_path(buf, sizeof buf, "/sys/bus/pci/devices/%.*s/link", 4, "0000:01"), 0);
        assert_string_equal(buf, "/sys/bus/pci/devices/0000/link");
        assert_int_equal(tune_path(buf, sizeof buf, "100%% %x", 255), 0);
        assert_string_equal(buf, "100% ff");
        /* 31 characters fit in 32 bytes, 32 do not, in either formatter. */
        assert_int_equal(tune_path(buf, sizeof buf, "%s%d", "abcdefghijklmnopqrstuvwxyz1234", 5), 0);
        assert_string_equal(buf, "abcdefghijklmnopqrstuvwxyz12345");
        assert_int_equal(tune_path(buf, sizeof buf, "%s%d", "abcdefghijklmnopqrstuvwxyz1234", 56), -ENAMETOOLONG);
        assert_int_equal(tune_path(buf, sizeof buf, "%s%x", "abcdefghijklmnopqrstuvwxyz1234", 0x56), -ENAMETOOLONG);
        assert_int_equal(tune_path(buf, 0, "x"), -ENAMETOOLONG);
        /* The edge inside a run of the format itself, and after an empty conversion. */
        assert_int_equal(tune_path(buf, sizeof buf, "/proc/a-literal-run-of-31-bytes"), 0);
        assert_string_equal(buf, "/proc/a-literal-run-of-31-bytes");
        assert_int_equal(tune_path(buf, sizeof buf, "/proc/a-literal-run-of-32-bytes!"), -ENAMETOOLONG);
        assert_int_equal(tune_path(buf, sizeof buf, "%s/%s", "abcdefghijklmnopqrstuvwxyz12345", ""), -ENAMETOOLONG);
        assert_int_equal(tune_path(buf, sizeof buf, "%s/x%s/%u", "", "", 7u), 0);
        assert_string_equal(buf, "/x/7");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reads),
                cmocka_unit_test(test_stays_inside_root),
                cmocka_unit_test(test_stays_inside_root_without_openat2),
                cmocka_unit_test(test_writes),
                cmocka_unit_test(test_not_sysfs),
                cmocka_unit_test(test_live),
                cmocka_unit_test(test_path),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
