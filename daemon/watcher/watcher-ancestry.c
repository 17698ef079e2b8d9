/* SPDX-License-Identifier: GPL-2.0-only */
/* The environment a process found running inherited from its ancestors, for one whose own
 * is wiped (setproctitle): what a watching daemon would have copied at its fork.
 *
 * The walk up the parent chain reads other processes' environments, and every process a
 * user starts can ask for one (a rename is enough). Unbounded, one user's top process
 * with 840 KiB of environment and 16 forked ancestors made each renaming child cost the
 * daemon 22.8 ms of CPU (docs/trust.md, "Bounded work"). So the work is bounded three
 * ways: each ancestor's (pid, start time) answer is kept, so siblings do not read it
 * again; one walk reads at most WALK_ENVIRON_MAX bytes of environment; and a user's
 * processes found running (not at their exec: that one is read whole) read at most
 * UID_ENVIRON_PER_S bytes of environment a second, their own and their ancestors',
 * past which they do without until the next second. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "log.h"
#include "watcher-internal.h"

/* The parent chain is walked this far at most. */
#define ANCESTOR_DEPTH_MAX 16
#define WALK_ENVIRON_MAX (1024u * 1024u)
#define UID_ENVIRON_PER_S (4u * 1024u * 1024u)

static watcher_ancestor *cache_find(Watcher *w, pid_t pid, uint64_t start_time) {
        for (unsigned i = 0; i < ELEMENTSOF(w->ancestors); i++)
                if (w->ancestors[i].pid == pid && w->ancestors[i].start_time == start_time)
                        return &w->ancestors[i];
        return NULL;
}

/* Keep the answer for (pid, start_time); the capture is taken over (usable or not). */
static void cache_put(Watcher *w, pid_t pid, uint64_t start_time, tune_env_capture *env) {
        watcher_ancestor *a = &w->ancestors[w->next_ancestor++ % ELEMENTSOF(w->ancestors)];

        tune_env_capture_done(&a->env);
        *a = (watcher_ancestor) { .pid = pid, .start_time = start_time, .env = *env };
        *env = (tune_env_capture) {};
}

/* The uid's environment reads of the current second; NULL when its budget is spent (said
 * once a second). */
static watcher_uid_reads *uid_reads(Watcher *w, uid_t uid) {
        uint64_t now = watcher_now_usec(w);
        watcher_uid_reads *r = NULL, *oldest = &w->uid_reads[0];

        for (unsigned i = 0; i < ELEMENTSOF(w->uid_reads) && !r; i++) {
                if (w->uid_reads[i].uid == uid && w->uid_reads[i].since)
                        r = &w->uid_reads[i];
                else if (w->uid_reads[i].since < oldest->since)
                        oldest = &w->uid_reads[i];
        }
        if (!r) {
                r = oldest;
                *r = (watcher_uid_reads) { .uid = uid };
        }
        if (now >= r->since + 1000000) {
                r->since = now;
                r->bytes = 0;
                r->warned = false;
        }
        if (r->bytes < UID_ENVIRON_PER_S)
                return r;
        if (!r->warned)
                log_notice("User %u's processes read %u KiB of their ancestors' environments within a second: "
                           "the rest of this second's go without an inherited environment (docs/trust.md).",
                           (unsigned) uid, UID_ENVIRON_PER_S / 1024);
        r->warned = true;
        w->stats.ancestry_limited++;
        return NULL;
}

int watcher_read_environ_budgeted(Watcher *w, uid_t uid, pid_t pid, char **ret, size_t *ret_len, bool *ret_truncated) {
        watcher_uid_reads *reads = uid_reads(w, uid);
        int r;

        if (!reads)
                return -EDQUOT;
        r = tune_proc_read_environ(w->ctx, pid, ret, ret_len, ret_truncated);
        if (r >= 0)
                reads->bytes += *ret_len;
        return r;
}

bool watcher_ancestor_env(Watcher *w, const Entry *e, tune_env_capture *ret) {
        size_t walk_bytes = 0;
        pid_t pid = e->p.ppid;

        for (unsigned depth = 0; depth < ANCESTOR_DEPTH_MAX && pid > 1; depth++) {
                Entry *a = registry_get(w->registry, pid);
                _cleanup_(tune_env_capture_done) tune_env_capture env = {};
                _cleanup_free_ char *raw = NULL;
                const tune_policy_rule *rule;
                const watcher_ancestor *known;
                tune_proc_facts f;
                tune_proc_stat st;
                size_t len = 0;
                bool truncated = false, retitle = false;

                if (tune_proc_read_stat(w->ctx, pid, &st) < 0 || (st.flags & TUNE_PF_KTHREAD) ||
                    st.start_time > e->p.start_time)
                        return false; /* gone, or not an ancestor (the pid was reused) */
                if (a && entry_same_process(a, &st) && tune_env_capture_usable(&a->p.env)) {
                        if (tune_env_capture_copy(ret, &a->p.env) < 0)
                                return false;
                        ret->inherited = true;
                        return true;
                }
                known = cache_find(w, pid, st.start_time);
                if (known) {
                        if (tune_env_capture_usable(&known->env)) {
                                if (tune_env_capture_copy(ret, &known->env) < 0)
                                        return false;
                                ret->inherited = true;
                                ret->from_pid = pid;
                                return true;
                        }
                        pid = st.ppid;
                        continue;
                }
                if (walk_bytes >= WALK_ENVIRON_MAX)
                        return false;
                /* PID 1 and ancestors no rule could match (a shell, a subreaper that adopted
                 * the orphans of a dead launcher) never stand in: their environment says
                 * nothing about the visible-devices list the worker got. */
                tune_proc_facts_init(&f, w->ctx, pid, st.comm);
                rule = tune_policy_match(w->policy, &f, &retitle);
                tune_proc_facts_done(&f);
                if (rule || retitle) {
                        int r = watcher_read_environ_budgeted(w, e->budget_uid, pid, &raw, &len, &truncated);
                        if (r == -EDQUOT)
                                return false;
                        if (r < 0)
                                len = 0;
                        walk_bytes += len;
                }
                if (len > 0) {
                        if (tune_env_capture_parse(raw, len, truncated, (const char *const *) w->env_names,
                                                   w->n_env_names, &env) < 0)
                                env = (tune_env_capture) { .state = TUNE_ENV_UNREADABLE };
                }
                env.from_pid = pid;
                if (tune_env_capture_usable(&env)) {
                        if (tune_env_capture_copy(ret, &env) < 0)
                                return false;
                        ret->inherited = true;
                        cache_put(w, pid, st.start_time, &env);
                        return true;
                }
                cache_put(w, pid, st.start_time, &env);
                pid = st.ppid;
        }
        return false;
}

void watcher_ancestry_done(Watcher *w) {
        for (unsigned i = 0; i < ELEMENTSOF(w->ancestors); i++)
                tune_env_capture_done(&w->ancestors[i].env);
}
