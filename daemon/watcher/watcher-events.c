/* SPDX-License-Identifier: GPL-2.0-only */
/* The process watcher's event dispatch: what each proc connector event (fork, exec, comm,
 * exit) means for the processes it knows. */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "watcher-decide.h"
#include "watcher-internal.h"

/* The start of an event's handling, for the part of a reaction that is npu-tuned's own
 * (watcher_event_handling_ns()): taken only for the events a reaction can follow, so that
 * the host's other forks and exits pay nothing for it. */
static void mark_handling(Watcher *w) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        w->stats.event_handling_ns = (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void handle_exec(Watcher *w, pid_t pid) {
        Entry *e = registry_get(w->registry, pid);
        _cleanup_close_ int pidfd = -EBADF;
        tune_proc_facts f;
        tune_proc_stat st;
        bool retitle = false, matched;

        if (!watcher_have_rules(w))
                return; /* (an entry with no rules left does not outlive watcher_reload()) */
        mark_handling(w);
        /* The rules' own criteria first, cheapest fact first, before anything else is read:
         * almost every exec on a host fails here on its executable, with one readlink. */
        tune_proc_facts_init(&f, w->ctx, pid, NULL);
        /* A process the match keeps has its environment read next (watcher_evaluate_facts()):
         * with the command line, where the match asks for that, in one hand-off. */
        f.pair_if_kept = TUNE_FACT_ENVIRON;
        matched = tune_policy_match(w->policy, &f, &retitle) != NULL;
        if (!e && !matched && !retitle) {
                /* A read it gave up on (its map held, or the host too busy): no later
                 * event may come to look again. */
                if (f.gave_up && tune_proc_read_stat(w->ctx, pid, &st) >= 0)
                        watcher_queue_gave_up(w, pid, st.start_time);
                tune_proc_facts_done(&f);
                return;
        }
        /* A process a rule takes on gets a pidfd: opened before the stat is read, it is
         * verified by the process being alive after it (entry_manage()), where one opened
         * after would need the stat read again. */
        if (matched && (!e || !e->matched) && tune_ctx_is_live(w->ctx))
                pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (tune_proc_read_stat(w->ctx, pid, &st) < 0) {
                tune_proc_facts_done(&f);
                if (e)
                        entry_release(e, WATCHER_EXIT_EXITED);
                return;
        }
        if (e && !entry_same_process(e, &st)) {
                entry_release(e, WATCHER_EXIT_PID_REUSED);
                e = NULL;
        }
        /* comm was read from /proc/PID/comm if a rule asked for it; otherwise stat's. */
        watcher_evaluate_facts(w, e, &st, &f, &pidfd, EVAL_EXEC);
}

static void handle_fork(Watcher *w, pid_t parent_tgid, pid_t child_pid, pid_t child_tgid) {
        if (child_pid != child_tgid) {
                /* A new thread. */
                Entry *e = watcher_lookup_managed_event(w, child_tgid);
                char comm[TUNE_COMM_MAX];
                managed_thread *t;

                if (!e || managed_process_find_thread(&e->p, child_pid))
                        return;
                mark_handling(w);
                if (!entry_wants_thread_names(e))
                        comm[0] = 0; /* unread: unwanted (a COMM event names it if some rule wants names) */
                else if (tune_proc_read_comm(w->ctx, child_tgid, child_pid, comm) < 0)
                        return; /* already gone */
                t = entry_thread_add(e, child_pid, comm);
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
        /* The FORK proves that a process has the pid now; that it is the entry's, the
         * pidfd of a managed one tells. For a candidate, if no event was lost since its
         * start time was read, so does the stream: had that process exited, its EXIT
         * (queued before this FORK) would have released the entry. Otherwise its stat
         * is read again. */
        bool vouched = !parent->matched && parent->overruns_at_start == w->stats.overruns;
        if (!vouched && !entry_alive(parent)) {
                /* A stale entry whose pid another process now has. */
                entry_release(parent, WATCHER_EXIT_EXITED);
                return;
        }
        old = registry_get(w->registry, child_pid);
        if (old) {
                if (tune_proc_read_stat(w->ctx, child_pid, &st) < 0)
                        return;
                if (entry_same_process(old, &st))
                        /* Known already: a resync after an overrun found it, and this FORK
                         * event was queued before it. Releasing it would drop a live,
                         * managed process whose EXEC event may be one of those lost. */
                        return;
                entry_release(old, WATCHER_EXIT_PID_REUSED);
        }
        /* A candidate's child is worth keeping only for an environment to inherit: without
         * one, a process that forks thousands of children would make thousands of
         * candidates out of nothing. */
        if (!parent->matched && !tune_env_capture_usable(&parent->p.env))
                return;
        /* Its stat is not read now: most children exec at once, and a read while the exec
         * runs waits for it and costs several times an ordinary one (and delays the EXEC
         * event behind it); the EXEC reads the stat anyway. Until something reads it, the
         * stream vouches for the pid (entry_same_process()); a child that exits first
         * costs no read at all. Its name is its parent's, as the kernel copies it. */
        e = entry_new(w, child_pid, 0, parent_tgid, parent->budget_uid, false, false);
        if (!e)
                return;
        e->start_pending = true;
        e->fork_timestamp_ns = w->stats.event_timestamp_ns;
        memcpy(e->p.comm, parent->p.comm, sizeof e->p.comm);
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

                e = watcher_lookup_managed_event(w, tgid);
                if (!e)
                        return;
                mark_handling(w);
                t = managed_process_find_thread(&e->p, pid);
                switch (watcher_thread_comm_change(t, comm)) {
                case WATCHER_THREAD_NEW:
                        /* A thread whose FORK we did not see (it predates the match). */
                        t = entry_thread_add(e, pid, comm);
                        if (t && w->ops.on_thread_new)
                                w->ops.on_thread_new(w, &e->p, t, w->userdata);
                        break;
                case WATCHER_THREAD_RENAMED: {
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
                        break;
                }
                default:
                        break;
                }
                if (pid != tgid || streq(e->p.comm, comm))
                        return;
                st = (tune_proc_stat){ .pid = tgid, .ppid = e->p.ppid, .start_time = e->p.start_time };
                watcher_evaluate(w, e, &st, comm, EVAL_COMM);
                return;
        }
        if (pid != tgid || (!e && !watcher_have_rules(w)))
                return; /* a thread of an unmanaged process: not ours */
        /* The main thread of a candidate or unknown process retitled itself: a match may
         * follow. */
        mark_handling(w);
        if (tune_proc_read_stat(w->ctx, tgid, &st) < 0) {
                if (e)
                        entry_release(e, WATCHER_EXIT_EXITED);
                return;
        }
        if (st.flags & TUNE_PF_KTHREAD)
                return;
        if (e && !entry_same_process(e, &st)) {
                entry_release(e, WATCHER_EXIT_PID_REUSED);
                e = NULL;
        }
        if (watcher_comm_debounce(w, e))
                return;
        watcher_evaluate(w, e, &st, comm, EVAL_COMM);
}

static void handle_exit(Watcher *w, pid_t pid, pid_t tgid) {
        Entry *e = registry_get(w->registry, tgid);

        if (!e)
                return;
        if (pid != tgid) {
                managed_thread *t = e->matched ? managed_process_find_thread(&e->p, pid) : NULL;
                if (t)
                        entry_emit_thread_exit(e, t);
                return;
        }
        if (e->matched && e->p.pidfd >= 0 && entry_alive(e)) {
                /* The main thread left but others run on (or the exit is not complete
                 * yet): the pidfd tells when the process is really gone, and no later
                 * event speaks for it (watcher_lookup_managed_event()). */
                managed_thread *t = managed_process_find_thread(&e->p, pid);

                e->leader_exited = true;
                entry_watch_pidfd(e);
                if (t)
                        entry_emit_thread_exit(e, t);
                return;
        }
        entry_release(e, WATCHER_EXIT_EXITED);
}

void watcher_on_event(Connector *c, const struct proc_event *ev, void *userdata) {
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
        w->stats.event_handling_ns = 0;
}
