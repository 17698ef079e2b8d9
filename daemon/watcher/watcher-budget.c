/* SPDX-License-Identifier: GPL-2.0-only */
/* The watcher's budgets (docs/trust.md, "Bounded work"): how many entries (candidates and
 * managed processes) each user may have (root's matches aside), and room for a real match.
 *
 * Without them, one user's program that forks a few thousand sleepers (each a candidate:
 * it might retitle into a worker) filled the whole table and a real worker that started
 * afterwards was never managed. Now a user's entries are capped (max_managed / 8, at
 * least 64), a candidate's children are kept only when the parent is managed or carries
 * an environment worth inheriting, and a process that a rule really matches evicts a mere
 * candidate (of the user with the most entries) when the table is full, and a match
 * refused because max_managed processes are managed is tried again when one goes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "watcher-internal.h"

#define PER_UID_MIN 64u

unsigned watcher_budget_per_uid(const Watcher *w) {
        unsigned n = w->params.max_managed / 8;
        return n < PER_UID_MIN ? PER_UID_MIN : n;
}

bool watcher_budget_vouched(const tune_policy_rule *rule, uid_t uid) {
        return uid == 0 || (rule && (rule->n_match_uids > 0 || rule->match_cgroup));
}

static watcher_uid_count *find(Watcher *w, uid_t uid) {
        for (unsigned i = 0; i < w->n_uid_counts; i++)
                if (w->uid_counts[i].uid == uid)
                        return &w->uid_counts[i];
        return NULL;
}

unsigned watcher_budget_count(Watcher *w, uid_t uid) {
        const watcher_uid_count *c = find(w, uid);
        return c ? c->entries : 0;
}

int watcher_budget_add(Watcher *w, uid_t uid) {
        watcher_uid_count *c = find(w, uid);

        if (!c) {
                watcher_uid_count *a = realloc(w->uid_counts, (w->n_uid_counts + 1) * sizeof *a);
                if (!a)
                        return -ENOMEM;
                w->uid_counts = a;
                c = &w->uid_counts[w->n_uid_counts++];
                *c = (watcher_uid_count) { .uid = uid };
        }
        c->entries++;
        return 0;
}

void watcher_budget_remove(Watcher *w, uid_t uid) {
        watcher_uid_count *c = find(w, uid);

        if (!c || c->entries == 0)
                return;
        if (--c->entries == 0)
                *c = w->uid_counts[--w->n_uid_counts]; /* users come and go: keep it small */
}

#define WATCHER_REFUSED_MAX 256u

void watcher_budget_queue_refused(Watcher *w, pid_t pid, uint64_t start_time) {
        for (unsigned i = 0; i < w->n_refused; i++)
                if (w->refused[i].pid == pid && w->refused[i].start_time == start_time)
                        return;
        if (!w->refused) {
                w->refused = calloc(WATCHER_REFUSED_MAX, sizeof *w->refused);
                if (!w->refused)
                        return;
        }
        if (w->n_refused == WATCHER_REFUSED_MAX) {
                memmove(w->refused, w->refused + 1, (WATCHER_REFUSED_MAX - 1) * sizeof *w->refused);
                w->n_refused--;
        }
        w->refused[w->n_refused].pid = pid;
        w->refused[w->n_refused].start_time = start_time;
        w->n_refused++;
}

bool watcher_budget_refused_next(Watcher *w, unsigned *done, tune_proc_stat *ret, Entry **ret_entry) {
        while (*done < w->n_refused && w->stats.managed < w->params.max_managed) {
                pid_t pid = w->refused[*done].pid;
                uint64_t start_time = w->refused[*done].start_time;
                Entry *e;

                (*done)++;
                if (tune_proc_read_stat(w->ctx, pid, ret) < 0 || ret->start_time != start_time)
                        continue; /* gone */
                e = registry_get(w->registry, pid);
                if (e && (e->matched || e->p.start_time != start_time))
                        continue;
                *ret_entry = e;
                return true;
        }
        return false;
}

void watcher_budget_refused_done(Watcher *w, unsigned done) {
        memmove(w->refused, w->refused + done, (w->n_refused - done) * sizeof *w->refused);
        w->n_refused -= done;
}

/* Deferred to the retry source: never from inside the release that made the room (a
 * consumer callback may be running). watcher-match.c made the source with the first
 * refused match, and its handler evaluates them: the budget only says when and which. */
void watcher_budget_room_freed(Watcher *w) {
        if (w->n_refused == 0 || !w->retry_source)
                return;
        (void) sd_event_source_set_enabled(w->retry_source, SD_EVENT_ONESHOT);
}

/* The mere candidate to free for a match: of_uid's, or (NULL) preferably one of the user
 * with the most entries. -ENOSPC when there is none (every such entry is managed).
 * O(entries): only when a table or a share is full and a rule matched. Only picked here:
 * entry_new() frees it, as the budget counts entries and never frees one itself. */
int watcher_budget_victim(Watcher *w, const uid_t *of_uid, Entry **ret) {
        _cleanup_free_ pid_t *pids = NULL;
        uid_t from = of_uid ? *of_uid : 0; /* whose candidate: of_uid's, else the heaviest user's */
        unsigned most = 0;
        size_t n = 0;

        for (unsigned i = 0; i < w->n_uid_counts && !of_uid; i++)
                if (w->uid_counts[i].entries > most) {
                        most = w->uid_counts[i].entries;
                        from = w->uid_counts[i].uid;
                }
        if (registry_pids(w->registry, &pids, &n) < 0)
                return -ENOMEM;
        for (int pass = 0; pass < (of_uid ? 1 : 2); pass++)
                for (size_t i = 0; i < n; i++) {
                        Entry *e = registry_get(w->registry, pids[i]);
                        if (e && !e->matched && (pass == 1 || e->budget_uid == from)) {
                                *ret = e;
                                return 0;
                        }
                }
        return -ENOSPC;
}

/* At most one warning a minute: a user who keeps starting processes must not flood the
 * journal either. */
#define REFUSED_WARN_GAP_USEC (60 * 1000 * 1000ULL)

void watcher_budget_warn_refused(Watcher *w, uid_t uid, pid_t pid) {
        uint64_t now = watcher_now_usec(w);

        if (w->budget_warned_usec != 0 && now < w->budget_warned_usec + REFUSED_WARN_GAP_USEC)
                return;
        w->budget_warned_usec = now;
        log_warning("User %u already has %u processes managed or watched, its share (max_managed_processes / 8): "
                    "pid %d is not managed (skipped_budget counts these).",
                    (unsigned) uid, watcher_budget_count(w, uid), (int) pid);
}
