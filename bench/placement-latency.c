/* SPDX-License-Identifier: GPL-2.0-only */
/* Time from exec to every thread placed, with the real daemon running (see
 * placement-latency.sh, which starts npu-tuned with a policy that places processes whose
 * command line has "--child" on one CPU per role).
 *
 * Each run forks and execs this program as a child that starts T threads named "work-N"
 * at once; every thread (and the main thread) polls its own affinity until the daemon has
 * narrowed it to one CPU, and reports the moment it saw that. A run's time is from just
 * before fork() to the last thread placed. Prints the median, p90, p99 and max, and how
 * many runs had a thread left unplaced (after 2 s). With --raw, prints one line per run
 * instead (nanoseconds, or "unplaced"), for bench/placement-latency.sh to pool runs of
 * several pinners taken in turns.
 *
 *   placement-latency [--raw] [RUNS] [THREADS] */
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GIVE_UP_NS (2000ULL * 1000 * 1000)

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static uint64_t start_ns;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* Poll until this thread's affinity is a single CPU; print when, relative to start. */
static void wait_placed(void) {
        struct timespec nap = { 0, 50 * 1000 };
        for (;;) {
                cpu_set_t set;
                uint64_t t = now_ns();
                if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1) {
                        pthread_mutex_lock(&out_lock);
                        printf("%llu\n", (unsigned long long) (t - start_ns));
                        fflush(stdout);
                        pthread_mutex_unlock(&out_lock);
                        return;
                }
                if (t - start_ns > GIVE_UP_NS) {
                        pthread_mutex_lock(&out_lock);
                        printf("unplaced\n");
                        fflush(stdout);
                        pthread_mutex_unlock(&out_lock);
                        return;
                }
                nanosleep(&nap, NULL);
        }
}

static void *worker(void *arg) {
        prctl(PR_SET_NAME, (unsigned long) arg, 0, 0, 0);
        wait_placed();
        return NULL;
}

static int child(uint64_t start, unsigned n) {
        pthread_t t[64];
        char names[64][16];

        start_ns = start;
        for (unsigned i = 0; i < n && i < 64; i++) {
                snprintf(names[i], sizeof names[i], "work-%u", i);
                if (pthread_create(&t[i], NULL, worker, names[i]) != 0)
                        return 1;
        }
        wait_placed();
        for (unsigned i = 0; i < n && i < 64; i++)
                pthread_join(t[i], NULL);
        return 0;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
        unsigned runs = 50, n = 4, unplaced_runs = 0;
        uint64_t *times;
        bool raw = false;
        const char *prog = argv[0];

        if (argc == 4 && strcmp(argv[1], "--child") == 0)
                return child(strtoull(argv[2], NULL, 10), (unsigned) strtoul(argv[3], NULL, 10));
        if (argc > 1 && strcmp(argv[1], "--raw") == 0) {
                raw = true;
                argv++;
                argc--;
        }
        if (argc > 1)
                runs = (unsigned) strtoul(argv[1], NULL, 10);
        if (argc > 2)
                n = (unsigned) strtoul(argv[2], NULL, 10);
        if (runs == 0 || n > 64)
                return 2;
        times = calloc(runs, sizeof *times);
        if (!times)
                return 1;
        for (unsigned r = 0; r < runs; r++) {
                int pipefd[2];
                char start[32], threads[16];
                uint64_t worst = 0;
                unsigned lines = 0;
                bool unplaced = false;

                if (pipe(pipefd) < 0)
                        return 1;
                uint64_t t0 = now_ns();
                snprintf(start, sizeof start, "%llu", (unsigned long long) t0);
                snprintf(threads, sizeof threads, "%u", n);
                pid_t pid = fork();
                if (pid == 0) {
                        dup2(pipefd[1], STDOUT_FILENO);
                        close(pipefd[0]);
                        execl("/proc/self/exe", prog, "--child", start, threads, (char *) NULL);
                        _exit(127);
                }
                close(pipefd[1]);
                FILE *f = fdopen(pipefd[0], "r");
                char line[64];
                while (f && fgets(line, sizeof line, f)) {
                        lines++;
                        if (strncmp(line, "unplaced", 8) == 0)
                                unplaced = true;
                        else {
                                uint64_t v = strtoull(line, NULL, 10);
                                if (v > worst)
                                        worst = v;
                        }
                }
                if (f)
                        fclose(f);
                waitpid(pid, NULL, 0);
                if (unplaced || lines != n + 1)
                        unplaced_runs++;
                if (raw) {
                        if (unplaced || lines != n + 1)
                                printf("unplaced\n");
                        else
                                printf("%llu\n", (unsigned long long) worst);
                        fflush(stdout);
                }
                times[r] = worst;
                usleep(20 * 1000);
        }
        qsort(times, runs, sizeof *times, cmp_u64);
        if (raw) {
                free(times);
                return 0;
        }
        printf("exec -> all %u threads placed, %u runs: median %.0f us, p90 %.0f us, p99 %.0f us, max %.0f us; runs with a thread unplaced after 2 s: %u\n",
               n + 1, runs, times[runs / 2] / 1e3, times[runs * 9 / 10] / 1e3, times[(runs * 99) / 100] / 1e3,
               times[runs - 1] / 1e3, unplaced_runs);
        free(times);
        return unplaced_runs ? 1 : 0;
}
