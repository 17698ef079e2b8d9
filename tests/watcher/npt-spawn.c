/* SPDX-License-Identifier: GPL-2.0-only */
/* npt-spawn N INTERVAL_US PIDFILE CMD [ARGS...]: start N processes running CMD (fork +
 * exec), INTERVAL_US apart, write their pids to PIDFILE (one a line, flushed as it goes),
 * print "spawned N" when done, then wait. The children stay in our process group: the
 * test kills the group. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char *argv[]) {
        long n, interval;
        FILE *f;

        if (argc < 5) {
                fprintf(stderr, "usage: npt-spawn N INTERVAL_US PIDFILE CMD [ARGS...]\n");
                return 2;
        }
        n = strtol(argv[1], NULL, 10);
        interval = strtol(argv[2], NULL, 10);
        f = fopen(argv[3], "we");
        if (!f) {
                perror("npt-spawn: pidfile");
                return 1;
        }
        signal(SIGCHLD, SIG_IGN); /* no zombies if a child dies early */
        for (long i = 0; i < n; i++) {
                pid_t pid = fork();
                if (pid < 0) {
                        perror("npt-spawn: fork");
                        return 1;
                }
                if (pid == 0) {
                        execv(argv[4], argv + 4);
                        _exit(127);
                }
                fprintf(f, "%d\n", (int) pid);
                fflush(f);
                if (interval > 0) {
                        struct timespec ts = { .tv_sec = interval / 1000000, .tv_nsec = (interval % 1000000) * 1000 };
                        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                                ;
                }
        }
        fclose(f);
        printf("spawned %ld\n", n);
        fflush(stdout);
        for (;;)
                pause();
}
