/* SPDX-License-Identifier: GPL-2.0-only */
/* The driver's word on which process uses which device: npu-tuned-driver-query (which
 * loads NVML or DCMI, never the daemon) run as a child with a pipe for its lines, read
 * by the event loop, killed after a deadline, its output bounded, at most once per
 * interval, and only while a matched process has no accelerator. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "watcher-decide.h"
#include "watcher-internal.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

#define DRIVER_DEADLINE_USEC (2 * 1000 * 1000ULL)

static uint64_t boottime_ticks(void) {
        struct timespec ts;
        long hz = sysconf(_SC_CLK_TCK);

        if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * (uint64_t) hz + (uint64_t) ts.tv_nsec / (1000000000ULL / (uint64_t) hz);
}

/* 1: reaped (*status set), 0: still there. */
static int reap(DriverQuery *q, int *status) {
        pid_t r;

        if (q->child <= 0)
                return 1;
        r = waitpid(q->child, status, WNOHANG);
        if (r == 0)
                return 0;
        q->child = 0;
        return 1;
}

static void stop_reading(DriverQuery *q) {
        q->io = sd_event_source_disable_unref(q->io);
        q->deadline = sd_event_source_disable_unref(q->deadline);
        if (q->fd >= 0)
                close(q->fd);
        q->fd = -EBADF;
        free(q->buf);
        q->buf = NULL;
        q->len = 0;
        q->overflow = false;
        q->eof = false;
}

/* Every managed process still without accelerators is looked at again now, with the
 * answer: its device-file retry made due and the reconcile timer set to now, whose
 * handler (watcher-reconcile.c) checks it is alive and attributes it. Through data: the
 * files that evaluate are above this one (watcher-internal.h, "Order"). */
static void recheck_waiting(Watcher *w) {
        _cleanup_free_ pid_t *pids = NULL;
        uint64_t now = watcher_now_usec(w);
        bool any = false;
        size_t n = 0;

        if (registry_pids(w->registry, &pids, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                Entry *e = registry_get(w->registry, pids[i]);
                if (!e || !e->matched || !watcher_device_retry_wanted(e->p.rule, &e->p.attribution))
                        continue;
                e->next_device_usec = now;
                any = true;
        }
        if (!any || !w->timer)
                return;
        (void) sd_event_source_set_time(w->timer, now);
        (void) sd_event_source_set_enabled(w->timer, SD_EVENT_ONESHOT);
        w->timer_due_usec = now;
}

static int on_reap(sd_event_source *s, uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        DriverQuery *q = &w->driver;

        if (reap(q, &q->status)) {
                q->reaper = sd_event_source_disable_unref(q->reaper);
                return 0;
        }
        /* Still in the driver (uninterruptible): once a second, no new query meanwhile. */
        (void) sd_event_source_set_time(s, watcher_now_usec(w) + 1000 * 1000);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

/* SIGKILL sent: the child is reaped here when it is gone, and until then no query runs. */
static void reap_later(Watcher *w) {
        DriverQuery *q = &w->driver;

        if (q->child <= 0 || q->reaper || !w->event)
                return;
        if (sd_event_add_time(w->event, &q->reaper, CLOCK_MONOTONIC, watcher_now_usec(w) + 20 * 1000, 0, on_reap, w) >= 0)
                (void) sd_event_source_set_description(q->reaper, "watcher-driver-query-reap");
}

static void finish(Watcher *w, bool timed_out) {
        DriverQuery *q = &w->driver;
        tune_driver_procs d;
        int status = q->status, r;

        if (!reap(q, &status)) {
                /* Its output closed but it runs on, or the deadline passed: a library stuck
                 * in the driver. Killed; reaped now or at the next query. */
                (void) kill(q->child, SIGKILL);
                if (!reap(q, &status))
                        timed_out = true;
                else if (!timed_out)
                        timed_out = WIFSIGNALED(status);
        }
        if (timed_out) {
                log_warning("The driver query did not answer within %llu ms, killed it; asking again in %u ms at the earliest.",
                            DRIVER_DEADLINE_USEC / 1000, w->params.driver_query_interval_ms);
                stop_reading(q);
                reap_later(w);
                return;
        }
        if (WIFEXITED(status) && (WEXITSTATUS(status) == 2 || WEXITSTATUS(status) == 127)) {
                if (WEXITSTATUS(status) == 2)
                        log_notice("No accelerator driver library (NVML, DCMI) answered the driver query: not asking "
                                   "it again until a reload.");
                else
                        log_notice("Could not run the driver query %s: not asking the driver until a reload.",
                                   w->params.driver_query);
                q->given_up = true;
                stop_reading(q);
                return;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                log_warning("The driver query failed (%s %d), ignoring its output.",
                            WIFEXITED(status) ? "exit status" : "signal",
                            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                stop_reading(q);
                return;
        }
        r = tune_driver_procs_parse(q->buf, q->len, &d);
        if (r < 0) {
                log_warning_errno(r, "Failed to parse the driver query's output: %m");
                stop_reading(q);
                return;
        }
        if (d.n_rejected > 0 || d.truncated || q->overflow)
                log_warning("The driver query printed %u line(s) of no known form%s; took the other %zu.", d.n_rejected,
                            d.truncated || q->overflow ? " and more than the bound" : "", d.n);
        else
                log_debug("The driver query named %zu process(es) on devices.", d.n);
        tune_driver_procs_done(&q->answer);
        q->answer = d;
        q->answer_ticks = q->started_ticks;
        q->answered = true;
        stop_reading(q);
        recheck_waiting(w);
}

/* Its output closed: it exits now, or soon. The exit is looked for every 10 ms until the
 * deadline (a zombie's status can come a moment after its descriptors closed). */
static void output_closed(Watcher *w) {
        DriverQuery *q = &w->driver;
        uint64_t next = watcher_now_usec(w) + 10 * 1000;

        if (reap(q, &q->status)) {
                finish(w, false);
                return;
        }
        q->eof = true;
        q->io = sd_event_source_disable_unref(q->io);
        if (next < q->deadline_usec)
                (void) sd_event_source_set_time(q->deadline, next);
}

static int on_output(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watcher *w = userdata;
        DriverQuery *q = &w->driver;
        char chunk[4096];
        ssize_t k;

        k = read(fd, chunk, sizeof chunk);
        if (k < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return 0;
                output_closed(w);
                return 0;
        }
        if (k == 0) {
                output_closed(w);
                return 0;
        }
        /* One byte past the bound tells the parser it was cut; the rest is read and dropped
         * so that the child does not block on a full pipe. */
        size_t keep = q->len < TUNE_DRIVER_OUTPUT_MAX + 1 ? TUNE_DRIVER_OUTPUT_MAX + 1 - q->len : 0;
        if ((size_t) k > keep)
                q->overflow = true;
        if (keep > 0) {
                size_t take = (size_t) k < keep ? (size_t) k : keep;
                char *nb = realloc(q->buf, q->len + take);
                if (!nb) {
                        finish(w, true);
                        return 0;
                }
                memcpy(nb + q->len, chunk, take);
                q->buf = nb;
                q->len += take;
        }
        return 0;
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        DriverQuery *q = &w->driver;
        uint64_t next = watcher_now_usec(w) + 10 * 1000;

        if (q->eof && !reap(q, &q->status) && next < q->deadline_usec) {
                (void) sd_event_source_set_time(s, next);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
                return 0;
        }
        finish(w, q->child > 0);
        return 0;
}

void watcher_driver_request(Watcher *w) {
        DriverQuery *q = &w->driver;
        uint64_t now = watcher_now_usec(w);
        int pipefd[2], r;
        pid_t pid;

        if (!w->params.driver_query || q->given_up || q->fd >= 0 || !tune_ctx_is_live(w->ctx) || !w->event)
                return;
        if (q->last_start_usec != 0 && now < q->last_start_usec + (uint64_t) w->params.driver_query_interval_ms * 1000)
                return;
        if (q->child > 0) /* the last one, killed, not gone yet (reap_later()) */
                return;
        q->last_start_usec = now;
        if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0) {
                log_warning_errno(errno, "Failed to make a pipe for the driver query: %m");
                return;
        }
        q->started_ticks = boottime_ticks();
        q->status = 0;
        pid = fork();
        if (pid < 0) {
                log_warning_errno(errno, "Failed to start the driver query: %m");
                close(pipefd[0]);
                close(pipefd[1]);
                return;
        }
        if (pid == 0) {
                /* The child: async-signal-safe calls only. Its stdout the pipe, stdin
                 * nothing, stderr the daemon's (the journal); no environment at all, so
                 * no LD_* reaches the loader. */
                char *const envp[] = { NULL };
                const char *argv[] = { w->params.driver_query, NULL, NULL, NULL };
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
                sigset_t all;

                if (w->params.driver_library_dir) {
                        argv[1] = "--library-dir";
                        argv[2] = w->params.driver_library_dir;
                }
                sigfillset(&all);
                (void) sigprocmask(SIG_UNBLOCK, &all, NULL);
                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(pipefd[1], STDOUT_FILENO) < 0)
                        _exit(127);
                /* Nothing else of the daemon's reaches a vendor library (a descriptor
                 * opened without O_CLOEXEC somewhere); failing that, exec closes the rest. */
                (void) syscall(SYS_close_range, 3U, ~0U, 0U);
                execve(argv[0], (char *const *) argv, envp);
                _exit(127);
        }
        close(pipefd[1]);
        q->child = pid;
        q->fd = pipefd[0];
        q->deadline_usec = now + DRIVER_DEADLINE_USEC;
        r = sd_event_add_io(w->event, &q->io, q->fd, EPOLLIN, on_output, w);
        if (r >= 0)
                r = sd_event_add_time(w->event, &q->deadline, CLOCK_MONOTONIC, q->deadline_usec, 0, on_deadline, w);
        if (r < 0) {
                log_warning_errno(r, "Failed to watch the driver query: %m");
                finish(w, true);
                return;
        }
        (void) sd_event_source_set_description(q->io, "watcher-driver-query");
        (void) sd_event_source_set_description(q->deadline, "watcher-driver-query-deadline");
        log_debug("Asking the driver which processes use which device (pid %d).", (int) pid);
}

const tune_driver_procs *watcher_driver_answer(Watcher *w, uint64_t start_time) {
        DriverQuery *q = &w->driver;

        /* Start times count whole ticks: one in the same tick as the query may have come
         * after it. */
        if (!q->answered || start_time >= q->answer_ticks)
                return NULL;
        return &q->answer;
}

void watcher_driver_done(Watcher *w) {
        DriverQuery *q = &w->driver;

        if (q->fd >= 0 || q->child > 0) {
                if (q->child > 0 && !reap(q, &(int){ 0 })) {
                        (void) kill(q->child, SIGKILL);
                        (void) reap(q, &(int){ 0 });
                }
                stop_reading(q);
        }
        q->reaper = sd_event_source_disable_unref(q->reaper);
        tune_driver_procs_done(&q->answer);
        q->answered = false;
}

void watcher_driver_reset(Watcher *w) {
        w->driver.given_up = false;
        w->driver.last_start_usec = 0;
}
