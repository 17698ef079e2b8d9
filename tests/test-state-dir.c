/* SPDX-License-Identifier: GPL-2.0-only */
/* The state directory's one owner of the lock (daemon/state/state-owner.c): taking it twice is a
 * no-op, a second owner is refused with -EBUSY until the first lets go, and the lock file
 * is the one --restore and older daemons take (knobs.lock). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>
#include <cmocka.h>

#include "npu-tuned/state-file.h"
#include "released-list.h"
#include "state-owner.h"

static char dir[64];

static int setup(void **state) {
        snprintf(dir, sizeof dir, "/tmp/npu-state-dir-XXXXXX");
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        char path[128];
        snprintf(path, sizeof path, "%s/" TUNE_STATE_DIR_LOCK_FILE, dir);
        (void) unlink(path);
        return rmdir(dir);
}

static void test_one_owner(void **state) {
        _cleanup_(state_dir_freep) StateDir *a = NULL, *b = NULL;

        assert_int_equal(state_dir_new(dir, &a), 0);
        assert_int_equal(state_dir_new(dir, &b), 0);
        assert_string_equal(state_dir_path(a), dir);
        assert_false(state_dir_locked(a));

        assert_int_equal(state_dir_lock(a), 0);
        assert_true(state_dir_locked(a));
        assert_int_equal(state_dir_lock(a), 0); /* held: the watcher's start, then the knobs */

        /* flock is per open file: a second owner, even in this process, is refused. */
        assert_int_equal(state_dir_lock(b), -EBUSY);
        assert_false(state_dir_locked(b));
        assert_int_equal(tune_state_dir_lock(dir), -EBUSY);

        a = state_dir_free(a);
        assert_int_equal(state_dir_lock(b), 0);
        assert_true(state_dir_locked(b));
}

static void test_lock_file(void **state) {
        _cleanup_(state_dir_freep) StateDir *a = NULL;
        char path[128];
        int fd;

        assert_int_equal(state_dir_new(dir, &a), 0);
        assert_int_equal(state_dir_lock(a), 0);
        snprintf(path, sizeof path, "%s/knobs.lock", dir);
        fd = open(path, O_RDWR | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), -1);
        assert_int_equal(errno, EWOULDBLOCK);
        close(fd);
}

static void test_missing_dir_created(void **state) {
        _cleanup_(state_dir_freep) StateDir *a = NULL;
        char sub[128], lock[160];

        snprintf(sub, sizeof sub, "%s/sub", dir);
        assert_int_equal(state_dir_new(sub, &a), 0);
        assert_int_equal(state_dir_lock(a), 0);
        snprintf(lock, sizeof lock, "%s/" TUNE_STATE_DIR_LOCK_FILE, sub);
        assert_int_equal(access(lock, F_OK), 0);
        a = state_dir_free(a);
        assert_int_equal(unlink(lock), 0);
        assert_int_equal(rmdir(sub), 0);
}

/* The processes Release() let go of, kept across a restart: parsed leniently (a bad line
 * costs one entry), written whole, removed when empty. */
static void test_released_list(void **state) {
        _cleanup_free_ released_process *l = NULL;
        char path[128];
        size_t n;

        assert_int_equal(released_list_parse("12 345\nbad\n-3 4\n14 5 extra\n15 678\n", &l, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(l[0].pid, 12);
        assert_int_equal(l[0].start_time, 345);
        assert_int_equal(l[1].pid, 15);
        free(TAKE_PTR(l));
        assert_int_equal(released_list_load(dir, &l, &n), 0);
        assert_int_equal(n, 0);
        free(TAKE_PTR(l));
        assert_int_equal(released_list_add(dir, 100, 1000), 0);
        assert_int_equal(released_list_add(dir, 200, 2000), 0);
        assert_int_equal(released_list_load(dir, &l, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(l[1].pid, 200);
        assert_int_equal(l[1].start_time, 2000);
        assert_int_equal(released_list_save(dir, l, 0), 0);
        snprintf(path, sizeof path, "%s/" RELEASED_LIST_FILE, dir);
        assert_int_equal(access(path, F_OK), -1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_one_owner, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lock_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_missing_dir_created, setup, teardown),
                cmocka_unit_test_setup_teardown(test_released_list, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
