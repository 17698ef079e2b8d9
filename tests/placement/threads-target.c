/* SPDX-License-Identifier: GPL-2.0-only */
/* threads-target: a stand-in for an inference worker, to be placed by place-pid (and later
 * by the daemon). Named control threads ("ctl-N") and compute threads ("work-N"), MiB of
 * memory touched on a chosen node before anyone places it, optionally one more compute
 * thread created later. Prints "ready PID" when set up, then waits, bounded by --timeout.
 *
 *   threads-target --control 2 --compute 2 --mib 256 --node 0 --late-ms 1000 --timeout 120
 *
 * --self-bind-ms N: like an engine that binds itself (vllm-ascend at worker start), N ms
 * after start every thread reads the mask it has and binds itself: the main thread and
 * ctl-* to its last CPU, work-* to its first (the opposite of npu-tuned's plan, so a test
 * can tell who bound it). Prints "bound" once all have. --tag N does nothing: policies
 * match it on the command line.
 *
 * --spin-ms N: once its memory is touched, the main thread spins N ms without touching it
 * again before "ready", so that automatic NUMA balancing (its scan delay lowered) scans the
 * process and unmaps the pages for hinting faults (tests/vm/scenarios/placement.sh).
 *
 * --move-on-usr1 1: one more thread, "work-mover", that renames itself "ctl-moved" when the
 * process gets SIGUSR1 (so a test decides when a placed thread changes role).
 *
 * Dependency-free (raw set_mempolicy syscall) so it runs in a busybox guest. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MPOL_DEFAULT 0
#define MPOL_BIND 2
#define NODEMASK_BITS 1024

static unsigned long self_bind_ms;
static unsigned n_bound, n_to_bind;
static pthread_mutex_t bound_lock = PTHREAD_MUTEX_INITIALIZER;

/* Bind the calling thread as an engine would: control to the last CPU of its mask,
 * compute to the first. */
static void bind_self(bool compute) {
        struct timespec ts = { .tv_sec = (time_t) (self_bind_ms / 1000), .tv_nsec = (long) (self_bind_ms % 1000) * 1000000L };
        cpu_set_t set, one;
        int pick = -1;

        nanosleep(&ts, NULL);
        if (sched_getaffinity(0, sizeof set, &set) < 0)
                return;
        for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &set) && (pick < 0 || !compute))
                        pick = c;
        CPU_ZERO(&one);
        CPU_SET(pick, &one);
        if (sched_setaffinity(0, sizeof one, &one) < 0)
                perror("threads-target: sched_setaffinity");
        pthread_mutex_lock(&bound_lock);
        if (++n_bound == n_to_bind) {
                printf("bound\n");
                fflush(stdout);
        }
        pthread_mutex_unlock(&bound_lock);
}

static void *idle(void *arg) {
        prctl(PR_SET_NAME, (unsigned long) arg, 0, 0, 0);
        if (self_bind_ms > 0)
                bind_self(strncmp(arg, "work", 4) == 0);
        for (;;)
                pause();
        return NULL;
}

static void *mover(void *arg) {
        sigset_t usr1;
        int sig;

        prctl(PR_SET_NAME, (unsigned long) "work-mover", 0, 0, 0);
        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        if (sigwait(&usr1, &sig) == 0)
                prctl(PR_SET_NAME, (unsigned long) "ctl-moved", 0, 0, 0);
        for (;;)
                pause();
        return NULL;
}

/* Every thread blocks SIGUSR1 (they inherit the main thread's mask), so only the mover's
 * sigwait() takes it. */
static int spawn_mover(void) {
        sigset_t usr1;
        pthread_t t;

        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        if (pthread_sigmask(SIG_BLOCK, &usr1, NULL) != 0)
                return -EINVAL;
        return -pthread_create(&t, NULL, mover, NULL);
}

static int spawn(const char *prefix, unsigned i) {
        char *name = malloc(16);
        pthread_t t;

        if (!name)
                return -ENOMEM;
        snprintf(name, 16, "%s-%u", prefix, i);
        return -pthread_create(&t, NULL, idle, name);
}

static long set_mempolicy_node(int mode, int node) {
        unsigned long mask[NODEMASK_BITS / (8 * sizeof(unsigned long))] = {};

        if (mode == MPOL_DEFAULT)
                return syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0);
        mask[node / (8 * sizeof(unsigned long))] = 1UL << (node % (8 * sizeof(unsigned long)));
        return syscall(SYS_set_mempolicy, mode, mask, NODEMASK_BITS + 1);
}

static unsigned long arg_num(const char *s) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || *end || end == s || v > 1000000) {
                fprintf(stderr, "threads-target: bad number '%s'\n", s);
                exit(2);
        }
        return v;
}

int main(int argc, char **argv) {
        unsigned long control = 2, compute = 2, mib = 0, late_ms = 0, timeout = 300, move_on_usr1 = 0, spin_ms = 0;
        long node = -1;
        char *mem = NULL;

        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                if (i + 1 >= argc) {
                        fprintf(stderr, "threads-target: %s needs a value\n", a);
                        return 2;
                }
                unsigned long v = arg_num(argv[++i]);
                if (!strcmp(a, "--control"))
                        control = v;
                else if (!strcmp(a, "--compute"))
                        compute = v;
                else if (!strcmp(a, "--mib"))
                        mib = v;
                else if (!strcmp(a, "--node"))
                        node = (long) v;
                else if (!strcmp(a, "--late-ms"))
                        late_ms = v;
                else if (!strcmp(a, "--timeout"))
                        timeout = v;
                else if (!strcmp(a, "--self-bind-ms"))
                        self_bind_ms = v;
                else if (!strcmp(a, "--spin-ms"))
                        spin_ms = v;
                else if (!strcmp(a, "--move-on-usr1"))
                        move_on_usr1 = v;
                else if (!strcmp(a, "--tag"))
                        ; /* only for policies to match on the command line */
                else {
                        fprintf(stderr, "threads-target: unknown option %s\n", a);
                        return 2;
                }
        }
        /* Never outlive a test that forgot us. */
        alarm((unsigned) timeout);

        if (mib > 0) {
                if (node >= 0 && set_mempolicy_node(MPOL_BIND, (int) node) < 0) {
                        perror("threads-target: set_mempolicy");
                        return 1;
                }
                mem = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (mem == MAP_FAILED) {
                        perror("threads-target: mmap");
                        return 1;
                }
                memset(mem, 0x5a, mib << 20);
                /* Back to the default policy: the placement, not our binding, decides now. */
                if (node >= 0 && set_mempolicy_node(MPOL_DEFAULT, 0) < 0) {
                        perror("threads-target: set_mempolicy");
                        return 1;
                }
        }
        if (spin_ms > 0) {
                struct timespec t0, t;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                do
                        clock_gettime(CLOCK_MONOTONIC, &t);
                while ((unsigned long) ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000) < spin_ms);
        }
        n_to_bind = (unsigned) (control + compute + 1);
        if (move_on_usr1 && spawn_mover() < 0)
                return 1;
        for (unsigned i = 0; i < control; i++)
                if (spawn("ctl", i) < 0)
                        return 1;
        for (unsigned i = 0; i < compute; i++)
                if (spawn("work", i) < 0)
                        return 1;
        printf("ready %d\n", (int) getpid());
        fflush(stdout);
        if (self_bind_ms > 0)
                bind_self(false);
        if (late_ms > 0) {
                struct timespec ts = { .tv_sec = (time_t) (late_ms / 1000), .tv_nsec = (long) (late_ms % 1000) * 1000000L };
                nanosleep(&ts, NULL);
                if (spawn("work-late", 0) < 0)
                        return 1;
        }
        for (;;)
                pause();
}
