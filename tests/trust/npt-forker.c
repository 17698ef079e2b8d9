/* SPDX-License-Identifier: GPL-2.0-only */
/* npt-forker N: fork N children that only sleep (no exec: each stays what its parent is,
 * so each is a watcher candidate when the parent is), print "forked N", then wait. The
 * test runs it as nobody under the name python3 and kills its process group. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char *argv[]) {
        long n = argc > 1 ? strtol(argv[1], NULL, 10) : 0;

        signal(SIGCHLD, SIG_IGN);
        for (long i = 0; i < n; i++) {
                pid_t pid = fork();
                if (pid < 0) {
                        perror("npt-forker: fork");
                        return 1;
                }
                if (pid == 0) {
                        for (;;)
                                pause();
                }
        }
        printf("forked %ld\n", n);
        fflush(stdout);
        for (;;)
                pause();
}
