/* SPDX-License-Identifier: GPL-2.0-only */
/* The state directory trust check (include/npu-tuned/state-dir.h): what is refused, that
 * nothing is created in a refused directory, that the directory ends up 0700, and that a
 * temp file someone left (a symlink to a victim) is never written through. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "npu-tuned/state-file.h"
#include "npu-tuned/macro.h"
#include "npu-tuned/state-dir.h"

static char base[] = "/tmp/test-state-dir-XXXXXX";

static char *sub(const char *name) {
        char *p;
        assert_true(asprintf(&p, "%s/%s", base, name) > 0);
        return p;
}

static mode_t mode_of(const char *p) {
        struct stat st;
        assert_int_equal(lstat(p, &st), 0);
        return st.st_mode & 07777;
}

static unsigned entries(const char *dir) {
        _cleanup_free_ char *cmd = NULL;
        char buf[32] = "";
        FILE *f;
        assert_true(asprintf(&cmd, "ls -A '%s' | wc -l", dir) > 0);
        f = popen(cmd, "r");
        assert_non_null(f);
        assert_non_null(fgets(buf, sizeof buf, f));
        pclose(f);
        return (unsigned) atoi(buf);
}

static void test_created_0700(void **state) {
        _cleanup_free_ char *d = sub("new/state");
        int fd = tune_state_dir_open(d, true);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(mode_of(d), 0700);
}

static void test_existing_made_0700(void **state) {
        _cleanup_free_ char *d = sub("wide");
        assert_int_equal(mkdir(d, 0755), 0);
        assert_int_equal(chmod(d, 0755), 0);
        int fd = tune_state_dir_open(d, false);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(mode_of(d), 0700);
}

static void test_world_writable_refused(void **state) {
        _cleanup_free_ char *d = sub("ww");
        assert_int_equal(mkdir(d, 0700), 0);
        assert_int_equal(chmod(d, 0777), 0);
        assert_int_equal(tune_state_dir_open(d, true), -EACCES);
        assert_int_equal(tune_state_dir_lock(d), -EACCES);
        assert_int_equal(tune_state_file_write(d, "x", "text\n", NULL, NULL), -EACCES);
        assert_int_equal(entries(d), 0); /* no lock file, no temp file */
        assert_int_equal(mode_of(d), 0777);
        assert_true(tune_state_dir_is_refusal(-EACCES));
}

static void test_other_owner_refused(void **state) {
        _cleanup_free_ char *d = sub("nobody");
        assert_int_equal(mkdir(d, 0700), 0);
        assert_int_equal(chown(d, 65534, 65534), 0);
        assert_int_equal(tune_state_dir_open(d, false), -EPERM);
        assert_int_equal(tune_state_dir_lock(d), -EPERM);
        assert_int_equal(entries(d), 0);
}

static void test_below_writable_parent_refused(void **state) {
        _cleanup_free_ char *parent = sub("open"), *d = sub("open/state");
        assert_int_equal(mkdir(parent, 0700), 0);
        assert_int_equal(mkdir(d, 0700), 0);
        assert_int_equal(chmod(parent, 0777), 0); /* anyone could rename state away */
        assert_int_equal(tune_state_dir_open(d, false), -EACCES);
        assert_int_equal(chmod(parent, 01777), 0); /* sticky, like /tmp: fine */
        int fd = tune_state_dir_open(d, false);
        assert_true(fd >= 0);
        close(fd);
}

static void test_symlink_refused(void **state) {
        _cleanup_free_ char *real = sub("real"), *link = sub("link"), *through = sub("link/deeper");
        assert_int_equal(mkdir(real, 0700), 0);
        assert_int_equal(symlink(real, link), 0);
        assert_int_equal(tune_state_dir_open(link, false), -ELOOP);
        assert_int_equal(tune_state_dir_open(through, true), -ELOOP);
        assert_int_equal(entries(real), 0);
}

static void test_file_checks(void **state) {
        _cleanup_free_ char *d = sub("files"), *f = sub("files/knobs.journal"), *buf = NULL;
        size_t len;
        int fd;

        assert_int_equal(mkdir(d, 0700), 0);
        fd = open(f, O_WRONLY | O_CREAT, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "x\n", 2), 2);
        close(fd);
        assert_int_equal(tune_state_file_read(d, "knobs.journal", 100, &buf, &len), 0);
        free(TAKE_PTR(buf));
        assert_int_equal(chmod(f, 0644), 0);
        assert_int_equal(tune_state_file_read(d, "knobs.journal", 100, &buf, &len), -EACCES);
        assert_int_equal(chmod(f, 0600), 0);
        assert_int_equal(chown(f, 65534, 65534), 0);
        assert_int_equal(tune_state_file_read(d, "knobs.journal", 100, &buf, &len), -EPERM);
}

static void test_stale_temp_symlink_not_followed(void **state) {
        _cleanup_free_ char *d = sub("tmpfile"), *victim = sub("victim"), *tmp = sub("tmpfile/rec.tmp"),
                            *buf = NULL;
        size_t len;
        FILE *v;
        char text[16] = "";

        assert_int_equal(mkdir(d, 0700), 0);
        v = fopen(victim, "w");
        assert_non_null(v);
        fputs("victim\n", v);
        fclose(v);
        assert_int_equal(symlink(victim, tmp), 0);
        assert_int_equal(tune_state_file_write(d, "rec", "ours\n", NULL, NULL), 0);
        v = fopen(victim, "r");
        assert_non_null(v);
        assert_non_null(fgets(text, sizeof text, v));
        fclose(v);
        assert_string_equal(text, "victim\n");
        assert_int_equal(tune_state_file_read(d, "rec", 100, &buf, &len), 0);
        assert_string_equal(buf, "ours\n");
        assert_int_equal(access(tmp, F_OK), -1); /* renamed into place */
}

static int setup(void **state) {
        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: needs root (chown to another user)\n");
                exit(77);
        }
        return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state) {
        _cleanup_free_ char *cmd = NULL;
        if (asprintf(&cmd, "rm -rf '%s'", base) < 0)
                return -1;
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_created_0700),
                cmocka_unit_test(test_existing_made_0700),
                cmocka_unit_test(test_world_writable_refused),
                cmocka_unit_test(test_other_owner_refused),
                cmocka_unit_test(test_below_writable_parent_refused),
                cmocka_unit_test(test_symlink_refused),
                cmocka_unit_test(test_file_checks),
                cmocka_unit_test(test_stale_temp_symlink_not_followed),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
