/* SPDX-License-Identifier: GPL-2.0-only */
/* npt-ancestry DEPTH CHILDREN: the ancestry-walk amplifier of docs/trust.md ("Bounded
 * work"). It re-executes itself (under the name it was run by: the test runs it as
 * python3) with about 840 KiB of environment that holds no NAME=value, so that the
 * environment counts as wiped; then forks a chain of DEPTH processes, each the parent of
 * the next. The deepest prints "ready", waits for a line on stdin, then forks CHILDREN
 * children that each rename themselves once (a COMM event the daemon evaluates: the
 * child's own environment is wiped, so the daemon looks up its parent chain), prints
 * "done" and waits. The test kills the process group. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define ENV_BYTES (840 * 1024)
#define WORD 1000

static int chain(long depth, long children) {
        char line[16];

        signal(SIGCHLD, SIG_IGN);
        for (long d = 0; d < depth; d++) {
                pid_t pid = fork();
                if (pid < 0) {
                        perror("npt-ancestry: fork");
                        return 1;
                }
                if (pid > 0)
                        for (;;)
                                pause();
        }
        printf("ready\n");
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin))
                return 1;
        for (long i = 0; i < children; i++) {
                pid_t pid = fork();
                if (pid < 0) {
                        perror("npt-ancestry: fork");
                        return 1;
                }
                if (pid == 0) {
                        (void) prctl(PR_SET_NAME, "VLLM::Worker_TP");
                        for (;;)
                                pause();
                }
        }
        printf("done\n");
        fflush(stdout);
        for (;;)
                pause();
}

int main(int argc, char *argv[]) {
        static char *envp[ENV_BYTES / WORD + 1];
        static char words[ENV_BYTES / WORD][WORD];

        if (argc == 4 && strcmp(argv[3], "chain") == 0)
                return chain(strtol(argv[1], NULL, 10), strtol(argv[2], NULL, 10));
        if (argc != 3) {
                fprintf(stderr, "usage: npt-ancestry DEPTH CHILDREN\n");
                return 2;
        }
        for (size_t i = 0; i < ENV_BYTES / WORD; i++) {
                memset(words[i], 'a', WORD - 1);
                envp[i] = words[i];
        }
        char *args[] = { argv[0], argv[1], argv[2], (char *) "chain", NULL };
        execve(argv[0], args, envp);
        perror("npt-ancestry: execve");
        return 1;
}
