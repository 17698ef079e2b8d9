/* SPDX-License-Identifier: GPL-2.0-only */
/* The cgroup mounts behind process_cpuset_read() follow the real mount table once the
 * event loop has seen it change (process_cpuset_watch_mounts()), and a read in between
 * asks the kernel nothing. Live: in a private mount namespace of its own, this test moves
 * the hierarchy that holds the cpuset controller (a bind mount elsewhere, then the
 * original unmounted). A read before the loop runs still looks where the hierarchy was and
 * finds nothing; after the loop, it finds the hierarchy at its new place. Needs root
 * (unshare, mount); skips without them or without a cpuset controller mounted. */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cmocka.h>

#include "npu-tuned/context.h"
#include "process-cpuset.h"

#define SKIP 77

/* Where the hierarchy of that cgroup version with the cpuset controller is mounted. */
static int cpuset_mount_dir(int version, char *ret, size_t size) {
        char line[4096], dev[256], dir[4096], type[64], opts[1024];
        FILE *f = fopen("/proc/self/mounts", "re");
        int r = -1;

        if (!f)
                return -1;
        while (r < 0 && fgets(line, sizeof line, f))
                if (sscanf(line, "%255s %4095s %63s %1023s", dev, dir, type, opts) == 4 &&
                    ((version == 2 && strcmp(type, "cgroup2") == 0) ||
                     (version == 1 && strcmp(type, "cgroup") == 0 && strstr(opts, "cpuset")))) {
                        snprintf(ret, size, "%s", dir);
                        r = 0;
                }
        fclose(f);
        return r;
}

static void test_mount_change_seen_after_the_loop(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(process_cpuset_done) process_cpuset before = {}, stale = {}, after = {};
        tune_topology t = {}; /* nothing usable known: no cpuset counts as a restriction */
        char old_dir[4096], new_dir[] = "/tmp/npt-cgroup-XXXXXX";
        sd_event *e = NULL;
        (void) state;

        assert_int_equal(tune_ctx_new(NULL, &ctx), 0);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(process_cpuset_watch_mounts(e, ctx), 0);
        assert_int_equal(process_cpuset_read(ctx, &t, getpid(), &before), 0);
        assert_int_not_equal(before.version, 0);

        /* The hierarchy moves; the loop has not run: the read looks where it was. */
        assert_int_equal(cpuset_mount_dir(before.version, old_dir, sizeof old_dir), 0);
        assert_non_null(mkdtemp(new_dir));
        assert_int_equal(mount(old_dir, new_dir, NULL, MS_BIND, NULL), 0);
        assert_int_equal(umount2(old_dir, MNT_DETACH), 0);
        assert_int_equal(process_cpuset_read(ctx, &t, getpid(), &stale), 0);
        assert_int_equal(stale.version, 0);

        /* The loop sees the change: the next read finds it at its new place. */
        for (int i = 0; i < 10 && sd_event_run(e, 100 * 1000) > 0; i++)
                ;
        assert_int_equal(process_cpuset_read(ctx, &t, getpid(), &after), 0);
        assert_int_equal(after.version, before.version);

        process_cpuset_unwatch_mounts();
        sd_event_unref(e);
        (void) umount2(new_dir, MNT_DETACH);
        (void) rmdir(new_dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mount_change_seen_after_the_loop),
        };
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(process_cpuset_done) process_cpuset own = {};
        tune_topology t = {};

        if (geteuid() != 0) {
                printf("SKIP: needs root (a private mount namespace, umount)\n");
                return SKIP;
        }
        if (tune_ctx_new(NULL, &ctx) < 0 || process_cpuset_read(ctx, &t, getpid(), &own) < 0 || own.version == 0) {
                printf("SKIP: no cgroup cpuset controller mounted on this host\n");
                return SKIP;
        }
        process_cpuset_unwatch_mounts(); /* the read above cached the table: start anew */
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                printf("SKIP: cannot make a private mount namespace: %m\n");
                return SKIP;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
