/* SPDX-License-Identifier: GPL-2.0-only */
/* A serving-shaped program: the main (control) thread must wake every PERIOD to dispatch
 * work, beside compute threads ("work-N") that spin on every CPU they are given. Records
 * how late each wake-up is (the time past its absolute deadline) after a warm-up that
 * lets a pinner place the threads, and prints one line per wake-up in nanoseconds (--raw)
 * or p50/p99/p99.9/max. The effect npu-tuned sells: control threads kept off the CPUs the
 * compute threads saturate.
 *
 *   serving-lateness [--raw] [--spinners N] [--seconds S] [--period-us P] [--warmup-ms W] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

static atomic_bool stop;

static uint64_t ts_ns(const struct timespec *ts) {
        return (uint64_t) ts->tv_sec * 1000000000ULL + (uint64_t) ts->tv_nsec;
}

static void *spin(void *arg) {
        volatile uint64_t x = 0;
        prctl(PR_SET_NAME, (unsigned long) arg, 0, 0, 0);
        while (!atomic_load_explicit(&stop, memory_order_relaxed))
                x++;
        return NULL;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
        unsigned spinners = 6, seconds = 5, period_us = 1000, warmup_ms = 500;
        bool raw = false;
        pthread_t t[256];
        char names[256][16];
        uint64_t *late, n = 0, max_n;
        struct timespec next, now;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--raw") == 0)
                        raw = true;
                else if (i + 1 < argc && strcmp(argv[i], "--spinners") == 0)
                        spinners = (unsigned) strtoul(argv[++i], NULL, 10);
                else if (i + 1 < argc && strcmp(argv[i], "--seconds") == 0)
                        seconds = (unsigned) strtoul(argv[++i], NULL, 10);
                else if (i + 1 < argc && strcmp(argv[i], "--period-us") == 0)
                        period_us = (unsigned) strtoul(argv[++i], NULL, 10);
                else if (i + 1 < argc && strcmp(argv[i], "--warmup-ms") == 0)
                        warmup_ms = (unsigned) strtoul(argv[++i], NULL, 10);
                else {
                        fprintf(stderr, "usage: %s [--raw] [--spinners N] [--seconds S] [--period-us P] [--warmup-ms W]\n", argv[0]);
                        return 2;
                }
        }
        if (spinners > 256 || period_us == 0)
                return 2;
        max_n = (uint64_t) seconds * 1000000 / period_us + 1;
        late = calloc(max_n, sizeof *late);
        if (!late)
                return 1;
        for (unsigned i = 0; i < spinners; i++) {
                snprintf(names[i], sizeof names[i], "work-%u", i);
                if (pthread_create(&t[i], NULL, spin, names[i]) != 0)
                        return 1;
        }
        clock_gettime(CLOCK_MONOTONIC, &next);
        uint64_t start = ts_ns(&next) + (uint64_t) warmup_ms * 1000000, end = start + (uint64_t) seconds * 1000000000ULL;
        for (;;) {
                next.tv_nsec += (long) period_us * 1000;
                while (next.tv_nsec >= 1000000000L) {
                        next.tv_nsec -= 1000000000L;
                        next.tv_sec++;
                }
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
                clock_gettime(CLOCK_MONOTONIC, &now);
                uint64_t due = ts_ns(&next), at = ts_ns(&now);
                if (at >= end || n >= max_n)
                        break;
                if (due >= start)
                        late[n++] = at - due;
                /* A dispatcher that overslept does not try to catch up on missed ticks. */
                if (at > due + (uint64_t) period_us * 1000)
                        next = now;
        }
        atomic_store(&stop, true);
        for (unsigned i = 0; i < spinners; i++)
                pthread_join(t[i], NULL);
        if (raw) {
                for (uint64_t i = 0; i < n; i++)
                        printf("%llu\n", (unsigned long long) late[i]);
                return 0;
        }
        qsort(late, n, sizeof *late, cmp_u64);
        if (n == 0)
                return 1;
        printf("control thread wake-up lateness, %llu wake-ups, %u spinners: p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us\n",
               (unsigned long long) n, spinners, late[n / 2] / 1e3, late[n * 99 / 100] / 1e3, late[n * 999 / 1000] / 1e3,
               late[n - 1] / 1e3);
        free(late);
        return 0;
}
