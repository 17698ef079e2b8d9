/* SPDX-License-Identifier: GPL-2.0-only */
/* Rule matching and rank extraction. Pure: the facts come through a loader. */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/match.h"

void tune_proc_facts_done(tune_proc_facts *f) {
        if (!f)
                return;
        free(f->exe);
        free(f->cmdline);
        free(f->cgroup);
        free(f->status);
        free(f->environ);
        f->exe = f->cmdline = f->cgroup = f->environ = NULL;
        f->status = NULL;
        f->loaded = f->failed = f->gave_up = 0;
}

void tune_proc_facts_forget_volatile(tune_proc_facts *f) {
        free(f->cmdline);
        f->cmdline = NULL;
        f->loaded &= ~(unsigned) (TUNE_FACT_COMM | TUNE_FACT_CMDLINE);
        f->failed &= ~(unsigned) (TUNE_FACT_COMM | TUNE_FACT_CMDLINE);
        f->gave_up &= ~(unsigned) (TUNE_FACT_COMM | TUNE_FACT_CMDLINE);
}

bool tune_proc_facts_get(tune_proc_facts *f, tune_fact fact) {
        if (f->loaded & fact)
                return true;
        if (f->failed & fact)
                return false;
        if (f->load && f->load(f, fact, f->userdata) >= 0 && (f->loaded & fact))
                return true;
        f->failed |= fact;
        return false;
}

bool tune_cgroup_has_prefix(const char *path, const char *prefix) {
        size_t n = strlen(prefix);

        while (n > 1 && prefix[n - 1] == '/')
                n--;
        if (strncmp(path, prefix, n) != 0)
                return false;
        return path[n] == 0 || path[n] == '/' || (n == 1 && prefix[0] == '/');
}

bool tune_glob_match(const char *pattern, const char *s) {
        const char *lit = pattern[0] == '*' ? pattern + 1 : pattern;
        size_t pl, sl;

        if (strpbrk(lit, "*?[\\"))
                return fnmatch(pattern, s, 0) == 0;
        pl = strlen(lit);
        sl = strlen(s);
        if (lit == pattern)
                return pl == sl && memcmp(s, lit, pl) == 0;
        return sl >= pl && memcmp(s + sl - pl, lit, pl) == 0;
}

static bool has_criteria(const tune_policy_rule *r, bool *ret_stable, bool *ret_volatile) {
        bool stable = r->match_exe || r->n_match_uids > 0 || r->match_cgroup;
        bool vol = r->match_comm || r->has_match_cmdline;

        if (ret_stable)
                *ret_stable = stable;
        if (ret_volatile)
                *ret_volatile = vol;
        return stable || vol;
}

static bool has_stable_criteria(const tune_policy_rule *r) {
        bool stable;

        (void) has_criteria(r, &stable, NULL);
        return stable;
}

/* 1: holds, 0: fails. The criteria that survive a retitle, cheapest fact first: the
 * executable is one readlink and fails for almost every process on the host; the user
 * and the cgroup are a /proc file each to read and parse. */
static int check_stable(const tune_policy_rule *r, tune_proc_facts *f) {
        if (r->match_exe) {
                if (!tune_proc_facts_get(f, TUNE_FACT_EXE) || !tune_glob_match(r->match_exe, f->exe))
                        return 0;
        }
        if (r->n_match_uids > 0) {
                bool ok = false;
                if (!tune_proc_facts_get(f, TUNE_FACT_UID))
                        return 0;
                for (unsigned i = 0; i < r->n_match_uids && !ok; i++)
                        ok = r->match_uids[i] == f->uid;
                if (!ok)
                        return 0;
        }
        if (r->match_cgroup) {
                if (!tune_proc_facts_get(f, TUNE_FACT_CGROUP) || !tune_cgroup_has_prefix(f->cgroup, r->match_cgroup))
                        return 0;
        }
        return 1;
}

/* A regex sees at most the first TUNE_MATCH_REGEX_PREFIX bytes of the subject: the command
 * line is the process's own text, up to TUNE_CMDLINE_MAX long, and a pattern glibc runs
 * in quadratic time (an unanchored ".*") would cost tens of ms on all of it, on every
 * rename (docs/trust.md). */
static int regex_prefix_exec(const regex_t *re, const char *s, size_t nmatch, regmatch_t *m) {
        regmatch_t local[2];
        size_t len = strnlen(s, TUNE_MATCH_REGEX_PREFIX);

        if (nmatch > 2)
                return REG_NOMATCH;
        if (!m)
                m = local;
        m[0] = (regmatch_t) { .rm_so = 0, .rm_eo = (regoff_t) len };
        return regexec(re, s, nmatch ? nmatch : 1, m, REG_STARTEND);
}

static int check_volatile(const tune_policy_rule *r, tune_proc_facts *f) {
        if (r->match_comm) {
                if (!tune_proc_facts_get(f, TUNE_FACT_COMM) || !tune_glob_match(r->match_comm, f->comm))
                        return 0;
        }
        if (r->has_match_cmdline) {
                if (!tune_proc_facts_get(f, TUNE_FACT_CMDLINE))
                        return 0;
                if (r->match_cmdline_literal && r->match_cmdline_src) {
                        /* The regex's answer over the same prefix, without its automaton. */
                        size_t len = strnlen(f->cmdline, TUNE_MATCH_REGEX_PREFIX);
                        if (!memmem(f->cmdline, len, r->match_cmdline_src, strlen(r->match_cmdline_src)))
                                return 0;
                } else if (regex_prefix_exec(&r->match_cmdline, f->cmdline, 0, NULL) != 0)
                        return 0;
        }
        return 1;
}

int tune_rule_matches(const tune_policy_rule *rule, tune_proc_facts *f) {
        if (!rule || !f || !has_criteria(rule, NULL, NULL))
                return 0;
        /* comm is usually known already (from the event or stat): the cheapest filter. */
        if (rule->match_comm && (!tune_proc_facts_get(f, TUNE_FACT_COMM) || !tune_glob_match(rule->match_comm, f->comm)))
                return 0;
        if (!check_stable(rule, f))
                return 0;
        if (has_stable_criteria(rule))
                f->kept = true;
        return check_volatile(rule, f);
}

const tune_policy_rule *tune_policy_match(const tune_policy *p, tune_proc_facts *f, bool *ret_retitle_candidate) {
        bool candidate = false;

        if (ret_retitle_candidate)
                *ret_retitle_candidate = false;
        if (!p || !f)
                return NULL;
        for (unsigned i = 0; i < p->n_rules; i++) {
                const tune_policy_rule *r = &p->rules[i];
                bool stable, vol;

                if (tune_rule_matches(r, f))
                        return r;
                if (ret_retitle_candidate && !candidate && has_criteria(r, &stable, &vol) && stable && vol &&
                    check_stable(r, f))
                        candidate = true;
        }
        if (ret_retitle_candidate)
                *ret_retitle_candidate = candidate;
        return NULL;
}

static int parse_rank(const char *s, size_t len) {
        int v = 0;

        if (len == 0 || len > 9)
                return -ENOENT;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -ENOENT;
                v = v * 10 + (s[i] - '0');
        }
        return v;
}

int tune_rule_rank(const tune_policy_rule *rule, tune_proc_facts *f, const tune_env_capture *env) {
        const char *subject = NULL;
        regmatch_t m[2];

        if (!rule)
                return -ENOENT;
        switch (rule->rank_source) {
        case TUNE_RANK_NONE:
                return -ENOENT;
        case TUNE_RANK_ENV: {
                const char *v = rule->rank_env ? tune_env_capture_get(env, rule->rank_env) : NULL;
                return v ? parse_rank(v, strlen(v)) : -ENOENT;
        }
        case TUNE_RANK_CMDLINE:
                if (f && tune_proc_facts_get(f, TUNE_FACT_CMDLINE))
                        subject = f->cmdline;
                break;
        case TUNE_RANK_COMM:
                if (f && tune_proc_facts_get(f, TUNE_FACT_COMM))
                        subject = f->comm;
                break;
        }
        if (!subject || !rule->rank_regex_src)
                return -ENOENT;
        if (regex_prefix_exec(&rule->rank_regex, subject, 2, m) != 0 || m[1].rm_so < 0)
                return -ENOENT;
        return parse_rank(subject + m[1].rm_so, (size_t) (m[1].rm_eo - m[1].rm_so));
}
