/* SPDX-License-Identifier: GPL-2.0-only */
/* npt-retitle N BYTES: re-exec itself with a command line of BYTES bytes that a rule's
 * regex must work hard on (" mindie_llm_backend " repeated: every one a place the MindIE
 * rule's unanchored regex starts again and runs ".*" to the end),
 * print "ready", wait for a line on stdin, rename its main thread N times (each a COMM
 * event the watcher sees; 1 ms apart so the connector keeps up), print "renamed N". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char *argv[]) {
        if (argc == 3) {
                long bytes = strtol(argv[2], NULL, 10);
                static const char unit[] = " mindie_llm_backend ";
                char *hostile = malloc((size_t) bytes + 1);
                size_t n = 0;

                if (!hostile)
                        return 1;
                while (n + sizeof unit - 1 <= (size_t) bytes) {
                        memcpy(hostile + n, unit, sizeof unit - 1);
                        n += sizeof unit - 1;
                }
                hostile[n] = 0;
                execv("/proc/self/exe", (char *[]) { argv[0], (char *) "mindie_llm_backend", hostile, argv[1], NULL });
                return 127;
        }
        if (argc != 4)
                return 2;
        long times = strtol(argv[3], NULL, 10);
        char line[16];

        printf("ready\n");
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin))
                return 1;
        for (long i = 0; i < times; i++) {
                char name[24];
                struct timespec ts = { 0, 1000000 };
                snprintf(name, sizeof name, "t%ld", i);
                prctl(PR_SET_NAME, name, 0, 0, 0);
                nanosleep(&ts, NULL);
        }
        printf("renamed %ld\n", times);
        fflush(stdout);
        pause();
        return 0;
}
