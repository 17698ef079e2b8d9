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

/* A slot for (pid, start_time), its old answer dropped. */
static watcher_ancestor *cache_new(Watcher *w, pid_t pid, uint64_t start_time) {
        watcher_ancestor *a = &w->ancestors[w->next_ancestor++ % ELEMENTSOF(w->ancestors)];

        tune_env_capture_done(&a->env);
        tune_env_capture_done(&a->kids);
        *a = (watcher_ancestor) { .pid = pid, .start_time = start_time };
        return a;
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

/* Read pid's environment into *ret (charged to uid's budget and to the walk's bytes).
 * false: the budget is spent (the walk ends). */
static bool read_env(Watcher *w, uid_t uid, pid_t pid, size_t *walk_bytes, tune_env_capture *ret) {
        _cleanup_free_ char *raw = NULL;
        size_t len = 0;
        bool truncated = false;
        int r;

        *ret = (tune_env_capture) { .state = TUNE_ENV_UNREADABLE, .from_pid = pid };
        r = watcher_read_environ_budgeted(w, uid, pid, &raw, &len, &truncated);
        if (r == -EDQUOT)
                return false;
        if (r < 0)
                return true;
        *walk_bytes += len;
        if (tune_env_capture_parse_indexed(raw, len, truncated, (const char *const *) w->env_names, w->n_env_names,
                                           &w->env_index, ret) < 0)
                *ret = (tune_env_capture) { .state = TUNE_ENV_UNREADABLE };
        ret->from_pid = pid;
        return true;
}

static bool user_may_stand_in(uid_t of, uid_t uid) {
        return of == uid || of == 0;
}

/* The environment pid's children hold that is own_len bytes long, when they all agree
 * (docs/trust.md, "The environment of a process found running"): a launcher that wiped
 * its own passed it on, before, to the children it started (one that keeps it: a
 * forked helper, multiprocessing's resource tracker). Children of another user, with an
 * environment of another size, or wiped, say nothing; two that disagree (a launcher that
 * gave each child its own list) leave it unknown. self: the process asking, skipped. */
static bool kids_env(Watcher *w, watcher_ancestor *a, uid_t uid, pid_t self, size_t own_len, size_t *walk_bytes) {
        pid_t kids[TUNE_CHILDREN_MAX];
        size_t n = 0;

        if (a->kids_len == own_len)
                return tune_env_capture_usable(&a->kids);
        tune_env_capture_done(&a->kids);
        a->kids_len = own_len;
        if (tune_proc_read_children(w->ctx, a->pid, kids, ELEMENTSOF(kids), &n) < 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                _cleanup_(tune_env_capture_done) tune_env_capture env = {};
                tune_proc_status status;
                tune_proc_stat st;

                if (*walk_bytes >= WALK_ENVIRON_MAX) {
                        /* Out of this walk's reads: no answer kept, the next walk looks again. */
                        tune_env_capture_done(&a->kids);
                        a->kids_len = 0;
                        return false;
                }
                if (kids[i] == self || tune_proc_read_stat(w->ctx, kids[i], &st) < 0 || st.ppid != a->pid ||
                    st.start_time < a->start_time || tune_proc_read_status(w->ctx, kids[i], &status) < 0 ||
                    status.ruid != uid)
                        continue;
                if (!read_env(w, uid, kids[i], walk_bytes, &env)) {
                        tune_env_capture_done(&a->kids);
                        a->kids_len = 0;
                        return false;
                }
                if (!tune_env_capture_usable(&env) || env.truncated || env.len != own_len)
                        continue;
                if (tune_env_capture_usable(&a->kids)) {
                        if (!tune_env_capture_same_vars(&a->kids, &env)) {
                                tune_env_capture_done(&a->kids);
                                a->kids.state = TUNE_ENV_UNREADABLE; /* they disagree: unknown */
                                return false;
                        }
                        continue;
                }
                a->kids = env;
                env = (tune_env_capture) {};
        }
        return tune_env_capture_usable(&a->kids);
}

static bool stand_in(tune_env_capture *ret, const tune_env_capture *env) {
        if (tune_env_capture_copy(ret, env) < 0)
                return false;
        ret->inherited = true;
        return true;
}

bool watcher_ancestor_env(Watcher *w, const Entry *e, size_t own_len, tune_env_capture *ret) {
        size_t walk_bytes = 0;
        pid_t pid = e->p.ppid;
        tune_proc_status self;
        /* Every process from e up to the one below pid was given an environment of own_len
         * bytes: so far the chain passed it on unchanged in size. */
        bool same_size = own_len > 0;

        if (tune_proc_read_status(w->ctx, e->p.pid, &self) < 0)
                return false;
        for (unsigned depth = 0; depth < ANCESTOR_DEPTH_MAX && pid > 1; depth++) {
                Entry *a = registry_get(w->registry, pid);
                watcher_ancestor *known;
                tune_proc_stat st;

                if (tune_proc_read_stat(w->ctx, pid, &st) < 0 || (st.flags & TUNE_PF_KTHREAD) ||
                    st.start_time > e->p.start_time)
                        return false; /* gone, or not an ancestor (the pid was reused) */
                if (a && entry_same_process(a, &st) && tune_env_capture_usable(&a->p.env) &&
                    user_may_stand_in(a->p.uid, self.ruid))
                        return stand_in(ret, &a->p.env);
                known = cache_find(w, pid, st.start_time);
                if (!known) {
                        const tune_policy_rule *rule;
                        tune_proc_status status;
                        tune_proc_facts f;
                        bool retitle = false;

                        known = cache_new(w, pid, st.start_time);
                        known->uid = (uid_t) -1;
                        if (tune_proc_read_status(w->ctx, pid, &status) >= 0)
                                known->uid = status.ruid;
                        /* A process a rule matches or may match after a retitle is one whose
                         * environment a watching daemon would have kept for its children. */
                        tune_proc_facts_init(&f, w->ctx, pid, st.comm);
                        rule = tune_policy_match(w->policy, &f, &retitle);
                        tune_proc_facts_done(&f);
                        known->kin = rule || retitle;
                }
                if (!known->env_read && user_may_stand_in(known->uid, self.ruid) &&
                    (known->kin || same_size)) {
                        if (walk_bytes >= WALK_ENVIRON_MAX || !read_env(w, self.ruid, pid, &walk_bytes, &known->env))
                                return false;
                        known->env_read = true;
                }
                if (user_may_stand_in(known->uid, self.ruid) && tune_env_capture_usable(&known->env)) {
                        /* A process a rule matches (what a watching daemon kept), or any other
                         * (a shell, a launcher of its own) whose environment has the very size
                         * of the one that reached e: it passed its own on unchanged. PID 1,
                         * and a subreaper that adopted the orphans of a dead launcher, are
                         * none of those. */
                        if (known->kin || (same_size && !known->env.truncated && known->env.len == own_len))
                                return stand_in(ret, &known->env);
                }
                if (same_size && known->uid == self.ruid &&
                    kids_env(w, known, self.ruid, e->p.pid, own_len, &walk_bytes))
                        return stand_in(ret, &known->kids);
                same_size = same_size && known->env_read && !known->env.truncated && known->env.len == own_len &&
                            (known->env.state == TUNE_ENV_READ || known->env.state == TUNE_ENV_WIPED);
                pid = st.ppid;
        }
        return false;
}

static const watcher_remembered *remembered_find(const Watcher *w, pid_t pid, uint64_t start_time) {
        if (start_time > w->remembered_latest_start)
                return NULL; /* started after them: every match since the restart asks */
        for (unsigned i = 0; i < w->n_remembered; i++)
                if (w->remembered[i].pid == pid && w->remembered[i].start_time == start_time)
                        return &w->remembered[i];
        return NULL;
}

bool watcher_remembered_env(Watcher *w, pid_t pid, uint64_t start_time, tune_env_capture *ret) {
        const watcher_remembered *r = remembered_find(w, pid, start_time);

        if (!r || tune_env_capture_copy(ret, &r->env) < 0)
                return false;
        ret->restored = true;
        return true;
}

bool watcher_keeps_attribution(Watcher *w, pid_t pid, uint64_t start_time) {
        return remembered_find(w, pid, start_time) != NULL;
}

int watcher_remembered_add(Watcher *w, pid_t pid, uint64_t start_time, const tune_env_capture *env) {
        watcher_remembered *l;

        if (w->n_remembered >= w->params.max_managed)
                return -ENOSPC;
        l = reallocarray(w->remembered, w->n_remembered + 1, sizeof *l);
        if (!l)
                return -ENOMEM;
        w->remembered = l;
        l[w->n_remembered] = (watcher_remembered) { .pid = pid, .start_time = start_time };
        if (tune_env_capture_copy(&l[w->n_remembered].env, env) < 0)
                return -ENOMEM;
        l[w->n_remembered].env.state = TUNE_ENV_READ;
        w->n_remembered++;
        if (start_time > w->remembered_latest_start)
                w->remembered_latest_start = start_time;
        return 0;
}

void watcher_remembered_done(Watcher *w) {
        for (unsigned i = 0; i < w->n_remembered; i++)
                tune_env_capture_done(&w->remembered[i].env);
        free(w->remembered);
        w->remembered = NULL;
        w->n_remembered = 0;
        w->remembered_latest_start = 0;
}

void watcher_ancestry_done(Watcher *w) {
        for (unsigned i = 0; i < ELEMENTSOF(w->ancestors); i++) {
                tune_env_capture_done(&w->ancestors[i].env);
                tune_env_capture_done(&w->ancestors[i].kids);
        }
}
