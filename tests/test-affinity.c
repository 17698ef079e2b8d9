/* SPDX-License-Identifier: GPL-2.0-only */
/* Applying CPU sets to a process's threads.
 *
 * Fake: a /proc tree in a temp dir and a fake kernel backend, to drive the races
 * deterministically (a thread born mid-walk, a thread vanishing, a thread storm).
 *
 * Live (this machine: 2 CPUs, 1 node): a child process with named control and compute
 * threads, placed by the plan under an explicit test rule (control: main thread + "ctl-*",
 * 1 CPU; compute: "work-*", 1 CPU). Asserted from the kernel's own view,
 * /proc/PID/task/TID/status Cpus_allowed_list: control threads end on one CPU, compute
 * threads on the other; threads created 1 s later are placed when the apply runs again
 * (what the daemon does on their FORK event); a renamed thread moves (COMM); a thread
 * that re-binds itself is seen as drift and left alone on restore; originals come back. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "npu-tuned/affinity.h"
#include "npu-tuned/plan.h"
#include "npu-tuned/topology.h"

/* ---- fake kernel ---- */

#define FAKE_MAX 256

typedef struct fake_kernel {
        char root[64];
        pid_t pid;
        pid_t tids[FAKE_MAX];
        tune_cpuset masks[FAKE_MAX];
        bool dead[FAKE_MAX];
        unsigned n;
        pid_t spawn_on_set;  /* when this tid is set, a new thread appears (inherits the mask) */
        bool storm;          /* every set spawns a new thread */
        pid_t next_tid;
        unsigned sets;
        pid_t reuse_on_set;  /* when this tid is set, it exits and a new thread takes its tid */
} fake_kernel;

/* ROOT/rel := text (the file may be there already). */
static void fake_write(const fake_kernel *k, const char *rel, const char *text) {
        char path[256];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", k->root, rel);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* /proc/PID/task/TID/stat with start time (field 22) born. */
static void fake_write_task_stat(fake_kernel *k, pid_t tid, unsigned long long born) {
        char path[256];
        FILE *f;

        snprintf(path, sizeof path, "%s/proc/%d/task/%d/stat", k->root, (int) k->pid, (int) tid);
        f = fopen(path, "we");
        assert_non_null(f);
        fprintf(f, "%d (t) S 1 100 100 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 5 0 %llu 1000 100\n", (int) tid, born);
        fclose(f);
}

static int fake_index(fake_kernel *k, pid_t tid) {
        for (unsigned i = 0; i < k->n; i++)
                if (k->tids[i] == tid)
                        return (int) i;
        return -1;
}

static void fake_add_thread(fake_kernel *k, pid_t tid, const char *comm, const char *mask) {
        char path[256];
        FILE *f;

        assert_true(k->n < FAKE_MAX);
        k->tids[k->n] = tid;
        k->masks[k->n] = (tune_cpuset) {};
        assert_int_equal(tune_cpuset_parse_list(&k->masks[k->n], mask), 0);
        k->dead[k->n] = false;
        k->n++;
        snprintf(path, sizeof path, "%s/proc/%d/task/%d", k->root, (int) k->pid, (int) tid);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof path, "%s/proc/%d/task/%d/comm", k->root, (int) k->pid, (int) tid);
        f = fopen(path, "we");
        assert_non_null(f);
        fprintf(f, "%s\n", comm);
        fclose(f);
        fake_write_task_stat(k, tid, 1000 + (unsigned) tid);
}

static int fake_get(void *userdata, pid_t tid, tune_cpuset *ret) {
        fake_kernel *k = userdata;
        int i = fake_index(k, tid);
        if (i < 0 || k->dead[i])
                return -ESRCH;
        if (k->storm) {
                /* Every thread we look at has just created another one. */
                _cleanup_free_ char *mask = NULL;
                assert_int_equal(tune_cpuset_format_list(&k->masks[i], &mask), 0);
                fake_add_thread(k, k->next_tid++, "work-new", mask);
        }
        return tune_cpuset_copy(ret, &k->masks[i]);
}

static int fake_set(void *userdata, pid_t tid, const tune_cpuset *cpus) {
        fake_kernel *k = userdata;
        int i = fake_index(k, tid);
        _cleanup_free_ char *mask = NULL;

        if (i < 0 || k->dead[i])
                return -ESRCH;
        k->sets++;
        assert_int_equal(tune_cpuset_copy(&k->masks[i], cpus), 0);
        if (tid == k->reuse_on_set) {
                /* It exits (its directory goes) and another thread takes its tid (a new
                 * directory of that name), as the kernel's /proc shows it. */
                char dir[256], gone[300], cmd[1024];
                snprintf(dir, sizeof dir, "%s/proc/%d/task/%d", k->root, (int) k->pid, (int) tid);
                snprintf(gone, sizeof gone, "%s.gone", dir);
                assert_int_equal(rename(dir, gone), 0);
                assert_int_equal(mkdir(dir, 0755), 0);
                snprintf(cmd, sizeof cmd, "cp '%s/comm' '%s/comm' && rm -rf '%s'", gone, dir, gone);
                assert_int_equal(system(cmd), 0);
                fake_write_task_stat(k, tid, 999999);
                k->reuse_on_set = 0;
        }
        if (tid == k->spawn_on_set) {
                /* The thread we just set creates a thread: it inherits the new mask. */
                assert_int_equal(tune_cpuset_format_list(cpus, &mask), 0);
                fake_add_thread(k, k->next_tid++, "work-new", mask);
                k->spawn_on_set = 0;
        }
        return 0;
}

static void fake_kernel_init(fake_kernel *k, tune_affinity_backend *b) {
        char path[256];

        memset(k, 0, sizeof *k);
        snprintf(k->root, sizeof k->root, "/tmp/test-affinity-XXXXXX");
        assert_non_null(mkdtemp(k->root));
        k->pid = 100;
        k->next_tid = 200;
        snprintf(path, sizeof path, "%s/proc", k->root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof path, "%s/proc/100", k->root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof path, "%s/proc/100/task", k->root);
        assert_int_equal(mkdir(path, 0755), 0);
        fake_add_thread(k, 100, "python3", "0-7");
        fake_add_thread(k, 101, "ctl-a", "0-7");
        fake_add_thread(k, 102, "work-0", "0-7");
        fake_add_thread(k, 103, "work-1", "0-7");
        *b = (tune_affinity_backend) { .get = fake_get, .set = fake_set, .userdata = k };
}

static void fake_kernel_done(fake_kernel *k) {
        char cmd[128];
        for (unsigned i = 0; i < k->n; i++)
                tune_cpuset_done(&k->masks[i]);
        snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", k->root);
        assert_int_equal(system(cmd), 0);
}

static void assert_mask(const tune_cpuset *s, const char *want) {
        _cleanup_free_ char *got = NULL;
        assert_int_equal(tune_cpuset_format_list(s, &got), 0);
        if (!streq(got, want))
                fprintf(stderr, "mask is \"%s\", want \"%s\"\n", got, want);
        assert_string_equal(got, want);
}

static void assert_fake_mask(fake_kernel *k, pid_t tid, const char *want) {
        int i = fake_index(k, tid);
        assert_true(i >= 0);
        assert_mask(&k->masks[i], want);
}

/* A chooser by name: "ctl-*" and the main thread -> 0-1, "work-*" -> 2-7. */
static tune_cpuset fake_control, fake_compute;

static int fake_choose(pid_t pid, pid_t tid, tune_thread_name *name, void *userdata, const tune_cpuset **ret) {
        const char *comm = tid == pid ? NULL : tune_thread_name_get(name);
        (void) userdata;
        if (tid == pid || (comm && strncmp(comm, "ctl-", 4) == 0))
                *ret = &fake_control;
        else if (comm && strncmp(comm, "work-", 5) == 0)
                *ret = &fake_compute;
        else
                *ret = NULL;
        return 0;
}

static int fake_setup(void **state) {
        (void) state;
        assert_int_equal(tune_cpuset_parse_list(&fake_control, "0-1"), 0);
        assert_int_equal(tune_cpuset_parse_list(&fake_compute, "2-7"), 0);
        return 0;
}

static int fake_teardown(void **state) {
        (void) state;
        tune_cpuset_done(&fake_control);
        tune_cpuset_done(&fake_compute);
        return 0;
}

/* What each fake test works on: the fake kernel with its process 100, a context on its
 * root, the originals and the counts; made before the test and undone after it, whether
 * it passed or not. */
typedef struct fake_test {
        fake_kernel k;
        tune_affinity_backend b;
        tune_ctx *ctx;
        tune_affinity_originals j;
        tune_affinity_stats st;
} fake_test;

static int fake_test_setup(void **state) {
        fake_test *f = calloc(1, sizeof *f);

        if (!f) /* not assert_non_null(): the compiler must see that f is not NULL below */
                return -1;
        fake_kernel_init(&f->k, &f->b);
        assert_int_equal(tune_ctx_new(f->k.root, &f->ctx), 0);
        *state = f;
        return 0;
}

static int fake_test_teardown(void **state) {
        fake_test *f = *state;

        tune_affinity_originals_done(&f->j);
        fake_kernel_done(&f->k);
        tune_ctx_free(f->ctx);
        free(f);
        return 0;
}

#define FAKE_TEST(t) cmocka_unit_test_setup_teardown(t, fake_test_setup, fake_test_teardown)

/* A thread born while we walk (created by a thread we just placed) is found by the next
 * walk, and its recorded original is the process's, not the mask it inherited from us. */
static void test_fake_thread_born_mid_walk(void **state) {
        fake_test *f = *state;

        f->k.spawn_on_set = 101;
        assert_int_equal(tune_affinity_apply(f->ctx, &f->b, 100, fake_choose, NULL, &f->j, &f->st), 0);
        assert_int_equal(f->st.rounds, 3); /* 4 threads, then the new one, then nothing new */
        assert_int_equal(f->st.seen, 5);
        assert_int_equal(f->st.set, 5);
        assert_fake_mask(&f->k, 100, "0-1");
        assert_fake_mask(&f->k, 101, "0-1");
        assert_fake_mask(&f->k, 102, "2-7");
        assert_fake_mask(&f->k, 200, "2-7"); /* "work-new", was 0-1 by inheritance */
        assert_int_equal(f->j.n, 5);
        assert_mask(&tune_affinity_originals_find(&f->j, 200)->original, "0-7");
        assert_mask(&tune_affinity_originals_find(&f->j, 200)->applied, "2-7");

        /* Applying again changes nothing. */
        f->st = (tune_affinity_stats) {};
        unsigned sets = f->k.sets;
        assert_int_equal(tune_affinity_apply(f->ctx, &f->b, 100, fake_choose, NULL, &f->j, &f->st), 0);
        assert_int_equal(f->k.sets, sets);
        assert_int_equal(f->st.unchanged, 5);

        /* Drift: 102 re-bound itself outside what we gave it; 103 narrowed inside it. */
        unsigned drifted;
        pid_t first;
        assert_int_equal(tune_cpuset_parse_list(&f->k.masks[fake_index(&f->k, 102)], "0"), 0);
        assert_int_equal(tune_cpuset_parse_list(&f->k.masks[fake_index(&f->k, 103)], "3"), 0);
        assert_int_equal(tune_affinity_check(f->ctx, &f->b, &f->j, &drifted, &first), 0);
        assert_int_equal(drifted, 1);
        assert_int_equal(first, 102);

        /* Originals whose pid now names another process (start time differs): refused. */
        /* comm with a space and a parenthesis; start time (field 22) 4242 */
        fake_write(&f->k, "proc/100/stat",
                   "100 (py (x) 3) S 1 100 100 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 5 0 4242 1000 100\n");
        f->j.start_time = 4243;
        assert_int_equal(tune_affinity_check(f->ctx, &f->b, &f->j, &drifted, &first), -ESRCH);
        assert_int_equal(tune_affinity_restore(f->ctx, &f->b, &f->j, NULL), -ESRCH);
        f->j.start_time = 4242;

        /* Restore: originals back, except 102, which chose its own. */
        f->st = (tune_affinity_stats) {};
        assert_int_equal(tune_affinity_restore(f->ctx, &f->b, &f->j, &f->st), 0);
        assert_int_equal(f->st.skipped, 1);
        assert_int_equal(f->st.set, 4);
        assert_fake_mask(&f->k, 100, "0-7");
        assert_fake_mask(&f->k, 101, "0-7");
        assert_fake_mask(&f->k, 102, "0");
        assert_fake_mask(&f->k, 103, "0-7");
        assert_fake_mask(&f->k, 200, "0-7");

        tune_affinity_originals_forget(&f->j, 200);
        assert_null(tune_affinity_originals_find(&f->j, 200));
        assert_int_equal(f->j.n, 4);
        tune_affinity_originals_forget(&f->j, 12345);
        assert_int_equal(f->j.n, 4);
}

/* Over the caller's list: the main thread first, then the listed ones in their order, a
 * name given by the caller reaching the chooser unread, no listing of /proc/PID/task (a
 * thread the list leaves out is left alone: its FORK event places it), a listed thread
 * that is gone counted; the process gone is -ESRCH. */
static void test_fake_apply_known(void **state) {
        fake_test *f = *state;

        /* 103 ("work-1" in /proc) is left out; 101 is "ctl-a" in /proc but the caller
         * says it is "work-x" (a COMM event it just had); 555 is not there at all. */
        tune_affinity_known known[] = {
                { .tid = 102, .comm = NULL },
                { .tid = 101, .comm = "work-x" },
                { .tid = 555, .comm = "work-y" },
                { .tid = 100, .comm = "python3" },
        };
        assert_int_equal(tune_affinity_apply_known(f->ctx, &f->b, 100, -1, known, ELEMENTSOF(known), fake_choose, NULL,
                                                   &f->j, &f->st),
                         0);
        assert_int_equal(f->st.seen, 4);
        assert_int_equal(f->st.set, 3);
        assert_int_equal(f->st.vanished, 1);
        assert_int_equal(f->st.rounds, 1);
        assert_fake_mask(&f->k, 100, "0-1");
        assert_fake_mask(&f->k, 101, "2-7"); /* by the name given */
        assert_fake_mask(&f->k, 102, "2-7"); /* by the name read */
        assert_fake_mask(&f->k, 103, "0-7"); /* not listed: untouched */
        assert_int_equal(f->j.n, 3);
        assert_null(tune_affinity_originals_find(&f->j, 555));

        /* A thread exits right after its set and a new one takes its tid: undone, as in a walk. */
        f->k.reuse_on_set = 102;
        assert_int_equal(tune_cpuset_parse_list(&f->k.masks[fake_index(&f->k, 102)], "0-7"), 0);
        tune_affinity_originals_forget(&f->j, 102);
        f->st = (tune_affinity_stats) {};
        assert_int_equal(tune_affinity_apply_known(f->ctx, &f->b, 100, -1, known, 1, fake_choose, NULL, &f->j,
                                                   &f->st), 0);
        assert_int_equal(f->st.undone, 1);
        assert_fake_mask(&f->k, 102, "0-7");
        assert_null(tune_affinity_originals_find(&f->j, 102));
        tune_affinity_originals_done(&f->j);

        /* The process gone (its main thread's directory is): -ESRCH, nothing set. */
        unsigned sets = f->k.sets;
        assert_int_equal(tune_affinity_apply_known(f->ctx, &f->b, 4242, -1, NULL, 0, fake_choose, NULL, &f->j,
                                                   &f->st), -ESRCH);
        assert_int_equal(f->k.sets, sets);
}

/* With the process's pidfd and the main thread's name known, the main thread's set is
 * checked by the pidfd, with no directory of its own opened (its directory is removed
 * here: the held-directory check would call the process gone); a pidfd that says the
 * process has exited undoes the set and calls it gone. The pidfd is a real child's. */
static void test_fake_apply_known_pidfd(void **state) {
        fake_test *f = *state;
        char cmd[512];
        int pidfd;
        pid_t child;

        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                pause();
                _exit(0);
        }
        pidfd = (int) syscall(SYS_pidfd_open, child, 0);
        if (pidfd < 0) {
                int err = errno;
                kill(child, SIGKILL);
                waitpid(child, NULL, 0);
                if (err == ENOSYS) {
                        fprintf(stderr, "pidfd_open() is not in this kernel\n");
                        skip();
                }
                fail_msg("pidfd_open: %s", strerror(err));
        }
        snprintf(cmd, sizeof cmd, "rm -rf '%s/proc/100/task/100'", f->k.root);
        assert_int_equal(system(cmd), 0);
        tune_affinity_known known[] = { { .tid = 100, .comm = "python3" } };

        assert_int_equal(tune_affinity_apply_known(f->ctx, &f->b, 100, pidfd, known, 1, fake_choose, NULL, &f->j,
                                                   &f->st), 0);
        assert_int_equal(f->st.set, 1);
        assert_fake_mask(&f->k, 100, "0-1");
        assert_non_null(tune_affinity_originals_find(&f->j, 100));
        /* Without a pidfd the directory is asked, and it is gone. */
        assert_int_equal(tune_affinity_apply_known(f->ctx, &f->b, 100, -1, known, 1, fake_choose, NULL, &f->j,
                                                   &f->st), -ESRCH);

        /* The process exits: the set is undone, the original forgotten, -ESRCH. */
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        assert_int_equal(tune_cpuset_parse_list(&f->k.masks[fake_index(&f->k, 100)], "0-7"), 0);
        tune_affinity_originals_forget(&f->j, 100);
        f->st = (tune_affinity_stats) {};
        assert_int_equal(tune_affinity_apply_known(f->ctx, &f->b, 100, pidfd, known, 1, fake_choose, NULL, &f->j,
                                                   &f->st), -ESRCH);
        assert_int_equal(f->st.undone, 1);
        assert_fake_mask(&f->k, 100, "0-7");
        assert_null(tune_affinity_originals_find(&f->j, 100));
        close(pidfd);
}

static void test_fake_vanishing_and_errors(void **state) {
        fake_test *f = *state;
        int r;

        /* 102 exits between the walk and the syscall: counted, not an error, not recorded. */
        f->k.dead[fake_index(&f->k, 102)] = true;
        assert_int_equal(tune_affinity_apply(f->ctx, &f->b, 100, fake_choose, NULL, &f->j, &f->st), 0);
        assert_int_equal(f->st.vanished, 1);
        assert_int_equal(f->st.set, 3);
        assert_null(tune_affinity_originals_find(&f->j, 102));
        assert_int_equal(f->j.n, 3);

        /* 101 exits right after the set and a new thread gets tid 101: the set hit the
         * wrong thread. Undone (the mask before), not journaled, counted. */
        tune_affinity_originals_done(&f->j);
        for (unsigned i = 0; i < f->k.n; i++)
                assert_int_equal(tune_cpuset_parse_list(&f->k.masks[i], "0-7"), 0);
        f->k.reuse_on_set = 101;
        f->st = (tune_affinity_stats) {};
        assert_int_equal(tune_affinity_apply(f->ctx, &f->b, 100, fake_choose, NULL, &f->j, &f->st), 0);
        assert_int_equal(f->st.undone, 1);
        assert_fake_mask(&f->k, 101, "0-7");
        assert_null(tune_affinity_originals_find(&f->j, 101));
        assert_fake_mask(&f->k, 100, "0-1");
        /* The next walk takes the new 101 as the thread it is. */
        f->st = (tune_affinity_stats) {};
        assert_int_equal(tune_affinity_apply(f->ctx, &f->b, 100, fake_choose, NULL, &f->j, &f->st), 0);
        assert_int_equal(f->st.undone, 0);
        assert_fake_mask(&f->k, 101, "0-1");

        /* FORK event for a thread that is not in the process (any more). */
        assert_int_equal(tune_affinity_apply_thread(f->ctx, &f->b, 100, 999, NULL, fake_choose, NULL, &f->j,
                                                    &f->st), -ESRCH);
        /* COMM event: 103 renamed to "ctl-b" moves to control. */
        fake_write(&f->k, "proc/100/task/103/comm", "ctl-b\n");
        assert_int_equal(tune_affinity_apply_thread(f->ctx, &f->b, 100, 103, NULL, fake_choose, NULL, &f->j,
                                                    &f->st), 0);
        assert_fake_mask(&f->k, 103, "0-1");
        assert_mask(&tune_affinity_originals_find(&f->j, 103)->original, "0-7");

        /* Originals belong to one process. */
        assert_int_equal(tune_affinity_apply(f->ctx, &f->b, 101, fake_choose, NULL, &f->j, &f->st), -EINVAL);
        tune_affinity_originals_done(&f->j);
        /* The process is gone. */
        assert_int_equal(tune_affinity_apply(f->ctx, &f->b, 4242, fake_choose, NULL, &f->j, &f->st), -ESRCH);
        tune_affinity_originals_done(&f->j);
        /* The kernel backend on a fake tree: refused, the host's threads are not touched. */
        assert_int_equal(tune_affinity_apply(f->ctx, NULL, 100, fake_choose, NULL, &f->j, &f->st), -EOPNOTSUPP);
        tune_affinity_originals_done(&f->j);

        /* A thread storm: every thread spawns another; the walk gives up. */
        for (unsigned i = 0; i < f->k.n; i++)
                assert_int_equal(tune_cpuset_parse_list(&f->k.masks[i], "0-7"), 0);
        f->k.storm = true;
        f->st = (tune_affinity_stats) {};
        r = tune_affinity_apply(f->ctx, &f->b, 100, fake_choose, NULL, &f->j, &f->st);
        assert_int_equal(r, -EAGAIN);
        assert_int_equal(f->st.rounds, TUNE_AFFINITY_ROUNDS_MAX);
        /* ...but every thread it changed is recorded, so restore still works. */
        assert_true(f->j.n >= TUNE_AFFINITY_ROUNDS_MAX);
        f->k.storm = false;
        f->st = (tune_affinity_stats) {};
        assert_int_equal(tune_affinity_restore(f->ctx, &f->b, &f->j, &f->st), 0);
        for (unsigned i = 0; i < f->k.n; i++)
                if (!f->k.dead[i])
                        assert_mask(&f->k.masks[i], "0-7");
}

/* ---- live ---- */

typedef struct live_child {
        pid_t pid;
        int cmd, rep;
} live_child;

static live_child child = { .pid = -1, .cmd = -1, .rep = -1 };
static sem_t named;

static void *idle_thread(void *arg) {
        prctl(PR_SET_NAME, (unsigned long) arg, 0, 0, 0);
        sem_post(&named);
        for (;;)
                pause();
        return NULL;
}

static pthread_t spawn(const char *name) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle_thread, (void *) name) != 0)
                _exit(3);
        while (sem_wait(&named) < 0)
                ;
        return t;
}

/* The child: commands on cmd, one byte back on rep when done. */
static _Noreturn void child_main(int cmd, int rep) {
        pthread_t work1;
        char c;

        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        prctl(PR_SET_NAME, (unsigned long) "placed-test", 0, 0, 0);
        sem_init(&named, 0, 0);
        spawn("ctl-a");
        spawn("ctl-b");
        spawn("work-0");
        work1 = spawn("work-1");
        if (write(rep, "r", 1) != 1)
                _exit(2);
        while (read(cmd, &c, 1) == 1) {
                if (c == 'L') { /* two threads, 1 s later */
                        sleep(1);
                        spawn("ctl-late");
                        spawn("work-late");
                } else if (c == 'B') { /* work-1 binds itself to the CPU that follows */
                        cpu_set_t s;
                        unsigned char cpu;
                        if (read(cmd, &cpu, 1) != 1)
                                _exit(2);
                        CPU_ZERO(&s);
                        CPU_SET(cpu, &s);
                        if (pthread_setaffinity_np(work1, sizeof s, &s) != 0)
                                _exit(4);
                } else
                        _exit(0);
                if (write(rep, "r", 1) != 1)
                        _exit(2);
        }
        _exit(0);
}

static void child_command(char c) {
        char r;
        assert_int_equal(write(child.cmd, &c, 1), 1);
        assert_int_equal(read(child.rep, &r, 1), 1);
}

static int live_teardown(void **state) {
        (void) state;
        if (child.pid > 0) {
                kill(child.pid, SIGKILL);
                waitpid(child.pid, NULL, 0);
                child.pid = -1;
        }
        if (child.cmd >= 0)
                close(child.cmd);
        if (child.rep >= 0)
                close(child.rep);
        return 0;
}

/* Kernel state, independent of libtune's backend: Cpus_allowed_list in the task's status. */
static void thread_allowed(pid_t pid, pid_t tid, tune_cpuset *ret) {
        char path[96], line[512];
        bool found = false;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int) pid, (int) tid);
        f = fopen(path, "re");
        assert_non_null(f);
        while (fgets(line, sizeof line, f))
                if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
                        assert_int_equal(tune_cpuset_parse_list(ret, line + 18), 0);
                        found = true;
                }
        fclose(f);
        assert_true(found);
}

static pid_t thread_by_name(pid_t pid, const char *name) {
        char path[320], comm[32];
        pid_t found = 0;
        struct dirent *de;
        DIR *d;

        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        assert_non_null(d);
        while ((de = readdir(d))) {
                FILE *f;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof path, "/proc/%d/task/%s/comm", (int) pid, de->d_name);
                f = fopen(path, "re");
                if (!f)
                        continue;
                if (fgets(comm, sizeof comm, f)) {
                        comm[strcspn(comm, "\n")] = 0;
                        if (streq(comm, name))
                                found = atoi(de->d_name);
                }
                fclose(f);
        }
        closedir(d);
        assert_true(found > 0);
        return found;
}

static void assert_thread_on(const char *name, const tune_cpuset *want) {
        _cleanup_cpuset_ tune_cpuset got = {};
        _cleanup_free_ char *g = NULL, *w = NULL;
        pid_t tid = streq(name, "main") ? child.pid : thread_by_name(child.pid, name);

        thread_allowed(child.pid, tid, &got);
        if (!tune_cpuset_equal(&got, want)) {
                assert_int_equal(tune_cpuset_format_list(&got, &g), 0);
                assert_int_equal(tune_cpuset_format_list(want, &w), 0);
                fprintf(stderr, "thread %s (%d): Cpus_allowed_list %s, want %s\n", name, (int) tid, g, w);
        }
        assert_true(tune_cpuset_equal(&got, want));
}

static void test_live_placement(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_topology_freep) tune_topology *t = NULL;
        _cleanup_cpuset_ tune_cpuset original = {}, usable0 = {};
        static char ctl_glob[] = "ctl-*", work_glob[] = "work-*";
        static char *ctl_globs[] = { ctl_glob, NULL }, *work_globs[] = { work_glob, NULL };
        tune_policy_rule rule = {
                .name = (char *) "live-test",
                .accel_mode = TUNE_ACCEL_NONE,
                .unattributed = TUNE_UNATTRIBUTED_PLACE,
                .control = { .name_globs = ctl_globs, .main_thread = true, .cpus = 1 },
                .compute = { .name_globs = work_globs, .cpus = 1 },
        };
        tune_plan_params params = { .housekeeping_cpus_per_node = 0 };
        tune_plan_request req = { .rule = &rule };
        tune_plan placement = {};
        tune_affinity_originals j = {};
        tune_affinity_stats st = {};
        const tune_cpuset *control, *compute;
        int cmd[2], rep[2];
        (void) state;

        assert_int_equal(tune_ctx_new("/", &ctx), 0);
        assert_int_equal(tune_topology_load(ctx, &t), 0);
        assert_int_equal(tune_plan_available_cpus(t, &params, t->nodes[0].id, &usable0), 0);
        assert_true(tune_cpuset_count(&usable0) >= 2); /* main() checked */

        /* The plan: node 0, control 1 CPU, compute 1 CPU. */
        assert_int_equal(tune_cpuset_add(&rule.unattributed_nodes, (unsigned) t->nodes[0].id), 0);
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &placement), 0);
        assert_int_equal(placement.action, TUNE_PLAN_PLACE);
        control = &placement.role_cpus[TUNE_ROLE_CONTROL];
        compute = &placement.role_cpus[TUNE_ROLE_COMPUTE];
        assert_int_equal(tune_cpuset_count(control), 1);
        assert_int_equal(tune_cpuset_count(compute), 1);
        assert_false(tune_cpuset_overlaps(control, compute));
        tune_thread_target target = { .plan = &placement, .rule = &rule };

        assert_int_equal(pipe2(cmd, O_CLOEXEC), 0);
        assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
        child.pid = fork();
        assert_true(child.pid >= 0);
        if (child.pid == 0) {
                close(cmd[1]);
                close(rep[0]);
                child_main(cmd[0], rep[1]);
        }
        close(cmd[0]);
        close(rep[1]);
        child.cmd = cmd[1];
        child.rep = rep[0];
        char r;
        assert_int_equal(read(child.rep, &r, 1), 1);

        thread_allowed(child.pid, child.pid, &original);
        /* The test only proves something if the original differs from both roles. */
        assert_false(tune_cpuset_equal(&original, control));
        assert_false(tune_cpuset_equal(&original, compute));

        assert_int_equal(tune_affinity_apply(ctx, NULL, child.pid, tune_thread_target_choose, &target, &j, &st), 0);
        assert_int_equal(st.seen, 5);
        assert_int_equal(st.set, 5);
        assert_int_equal(st.vanished + st.failed, 0);
        assert_thread_on("main", control);
        assert_thread_on("ctl-a", control);
        assert_thread_on("ctl-b", control);
        assert_thread_on("work-0", compute);
        assert_thread_on("work-1", compute);

        /* Threads created 1 s later inherit their creator's mask (the main thread: control),
         * so work-late starts on the wrong CPU until the apply runs again. */
        child_command('L');
        assert_thread_on("work-late", control);
        /* FORK event for work-late alone... */
        assert_int_equal(tune_affinity_apply_thread(ctx, NULL, child.pid, thread_by_name(child.pid, "work-late"), NULL,
                                                    tune_thread_target_choose, &target, &j, &st), 0);
        assert_thread_on("work-late", compute);
        /* ...and the whole process again: nothing to change, settled after the second walk
         * (the first handles every thread, the second proves no new one appeared). */
        st = (tune_affinity_stats) {};
        assert_int_equal(tune_affinity_apply(ctx, NULL, child.pid, tune_thread_target_choose, &target, &j, &st), 0);
        assert_int_equal(st.set, 0);
        assert_int_equal(st.unchanged, 7);
        assert_int_equal(st.rounds, 2);
        assert_thread_on("ctl-late", control);
        assert_thread_on("work-late", compute);
        assert_int_equal(j.n, 7);
        /* The late threads' originals are the process's, not the mask they inherited. */
        assert_true(tune_cpuset_equal(&tune_affinity_originals_find(&j, thread_by_name(child.pid, "work-late"))->original, &original));

        /* No drift, until work-1 binds itself to the control CPU (OMP_PROC_BIND-like). */
        unsigned drifted;
        pid_t first;
        assert_int_equal(tune_affinity_check(ctx, NULL, &j, &drifted, &first), 0);
        assert_int_equal(drifted, 0);
        unsigned char cpu = (unsigned char) tune_cpuset_next(control, 0);
        assert_int_equal(write(child.cmd, "B", 1), 1);
        assert_int_equal(write(child.cmd, &cpu, 1), 1);
        assert_int_equal(read(child.rep, &r, 1), 1);
        assert_int_equal(tune_affinity_check(ctx, NULL, &j, &drifted, &first), 0);
        assert_int_equal(drifted, 1);
        assert_int_equal(first, thread_by_name(child.pid, "work-1"));

        /* The daemon keys processes by (pid, start time): with it set, restore checks the
         * pid still names this process. */
        char path[64], stat[1024], *rp;
        unsigned long long start_time = 0;
        FILE *f;
        snprintf(path, sizeof path, "/proc/%d/stat", (int) child.pid);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_non_null(fgets(stat, sizeof stat, f));
        fclose(f);
        rp = strrchr(stat, ')');
        assert_non_null(rp);
        assert_int_equal(sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                                &start_time), 1);
        assert_true(start_time > 0);
        j.start_time = start_time;

        /* Stop: originals back; work-1 keeps the binding it chose. */
        st = (tune_affinity_stats) {};
        assert_int_equal(tune_affinity_restore(ctx, NULL, &j, &st), 0);
        assert_int_equal(st.skipped, 1);
        assert_int_equal(st.set, 6);
        assert_thread_on("main", &original);
        assert_thread_on("ctl-a", &original);
        assert_thread_on("ctl-b", &original);
        assert_thread_on("work-0", &original);
        assert_thread_on("ctl-late", &original);
        assert_thread_on("work-late", &original);
        assert_thread_on("work-1", control);

        assert_int_equal(write(child.cmd, "Q", 1), 1);
        waitpid(child.pid, NULL, 0);
        child.pid = -1;
        tune_affinity_originals_done(&j);
        tune_plan_done(&placement);
        tune_cpuset_done(&rule.unattributed_nodes);
}

/* Whether this machine can run the live test: 2 CPUs this process may use on node 0. */
static int live_capable(void) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_topology_freep) tune_topology *t = NULL;
        _cleanup_cpuset_ tune_cpuset cpus = {};
        tune_plan_params params = {};

        if (tune_ctx_new("/", &ctx) < 0 || tune_topology_load(ctx, &t) < 0 || t->n_nodes == 0 ||
            tune_plan_available_cpus(t, &params, t->nodes[0].id, &cpus) < 0) {
                fprintf(stderr, "SKIP: cannot read this machine's topology\n");
                return 0;
        }
        if (tune_cpuset_count(&cpus) < 2) {
                fprintf(stderr, "SKIP: node %d has %u CPU(s) this process may use; the live test splits "
                        "control and compute threads over 2\n", t->nodes[0].id, tune_cpuset_count(&cpus));
                return 0;
        }
        return 1;
}

/* A record written before a move (daemon/placement/placement.c) holds the union of the thread's old
 * and new sets, and the daemon may die before the set: restore recognises the thread on
 * its old set, and a thread born from it meanwhile (not in the record), by a mask inside a
 * recorded applied set, and one placed after the write by a mask inside one of the plan's
 * sets the record lists; a mask outside every one stays the thread's own. */
static void test_fake_restore_from_union_record(void **state) {
        fake_test *f = *state;

        assert_int_equal(tune_affinity_apply(f->ctx, &f->b, 100, fake_choose, NULL, &f->j, &f->st), 0);
        assert_fake_mask(&f->k, 102, "2-7");
        /* The record of 102's move to control, written; the set not made. */
        assert_int_equal(tune_cpuset_or(&((tune_affinity_entry *) tune_affinity_originals_find(&f->j, 102))->applied,
                                        &fake_control), 0);
        /* 103 is recorded on control alone now: 2-7 is in no recorded set but 102's union. */
        assert_int_equal(tune_cpuset_copy(&((tune_affinity_entry *) tune_affinity_originals_find(&f->j, 103))->applied,
                                          &fake_control), 0);
        assert_int_equal(tune_cpuset_parse_list(&f->k.masks[fake_index(&f->k, 103)], "0-1"), 0);
        fake_add_thread(&f->k, 300, "work-born", "2-7"); /* born from 102 meanwhile */
        fake_add_thread(&f->k, 301, "own", "8");         /* bound itself outside our sets */
        /* A set of the plan the record lists, which no recorded thread has yet: 302 was
         * placed on it after the record was written. */
        assert_int_equal(tune_cpuset_parse_list(&f->j.sets[0], "9-10"), 0);
        f->j.n_sets = 1;
        fake_add_thread(&f->k, 302, "work-later", "9-10");

        f->st = (tune_affinity_stats) {};
        assert_int_equal(tune_affinity_restore(f->ctx, &f->b, &f->j, &f->st), 0);
        assert_fake_mask(&f->k, 102, "0-7");
        assert_fake_mask(&f->k, 103, "0-7");
        assert_fake_mask(&f->k, 300, "0-7");
        assert_fake_mask(&f->k, 301, "8");
        assert_fake_mask(&f->k, 302, "0-7");
        assert_int_equal(f->st.skipped, 1);
}

/* "fake": the fake-kernel tests; "live": the test on this machine's kernel (exit 77 when
 * it lacks 2 usable CPUs). */
int main(int argc, char **argv) {
        const struct CMUnitTest fake[] = {
                FAKE_TEST(test_fake_thread_born_mid_walk),
                FAKE_TEST(test_fake_vanishing_and_errors),
                FAKE_TEST(test_fake_apply_known),
                FAKE_TEST(test_fake_apply_known_pidfd),
                FAKE_TEST(test_fake_restore_from_union_record),
        };
        const struct CMUnitTest live[] = {
                cmocka_unit_test_teardown(test_live_placement, live_teardown),
        };
        const char *which = argc > 1 ? argv[1] : "fake";

        if (streq(which, "fake"))
                return cmocka_run_group_tests_name("fake", fake, fake_setup, fake_teardown);
        if (streq(which, "live"))
                return live_capable() ? cmocka_run_group_tests_name("live", live, NULL, NULL) : 77;
        fprintf(stderr, "usage: %s fake|live\n", argv[0]);
        return 2;
}
