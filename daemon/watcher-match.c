/* SPDX-License-Identifier: GPL-2.0-only */
/* The process watcher (see watcher.h, ../../shared/docs/field-notes.md §3 and §8). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "connector.h"
#include "log.h"
#include "npu-tuned/attribution.h"
#include "npu-tuned/match.h"
#include "npu-tuned/proc.h"
#include "registry.h"
#include "watcher.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

typedef enum eval_why {
        EVAL_EXEC,  /* an EXEC event: the environment is as the program was started */
        EVAL_COMM,  /* the main thread renamed itself (setproctitle) */
        EVAL_SCAN,  /* found by a /proc scan (start, overrun) */
} eval_why;

/* One process in the registry: managed (matched) or a candidate kept for its environment
 * (a descendant of a known process, or one that may match after a retitle). Consumers
 * only ever see &e->p of matched entries. */
typedef struct Entry {
        managed_process p; /* first */
        Watcher *w;
        bool matched;
        sd_event_source *exit_source; /* the pidfd became readable: the process is gone */
        uint64_t next_reconcile_usec;
        uint64_t next_device_usec;    /* 0: no device-file check pending */
        unsigned device_backoff_ms;
} Entry;

struct Watcher {
        sd_event *event;
        const tune_ctx *ctx;
        const tune_accels *accels;
        const tune_policy *policy;
        watcher_params params;
        watcher_ops ops;
        void *userdata;
        Connector *connector;
        Registry *registry;
        sd_event_source *timer;
        uint64_t timer_due_usec; /* 0: disabled */
        dev_t *accel_rdevs;      /* parallel to accels->items; 0 unknown */
        char **env_names;
        unsigned n_env_names;
        watcher_stats stats;
        bool warned_full;
};

static const char *const exit_reason_names[_WATCHER_EXIT_REASON_MAX] = {
        [WATCHER_EXIT_EXITED] = "exited",
        [WATCHER_EXIT_UNMATCHED] = "unmatched",
        [WATCHER_EXIT_PID_REUSED] = "pid-reused",
        [WATCHER_EXIT_STOP] = "stop",
};

const char *watcher_exit_reason_to_string(watcher_exit_reason r) {
        return r >= 0 && r < _WATCHER_EXIT_REASON_MAX ? exit_reason_names[r] : NULL;
}

void watcher_params_from_policy(const tune_policy *p, watcher_params *ret) {
        *ret = (watcher_params){};
        if (p) {
                ret->rcvbuf_kib = p->options.proc_connector_rcvbuf_kib;
                ret->reconcile_interval_ms = p->options.reconcile_interval_ms;
                ret->max_managed = p->options.max_managed_processes;
        }
}

static uint64_t now_usec(Watcher *w) {
        uint64_t t = 0;
        (void) sd_event_now(w->event, CLOCK_MONOTONIC, &t);
        return t;
}

static bool have_rules(const Watcher *w) {
        return w->policy && w->policy->n_rules > 0;
}

/* ---- Entries ---- */

static int on_pidfd(sd_event_source *s, int fd, uint32_t revents, void *userdata);

static void entry_clear_threads(Entry *e) {
        free(e->p.threads);
        e->p.threads = NULL;
        e->p.n_threads = 0;
}

static void entry_drop_pidfd(Entry *e) {
        e->exit_source = sd_event_source_disable_unref(e->exit_source);
        if (e->p.pidfd >= 0)
                close(e->p.pidfd);
        e->p.pidfd = -1;
}

static void entry_free(Entry *e) {
        if (!e)
                return;
        if (registry_get(e->w->registry, e->p.pid) == e)
                (void) registry_remove(e->w->registry, e->p.pid);
        if (e->matched)
                e->w->stats.managed--;
        else
                e->w->stats.candidates--;
        entry_drop_pidfd(e);
        entry_clear_threads(e);
        free(e->p.exe);
        free(e->p.cmdline);
        tune_attribution_done(&e->p.attribution);
        tune_env_capture_done(&e->p.env);
        free(e);
}

static Entry *entry_new(Watcher *w, pid_t pid, uint64_t start_time, pid_t ppid) {
        Entry *e;

        if (w->stats.candidates >= w->params.max_managed) {
                w->stats.skipped_full++;
                return NULL;
        }
        e = calloc(1, sizeof *e);
        if (!e)
                return NULL;
        e->w = w;
        e->p.pid = pid;
        e->p.start_time = start_time;
        e->p.ppid = ppid;
        e->p.pidfd = -1;
        e->p.rank = -1;
        e->p.attribution.rank = -1;
        if (registry_put(w->registry, pid, e) < 0) {
                free(e);
                return NULL;
        }
        w->stats.candidates++;
        return e;
}

static void log_release(Entry *e, watcher_exit_reason reason) {
        log_debug("gone pid=%d start=%" PRIu64 " reason=%s", (int) e->p.pid, e->p.start_time,
                  watcher_exit_reason_to_string(reason));
}

/* Stop managing: the consumer's last callback. The entry stays (as a candidate) only for
 * UNMATCHED; otherwise it is freed. */
static void entry_unmatch(Entry *e, watcher_exit_reason reason) {
        Watcher *w = e->w;

        if (!e->matched)
                return;
        log_release(e, reason);
        w->stats.exited++;
        if (w->ops.on_process_exit)
                w->ops.on_process_exit(w, &e->p, reason, w->userdata);
        e->p.userdata = NULL;
        e->matched = false;
        w->stats.managed--;
        w->stats.candidates++;
        entry_drop_pidfd(e);
        entry_clear_threads(e);
        e->p.rule = NULL;
        e->next_device_usec = 0;
}

static void entry_release(Entry *e, watcher_exit_reason reason) {
        entry_unmatch(e, reason);
        entry_free(e);
}

/* 1: alive and still the same process, 0: gone. */
static int entry_alive(Entry *e) {
        if (e->p.pidfd >= 0) {
                struct pollfd pfd = { .fd = e->p.pidfd, .events = POLLIN };
                int r = poll(&pfd, 1, 0);
                if (r < 0)
                        return 1; /* cannot tell: assume alive, the start time check follows elsewhere */
                return r == 0;
        }
        tune_proc_stat st;
        return tune_proc_read_stat(e->w->ctx, e->p.pid, &st) >= 0 && st.start_time == e->p.start_time;
}

/* The entry for pid if it is a live managed process; a dead one is released. */
static Entry *lookup_managed(Watcher *w, pid_t pid) {
        Entry *e = registry_get(w->registry, pid);

        if (!e || !e->matched)
                return NULL;
        if (!entry_alive(e)) {
                entry_release(e, WATCHER_EXIT_EXITED);
                return NULL;
        }
        return e;
}

/* ---- Threads ---- */

static managed_thread *thread_add(Entry *e, pid_t tid, const char *comm) {
        managed_thread *nt;

        if (e->p.n_threads % 16 == 0) {
                nt = reallocarray(e->p.threads, e->p.n_threads + 16, sizeof *nt);
                if (!nt)
                        return NULL;
                e->p.threads = nt;
        }
        nt = &e->p.threads[e->p.n_threads++];
        *nt = (managed_thread){ .tid = tid };
        snprintf(nt->comm, sizeof nt->comm, "%s", comm);
        return nt;
}

static void thread_remove(Entry *e, managed_thread *t) {
        size_t i = (size_t) (t - e->p.threads);

        memmove(t, t + 1, (e->p.n_threads - i - 1) * sizeof *t);
        e->p.n_threads--;
}

static void emit_thread_exit(Entry *e, managed_thread *t) {
        Watcher *w = e->w;

        log_debug("thread_exit pid=%d tid=%d", (int) e->p.pid, (int) t->tid);
        if (w->ops.on_thread_exit)
                w->ops.on_thread_exit(w, &e->p, t, w->userdata);
        thread_remove(e, t);
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return x < y ? -1 : x > y;
}

/* Bring p->threads in line with /proc/PID/task. With emit, report what changed. Returns
 * -ESRCH if the process is gone. */
static int threads_sync(Entry *e, bool emit) {
        Watcher *w = e->w;
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;
        int r;

        r = tune_proc_list_tasks(w->ctx, e->p.pid, &tids, &n);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        /* Vanished threads first. */
        for (unsigned i = 0; i < e->p.n_threads;) {
                managed_thread *t = &e->p.threads[i];
                if (!bsearch(&t->tid, tids, n, sizeof *tids, cmp_pid)) {
                        if (emit)
                                emit_thread_exit(e, t);
                        else
                                thread_remove(e, t);
                        continue;
                }
                i++;
        }
        for (size_t i = 0; i < n; i++) {
                char comm[TUNE_COMM_MAX];
                managed_thread *t = managed_process_find_thread(&e->p, tids[i]);

                if (tune_proc_read_comm(w->ctx, e->p.pid, tids[i], comm) < 0) {
                        if (t && emit)
                                emit_thread_exit(e, t);
                        else if (t)
                                thread_remove(e, t);
                        continue;
                }
                if (!t) {
                        t = thread_add(e, tids[i], comm);
                        if (!t)
                                return -ENOMEM;
                        if (emit) {
                                log_debug("thread_new pid=%d tid=%d (reconcile)", (int) e->p.pid, (int) tids[i]);
                                if (w->ops.on_thread_new)
                                        w->ops.on_thread_new(w, &e->p, t, w->userdata);
                        }
                } else if (!streq(t->comm, comm)) {
                        char old[TUNE_COMM_MAX];
                        memcpy(old, t->comm, sizeof old);
                        memcpy(t->comm, comm, sizeof t->comm);
                        if (emit && w->ops.on_thread_renamed)
                                w->ops.on_thread_renamed(w, &e->p, t, old, w->userdata);
                }
        }
        return 0;
}

/* ---- Timer: reconcile and device-file retries, only while processes are managed ---- */

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata);

static void timer_schedule(Watcher *w, uint64_t due) {
        int r;

        if (due == 0 || (w->timer_due_usec != 0 && w->timer_due_usec <= due))
                return;
        if (!w->timer) {
                r = sd_event_add_time(w->event, &w->timer, CLOCK_MONOTONIC, due, 50 * 1000, on_timer, w);
                if (r < 0) {
                        log_warning_errno(r, "Failed to arm the reconcile timer, reconciling on events only: %m");
                        return;
                }
                (void) sd_event_source_set_description(w->timer, "watcher-reconcile");
        } else {
                (void) sd_event_source_set_time(w->timer, due);
                (void) sd_event_source_set_enabled(w->timer, SD_EVENT_ONESHOT);
        }
        w->timer_due_usec = due;
}

static uint64_t entry_due(const Entry *e) {
        if (e->next_device_usec && e->next_device_usec < e->next_reconcile_usec)
                return e->next_device_usec;
        return e->next_reconcile_usec;
}

/* ---- Matching and attribution ---- */

static void device_check_schedule(Entry *e, uint64_t now) {
        Watcher *w = e->w;

        if (!e->matched || e->p.rule->accel_mode != TUNE_ACCEL_AUTO || e->p.attribution.source != TUNE_ATTRIBUTION_NONE ||
            !tune_ctx_is_live(w->ctx) || w->accels->n == 0) {
                e->next_device_usec = 0;
                return;
        }
        if (e->device_backoff_ms == 0)
                e->device_backoff_ms = w->params.device_retry_ms;
        e->next_device_usec = now + (uint64_t) e->device_backoff_ms * 1000;
        if (e->device_backoff_ms < w->params.reconcile_interval_ms)
                e->device_backoff_ms = e->device_backoff_ms * 2 > w->params.reconcile_interval_ms
                                               ? w->params.reconcile_interval_ms
                                               : e->device_backoff_ms * 2;
        timer_schedule(w, e->next_device_usec);
}

static int attribute(Entry *e, tune_attribution *ret) {
        Watcher *w = e->w;
        _cleanup_free_ dev_t *devs = NULL;
        size_t n_devs = 0;
        tune_attribution_input in = {
                .rule = e->p.rule,
                .accels = w->accels,
                .kinds = w->policy ? w->policy->kinds : NULL,
                .n_kinds = w->policy ? w->policy->n_kinds : 0,
                .env = &e->p.env,
                .rank = e->p.rank,
                .accel_rdevs = w->accel_rdevs,
        };

        if (e->p.rule->accel_mode == TUNE_ACCEL_AUTO && w->accel_rdevs && w->accels->n > 0 &&
            tune_proc_list_char_devices(w->ctx, e->p.pid, &devs, &n_devs) >= 0) {
                in.open_devices = devs;
                in.n_open_devices = n_devs;
        }
        return tune_attribute(&in, ret);
}

static void log_match(Entry *e, const char *what) {
        _cleanup_free_ char *accels = NULL;
        char comm[4 * TUNE_COMM_MAX + 4], rule[128];

        if (log_get_max_level() < LOG_DEBUG)
                return;
        (void) tune_attribution_format_accels(&e->p.attribution, &accels);
        tune_escape(e->p.comm, comm, sizeof comm);
        tune_escape(e->p.rule ? e->p.rule->name : "", rule, sizeof rule);
        log_debug("%s pid=%d start=%" PRIu64 " rule=%s comm=%s rank=%d accels=%s source=%s variable=%s env=%s%s",
                  what, (int) e->p.pid, e->p.start_time, rule, comm, e->p.rank, accels ? accels : "",
                  tune_attribution_source_to_string(e->p.attribution.source),
                  e->p.attribution.variable[0] ? e->p.attribution.variable : "-",
                  tune_env_state_to_string(e->p.env.state), e->p.env.inherited ? "+inherited" : "");
}

/* Read the environment now and keep what matters. An own environment that is readable
 * and not wiped replaces an inherited one; otherwise an inherited capture is kept. */
static void capture_env(Entry *e) {
        Watcher *w = e->w;
        _cleanup_free_ char *raw = NULL;
        tune_env_capture own = {};
        size_t len = 0;
        bool truncated = false;
        int r;

        r = tune_proc_read_environ(w->ctx, e->p.pid, &raw, &len, &truncated);
        if (r < 0)
                own.state = TUNE_ENV_UNREADABLE;
        else if (tune_env_capture_parse(raw, len, truncated, (const char *const *) w->env_names, w->n_env_names,
                                        &own) < 0)
                own.state = TUNE_ENV_UNREADABLE;
        own.from_pid = e->p.pid;
        if (!tune_env_capture_usable(&own) && e->p.env.inherited && tune_env_capture_usable(&e->p.env)) {
                tune_env_capture_done(&own);
                return;
        }
        tune_env_capture_done(&e->p.env);
        e->p.env = own;
}

/* Take the facts a consumer sees from a match. */
static void take_facts(Entry *e, tune_proc_facts *f) {
        (void) tune_proc_facts_get(f, TUNE_FACT_EXE);
        (void) tune_proc_facts_get(f, TUNE_FACT_CMDLINE);
        (void) tune_proc_facts_get(f, TUNE_FACT_UID);
        if (f->loaded & TUNE_FACT_COMM)
                memcpy(e->p.comm, f->comm, sizeof e->p.comm);
        free(e->p.exe);
        e->p.exe = TAKE_PTR(f->exe);
        free(e->p.cmdline);
        e->p.cmdline = TAKE_PTR(f->cmdline);
        if (f->loaded & TUNE_FACT_UID)
                e->p.uid = f->uid;
        f->loaded &= ~(unsigned) (TUNE_FACT_EXE | TUNE_FACT_CMDLINE);
}

/* Become managed: pidfd (verified against the start time), threads, then the callback. */
static int entry_manage(Entry *e) {
        Watcher *w = e->w;
        tune_proc_stat st;
        uint64_t now = now_usec(w);
        int fd, r;

        if (w->stats.managed >= w->params.max_managed) {
                w->stats.skipped_full++;
                if (!w->warned_full)
                        log_warning("Already managing %u processes (max_managed_processes), not managing more.",
                                    w->stats.managed);
                w->warned_full = true;
                return -ENOSPC;
        }
        fd = (int) syscall(SYS_pidfd_open, e->p.pid, 0);
        /* The pidfd names whatever had this pid when it was opened: only if the start time
         * still matches now is it our process (a live process keeps its pid). */
        r = tune_proc_read_stat(w->ctx, e->p.pid, &st);
        if (r < 0 || st.start_time != e->p.start_time) {
                if (fd >= 0)
                        close(fd);
                return -ESRCH;
        }
        if (fd < 0)
                log_debug_errno(errno, "pidfd_open(%d) failed, checking start times instead: %m", (int) e->p.pid);
        else {
                e->p.pidfd = fd;
                r = sd_event_add_io(w->event, &e->exit_source, fd, EPOLLIN, on_pidfd, e);
                if (r < 0)
                        log_debug_errno(r, "Failed to watch pidfd of %d, relying on exit events: %m", (int) e->p.pid);
        }
        r = threads_sync(e, false);
        if (r < 0) {
                entry_drop_pidfd(e);
                entry_clear_threads(e);
                return r;
        }
        e->matched = true;
        w->stats.candidates--;
        w->stats.managed++;
        w->stats.matched++;
        w->warned_full = false;
        e->next_reconcile_usec = now + (uint64_t) w->params.reconcile_interval_ms * 1000;
        e->device_backoff_ms = 0;
        timer_schedule(w, e->next_reconcile_usec);
        device_check_schedule(e, now);
        log_match(e, "matched");
        if (w->ops.on_process_matched)
                w->ops.on_process_matched(w, &e->p, w->userdata);
        return 0;
}

/* Match pid (whose stat was just read) and act on the result. e: its entry, if any
 * (candidate or managed, same start time). */
static void evaluate(Watcher *w, Entry *e, const tune_proc_stat *st, const char *comm, eval_why why) {
        tune_proc_facts f;
        const tune_policy_rule *rule;
        bool retitle = false;
        int rank;

        if (!have_rules(w))
                return;
        tune_proc_facts_init(&f, w->ctx, st->pid, comm ? comm : st->comm);
        rule = tune_policy_match(w->policy, &f, &retitle);
        if (!rule && !retitle && !e) {
                /* Unmatched and no reason to watch it: forgotten. */
                tune_proc_facts_done(&f);
                return;
        }
        if (!e) {
                e = entry_new(w, st->pid, st->start_time, st->ppid);
                if (!e) {
                        tune_proc_facts_done(&f);
                        return;
                }
        }
        /* The environment: at exec it is still the one the program was started with. A
         * process found later (scan, rename) gets what is there now, or its ancestor's. */
        if (why == EVAL_EXEC || e->p.env.state == TUNE_ENV_NOT_READ || e->p.env.inherited)
                capture_env(e);
        memcpy(e->p.comm, f.comm, sizeof e->p.comm);

        if (!rule) {
                if (e->matched)
                        entry_unmatch(e, WATCHER_EXIT_UNMATCHED);
                tune_proc_facts_done(&f);
                return;
        }

        rank = tune_rule_rank(rule, &f, &e->p.env);
        take_facts(e, &f);
        tune_proc_facts_done(&f);

        if (!e->matched) {
                tune_attribution a;
                e->p.rule = rule;
                e->p.rank = rank >= 0 ? rank : -1;
                if (attribute(e, &a) < 0)
                        a = (tune_attribution){ .rank = e->p.rank };
                tune_attribution_done(&e->p.attribution);
                e->p.attribution = a;
                int r = entry_manage(e);
                if (r < 0) {
                        e->p.rule = NULL;
                        /* Gone, or no room: keep it only if it may be worth it later. */
                        if (r == -ESRCH || (!retitle && !registry_get(w->registry, e->p.ppid)))
                                entry_free(e);
                }
                return;
        }

        /* Already managed: what changed? */
        unsigned changes = 0;
        tune_attribution a;
        if (rule != e->p.rule)
                changes |= WATCHER_CHANGE_RULE;
        if ((rank >= 0 ? rank : -1) != e->p.rank)
                changes |= WATCHER_CHANGE_RANK;
        if (why == EVAL_EXEC)
                changes |= WATCHER_CHANGE_EXEC;
        e->p.rule = rule;
        e->p.rank = rank >= 0 ? rank : -1;
        if (attribute(e, &a) >= 0) {
                if (!tune_attribution_equal(&a, &e->p.attribution))
                        changes |= WATCHER_CHANGE_ACCELS;
                tune_attribution_done(&e->p.attribution);
                e->p.attribution = a;
        }
        if (why == EVAL_EXEC && threads_sync(e, true) == -ESRCH) {
                entry_release(e, WATCHER_EXIT_EXITED);
                return;
        }
        device_check_schedule(e, now_usec(w));
        if (changes) {
                log_match(e, "changed");
                if (w->ops.on_process_changed)
                        w->ops.on_process_changed(w, &e->p, changes, w->userdata);
        }
}

/* ---- Events ---- */

static void handle_exec(Watcher *w, pid_t pid) {
        Entry *e = registry_get(w->registry, pid);
        tune_proc_stat st;

        if (!e && !have_rules(w))
                return;
        if (tune_proc_read_stat(w->ctx, pid, &st) < 0) {
                if (e)
                        entry_release(e, WATCHER_EXIT_EXITED);
                return;
        }
        if (e && e->p.start_time != st.start_time) {
                entry_release(e, WATCHER_EXIT_PID_REUSED);
                e = NULL;
        }
        evaluate(w, e, &st, NULL, EVAL_EXEC);
}

static void handle_fork(Watcher *w, pid_t parent_tgid, pid_t child_pid, pid_t child_tgid) {
        if (child_pid != child_tgid) {
                /* A new thread. */
                Entry *e = lookup_managed(w, child_tgid);
                char comm[TUNE_COMM_MAX];
                managed_thread *t;

                if (!e || managed_process_find_thread(&e->p, child_pid))
                        return;
                if (tune_proc_read_comm(w->ctx, child_tgid, child_pid, comm) < 0)
                        return; /* already gone */
                t = thread_add(e, child_pid, comm);
                if (!t)
                        return;
                if (log_get_max_level() >= LOG_DEBUG) {
                        char esc[4 * TUNE_COMM_MAX + 4];
                        tune_escape(comm, esc, sizeof esc);
                        log_debug("thread_new pid=%d tid=%d comm=%s", (int) child_tgid, (int) child_pid, esc);
                }
                if (w->ops.on_thread_new)
                        w->ops.on_thread_new(w, &e->p, t, w->userdata);
                return;
        }

        /* A new process: remembered only as a child of one we know, for the environment
         * its parent had at exec (setproctitle may have wiped the copy it inherited). */
        Entry *parent = registry_get(w->registry, parent_tgid), *old, *e;
        tune_proc_stat st;

        if (!parent)
                return;
        if (parent->matched ? !entry_alive(parent)
                            : (tune_proc_read_stat(w->ctx, parent_tgid, &st) < 0 || st.start_time != parent->p.start_time)) {
                /* A stale entry whose pid another process now has. */
                entry_release(parent, WATCHER_EXIT_EXITED);
                return;
        }
        old = registry_get(w->registry, child_pid);
        if (old)
                entry_release(old, WATCHER_EXIT_PID_REUSED);
        if (tune_proc_read_stat(w->ctx, child_pid, &st) < 0)
                return;
        e = entry_new(w, child_pid, st.start_time, parent_tgid);
        if (!e)
                return;
        memcpy(e->p.comm, st.comm, sizeof e->p.comm);
        if (parent->p.env.state == TUNE_ENV_READ && tune_env_capture_copy(&e->p.env, &parent->p.env) >= 0) {
                if (!e->p.env.inherited)
                        e->p.env.from_pid = parent->p.pid;
                e->p.env.inherited = true;
        }
}

static void handle_comm(Watcher *w, pid_t pid, pid_t tgid, const char *raw_comm) {
        char comm[TUNE_COMM_MAX];
        Entry *e = registry_get(w->registry, tgid);
        tune_proc_stat st;

        memcpy(comm, raw_comm, TUNE_COMM_MAX - 1);
        comm[TUNE_COMM_MAX - 1] = 0;
        if (e && e->matched) {
                managed_thread *t;

                e = lookup_managed(w, tgid);
                if (!e)
                        return;
                t = managed_process_find_thread(&e->p, pid);
                if (!t) {
                        /* A thread whose FORK we did not see (it predates the match). */
                        t = thread_add(e, pid, comm);
                        if (t && w->ops.on_thread_new)
                                w->ops.on_thread_new(w, &e->p, t, w->userdata);
                } else if (!streq(t->comm, comm)) {
                        char old[TUNE_COMM_MAX];
                        memcpy(old, t->comm, sizeof old);
                        memcpy(t->comm, comm, sizeof t->comm);
                        if (log_get_max_level() >= LOG_DEBUG) {
                                char a[4 * TUNE_COMM_MAX + 4], b[4 * TUNE_COMM_MAX + 4];
                                tune_escape(old, a, sizeof a);
                                tune_escape(comm, b, sizeof b);
                                log_debug("thread_renamed pid=%d tid=%d old=%s new=%s", (int) tgid, (int) pid, a, b);
                        }
                        if (w->ops.on_thread_renamed)
                                w->ops.on_thread_renamed(w, &e->p, t, old, w->userdata);
                }
                if (pid != tgid || streq(e->p.comm, comm))
                        return;
                st = (tune_proc_stat){ .pid = tgid, .ppid = e->p.ppid, .start_time = e->p.start_time };
                evaluate(w, e, &st, comm, EVAL_COMM);
                return;
        }
        if (pid != tgid || (!e && !have_rules(w)))
                return; /* a thread of an unmanaged process: not ours */
        /* The main thread of a candidate or unknown process retitled itself. */
        if (tune_proc_read_stat(w->ctx, tgid, &st) < 0) {
                if (e)
                        entry_release(e, WATCHER_EXIT_EXITED);
                return;
        }
        if (st.flags & TUNE_PF_KTHREAD)
                return;
        if (e && e->p.start_time != st.start_time) {
                entry_release(e, WATCHER_EXIT_PID_REUSED);
                e = NULL;
        }
        evaluate(w, e, &st, comm, EVAL_COMM);
}

static void handle_exit(Watcher *w, pid_t pid, pid_t tgid) {
        Entry *e = registry_get(w->registry, tgid);

        if (!e)
                return;
        if (pid != tgid) {
                managed_thread *t = e->matched ? managed_process_find_thread(&e->p, pid) : NULL;
                if (t)
                        emit_thread_exit(e, t);
                return;
        }
        if (e->matched && e->p.pidfd >= 0 && entry_alive(e)) {
                /* The main thread left but others run on (or the exit is not complete
                 * yet): the pidfd tells when the process is really gone. */
                managed_thread *t = managed_process_find_thread(&e->p, pid);
                if (t)
                        emit_thread_exit(e, t);
                return;
        }
        entry_release(e, WATCHER_EXIT_EXITED);
}

static void on_event(Connector *c, const struct proc_event *ev, void *userdata) {
        Watcher *w = userdata;

        w->stats.events++;
        w->stats.event_timestamp_ns = ev->timestamp_ns;
        switch (ev->what) {
        case PROC_EVENT_FORK:
                handle_fork(w, ev->event_data.fork.parent_tgid, ev->event_data.fork.child_pid,
                            ev->event_data.fork.child_tgid);
                break;
        case PROC_EVENT_EXEC:
                handle_exec(w, ev->event_data.exec.process_tgid);
                break;
        case PROC_EVENT_COMM:
                handle_comm(w, ev->event_data.comm.process_pid, ev->event_data.comm.process_tgid,
                            ev->event_data.comm.comm);
                break;
        case PROC_EVENT_EXIT:
                handle_exit(w, ev->event_data.exit.process_pid, ev->event_data.exit.process_tgid);
                break;
        default:
                break;
        }
        w->stats.event_timestamp_ns = 0;
}

static int on_pidfd(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Entry *e = userdata;

        entry_release(e, WATCHER_EXIT_EXITED);
        return 0;
}

/* ---- Reconcile and resync ---- */

static void device_check(Entry *e) {
        tune_attribution a;

        if (attribute(e, &a) < 0)
                return;
        if (!tune_attribution_equal(&a, &e->p.attribution)) {
                tune_attribution_done(&e->p.attribution);
                e->p.attribution = a;
                e->device_backoff_ms = 0;
                log_match(e, "changed");
                if (e->w->ops.on_process_changed)
                        e->w->ops.on_process_changed(e->w, &e->p, WATCHER_CHANGE_ACCELS, e->w->userdata);
        } else
                tune_attribution_done(&a);
}

/* Full check of one managed process. Returns false if it was released. */
static bool reconcile_entry(Entry *e, uint64_t now) {
        Watcher *w = e->w;
        char comm[TUNE_COMM_MAX];
        int r;

        if (!entry_alive(e)) {
                entry_release(e, WATCHER_EXIT_EXITED);
                return false;
        }
        r = threads_sync(e, true);
        if (r == -ESRCH) {
                entry_release(e, WATCHER_EXIT_EXITED);
                return false;
        }
        /* A retitle whose COMM event was lost. */
        if (tune_proc_read_comm(w->ctx, e->p.pid, 0, comm) >= 0 && !streq(comm, e->p.comm)) {
                tune_proc_stat st = { .pid = e->p.pid, .ppid = e->p.ppid, .start_time = e->p.start_time };
                evaluate(w, e, &st, comm, EVAL_COMM);
                if (registry_get(w->registry, st.pid) != e || !e->matched)
                        return false;
        }
        if (e->next_device_usec && e->next_device_usec <= now + 100 * 1000) {
                device_check(e);
                device_check_schedule(e, now);
        }
        e->next_reconcile_usec = now + (uint64_t) w->params.reconcile_interval_ms * 1000;
        if (w->ops.on_reconcile)
                w->ops.on_reconcile(w, &e->p, w->userdata);
        return true;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        _cleanup_free_ pid_t *pids = NULL;
        uint64_t now = now_usec(w), next = 0;
        /* Batch: whatever falls due within a tenth of the interval is done now. */
        uint64_t slack = (uint64_t) w->params.reconcile_interval_ms * 100;
        size_t n = 0;

        w->timer_due_usec = 0;
        if (registry_pids(w->registry, &pids, &n) < 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                Entry *e = registry_get(w->registry, pids[i]);
                if (!e || !e->matched)
                        continue;
                if (e->next_reconcile_usec <= now + slack) {
                        if (!reconcile_entry(e, now))
                                continue;
                } else if (e->next_device_usec && e->next_device_usec <= now + 100 * 1000) {
                        if (!entry_alive(e)) {
                                entry_release(e, WATCHER_EXIT_EXITED);
                                continue;
                        }
                        device_check(e);
                        device_check_schedule(e, now);
                }
                if (registry_get(w->registry, pids[i]) == e && e->matched && (next == 0 || entry_due(e) < next))
                        next = entry_due(e);
        }
        if (next)
                timer_schedule(w, next);
        else
                (void) sd_event_source_set_enabled(w->timer, SD_EVENT_OFF); /* idle: no wake-ups */
        return 0;
}

static void resync(Watcher *w) {
        _cleanup_free_ pid_t *pids = NULL, *known = NULL;
        size_t n = 0, n_known = 0;
        uint64_t now = now_usec(w);
        int r;

        w->stats.resyncs++;
        r = tune_proc_list_pids(w->ctx, &pids, &n);
        if (r < 0) {
                log_warning_errno(r, "Failed to list processes for a resync: %m");
                return;
        }
        /* Entries whose process is gone. */
        if (registry_pids(w->registry, &known, &n_known) >= 0)
                for (size_t i = 0; i < n_known; i++)
                        if (!bsearch(&known[i], pids, n, sizeof *pids, cmp_pid)) {
                                Entry *e = registry_get(w->registry, known[i]);
                                if (e)
                                        entry_release(e, WATCHER_EXIT_EXITED);
                        }
        for (size_t i = 0; i < n; i++) {
                Entry *e = registry_get(w->registry, pids[i]);
                tune_proc_stat st;

                if (!e && !have_rules(w))
                        continue;
                if (tune_proc_read_stat(w->ctx, pids[i], &st) < 0) {
                        if (e)
                                entry_release(e, WATCHER_EXIT_EXITED);
                        continue;
                }
                if (st.flags & TUNE_PF_KTHREAD)
                        continue;
                if (e && e->p.start_time != st.start_time) {
                        entry_release(e, WATCHER_EXIT_PID_REUSED);
                        e = NULL;
                }
                if (e && e->matched) {
                        (void) reconcile_entry(e, now);
                        continue;
                }
                if (e) {
                        if (!streq(e->p.comm, st.comm))
                                evaluate(w, e, &st, NULL, EVAL_SCAN);
                        continue;
                }
                /* A child of a known process inherits its parent's environment capture. */
                Entry *parent = st.ppid > 0 ? registry_get(w->registry, st.ppid) : NULL;
                if (parent) {
                        e = entry_new(w, st.pid, st.start_time, st.ppid);
                        if (e && parent->p.env.state == TUNE_ENV_READ &&
                            tune_env_capture_copy(&e->p.env, &parent->p.env) >= 0)
                                e->p.env.inherited = true;
                }
                evaluate(w, e, &st, NULL, EVAL_SCAN);
        }
}

static void on_lost(Connector *c, void *userdata) {
        Watcher *w = userdata;

        w->stats.overruns++;
        resync(w);
}

/* ---- Lifecycle ---- */

int watcher_new(sd_event *e, const tune_ctx *ctx, const tune_accels *accels, const tune_policy *policy,
                const watcher_params *params, const watcher_ops *ops, void *userdata, Watcher **ret) {
        static const tune_accels no_accels = {};
        _cleanup_(watcher_freep) Watcher *w = NULL;
        int r;

        w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        w->event = sd_event_ref(e);
        w->ctx = ctx;
        w->accels = accels ? accels : &no_accels;
        w->policy = policy;
        if (params)
                w->params = *params;
        if (w->params.reconcile_interval_ms == 0)
                w->params.reconcile_interval_ms = 10000;
        if (w->params.device_retry_ms == 0)
                w->params.device_retry_ms = 500;
        if (w->params.max_managed == 0)
                w->params.max_managed = 4096;
        if (ops)
                w->ops = *ops;
        w->userdata = userdata;
        r = registry_new(&w->registry);
        if (r < 0)
                return r;
        r = tune_attribution_env_names(policy, &w->env_names, &w->n_env_names);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

/* The device numbers of the accelerators' nodes, for the open-device-files source. */
static int read_accel_rdevs(Watcher *w) {
        free(w->accel_rdevs);
        w->accel_rdevs = NULL;
        if (w->accels->n == 0 || !tune_ctx_is_live(w->ctx))
                return 0;
        w->accel_rdevs = calloc(w->accels->n, sizeof *w->accel_rdevs);
        if (!w->accel_rdevs)
                return -ENOMEM;
        for (unsigned i = 0; i < w->accels->n; i++)
                if (w->accels->items[i].dev_path[0] &&
                    tune_read_rdev(w->ctx, w->accels->items[i].dev_path, &w->accel_rdevs[i]) < 0)
                        w->accel_rdevs[i] = 0;
        return 0;
}

static void raise_fd_limit(void) {
        struct rlimit rl;

        /* A pidfd per managed process. */
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_debug_errno(errno, "Failed to raise the open file limit: %m");
}

int watcher_start(Watcher *w) {
        const connector_callbacks cb = { .event = on_event, .lost = on_lost };
        const connector_params cp = {
                .rcvbuf_kib = w->params.rcvbuf_kib,
                .ack_timeout_ms = w->params.ack_timeout_ms,
        };
        connector_stats cs;
        int r;

        if (!tune_ctx_is_live(w->ctx))
                return log_error_errno(EOPNOTSUPP, "The process watcher needs the live root \"/\".");
        raise_fd_limit();
        r = read_accel_rdevs(w);
        if (r < 0)
                return log_oom();
        r = connector_new(w->event, &cp, &cb, w, &w->connector);
        if (r < 0)
                return log_oom();
        /* Subscribe first and only then scan: a process started in between is seen by
         * one or the other. */
        r = connector_subscribe(w->connector);
        if (r < 0)
                return r;
        resync(w);
        w->stats.resyncs = 0; /* the start-up scan is not a resync */
        connector_get_stats(w->connector, &cs);
        log_info("Watching processes: %u rule(s), %u managed after the initial scan, event filter %s, receive buffer %d KiB.",
                 w->policy ? w->policy->n_rules : 0, w->stats.managed, cs.filter ? "on" : "off", cs.rcvbuf / 1024);
        return 0;
}

int watcher_reload(Watcher *w, const tune_accels *accels, const tune_policy *policy) {
        static const tune_accels no_accels = {};
        _cleanup_free_ pid_t *pids = NULL;
        char **names = NULL;
        unsigned n_names = 0;
        size_t n = 0;
        int r;

        r = tune_attribution_env_names(policy, &names, &n_names);
        if (r < 0)
                return r;
        r = registry_pids(w->registry, &pids, &n);
        if (r < 0) {
                tune_strv_free(names);
                return r;
        }
        tune_strv_free(w->env_names);
        w->env_names = names;
        w->n_env_names = n_names;
        w->policy = policy;
        w->accels = accels ? accels : &no_accels;
        if (read_accel_rdevs(w) < 0)
                log_oom();
        for (size_t i = 0; i < n; i++) {
                Entry *e = registry_get(w->registry, pids[i]);
                char comm[TUNE_COMM_MAX];
                tune_proc_stat st;

                if (!e)
                        continue;
                if (!have_rules(w) || tune_proc_read_comm(w->ctx, e->p.pid, 0, comm) < 0) {
                        entry_release(e, have_rules(w) ? WATCHER_EXIT_EXITED : WATCHER_EXIT_UNMATCHED);
                        continue;
                }
                /* Still valid during this call (the caller frees the old policy after it):
                 * on_process_exit(UNMATCHED) sees the rule the process had. */
                st = (tune_proc_stat){ .pid = e->p.pid, .ppid = e->p.ppid, .start_time = e->p.start_time };
                evaluate(w, e, &st, comm, EVAL_SCAN);
        }
        if (w->connector)
                resync(w);
        log_info("Process rules reloaded: %u rule(s), %u process(es) managed.", policy ? policy->n_rules : 0,
                 w->stats.managed);
        return 0;
}

int watcher_evaluate_pid(Watcher *w, pid_t pid, managed_process **ret) {
        Entry *e = registry_get(w->registry, pid);
        tune_proc_stat st;

        if (!w->accel_rdevs && read_accel_rdevs(w) < 0)
                return -ENOMEM;
        if (tune_proc_read_stat(w->ctx, pid, &st) < 0)
                return -ESRCH;
        if (e && e->p.start_time != st.start_time) {
                entry_release(e, WATCHER_EXIT_PID_REUSED);
                e = NULL;
        }
        if (!e || !e->matched)
                evaluate(w, e, &st, NULL, EVAL_SCAN);
        e = registry_get(w->registry, pid);
        if (!e || !e->matched)
                return -ENOENT;
        *ret = &e->p;
        return 0;
}

void watcher_release_all(Watcher *w) {
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;

        if (!w || registry_pids(w->registry, &pids, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                Entry *e = registry_get(w->registry, pids[i]);
                if (e)
                        entry_release(e, WATCHER_EXIT_STOP);
        }
}

Watcher *watcher_free(Watcher *w) {
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;

        if (!w)
                return NULL;
        w->connector = connector_free(w->connector);
        if (w->registry && registry_pids(w->registry, &pids, &n) >= 0)
                for (size_t i = 0; i < n; i++)
                        entry_free(registry_get(w->registry, pids[i]));
        registry_free(w->registry);
        sd_event_source_disable_unref(w->timer);
        tune_strv_free(w->env_names);
        free(w->accel_rdevs);
        sd_event_unref(w->event);
        free(w);
        return NULL;
}

int watcher_check_process(Watcher *w, const managed_process *p) {
        Entry *e = registry_get(w->registry, p->pid);

        if (!e || &e->p != p || !e->matched)
                return 0;
        return entry_alive(e);
}

managed_process *watcher_find(Watcher *w, pid_t pid) {
        Entry *e = registry_get(w->registry, pid);

        /* No release here (the pidfd source does that): no callback from inside a
         * consumer's call. */
        return e && e->matched && entry_alive(e) ? &e->p : NULL;
}

void watcher_get_stats(const Watcher *w, watcher_stats *ret) {
        *ret = w->stats;
        if (w->connector) {
                connector_stats cs;
                connector_get_stats(w->connector, &cs);
                ret->filter = cs.filter;
                ret->rcvbuf = cs.rcvbuf;
        }
}
