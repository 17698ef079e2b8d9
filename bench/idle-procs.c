/* SPDX-License-Identifier: GPL-2.0-only */
/* N processes that are already running and do nothing, for the start-up scan bench
 * (bench/scaling.sh): starts N children that pause(), prints "ready N" on stdout once they
 * all exist (fewer if clone failed first: "ready K (clone: ERROR)"), then waits for SIGTERM
 * or SIGINT, kills and reaps every child and exits. The children also die with it
 * (PR_SET_PDEATHSIG) should it be killed outright, so nothing outlives the bench.
 *
 * The children share this process's memory (clone with CLONE_VM, each on its own page of
 * stack): to /proc each is a process like any other (its own pid, stat, status, task
 * list), but it costs the kernel no page tables of its own, so 100,000 of them take about
 * a third of the memory forked ones would.
 *
 *   idle-procs N */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
        (void) sig;
        stop = 1;
}

#define CHILD_STACK 4096

/* Runs on its own page of the shared memory: only calls that need little stack. */
static int idle_child(void *parent) {
        sigset_t none;

        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != *(pid_t *) parent)
                _exit(0);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (;;)
                pause();
        return 0;
}

int main(int argc, char **argv) {
        unsigned long n, made = 0;
        pid_t parent = getpid(), *kids;
        int fork_errno = 0;
        sigset_t block, old;

        if (argc != 2 || (n = strtoul(argv[1], NULL, 10)) == 0) {
                fprintf(stderr, "usage: %s N\n", argv[0]);
                return 2;
        }
        kids = calloc(n, sizeof *kids);
        char *stacks = mmap(NULL, n * CHILD_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (!kids || stacks == MAP_FAILED)
                return 1;
        /* Blocked until sigsuspend: a signal during the forks is not lost. */
        sigemptyset(&block);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGINT);
        sigprocmask(SIG_BLOCK, &block, &old);
        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);
        for (; made < n; made++) {
                pid_t pid = clone(idle_child, stacks + (made + 1) * CHILD_STACK, CLONE_VM | SIGCHLD, &parent);
                if (pid < 0) {
                        fork_errno = errno;
                        break;
                }
                kids[made] = pid;
        }
        if (fork_errno)
                printf("ready %lu (clone: %s)\n", made, strerror(fork_errno));
        else
                printf("ready %lu\n", made);
        fflush(stdout);
        while (!stop)
                sigsuspend(&old);
        for (unsigned long i = 0; i < made; i++)
                kill(kids[i], SIGKILL);
        while (wait(NULL) > 0 || errno == EINTR)
                ;
        free(kids);
        return 0;
}
