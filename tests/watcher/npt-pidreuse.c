/* SPDX-License-Identifier: GPL-2.0-only */
/* npt-pidreuse FILL CMD_A... -- CMD_B...: make a process B that reuses the pid of a
 * process A, for the PID reuse test (run it with a small kernel.pid_max).
 *   1. start A (fork + exec CMD_A), print "a pid=P", wait for SIGUSR1;
 *   2. fork and reap FILL short-lived children (to fill a stopped watcher's socket, so
 *      that A's exit event is among the lost ones);
 *   3. kill A and reap it;
 *   4. fork until a child gets pid P; that child execs CMD_B, the others exit at once;
 *   5. print "b pid=P" (or "b failed") and wait. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char *argv[]) {
        char **cmd_a, **cmd_b = NULL;
        sigset_t set;
        long fill;
        pid_t a;
        int sig;

        if (argc < 5)
                return 2;
        fill = strtol(argv[1], NULL, 10);
        cmd_a = argv + 2;
        for (int i = 2; i < argc; i++)
                if (strcmp(argv[i], "--") == 0) {
                        argv[i] = NULL;
                        cmd_b = argv + i + 1;
                }
        if (!cmd_b || !*cmd_b)
                return 2;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        sigprocmask(SIG_BLOCK, &set, NULL);

        a = fork();
        if (a == 0) {
                execv(cmd_a[0], cmd_a);
                _exit(127);
        }
        printf("a pid=%d\n", (int) a);
        fflush(stdout);
        while (sigwait(&set, &sig) != 0)
                ;
        for (long i = 0; i < fill; i++) {
                pid_t p = fork();
                if (p == 0)
                        _exit(0);
                if (p > 0)
                        waitpid(p, NULL, 0);
        }
        kill(a, SIGKILL);
        waitpid(a, NULL, 0);
        for (long tries = 0; tries < 200000; tries++) {
                pid_t p = fork();
                if (p < 0)
                        continue;
                if (p == 0) {
                        if (getpid() == a) {
                                execv(cmd_b[0], cmd_b);
                                _exit(127);
                        }
                        _exit(0);
                }
                if (p == a) {
                        printf("b pid=%d tries=%ld\n", (int) p, tries);
                        fflush(stdout);
                        for (;;)
                                pause();
                }
                waitpid(p, NULL, 0);
        }
        printf("b failed\n");
        fflush(stdout);
        for (;;)
                pause();
}
