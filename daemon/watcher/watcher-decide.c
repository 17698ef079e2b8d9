/* SPDX-License-Identifier: GPL-2.0-only */
/* The process watcher's decisions (see watcher-decide.h). No I/O here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "watcher-decide.h"

watcher_thread_change_kind watcher_thread_comm_change(const managed_thread *t, const char *comm) {
        if (!t)
                return WATCHER_THREAD_NEW;
        return streq(t->comm, comm) ? WATCHER_THREAD_NONE : WATCHER_THREAD_RENAMED;
}

static int cmp_seen(const void *key, const void *elem) {
        pid_t tid = *(const pid_t *) key, other = ((const watcher_thread_seen *) elem)->tid;
        return tid < other ? -1 : tid > other;
}

static const managed_thread *find_known(const managed_thread *known, unsigned n_known, pid_t tid) {
        for (unsigned i = 0; i < n_known; i++)
                if (known[i].tid == tid)
                        return &known[i];
        return NULL;
}

int watcher_thread_diff(const managed_thread *known, unsigned n_known, const watcher_thread_seen *seen,
                        size_t n_seen, watcher_thread_change **ret, size_t *ret_n) {
        _cleanup_free_ watcher_thread_change *changes = NULL;
        size_t n = 0;

        *ret = NULL;
        *ret_n = 0;
        if (n_known + n_seen == 0)
                return 0;
        /* At most one change per known thread and one per seen thread. */
        changes = calloc((size_t) n_known + n_seen, sizeof *changes);
        if (!changes)
                return -ENOMEM;
        for (unsigned i = 0; i < n_known; i++)
                if (n_seen == 0 || !bsearch(&known[i].tid, seen, n_seen, sizeof *seen, cmp_seen))
                        changes[n++] = (watcher_thread_change){ .kind = WATCHER_THREAD_GONE, .tid = known[i].tid };
        for (size_t i = 0; i < n_seen; i++) {
                const managed_thread *t = find_known(known, n_known, seen[i].tid);
                watcher_thread_change_kind kind;

                if (!seen[i].readable)
                        kind = t ? WATCHER_THREAD_GONE : WATCHER_THREAD_NONE;
                else
                        kind = watcher_thread_comm_change(t, seen[i].comm);
                if (kind == WATCHER_THREAD_NONE)
                        continue;
                changes[n] = (watcher_thread_change){ .kind = kind, .tid = seen[i].tid };
                if (kind != WATCHER_THREAD_GONE)
                        memcpy(changes[n].comm, seen[i].comm, sizeof changes[n].comm);
                n++;
        }
        if (n > 0) {
                *ret = TAKE_PTR(changes);
                *ret_n = n;
        }
        return 0;
}

unsigned watcher_device_retry_next(unsigned *backoff_ms, unsigned first_ms, unsigned cap_ms) {
        unsigned delay;

        if (*backoff_ms == 0)
                *backoff_ms = first_ms;
        delay = *backoff_ms;
        if (*backoff_ms < cap_ms)
                *backoff_ms = *backoff_ms > cap_ms / 2 ? cap_ms : *backoff_ms * 2;
        return delay;
}

bool watcher_device_retry_wanted(const tune_policy_rule *rule, const tune_attribution *a) {
        return rule && rule->accel_mode == TUNE_ACCEL_AUTO && a->source == TUNE_ATTRIBUTION_NONE;
}

watcher_match_action watcher_match_decide(bool matched, bool retitle_candidate, bool known, bool managed) {
        if (matched)
                return known && managed ? WATCHER_MATCH_REEVALUATE : WATCHER_MATCH_MANAGE;
        if (known && managed)
                return WATCHER_MATCH_UNMATCH;
        if (known || retitle_candidate)
                return WATCHER_MATCH_CANDIDATE;
        return WATCHER_MATCH_IGNORE;
}

unsigned watcher_changes(const tune_policy_rule *old_rule, int old_rank, const tune_attribution *old_attribution,
                         const tune_policy_rule *new_rule, int new_rank, const tune_attribution *new_attribution,
                         bool exec) {
        unsigned changes = 0;

        if (new_rule != old_rule)
                changes |= WATCHER_CHANGE_RULE;
        if ((new_rank >= 0 ? new_rank : -1) != (old_rank >= 0 ? old_rank : -1))
                changes |= WATCHER_CHANGE_RANK;
        if (new_attribution && !tune_attribution_equal(new_attribution, old_attribution))
                changes |= WATCHER_CHANGE_ACCELS;
        if (exec)
                changes |= WATCHER_CHANGE_EXEC;
        return changes;
}
