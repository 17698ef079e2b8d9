/* SPDX-License-Identifier: GPL-2.0-only */
/* daemon/common/proc-guard.c: a read that blocks returns at its deadline, the process is
 * backed off (1 s, then 30 s after a second timeout), a user's written-off workers are bounded (-EBUSY at once), and a
 * written-off worker frees its job (and the guard, when freed before) once it returns.
 * Blocking work is a read of a pipe the test holds: no root, no FUSE. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "npu-tuned/proc.h"
#include "proc-guard.h"

static int gate[2];
static int jobs_freed;

typedef struct Job {
        long result;
        bool block;
} Job;

static long job_run(void *userdata, const tune_ctx *ctx) {
        Job *j = userdata;
        char c;

        (void) ctx;
        if (j->block)
                (void) !read(gate[0], &c, 1);
        return j->result;
}

static void job_free(void *userdata) {
        __atomic_add_fetch(&jobs_freed, 1, __ATOMIC_SEQ_CST);
        free(userdata);
}

static double now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long run(ProcGuard *g, pid_t pid, bool block, long result, bool *done) {
        Job *j = calloc(1, sizeof *j);

        assert_non_null(j);
        j->block = block;
        j->result = result;
        long r = proc_guard_run(g, pid, 50, "test work", NULL, job_run, job_free, j, done);
        if (*done)
                job_free(j);
        return r;
}

/* A child that sleeps: another pid of this user. */
static pid_t sleeper(void) {
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                pause();
                _exit(0);
        }
        return pid;
}

static void wait_freed(int n) {
        for (int i = 0; i < 2000 && __atomic_load_n(&jobs_freed, __ATOMIC_SEQ_CST) < n; i++)
                usleep(1000);
        assert_int_equal(__atomic_load_n(&jobs_freed, __ATOMIC_SEQ_CST), n);
}

static void test_deadline_backoff_bound(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        ProcGuard *g = NULL;
        pid_t a = sleeper(), b = sleeper(), c = sleeper();
        unsigned threads, stuck;
        bool done;
        double t0;

        (void) state;
        assert_int_equal(pipe(gate), 0);
        jobs_freed = 0;
        assert_int_equal(tune_ctx_new("/", &ctx), 0);
        assert_int_equal(proc_guard_new(ctx, &g), 0);

        /* Quick work: its result, the job back to the caller. */
        assert_int_equal(run(g, a, false, 42, &done), 42);
        assert_true(done);
        wait_freed(1);

        /* Blocked work: -ETIMEDOUT at the deadline, the job the guard's. */
        t0 = now_ms();
        assert_int_equal(run(g, a, true, 0, &done), -ETIMEDOUT);
        assert_false(done);
        assert_true(now_ms() - t0 < 1000);
        /* The same process again: backed off, at once. */
        t0 = now_ms();
        assert_int_equal(run(g, a, false, 1, &done), -ETIMEDOUT);
        assert_false(done);
        assert_true(now_ms() - t0 < 40);
        wait_freed(2);

        /* A second of this user's processes written off, then a third is refused at once
         * (PROC_GUARD_STUCK_PER_UID is 2). */
        assert_int_equal(run(g, b, true, 0, &done), -ETIMEDOUT);
        proc_guard_counts(g, &threads, &stuck);
        assert_int_equal(stuck, 2);
        t0 = now_ms();
        assert_int_equal(run(g, c, false, 7, &done), -EBUSY);
        assert_true(now_ms() - t0 < 40);
        wait_freed(3);

        /* The stuck work returns: its worker frees the job and serves again. */
        assert_int_equal(write(gate[1], "xx", 2), 2);
        wait_freed(5);
        proc_guard_counts(g, &threads, &stuck);
        assert_int_equal(stuck, 0);
        assert_true(threads <= PROC_GUARD_WORKERS);
        assert_int_equal(run(g, c, false, 7, &done), 7);
        assert_true(done);

        /* a's first timeout backed it off for 1 s only (a busy host, an exec): read again
         * after it. A second timeout backs it off for long. */
        usleep(1100 * 1000);
        assert_int_equal(run(g, a, false, 5, &done), 5);
        assert_int_equal(run(g, a, true, 0, &done), -ETIMEDOUT);
        usleep(1100 * 1000);
        t0 = now_ms();
        assert_int_equal(run(g, a, false, 1, &done), -ETIMEDOUT);
        assert_false(done);
        assert_true(now_ms() - t0 < 40);
        assert_int_equal(write(gate[1], "x", 1), 1);
        wait_freed(9);

        /* Freed while a worker is written off: that worker frees the guard when it returns. */
        assert_int_equal(run(g, c, true, 0, &done), -ETIMEDOUT);
        g = proc_guard_free(g);
        assert_int_equal(write(gate[1], "x", 1), 1);
        wait_freed(10);
        usleep(20 * 1000); /* the last worker destroys the guard after the job */

        kill(a, SIGKILL);
        kill(b, SIGKILL);
        kill(c, SIGKILL);
        waitpid(a, NULL, 0);
        waitpid(b, NULL, 0);
        waitpid(c, NULL, 0);
        close(gate[0]);
        close(gate[1]);
}

/* A pair read (an exec's command line and environment) on one worker gives each file what
 * a read of it alone gives, and each failure its own. */
static void test_pair_read(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_free_ char *cmdline = NULL, *environ_text = NULL, *alone_cmdline = NULL, *alone_environ = NULL;
        ProcGuard *g = NULL;
        size_t len = 0, alone_len = 0;
        bool truncated = true, alone_truncated = true;
        pid_t gone;
        int cmdline_r;

        (void) state;
        assert_int_equal(tune_ctx_new("/", &ctx), 0);
        assert_int_equal(proc_guard_new(ctx, &g), 0);
        proc_guard_install(g, ctx);

        assert_int_equal(tune_proc_read_cmdline_environ(ctx, getpid(), &cmdline, &cmdline_r, &environ_text, &len,
                                                        &truncated),
                         0);
        assert_int_equal(cmdline_r, 0);
        assert_int_equal(tune_proc_read_cmdline(ctx, getpid(), &alone_cmdline), 0);
        assert_int_equal(tune_proc_read_environ(ctx, getpid(), &alone_environ, &alone_len, &alone_truncated), 0);
        assert_string_equal(cmdline, alone_cmdline);
        assert_true(strstr(cmdline, "test-proc-guard") != NULL);
        assert_int_equal(len, alone_len);
        assert_true(len > 0);
        assert_memory_equal(environ_text, alone_environ, len);
        assert_false(truncated);

        /* A process that is gone: both fail, neither with a text. */
        gone = fork();
        assert_true(gone >= 0);
        if (gone == 0)
                _exit(0);
        assert_int_equal(waitpid(gone, NULL, 0), gone);
        free(cmdline);
        free(environ_text);
        cmdline = environ_text = NULL;
        assert_true(tune_proc_read_cmdline_environ(ctx, gone, &cmdline, &cmdline_r, &environ_text, &len, &truncated) < 0);
        assert_true(cmdline_r < 0);
        assert_null(cmdline);
        assert_null(environ_text);
        proc_guard_free(g);
}

/* The guarded memory backend hands back what the kernel's wrote (its own copies). */
static void test_memmove_backend(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(proc_guard_freep) ProcGuard *g = NULL;
        const tune_memmove_backend *b;
        long page = sysconf(_SC_PAGESIZE);
        char *p = aligned_alloc((size_t) page, (size_t) page);
        void *pages[1] = { p };
        int status[1] = { -1000 };
        uint64_t flags[1] = { 0 };

        (void) state;
        assert_non_null(p);
        p[0] = 1; /* present */
        assert_int_equal(tune_ctx_new("/", &ctx), 0);
        assert_int_equal(proc_guard_new(ctx, &g), 0);
        b = proc_guard_memmove_backend(g);
        long r = b->move_pages(b->userdata, getpid(), 1, pages, NULL, status, 0);
        if (r >= 0)
                assert_true(status[0] >= 0); /* the node it is on */
        else
                assert_true(r == -ENOSYS || r == -EPERM); /* a kernel or sandbox without it */
        assert_int_equal(b->page_flags(b->userdata, getpid(), (uint64_t) (uintptr_t) p, 1, flags), 0);
        assert_true(flags[0] & TUNE_PAGEMAP_PRESENT);
        free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_deadline_backoff_bound),
                cmocka_unit_test(test_memmove_backend),
                cmocka_unit_test(test_pair_read),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
