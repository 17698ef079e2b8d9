/* SPDX-License-Identifier: GPL-2.0-only */
/* A storm of short-lived processes for the watcher: N unmatched ones (fork + exec of
 * /bin/true), with M matched ones spread evenly among them (exec of MATCHED_EXE with
 * "--child NOW 0": bench/placement-latency's child, which waits up to 2 s to be placed and
 * prints when it was, or "unplaced"). At most 64 children run at once. Prints how many
 * matched processes were never placed, and how long the storm took.
 *
 * RATE (processes per second; 0 or none: as fast as it can) paces the forks, for
 * bench/scaling.sh's sustained rates; with "exit" the unmatched children _exit() at once
 * instead of exec'ing (2 events each instead of 3, and faster to make).
 *
 *   fork-storm UNMATCHED MATCHED MATCHED_EXE [RATE [exit]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define IN_FLIGHT 64

static unsigned long long now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (unsigned long long) ts.tv_sec * 1000000000ULL + (unsigned long long) ts.tv_nsec;
}

int main(int argc, char **argv) {
        unsigned unmatched, matched, running = 0, placed = 0, unplaced = 0;
        int pipefd[2], just_exit;
        unsigned long long t0;
        double rate;

        if (argc < 4 || argc > 6) {
                fprintf(stderr, "usage: %s UNMATCHED MATCHED MATCHED_EXE [RATE [exit]]\n", argv[0]);
                return 2;
        }
        unmatched = (unsigned) strtoul(argv[1], NULL, 10);
        matched = (unsigned) strtoul(argv[2], NULL, 10);
        rate = argc > 4 ? strtod(argv[4], NULL) : 0;
        just_exit = argc > 5 && strcmp(argv[5], "exit") == 0;
        if (pipe(pipefd) < 0)
                return 1;
        t0 = now_ns();
        unsigned total = unmatched + matched, every = matched ? total / matched : 0, m = 0;
        for (unsigned i = 0; i < total; i++) {
                int is_matched = matched && m < matched && (i % every) == every / 2;
                if (rate > 0) {
                        unsigned long long due = t0 + (unsigned long long) (i * 1e9 / rate), now = now_ns();
                        if (due > now) {
                                struct timespec nap = { (time_t) ((due - now) / 1000000000ULL),
                                                        (long) ((due - now) % 1000000000ULL) };
                                nanosleep(&nap, NULL);
                        }
                }
                while (running > 0 && waitpid(-1, NULL, WNOHANG) > 0)
                        running--;
                while (running >= IN_FLIGHT) {
                        if (wait(NULL) > 0)
                                running--;
                        else if (errno != EINTR)
                                break;
                }
                pid_t pid = fork();
                if (pid < 0) {
                        perror("fork");
                        break;
                }
                if (pid == 0) {
                        if (is_matched) {
                                char start[32];
                                snprintf(start, sizeof start, "%llu", now_ns());
                                dup2(pipefd[1], STDOUT_FILENO);
                                execl(argv[3], argv[3], "--child", start, "0", (char *) NULL);
                        } else if (just_exit)
                                _exit(0);
                        else
                                execl("/bin/true", "true", (char *) NULL);
                        _exit(127);
                }
                if (is_matched)
                        m++;
                running++;
        }
        while (running > 0 && wait(NULL) > 0)
                running--;
        double storm_s = (now_ns() - t0) / 1e9;
        close(pipefd[1]);
        FILE *f = fdopen(pipefd[0], "r");
        char line[64];
        while (f && fgets(line, sizeof line, f)) {
                if (strncmp(line, "unplaced", 8) == 0)
                        unplaced++;
                else
                        placed++;
        }
        printf("storm: %u unmatched + %u matched processes in %.2f s; matched placed %u, missed %u; %.0f processes/s\n",
               unmatched, m, storm_s, placed, m - placed, (unmatched + m) / storm_s);
        return 0;
}
