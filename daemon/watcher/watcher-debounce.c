/* SPDX-License-Identifier: GPL-2.0-only */
/* Re-evaluation on rename, debounced per process (docs/trust.md, "Bounded work").
 *
 * Every rename of a main thread is a COMM event and a match against the rules (a command
 * line read, regexes). Any process may rename itself as often as it likes; a server
 * retitles once. So a candidate (an unmanaged process the watcher keeps: pid and start
 * time) is evaluated at once on a rename, and its renames within COMM_DEBOUNCE_USEC after
 * that are folded into one evaluation at the end of the window, with the name it has
 * then. Managed processes (at most max_managed, claims verified) are evaluated on every
 * rename, so that a retitle into another rule is seen at once. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "watcher-internal.h"

#define COMM_DEBOUNCE_USEC (100 * 1000ULL)
#define COMM_PENDING_MAX 4096u

static int on_debounce(sd_event_source *s, uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        uint64_t now = watcher_now_usec(w);
        unsigned n = w->n_comm_pending;

        /* Taken off the list first: an evaluation may add to it. */
        typeof(*w->comm_pending) *list = w->comm_pending;
        w->comm_pending = NULL;
        w->n_comm_pending = 0;
        for (unsigned i = 0; i < n; i++) {
                Entry *e = registry_get(w->registry, list[i].pid);
                char comm[TUNE_COMM_MAX];
                tune_proc_stat st;

                if (!e || e->p.start_time != list[i].start_time || !e->comm_pending)
                        continue;
                e->comm_pending = false;
                e->last_comm_eval_usec = now;
                if (tune_proc_read_stat(w->ctx, e->p.pid, &st) < 0 || !entry_same_process(e, &st) ||
                    tune_proc_read_comm(w->ctx, e->p.pid, 0, comm) < 0)
                        continue; /* gone: its exit (or pidfd) says so */
                if (streq(comm, e->p.comm))
                        continue;
                watcher_evaluate(w, e, &st, comm, EVAL_COMM);
        }
        free(list);
        return 0;
}

bool watcher_comm_debounce(Watcher *w, Entry *e) {
        uint64_t now = watcher_now_usec(w), due;
        int r;

        if (!e)
                return false; /* unknown: evaluated once, and an entry only if it may matter */
        if (e->last_comm_eval_usec == 0 || now >= e->last_comm_eval_usec + COMM_DEBOUNCE_USEC) {
                e->last_comm_eval_usec = now;
                return false;
        }
        w->stats.comm_coalesced++;
        if (e->comm_pending)
                return true;
        if (w->n_comm_pending >= COMM_PENDING_MAX)
                return false; /* too many at once: evaluate now rather than forget */
        typeof(*w->comm_pending) *a = realloc(w->comm_pending, (w->n_comm_pending + 1) * sizeof *a);
        if (!a)
                return false;
        w->comm_pending = a;
        a[w->n_comm_pending].pid = e->p.pid;
        a[w->n_comm_pending].start_time = e->p.start_time;
        w->n_comm_pending++;
        e->comm_pending = true;
        due = e->last_comm_eval_usec + COMM_DEBOUNCE_USEC;
        if (!w->comm_timer) {
                r = sd_event_add_time(w->event, &w->comm_timer, CLOCK_MONOTONIC, due, 10 * 1000, on_debounce, w);
                if (r < 0) {
                        e->comm_pending = false;
                        w->n_comm_pending--;
                        return false;
                }
                (void) sd_event_source_set_description(w->comm_timer, "watcher-comm-debounce");
        } else {
                uint64_t armed = 0;
                int enabled = SD_EVENT_OFF;
                (void) sd_event_source_get_enabled(w->comm_timer, &enabled);
                if (enabled == SD_EVENT_OFF || sd_event_source_get_time(w->comm_timer, &armed) < 0 || armed > due)
                        (void) sd_event_source_set_time(w->comm_timer, due);
                (void) sd_event_source_set_enabled(w->comm_timer, SD_EVENT_ONESHOT);
        }
        return true;
}
