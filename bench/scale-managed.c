/* SPDX-License-Identifier: GPL-2.0-only */
/* How a pinner's cost grows with the processes it manages (bench/scaling.sh): starts
 * PROCS processes of THREADS threads each, all at once (fork + exec of this program with
 * "--child", which the pinner's rule matches), and times until every thread of every one
 * of them sits on a single CPU. Then, with all of them managed, it watches the pinner's
 * CPU over TICKS periods of TICK_MS (its reconcile tick; 0 ticks: none measured), and over
 * one such period before it starts them. Prints
 * one line of KEY=VALUE for the script:
 *
 *   procs, threads: started (fewer if fork or a thread failed: see fork_errno)
 *   placed_ms: first fork -> the last thread seen on one CPU (polled every 0.1 ms)
 *   never: threads not on one CPU after GIVE_UP_S
 *   place_cpu_ms: the pinner's utime + stime (/proc/PID/stat, in clock ticks of 10 ms)
 *     over that time; place_run_ms: the same from /proc/PID/schedstat (ns)
 *   rss_kib: its VmRSS with all of them managed
 *   tick_cpu_us: its CPU per tick, from /proc/PID/schedstat (ns, all its threads): its CPU
 *     over the TICKS periods less what it used at the rate of a period measured before
 *     the processes were started (the host's own process events, which reach every
 *     pinner all the time), divided by TICKS; below the host's noise for a few processes
 *   window_cpu_us: the whole window's CPU per tick, the host's events included
 *   base_cpu_us: its CPU in the period before, nothing managed
 * Then kills its processes and exits; they also die with it (PR_SET_PDEATHSIG).
 *
 *   scale-managed PINNER_PID PROCS THREADS TICK_MS TICKS */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc-read.h"

#define GIVE_UP_S 60
#define MAX_THREADS 256

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void sleep_ms(unsigned ms) {
        struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static void *idle_thread(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

/* The managed process: THREADS threads in all, then its pid down FD, then nothing. */
static int child(unsigned threads, int fd) {
        pthread_attr_t attr;
        pthread_t t;
        pid_t self = getpid();

        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        for (unsigned i = 1; i < threads; i++)
                if (pthread_create(&t, &attr, idle_thread, NULL) != 0)
                        break;
        if (write(fd, &self, sizeof self) != (ssize_t) sizeof self)
                return 1;
        close(fd);
        for (;;)
                pause();
}

/* The pinner's time on a CPU in ns, all its threads. */
static uint64_t run_ns(pid_t pid) {
        char path[64], task[320], line[128];
        struct dirent *de;
        uint64_t sum = 0;
        DIR *d;

        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                unsigned long long ns;
                FILE *f;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(task, sizeof task, "/proc/%d/task/%s/schedstat", (int) pid, de->d_name);
                f = fopen(task, "re");
                if (!f)
                        continue;
                if (fgets(line, sizeof line, f) && sscanf(line, "%llu", &ns) == 1)
                        sum += ns;
                fclose(f);
        }
        closedir(d);
        return sum;
}

static long rss_kib(pid_t pid) {
        static const char *const keys[] = { "VmRSS:", NULL };
        return proc_status_sum(pid, keys);
}

/* Appends the thread ids of pid to tids. */
static void list_tasks(pid_t pid, pid_t *tids, size_t *n, size_t cap) {
        char path[64];
        struct dirent *de;
        DIR *d;

        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return;
        while ((de = readdir(d)) && *n < cap)
                if (de->d_name[0] != '.')
                        tids[(*n)++] = (pid_t) atoi(de->d_name);
        closedir(d);
}

static int on_one_cpu(pid_t tid) {
        cpu_set_t set;
        return sched_getaffinity(tid, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1;
}

/* The pinner's CPU per tick over ticks periods of tick_ms, less base_ns per period. */
static void measure_ticks(pid_t pinner, unsigned tick_ms, unsigned ticks, uint64_t base_ns) {
        uint64_t before = run_ns(pinner), total;

        sleep_ms(tick_ms * ticks);
        total = run_ns(pinner) - before;
        printf(" tick_cpu_us=%.0f window_cpu_us=%.0f base_cpu_us=%.0f",
               (total > base_ns * ticks ? total - base_ns * ticks : 0) / 1e3 / ticks, total / 1e3 / ticks, base_ns / 1e3);
}

int main(int argc, char **argv) {
        unsigned procs, threads, tick_ms, ticks;
        pid_t pinner, *kids, *tids;
        size_t n_kids = 0, n_tids = 0, cap;
        int pipefd[2], fork_errno = 0;

        if (argc == 4 && strcmp(argv[1], "--child") == 0)
                return child((unsigned) strtoul(argv[2], NULL, 10), atoi(argv[3]));
        if (argc != 6) {
                fprintf(stderr, "usage: %s PINNER_PID PROCS THREADS TICK_MS TICKS\n", argv[0]);
                return 2;
        }
        pinner = (pid_t) atoi(argv[1]);
        procs = (unsigned) strtoul(argv[2], NULL, 10);
        threads = (unsigned) strtoul(argv[3], NULL, 10);
        tick_ms = (unsigned) strtoul(argv[4], NULL, 10);
        ticks = (unsigned) strtoul(argv[5], NULL, 10);
        if (procs == 0 || threads == 0 || threads > MAX_THREADS)
                return 2;
        cap = (size_t) procs * threads;
        kids = calloc(procs, sizeof *kids);
        tids = calloc(cap, sizeof *tids);
        if (!kids || !tids || pipe(pipefd) < 0)
                return 1;

        char threads_arg[16], fd_arg[16];
        snprintf(threads_arg, sizeof threads_arg, "%u", threads);
        snprintf(fd_arg, sizeof fd_arg, "%d", pipefd[1]);
        pid_t self = getpid();
        uint64_t base_ns = 0;
        if (ticks > 0 && tick_ms > 0) {
                base_ns = run_ns(pinner);
                sleep_ms(tick_ms);
                base_ns = run_ns(pinner) - base_ns;
        }
        double cpu0 = proc_cpu_seconds(pinner);
        uint64_t run0 = run_ns(pinner);
        uint64_t t0 = now_ns();
        for (unsigned i = 0; i < procs; i++) {
                pid_t pid = fork();
                if (pid < 0) {
                        fork_errno = errno;
                        break;
                }
                if (pid == 0) {
                        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                        if (getppid() != self)
                                _exit(0);
                        close(pipefd[0]);
                        execl("/proc/self/exe", argv[0], "--child", threads_arg, fd_arg, (char *) NULL);
                        _exit(127);
                }
                kids[n_kids++] = pid;
        }
        close(pipefd[1]);
        /* Every child says when its threads exist; then the poll has all their ids. */
        for (size_t i = 0; i < n_kids; i++) {
                pid_t ready;
                if (read(pipefd[0], &ready, sizeof ready) != (ssize_t) sizeof ready)
                        break;
                list_tasks(ready, tids, &n_tids, cap);
        }
        close(pipefd[0]);

        /* Placed threads stay placed: each sweep goes on from the first one not yet seen on
         * one CPU and stops there, so the poll costs little while the pinner works. */
        size_t next = 0;
        uint64_t last = t0;
        while (next < n_tids && now_ns() - t0 < GIVE_UP_S * 1000000000ULL) {
                while (next < n_tids && on_one_cpu(tids[next]))
                        next++;
                last = now_ns();
                if (next < n_tids) {
                        struct timespec nap = { 0, 100 * 1000 };
                        nanosleep(&nap, NULL);
                }
        }
        size_t never = 0;
        for (size_t i = next; i < n_tids; i++)
                if (!on_one_cpu(tids[i]))
                        never++;
        double cpu1 = proc_cpu_seconds(pinner);
        uint64_t run1 = run_ns(pinner);
        printf("procs=%zu threads=%zu placed_ms=%.1f never=%zu place_cpu_ms=%.0f place_run_ms=%.1f rss_kib=%ld", n_kids,
               n_tids, (last - t0) / 1e6, never, (cpu1 - cpu0) * 1000, (run1 - run0) / 1e6, rss_kib(pinner));
        if (fork_errno)
                printf(" fork_errno=%d", fork_errno);
        if (ticks > 0 && tick_ms > 0)
                measure_ticks(pinner, tick_ms, ticks, base_ns);
        printf("\n");
        fflush(stdout);
        for (size_t i = 0; i < n_kids; i++)
                kill(kids[i], SIGKILL);
        while (wait(NULL) > 0 || errno == EINTR)
                ;
        free(kids);
        free(tids);
        return 0;
}
