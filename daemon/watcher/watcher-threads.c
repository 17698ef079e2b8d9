/* SPDX-License-Identifier: GPL-2.0-only */
/* The process watcher's thread list of a managed process, brought in line with
 * /proc/PID/task (at match time silently, at reconcile with callbacks). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "npu-tuned/thread-role.h"
#include "watcher-decide.h"
#include "watcher-internal.h"

bool entry_wants_thread_names(const Entry *e) {
        return e->w->params.all_thread_names || tune_rule_picks_threads_by_name(e->p.rule);
}

bool watcher_wants_thread_comm(const Watcher *w) {
        if (w->params.all_thread_names)
                return true;
        for (unsigned i = 0; w->policy && i < w->policy->n_rules; i++)
                if (tune_rule_picks_threads_by_name(&w->policy->rules[i]))
                        return true;
        return false;
}

managed_thread *entry_thread_add(Entry *e, pid_t tid, const char *comm) {
        managed_thread *nt;

        if (e->p.n_threads % 16 == 0) {
                nt = reallocarray(e->p.threads, e->p.n_threads + 16, sizeof *nt);
                if (!nt)
                        return NULL;
                e->p.threads = nt;
        }
        nt = &e->p.threads[e->p.n_threads++];
        *nt = (managed_thread){ .tid = tid };
        tune_copy_string(nt->comm, sizeof nt->comm, comm);
        return nt;
}

static void entry_thread_remove(Entry *e, managed_thread *t) {
        size_t i = (size_t) (t - e->p.threads);

        memmove(t, t + 1, (e->p.n_threads - i - 1) * sizeof *t);
        e->p.n_threads--;
}

void entry_emit_thread_exit(Entry *e, managed_thread *t) {
        Watcher *w = e->w;

        log_debug("thread_exit pid=%d tid=%d", (int) e->p.pid, (int) t->tid);
        if (w->ops.on_thread_exit)
                w->ops.on_thread_exit(w, &e->p, t, w->userdata);
        entry_thread_remove(e, t);
}

/* Bring p->threads in line with /proc/PID/task (watcher_thread_diff() says how). With
 * emit, report what changed. Returns -ESRCH if the process is gone. */
int entry_threads_sync(Entry *e, bool emit) {
        Watcher *w = e->w;
        _cleanup_free_ pid_t *tids = NULL;
        _cleanup_free_ watcher_thread_seen *seen = NULL;
        _cleanup_free_ watcher_thread_change *changes = NULL;
        size_t n = 0, n_changes = 0;
        int r;

        r = tune_proc_list_tasks(w->ctx, e->p.pid, &tids, &n);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        seen = calloc(n + 1, sizeof *seen);
        if (!seen)
                return -ENOMEM;
        bool names = entry_wants_thread_names(e);
        for (size_t i = 0; i < n; i++) {
                seen[i].tid = tids[i];
                if (names)
                        seen[i].readable = tune_proc_read_comm(w->ctx, e->p.pid, tids[i], seen[i].comm) >= 0;
                else {
                        /* Three system calls a thread saved: the name changes nothing. A
                         * known thread keeps the name its COMM events gave it. */
                        const managed_thread *t = managed_process_find_thread(&e->p, tids[i]);
                        seen[i].readable = true;
                        if (t)
                                memcpy(seen[i].comm, t->comm, sizeof seen[i].comm);
                        else if (tids[i] == e->p.pid)
                                memcpy(seen[i].comm, e->p.comm, sizeof seen[i].comm);
                }
        }
        r = watcher_thread_diff(e->p.threads, e->p.n_threads, seen, n, &changes, &n_changes);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_changes; i++) {
                const watcher_thread_change *c = &changes[i];
                managed_thread *t = managed_process_find_thread(&e->p, c->tid);
                char old[TUNE_COMM_MAX];

                switch (c->kind) {
                case WATCHER_THREAD_GONE:
                        if (t && emit)
                                entry_emit_thread_exit(e, t);
                        else if (t)
                                entry_thread_remove(e, t);
                        break;
                case WATCHER_THREAD_NEW:
                        t = entry_thread_add(e, c->tid, c->comm);
                        if (!t)
                                return -ENOMEM;
                        if (emit) {
                                log_debug("thread_new pid=%d tid=%d (reconcile)", (int) e->p.pid, (int) c->tid);
                                if (w->ops.on_thread_new)
                                        w->ops.on_thread_new(w, &e->p, t, w->userdata);
                        }
                        break;
                case WATCHER_THREAD_RENAMED:
                        if (!t)
                                break;
                        memcpy(old, t->comm, sizeof old);
                        memcpy(t->comm, c->comm, sizeof t->comm);
                        if (emit && w->ops.on_thread_renamed)
                                w->ops.on_thread_renamed(w, &e->p, t, old, w->userdata);
                        break;
                case WATCHER_THREAD_NONE:
                        break;
                }
        }
        return 0;
}
