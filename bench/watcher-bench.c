/* SPDX-License-Identifier: GPL-2.0-only */
/* watcher-bench: how many process events per second the watcher sustains.
 *
 *   watcher-bench [--procs N] [--threads T] [--match] [--rcvbuf-kib K] [--idle-s S]
 *                 [--watcher-nice N | --watcher-fifo]
 *
 * Runs the real watcher (connector, registry, matching, attribution) in a child process
 * with a counting consumer, then fork+execs N short-lived processes (this binary in
 * "load" mode), each creating T threads, as fast as one generator can. Without --match
 * the rule never matches (every exec costs a /proc read or two and is forgotten); with
 * --match every load process is managed (pidfd, environment, thread tracking, exit).
 * Prints the events offered, the events the watcher handled, losses, the watcher's CPU
 * time, and the capacity: events per CPU-second of the watcher. Needs root in the
 * initial namespaces. Then, with --idle-s, counts the watcher's wake-ups while nothing
 * is managed. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-event.h>

#include "log.h"
#include "proc-read.h"
#include "npu-tuned/context.h"
#include "watcher.h"

static uint64_t n_matched, n_threads_new, n_exits;

/* Event (kernel timestamp) -> callback latencies, microseconds. */
#define LAT_MAX 200000
static double lat_exec[LAT_MAX], lat_thread[LAT_MAX];
static size_t n_lat_exec, n_lat_thread;

static void latency(Watcher *w, double *l, size_t *n) {
        watcher_stats s;
        struct timespec ts;

        watcher_get_stats(w, &s);
        if (!s.event_timestamp_ns || *n >= LAT_MAX)
                return;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        l[(*n)++] = ((double) ts.tv_sec * 1e9 + (double) ts.tv_nsec - (double) s.event_timestamp_ns) / 1e3;
}

static void on_matched(Watcher *w, managed_process *p, void *u) {
        n_matched++;
        latency(w, lat_exec, &n_lat_exec);
}
static void on_thread_new(Watcher *w, managed_process *p, managed_thread *t, void *u) {
        n_threads_new++;
        latency(w, lat_thread, &n_lat_thread);
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static void percentiles(char *buf, size_t size, double *l, size_t n) {
        if (n == 0) {
                snprintf(buf, size, "n=0");
                return;
        }
        qsort(l, n, sizeof *l, cmp_double);
        snprintf(buf, size, "n=%zu median=%.0fus p99=%.0fus max=%.0fus", n, l[n / 2], l[n * 99 / 100], l[n - 1]);
}
static void on_exit_cb(Watcher *w, managed_process *p, watcher_exit_reason r, void *u) {
        n_exits++;
}

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static long ctxt_switches(pid_t pid) {
        static const char *const keys[] = { "voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:", NULL };
        return proc_status_sum(pid, keys);
}

/* ---- The watcher side ---- */

static int report_fd = -1;

static void report(Watcher *w) {
        watcher_stats s;
        char buf[1024], a[128], b[128];
        int n;

        watcher_get_stats(w, &s);
        n = snprintf(buf, sizeof buf,
                     "events=%" PRIu64 " overruns=%" PRIu64 " resyncs=%" PRIu64 " matched=%" PRIu64 " threads=%" PRIu64
                     " exits=%" PRIu64 " managed=%u filter=%d rcvbuf=%d",
                     s.events, s.overruns, s.resyncs, n_matched, n_threads_new, n_exits, s.managed, s.filter, s.rcvbuf);
        percentiles(a, sizeof a, lat_exec, n_lat_exec);
        percentiles(b, sizeof b, lat_thread, n_lat_thread);
        n += snprintf(buf + n, sizeof buf - (size_t) n, " |exec->matched %s |fork->thread_new %s|\n", a, b);
        if (write(report_fd, buf, (size_t) n) < 0)
                _exit(1);
}

static int on_usr1(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        report(userdata);
        return 0;
}

static int run_watcher(const char *exe, bool match, unsigned rcvbuf_kib) {
        static tune_policy_rule rule;
        static tune_policy policy;
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        Watcher *w = NULL;
        sd_event *e = NULL;
        watcher_params params = { .rcvbuf_kib = rcvbuf_kib, .max_managed = 100000 };
        const watcher_ops ops = {
                .on_process_matched = on_matched,
                .on_thread_new = on_thread_new,
                .on_process_exit = on_exit_cb,
        };
        sigset_t mask;

        rule.name = (char *) "bench";
        rule.match_exe = (char *) (match ? exe : "/nonexistent/never");
        rule.accel_mode = TUNE_ACCEL_AUTO;
        policy.rules = &rule;
        policy.n_rules = 1;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGUSR1);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        if (tune_ctx_new("/", &ctx) < 0 || sd_event_new(&e) < 0)
                return 1;
        if (watcher_new(e, ctx, NULL, &policy, &params, &ops, NULL, &w) < 0 || watcher_start(w) < 0)
                return 1;
        (void) sd_event_add_signal(e, NULL, SIGTERM, NULL, NULL);
        (void) sd_event_add_signal(e, NULL, SIGUSR1, on_usr1, w);
        if (write(report_fd, "ready\n", 6) < 0)
                return 1;
        (void) sd_event_loop(e);
        report(w);
        watcher_free(w);
        sd_event_unref(e);
        return 0;
}

/* ---- The load ---- */

static void *thread_main(void *arg) {
        return NULL;
}

static int run_load(int threads) {
        pthread_t t[256];
        if (threads > 256)
                threads = 256;
        for (int i = 0; i < threads; i++)
                pthread_create(&t[i], NULL, thread_main, NULL);
        for (int i = 0; i < threads; i++)
                pthread_join(t[i], NULL);
        return 0;
}

/* Ask the watcher for its counters; returns the line. */
static int query(pid_t watcher, FILE *from, char *line, size_t size) {
        kill(watcher, SIGUSR1);
        return fgets(line, (int) size, from) ? 0 : -EIO;
}

static uint64_t field(const char *line, const char *key) {
        const char *p = strstr(line, key);
        return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "procs", required_argument, NULL, 'n' },   { "threads", required_argument, NULL, 't' },
                { "match", no_argument, NULL, 'm' },         { "rcvbuf-kib", required_argument, NULL, 'r' },
                { "idle-s", required_argument, NULL, 'i' },  { "watcher-nice", required_argument, NULL, 'N' },
                { "watcher-fifo", no_argument, NULL, 'F' },  {}
        };
        char exe[4096], line[512];
        long procs = 2000, threads = 4, idle_s = 0;
        unsigned rcvbuf = 4096;
        bool match = false, fifo = false;
        int pipefd[2], c, nice_ = 0;
        ssize_t len;
        pid_t watcher;
        FILE *from;

        if (argc == 3 && strcmp(argv[1], "load") == 0)
                return run_load(atoi(argv[2]));
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'n':
                        procs = strtol(optarg, NULL, 10);
                        break;
                case 't':
                        threads = strtol(optarg, NULL, 10);
                        break;
                case 'm':
                        match = true;
                        break;
                case 'r':
                        rcvbuf = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'i':
                        idle_s = strtol(optarg, NULL, 10);
                        break;
                case 'N':
                        nice_ = atoi(optarg);
                        break;
                case 'F':
                        fifo = true;
                        break;
                default:
                        return 2;
                }
        len = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (len <= 0)
                return 1;
        exe[len] = 0;
        if (geteuid() != 0) {
                fprintf(stderr, "watcher-bench: needs root (the proc connector)\n");
                return 77;
        }
        log_set_max_level(LOG_ERR);
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return 1;
        watcher = fork();
        if (watcher == 0) {
                close(pipefd[0]);
                report_fd = pipefd[1];
                if (nice_ && setpriority(PRIO_PROCESS, 0, nice_) < 0)
                        perror("watcher-bench: setpriority");
                if (fifo) {
                        struct sched_param sp = { .sched_priority = 1 };
                        if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
                                perror("watcher-bench: SCHED_FIFO");
                }
                _exit(run_watcher(exe, match, rcvbuf));
        }
        close(pipefd[1]);
        from = fdopen(pipefd[0], "r");
        if (!fgets(line, sizeof line, from) || strncmp(line, "ready", 5) != 0) {
                fprintf(stderr, "watcher-bench: the watcher did not start (root, initial namespaces?)\n");
                kill(watcher, SIGKILL);
                return 1;
        }
        if (query(watcher, from, line, sizeof line) < 0)
                return 1;
        uint64_t ev0 = field(line, "events=");
        double cpu0 = proc_cpu_seconds(watcher), t0 = now_s();

        char nthreads[16];
        snprintf(nthreads, sizeof nthreads, "%ld", threads);
        for (long i = 0; i < procs; i++) {
                pid_t p = fork();
                if (p == 0) {
                        execl(exe, exe, "load", nthreads, (char *) NULL);
                        _exit(127);
                }
                if (p > 0)
                        waitpid(p, NULL, 0);
        }
        double t_load = now_s() - t0;
        /* Let the watcher drain: until its count stops moving. */
        uint64_t ev = 0, prev = UINT64_MAX;
        for (int i = 0; i < 100 && ev != prev; i++) {
                struct timespec ts = { 0, 100 * 1000 * 1000 };
                prev = ev;
                nanosleep(&ts, NULL);
                if (query(watcher, from, line, sizeof line) < 0)
                        return 1;
                ev = field(line, "events=");
        }
        double cpu = proc_cpu_seconds(watcher) - cpu0;
        uint64_t handled = ev - ev0;
        uint64_t offered = (uint64_t) procs * (3 + 2 * (uint64_t) threads); /* fork, exec, exit; per thread fork, exit */

        printf("watcher-bench: %ld processes x %ld threads, rule %s, rcvbuf %u KiB, event filter %s, watcher %s (nice %d)\n",
               procs, threads, match ? "matches every load process" : "matches nothing", rcvbuf,
               field(line, "filter=") ? "on" : "off", fifo ? "SCHED_FIFO 1" : "SCHED_OTHER", nice_);
        printf("  load:     %.2f s, %.0f processes/s, %" PRIu64 " events offered (%.0f events/s)\n", t_load,
               (double) procs / t_load, offered, (double) offered / t_load);
        printf("  watcher:  %" PRIu64 " events handled (other processes' included), %" PRIu64 " overruns, %" PRIu64
               " resyncs, %" PRIu64 " matched, %" PRIu64 " thread_new, %" PRIu64 " exits\n",
               handled, field(line, "overruns="), field(line, "resyncs="), field(line, "matched="),
               field(line, "threads="), field(line, "exits="));
        printf("  cost:     %.3f CPU-s in the watcher, %.1f us per event\n", cpu, cpu > 0 ? cpu * 1e6 / (double) handled : 0);
        printf("  capacity: %.0f events per watcher CPU-second\n", cpu > 0 ? (double) handled / cpu : 0);
        if (match) {
                const char *p = strchr(line, '|'), *q = p ? strchr(p + 1, '|') : NULL;
                if (p && q)
                        printf("  latency:  event timestamp -> callback: exec -> on_process_matched %.*s; "
                               "thread fork -> on_thread_new %s", (int) (q - p - 1), p + 1, q + 1);
        }

        if (idle_s > 0) {
                long cs0 = ctxt_switches(watcher);
                double c0 = proc_cpu_seconds(watcher);
                sleep((unsigned) idle_s);
                printf("  idle:     %ld wake-ups and %.3f CPU-s in %ld s with nothing managed "
                       "(wake-ups come only from other processes' events)\n",
                       ctxt_switches(watcher) - cs0, proc_cpu_seconds(watcher) - c0, idle_s);
        }
        kill(watcher, SIGTERM);
        waitpid(watcher, NULL, 0);
        return 0;
}
