/* SPDX-License-Identifier: GPL-2.0-only */
/* The process watcher's matching: a process against the policy's rules, its environment
 * captured at exec, its accelerators attributed, and on re-evaluation what changed. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "watcher-decide.h"
#include "watcher-internal.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* Here, with the matches that first need it, and not with the timer's handler
 * (watcher-reconcile.c, which made the timer): setting a time calls nothing up. */
void watcher_timer_schedule(Watcher *w, uint64_t due) {
        if (due == 0 || !w->timer || (w->timer_due_usec != 0 && w->timer_due_usec <= due))
                return;
        (void) sd_event_source_set_time(w->timer, due);
        (void) sd_event_source_set_enabled(w->timer, SD_EVENT_ONESHOT);
        w->timer_due_usec = due;
}

void entry_device_check_schedule(Entry *e, uint64_t now) {
        Watcher *w = e->w;

        if (!e->matched || !watcher_device_retry_wanted(e->p.rule, &e->p.attribution) || !tune_ctx_is_live(w->ctx) ||
            w->accels->n == 0) {
                e->next_device_usec = 0;
                return;
        }
        e->next_device_usec = now + (uint64_t) watcher_device_retry_next(&e->device_backoff_ms, w->params.device_retry_ms,
                                                                         w->params.reconcile_interval_ms) * 1000;
        watcher_timer_schedule(w, e->next_device_usec);
}

static int entry_attribute(Entry *e, tune_attribution *ret) {
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
                .driver = watcher_driver_answer(w, e->p.start_time),
                .pid = e->p.pid,
        };
        int r;

        if (e->p.rule->accel_mode == TUNE_ACCEL_AUTO && w->accel_rdevs && w->accels->n > 0 &&
            tune_proc_list_char_devices(w->ctx, e->p.pid, &devs, &n_devs) >= 0) {
                in.open_devices = devs;
                in.n_open_devices = n_devs;
        }
        r = tune_attribute(&in, ret);
        /* The driver named its devices once: an answer of a later query that does not (it
         * paused, the query failed) takes nothing back. */
        if (r >= 0 && ret->source == TUNE_ATTRIBUTION_NONE && e->p.attribution.source == TUNE_ATTRIBUTION_DRIVER &&
            e->p.rule->accel_mode == TUNE_ACCEL_AUTO) {
                tune_attribution_done(ret);
                r = tune_attribution_copy(ret, &e->p.attribution);
        }
        return r;
}

static void entry_log_match(Entry *e, const char *what) {
        _cleanup_free_ char *accels = NULL;
        char comm[4 * TUNE_COMM_MAX + 4], rule[128];

        if (e->p.attribution.rank_refused && streq(what, "matched")) {
                char c[4 * TUNE_COMM_MAX + 4];
                tune_escape(e->p.comm, c, sizeof c);
                log_notice("Process %d (%s): rank %d not taken as a device index: its visible-devices list is unknown "
                           "(environment %s, no launcher's environment to stand in); unattributed until it opens a "
                           "device file.",
                           (int) e->p.pid, c, e->p.rank, tune_env_state_to_string(e->p.env.state));
        }
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
 * and not wiped replaces an inherited one; otherwise an inherited capture is kept, and
 * a process found running (not at its exec) without one looks up its parent chain.
 * at_exec: through the match's facts f, which may hold it already (read with the command
 * line, tune_proc_facts.pair_if_kept) or read it with the command line now. */
static void entry_capture_env(Entry *e, bool at_exec, tune_proc_facts *f) {
        Watcher *w = e->w;
        _cleanup_free_ char *raw = NULL;
        tune_env_capture own = {}, ancestor = {};
        size_t len = 0;
        bool truncated = false;
        int r;

        /* At its exec the environment is the one the program was given: read whole. Later
         * (a scan, a rename) any process may ask, so it is charged to its user's budget. */
        if (at_exec) {
                r = tune_proc_facts_get(f, TUNE_FACT_ENVIRON) ? 0 : -EIO;
                if (r >= 0) {
                        raw = TAKE_PTR(f->environ);
                        len = f->environ_len;
                        truncated = f->environ_truncated;
                        f->loaded &= ~(unsigned) TUNE_FACT_ENVIRON;
                }
        } else
                r = watcher_read_environ_budgeted(w, e->budget_uid, e->p.pid, &raw, &len, &truncated);
        if (r == -EDQUOT) {
                /* Its user's reads of the second are spent: keep what it had, look again later. */
                if (e->p.env.state != TUNE_ENV_NOT_READ)
                        return;
                own.state = TUNE_ENV_UNREADABLE;
                e->p.env = own;
                return;
        }
        if (r < 0)
                own.state = TUNE_ENV_UNREADABLE;
        else if (tune_env_capture_parse_indexed(raw, len, truncated, (const char *const *) w->env_names,
                                                w->n_env_names, &w->env_index, &own) < 0)
                own.state = TUNE_ENV_UNREADABLE;
        own.from_pid = e->p.pid;
        /* Found running without a usable environment of its own: what a daemon before a
         * restart captured for it at its exec comes first (also before what a scan copied
         * from its parent's entry), then its relatives'. */
        if (!at_exec && !tune_env_capture_usable(&own) && !e->p.env.restored &&
            watcher_remembered_env(w, e->p.pid, e->p.start_time, &ancestor)) {
                tune_env_capture_done(&own);
                tune_env_capture_done(&e->p.env);
                e->p.env = ancestor;
                return;
        }
        if (!tune_env_capture_usable(&own) && e->p.env.inherited && tune_env_capture_usable(&e->p.env)) {
                tune_env_capture_done(&own);
                return;
        }
        tune_env_capture_done(&e->p.env);
        if (!at_exec && !tune_env_capture_usable(&own) &&
            watcher_ancestor_env(w, e, own.state == TUNE_ENV_WIPED && !own.truncated ? own.len : 0, &ancestor)) {
                tune_env_capture_done(&own);
                own = ancestor;
        }
        e->p.env = own;
}

/* Take the facts a consumer sees from a match. */
static void entry_take_facts(Entry *e, tune_proc_facts *f) {
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
        free(e->p.status);
        e->p.status = TAKE_PTR(f->status);
        f->loaded &= ~(unsigned) (TUNE_FACT_EXE | TUNE_FACT_CMDLINE);
}

/* Become managed: pidfd (verified against the start time), threads, then the callback.
 * pidfd: as watcher_evaluate_facts() takes it; at_exec: matched at its EXEC event, and
 * exec_st the stat handle_exec() read from /proc for it in this event's handling. */
static int entry_manage(Entry *e, const tune_proc_stat *exec_st, int *pidfd, bool at_exec) {
        Watcher *w = e->w;
        tune_proc_stat st;
        uint64_t now = watcher_now_usec(w);
        int fd, r, pidfd_errno = 0;

        if (w->stats.managed >= w->params.max_managed && !watcher_budget_vouched(e->p.rule, e->p.uid)) {
                w->stats.skipped_full++;
                if (!w->warned_full)
                        log_warning("Already managing %u processes (max_managed_processes), not managing more.",
                                    w->stats.managed);
                w->warned_full = true;
                return -ENOSPC;
        }
        if (pidfd && *pidfd >= 0) {
                /* Opened before the stat that gave e its start time (handle_exec()): if
                 * the process it names is alive now, it held the pid all along, so that
                 * stat was its. */
                fd = TAKE_FD(*pidfd);
                r = tune_pidfd_exited(fd);
                if (r < 0) /* cannot tell: the start time can */
                        r = tune_proc_read_stat(w->ctx, e->p.pid, &st) < 0 || !entry_same_process(e, &st);
                if (r != 0) {
                        close(fd);
                        return -ESRCH;
                }
        } else {
                /* Below a test root the pid is not a real process's: no pidfd, start times only. */
                fd = tune_ctx_is_live(w->ctx) ? (int) syscall(SYS_pidfd_open, e->p.pid, 0) : -EBADF;
                /* Kept now: the reads below overwrite errno, and the log said "Success". */
                pidfd_errno = fd < 0 ? errno : 0;
                /* The pidfd names whatever had this pid when it was opened: only if the start
                 * time still matches now is it our process (a live process keeps its pid).
                 * Without one (a kernel before 5.3 has no pidfd_open) there is nothing to
                 * verify but the start time, which at an exec was read in this event's
                 * handling already: not read again. */
                if (fd < 0 && at_exec) {
                        st = *exec_st;
                        r = 0;
                } else
                        r = tune_proc_read_stat(w->ctx, e->p.pid, &st);
                if (r < 0 || !entry_same_process(e, &st)) {
                        if (fd >= 0)
                                close(fd);
                        return -ESRCH;
                }
        }
        if (fd < 0 && tune_ctx_is_live(w->ctx))
                log_debug_errno(pidfd_errno, "pidfd_open(%d) failed, checking start times instead: %m", (int) e->p.pid);
        else {
                e->p.pidfd = fd;
                /* Matched at its exec, its main thread is the one that exec'd: its EXIT event
                 * comes when it exits, and the pidfd is watched only if others run on then
                 * (handle_exit()); found otherwise, its main thread may have left already. */
                if (!at_exec)
                        entry_watch_pidfd(e);
        }
        /* At its exec a process has one thread, the main one (the kernel ends the others
         * before the exec completes), and each thread it starts after has a FORK event
         * queued behind this EXEC: a listing of /proc/PID/task would add nothing. A FORK
         * lost after it is an overrun, whose resync lists every managed process's threads. */
        if (at_exec) {
                entry_clear_threads(e);
                r = entry_thread_add(e, e->p.pid, e->p.comm) ? 0 : -ENOMEM;
        } else
                r = entry_threads_sync(e, false);
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
        watcher_timer_schedule(w, e->next_reconcile_usec);
        entry_device_check_schedule(e, now);
        entry_log_match(e, "matched");
        if (w->ops.on_process_matched)
                w->ops.on_process_matched(w, &e->p, w->userdata);
        return 0;
}

/* The matches refused for a full table, evaluated again once room frees up: enabled by
 * watcher_budget_room_freed(), which picks no process itself. Here, beside the evaluation,
 * so that the budget never calls up into it. */
static int on_retry(sd_event_source *s, void *userdata) {
        Watcher *w = userdata;
        unsigned done = 0;
        tune_proc_stat st;
        Entry *e;

        while (watcher_budget_refused_next(w, &done, &st, &e)) {
                w->stats.retried++;
                watcher_evaluate(w, e, &st, NULL, EVAL_SCAN);
        }
        watcher_budget_refused_done(w, done);
        return 0;
}

/* A match refused for a full table: queued, and the source that retries it made, off
 * until a managed process goes. */
static void entry_queue_refused(Entry *e) {
        Watcher *w = e->w;

        watcher_budget_queue_refused(w, e->p.pid, e->p.start_time);
        if (w->retry_source || !w->event)
                return;
        if (sd_event_add_defer(w->event, &w->retry_source, on_retry, w) < 0)
                return;
        (void) sd_event_source_set_enabled(w->retry_source, SD_EVENT_OFF); /* a defer source starts on */
        (void) sd_event_source_set_description(w->retry_source, "watcher-retry-refused");
}

/* Matches that gave up on a read (the slow reader's deadline: the process's memory map was
 * held, by its owner or by an exec under a heavy load) and so matched nothing: evaluated
 * again once the process's back-off is over, as no event may come again to say so (a
 * process caught by a resync in the middle of its exec had its EXEC event already). Oldest
 * first, bounded (WATCHER_GAVE_UP_MAX): a user who holds the maps of many processes makes
 * the oldest forgotten, and each costs one more guarded read per back-off. The forgotten
 * are counted, and the reconcile timer's handler has a walk of /proc look for them
 * (watcher-reconcile.c). */

/* The timer at the earliest due time of the queue (their times differ: the waits double). */
static void gave_up_timer_arm(Watcher *w) {
        uint64_t first = UINT64_MAX;

        for (unsigned i = 0; i < w->n_gave_up; i++)
                if (w->gave_up[i].due < first)
                        first = w->gave_up[i].due;
        if (first == UINT64_MAX || !w->gave_up_timer)
                return;
        (void) sd_event_source_set_time(w->gave_up_timer, first);
        (void) sd_event_source_set_enabled(w->gave_up_timer, SD_EVENT_ONESHOT);
}

static int on_gave_up_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        uint64_t now = watcher_now_usec(w);
        unsigned n = 0, kept = 0;

        /* Taken off the list first: an evaluation may queue again. */
        typeof(*w->gave_up) *due = malloc(WATCHER_GAVE_UP_MAX * sizeof *due);
        for (unsigned i = 0; i < w->n_gave_up; i++)
                if (due && w->gave_up[i].due <= now)
                        due[n++] = w->gave_up[i];
                else
                        w->gave_up[kept++] = w->gave_up[i];
        w->n_gave_up = kept;
        for (unsigned i = 0; i < n; i++) {
                Entry *e = registry_get(w->registry, due[i].pid);
                tune_proc_stat st;

                if (tune_proc_read_stat(w->ctx, due[i].pid, &st) < 0 || st.start_time != due[i].start_time)
                        continue; /* gone */
                if (e && (e->matched || !entry_same_process(e, &st)))
                        continue;
                w->stats.retried++;
                w->gave_up_attempt = due[i].attempt;
                watcher_evaluate(w, e, &st, NULL, EVAL_SCAN);
                w->gave_up_attempt = 0;
        }
        free(due);
        gave_up_timer_arm(w);
        return 0;
}

void watcher_queue_gave_up(Watcher *w, pid_t pid, uint64_t start_time) {
        /* Each time it gives up again, twice as long (the slow reader backs a process off
         * for 1 s, then 30 s), up to 32 times the first wait. */
        unsigned attempt = w->gave_up_attempt + 1;
        uint64_t due = watcher_now_usec(w) +
                       ((uint64_t) w->params.gave_up_retry_ms * 1000 << (attempt < 6 ? attempt - 1 : 5));

        for (unsigned i = 0; i < w->n_gave_up; i++)
                if (w->gave_up[i].pid == pid && w->gave_up[i].start_time == start_time)
                        return;
        if (!w->gave_up) {
                w->gave_up = calloc(WATCHER_GAVE_UP_MAX, sizeof *w->gave_up);
                if (!w->gave_up)
                        return;
        }
        if (w->n_gave_up == WATCHER_GAVE_UP_MAX) { /* full: the oldest goes, and a resync looks for it */
                memmove(w->gave_up, w->gave_up + 1, --w->n_gave_up * sizeof *w->gave_up);
                w->gave_up_dropped++;
                watcher_timer_schedule(w, watcher_now_usec(w));
        }
        w->gave_up[w->n_gave_up++] = (typeof(*w->gave_up)) { .pid = pid, .start_time = start_time, .due = due,
                                                             .attempt = attempt };
        if (!w->event)
                return;
        if (!w->gave_up_timer) {
                if (sd_event_add_time(w->event, &w->gave_up_timer, CLOCK_MONOTONIC, due, 100 * 1000, on_gave_up_timer,
                                      w) < 0)
                        return;
                (void) sd_event_source_set_description(w->gave_up_timer, "watcher-retry-gave-up");
        }
        gave_up_timer_arm(w);
}

/* watcher_evaluate() with the facts of st->pid already (partly) loaded, as an exec's
 * first look left them; takes *facts over. */
void watcher_evaluate_facts(Watcher *w, Entry *e, const tune_proc_stat *st, tune_proc_facts *facts, int *pidfd,
                            eval_why why) {
        tune_proc_facts f = *facts;
        const tune_policy_rule *rule;
        watcher_match_action action;
        bool retitle = false;
        int rank;

        *facts = (tune_proc_facts){};
        if (e && e->released) {
                if (why != EVAL_EXEC) {
                        tune_proc_facts_done(&f);
                        return;
                }
                e->released = false; /* another program now: the policy decides again */
        }
        if (!(f.loaded & TUNE_FACT_COMM)) {
                memcpy(f.comm, st->comm, sizeof f.comm);
                f.loaded |= TUNE_FACT_COMM;
        }
        rule = tune_policy_match(w->policy, &f, &retitle);
        action = watcher_match_decide(rule != NULL, retitle, e != NULL, e && e->matched);
        if (!rule && f.gave_up && !(e && e->matched))
                watcher_queue_gave_up(w, st->pid, st->start_time);
        if (action == WATCHER_MATCH_IGNORE) {
                /* Unmatched and no reason to watch it: forgotten. */
                tune_proc_facts_done(&f);
                return;
        }
        if (!e) {
                uid_t uid = tune_proc_facts_get(&f, TUNE_FACT_UID) ? f.uid : (uid_t) -1;
                e = entry_new(w, st->pid, st->start_time, st->ppid, uid, action == WATCHER_MATCH_MANAGE,
                              action == WATCHER_MATCH_MANAGE && watcher_budget_vouched(rule, uid));
                if (!e) {
                        tune_proc_facts_done(&f);
                        return;
                }
        }
        /* The environment: at exec it is still the one the program was started with. A
         * process found later (scan, rename) gets what is there now, or its ancestor's. */
        if (why == EVAL_EXEC || e->p.env.state == TUNE_ENV_NOT_READ || e->p.env.inherited) {
                /* One hand-off for both where a match still wants the command line. */
                if (action == WATCHER_MATCH_MANAGE || action == WATCHER_MATCH_REEVALUATE)
                        f.pair_if_kept |= TUNE_FACT_CMDLINE;
                entry_capture_env(e, why == EVAL_EXEC, &f);
        }
        e->p.env_start = st->env_start;
        e->p.env_end = st->env_end;
        memcpy(e->p.comm, f.comm, sizeof e->p.comm);

        if (action == WATCHER_MATCH_UNMATCH || action == WATCHER_MATCH_CANDIDATE) {
                if (action == WATCHER_MATCH_UNMATCH)
                        entry_unmatch(e, WATCHER_EXIT_UNMATCHED);
                tune_proc_facts_done(&f);
                return;
        }

        rank = tune_rule_rank(rule, &f, &e->p.env);
        entry_take_facts(e, &f);
        tune_proc_facts_done(&f);

        if (action == WATCHER_MATCH_MANAGE) {
                tune_attribution a;
                e->p.rule = rule;
                e->p.rank = rank >= 0 ? rank : -1;
                if (entry_attribute(e, &a) < 0)
                        a = (tune_attribution){ .rank = e->p.rank };
                tune_attribution_done(&e->p.attribution);
                e->p.attribution = a;
                int r = entry_manage(e, st, pidfd, why == EVAL_EXEC);
                entry_drop_status(e);
                if (r == -ENOSPC)
                        entry_queue_refused(e);
                if (r < 0) {
                        e->p.rule = NULL;
                        /* Gone, or no room: keep it only if it may be worth it later. */
                        if (r == -ESRCH || (!retitle && !registry_get(w->registry, e->p.ppid)))
                                entry_free(e);
                }
                return;
        }

        /* Already managed: what changed? The attribution is worked out with the new rule
         * and rank. */
        const tune_policy_rule *old_rule = e->p.rule;
        const int old_rank = e->p.rank;
        unsigned changes;
        tune_attribution a;
        bool attributed;

        e->p.rule = rule;
        e->p.rank = rank >= 0 ? rank : -1;
        attributed = entry_attribute(e, &a) >= 0;
        changes = watcher_changes(old_rule, old_rank, &e->p.attribution, rule, rank, attributed ? &a : NULL,
                                  why == EVAL_EXEC);
        if (attributed) {
                tune_attribution_done(&e->p.attribution);
                e->p.attribution = a;
        }
        if (why == EVAL_EXEC && entry_threads_sync(e, true) == -ESRCH) {
                entry_release(e, WATCHER_EXIT_EXITED);
                return;
        }
        entry_device_check_schedule(e, watcher_now_usec(w));
        if (changes) {
                entry_log_match(e, "changed");
                if (w->ops.on_process_changed)
                        w->ops.on_process_changed(w, &e->p, changes, w->userdata);
        }
        entry_drop_status(e);
}

void entry_device_check(Entry *e) {
        tune_attribution a;

        if (entry_attribute(e, &a) < 0)
                return;
        /* Still none: the driver may know (at most one query per interval, off the loop). */
        if (watcher_device_retry_wanted(e->p.rule, &a))
                watcher_driver_request(e->w);
        if (!tune_attribution_equal(&a, &e->p.attribution)) {
                tune_attribution_done(&e->p.attribution);
                e->p.attribution = a;
                e->device_backoff_ms = 0;
                entry_log_match(e, "changed");
                if (e->w->ops.on_process_changed)
                        e->w->ops.on_process_changed(e->w, &e->p, WATCHER_CHANGE_ACCELS, e->w->userdata);
        } else
                tune_attribution_done(&a);
}

/* Match pid (whose stat was just read) and act on the result. e: its entry, if any
 * (candidate or managed, same start time). */
void watcher_evaluate(Watcher *w, Entry *e, const tune_proc_stat *st, const char *comm, eval_why why) {
        tune_proc_facts f;

        if (!watcher_have_rules(w))
                return;
        tune_proc_facts_init(&f, w->ctx, st->pid, comm ? comm : st->comm);
        watcher_evaluate_facts(w, e, st, &f, NULL, why);
}
