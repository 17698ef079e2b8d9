/* SPDX-License-Identifier: GPL-2.0-only */
/* Rule matching and rank extraction, on rules built by hand (the policy parser is not
 * needed) and facts given directly or through a counting loader. */
#include <errno.h>
#include <fnmatch.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/match.h"
#include "npu-tuned/policy.h"

/* Facts served from static values; counts which were asked for. */
typedef struct fake_proc {
        const char *comm, *exe, *cmdline, *cgroup;
        long uid; /* -1: unreadable */
        unsigned asked;
} fake_proc;

static int fake_loader(tune_proc_facts *f, tune_fact fact, void *userdata) {
        fake_proc *p = userdata;
        const char *v = NULL;

        p->asked |= fact;
        switch (fact) {
        case TUNE_FACT_COMM:
                if (!p->comm)
                        return -ESRCH;
                snprintf(f->comm, sizeof f->comm, "%s", p->comm);
                break;
        case TUNE_FACT_EXE:
                v = p->exe;
                if (!v)
                        return -ENOENT;
                f->exe = strdup(v);
                break;
        case TUNE_FACT_CMDLINE:
                v = p->cmdline;
                if (!v)
                        return -ESRCH;
                f->cmdline = strdup(v);
                break;
        case TUNE_FACT_CGROUP:
                v = p->cgroup;
                if (!v)
                        return -ENOENT;
                f->cgroup = strdup(v);
                break;
        case TUNE_FACT_UID:
                if (p->uid < 0)
                        return -ESRCH;
                f->uid = (uid_t) p->uid;
                break;
        case TUNE_FACT_ENVIRON:
                return -EINVAL; /* no rule asks for it */
        }
        f->loaded |= fact;
        return 0;
}

static void facts_for(tune_proc_facts *f, fake_proc *p) {
        *f = (tune_proc_facts){ .pid = 1, .load = fake_loader, .userdata = p };
        p->asked = 0;
}

static void rule_done(tune_policy_rule *r) {
        if (r->has_match_cmdline)
                regfree(&r->match_cmdline);
        if (r->rank_regex_src)
                regfree(&r->rank_regex);
}

static void set_cmdline(tune_policy_rule *r, const char *re) {
        assert_int_equal(regcomp(&r->match_cmdline, re, REG_EXTENDED | REG_NOSUB), 0);
        r->match_cmdline_src = (char *) re;
        r->has_match_cmdline = true;
}

static void set_rank(tune_policy_rule *r, tune_rank_source src, const char *re) {
        r->rank_source = src;
        if (re) {
                assert_int_equal(regcomp(&r->rank_regex, re, REG_EXTENDED), 0);
                r->rank_regex_src = (char *) re;
        }
}

static fake_proc vllm_worker = {
        .comm = "VLLM::Worker_TP",
        .exe = "/usr/bin/python3.11",
        .cmdline = "VLLM::Worker_TP3",
        .cgroup = "/system.slice/vllm.service",
        .uid = 1000,
};

static void test_criteria(void **state) {
        tune_proc_facts f;
        uid_t uids[] = { 0, 1000 };
        uid_t other[] = { 2000 };
        (void) state;

        /* comm glob */
        tune_policy_rule r = { .match_comm = (char *) "VLLM::Worker*" };
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_matches(&r, &f), 1);
        assert_int_equal(vllm_worker.asked, TUNE_FACT_COMM); /* nothing else was read */
        tune_proc_facts_done(&f);
        r.match_comm = (char *) "vllm";
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_matches(&r, &f), 0);
        tune_proc_facts_done(&f);

        /* exe glob on the resolved path (the kernel's /proc/PID/exe has no ".."); as
         * npu-tuned.policy(5) says, '*' also matches '/': the shipped "*\/python3*" must
         * match an interpreter in any directory. */
        r = (tune_policy_rule){ .match_exe = (char *) "/usr/bin/python3*" };
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_matches(&r, &f), 1);
        tune_proc_facts_done(&f);
        r.match_exe = (char *) "*/python3*";
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_matches(&r, &f), 1);
        tune_proc_facts_done(&f);
        fake_proc evil = vllm_worker;
        evil.exe = "/tmp/evil/python3";
        r.match_exe = (char *) "/usr/bin/*";
        facts_for(&f, &evil);
        assert_int_equal(tune_rule_matches(&r, &f), 0);
        tune_proc_facts_done(&f);

        /* cmdline ERE */
        r = (tune_policy_rule){};
        set_cmdline(&r, "^VLLM::Worker_TP[0-9]+$");
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_matches(&r, &f), 1);
        tune_proc_facts_done(&f);
        rule_done(&r);

        /* uid list */
        r = (tune_policy_rule){ .match_uids = uids, .n_match_uids = 2 };
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_matches(&r, &f), 1);
        tune_proc_facts_done(&f);
        r.match_uids = other;
        r.n_match_uids = 1;
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_matches(&r, &f), 0);
        tune_proc_facts_done(&f);

        /* cgroup prefix, at path boundaries */
        r = (tune_policy_rule){ .match_cgroup = (char *) "/system.slice" };
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_matches(&r, &f), 1);
        tune_proc_facts_done(&f);
        r.match_cgroup = (char *) "/system.slice/vllm";
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_matches(&r, &f), 0);
        tune_proc_facts_done(&f);

        /* Every criterion at once; the comm check fails first and nothing else is read. */
        r = (tune_policy_rule){ .match_comm = (char *) "sglang*", .match_exe = (char *) "/usr/bin/python3*",
                                .match_uids = uids, .n_match_uids = 2, .match_cgroup = (char *) "/" };
        set_cmdline(&r, "VLLM");
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_matches(&r, &f), 0);
        assert_int_equal(vllm_worker.asked, TUNE_FACT_COMM);
        tune_proc_facts_done(&f);
        r.match_comm = (char *) "VLLM::*";
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_matches(&r, &f), 1);
        tune_proc_facts_done(&f);
        rule_done(&r);

        /* A rule with no criterion matches nothing (fail closed). */
        r = (tune_policy_rule){ .name = (char *) "empty" };
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_matches(&r, &f), 0);
        tune_proc_facts_done(&f);

        /* A fact that cannot be read fails the criterion (a kernel thread has no exe). */
        fake_proc kthread = { .comm = "kworker/0:1", .uid = 0 };
        r = (tune_policy_rule){ .match_exe = (char *) "*" };
        facts_for(&f, &kthread);
        assert_int_equal(tune_rule_matches(&r, &f), 0);
        tune_proc_facts_done(&f);
        fake_proc gone = { .uid = -1 };
        r = (tune_policy_rule){ .match_uids = uids, .n_match_uids = 2 };
        facts_for(&f, &gone);
        assert_int_equal(tune_rule_matches(&r, &f), 0);
        tune_proc_facts_done(&f);
}

static void test_cgroup_prefix(void **state) {
        (void) state;
        assert_true(tune_cgroup_has_prefix("/a/b", "/a"));
        assert_true(tune_cgroup_has_prefix("/a", "/a"));
        assert_true(tune_cgroup_has_prefix("/a/b", "/a/"));
        assert_false(tune_cgroup_has_prefix("/ab", "/a"));
        assert_true(tune_cgroup_has_prefix("/anything", "/"));
        assert_false(tune_cgroup_has_prefix("/", "/a"));
}

/* tune_glob_match() answers as fnmatch(pattern, s, 0) does, on its fast shapes and off. */
static void test_glob_match(void **state) {
        const char *const patterns[] = { "*/vllm", "vllm", "*", "", "*vllm", "**/vllm", "*/vl?m", "*/v[l]lm",
                                         "*\\/vllm", "vllm*", "*/bin/python3.1?", "/usr/bin/vllm", "*.", "*\\" };
        const char *const subjects[] = { "/usr/bin/vllm", "vllm", "", "/vllm", "/usr/bin/vllmx", "/usr/bin/xvllm",
                                         "/usr/bin/vllm/", "vll", "/a/.", "*/vllm", "/usr/bin/python3.11", "\\" };

        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(patterns); i++)
                for (size_t j = 0; j < ELEMENTSOF(subjects); j++)
                        if (tune_glob_match(patterns[i], subjects[j]) != (fnmatch(patterns[i], subjects[j], 0) == 0))
                                fail_msg("\"%s\" against \"%s\": %d, fnmatch says %d", patterns[i], subjects[j],
                                         tune_glob_match(patterns[i], subjects[j]), fnmatch(patterns[i], subjects[j], 0) == 0);
}

static void test_policy_order_and_retitle(void **state) {
        tune_policy_rule rules[3] = {
                { .name = (char *) "high", .priority = 10, .match_comm = (char *) "VLLM::Worker_TP",
                  .match_exe = (char *) "/usr/bin/python3*" },
                { .name = (char *) "low", .priority = 0, .match_exe = (char *) "/usr/bin/python3*" },
                { .name = (char *) "never", .match_comm = (char *) "nothing" },
        };
        tune_policy p = { .rules = rules, .n_rules = 3 };
        const tune_policy_rule *m;
        tune_proc_facts f;
        bool retitle;
        (void) state;

        facts_for(&f, &vllm_worker);
        m = tune_policy_match(&p, &f, &retitle);
        assert_ptr_equal(m, &rules[0]);
        tune_proc_facts_done(&f);

        /* Before the retitle: "python3 -c from multiprocessing.spawn ..." matches the
         * low rule only. */
        fake_proc spawned = vllm_worker;
        spawned.comm = "python3";
        spawned.cmdline = "python3 -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5)";
        facts_for(&f, &spawned);
        m = tune_policy_match(&p, &f, &retitle);
        assert_ptr_equal(m, &rules[1]);
        tune_proc_facts_done(&f);

        /* Without the low rule: no match, but a retitle candidate (exe holds, comm fails). */
        p.rules = (tune_policy_rule[]){ rules[0], rules[2] };
        p.n_rules = 2;
        facts_for(&f, &spawned);
        m = tune_policy_match(&p, &f, &retitle);
        assert_null(m);
        assert_true(retitle);
        tune_proc_facts_done(&f);

        /* Another program: the stable criterion fails, not a candidate. */
        fake_proc ls = { .comm = "ls", .exe = "/usr/bin/ls", .cmdline = "ls -l", .uid = 0 };
        facts_for(&f, &ls);
        m = tune_policy_match(&p, &f, &retitle);
        assert_null(m);
        assert_false(retitle);
        tune_proc_facts_done(&f);

        /* A rule with only comm/cmdline criteria makes nothing a candidate (it would
         * keep every process). */
        p.rules = &rules[2];
        p.n_rules = 1;
        facts_for(&f, &spawned);
        assert_null(tune_policy_match(&p, &f, &retitle));
        assert_false(retitle);
        tune_proc_facts_done(&f);
        assert_null(tune_policy_match(NULL, &f, &retitle));
}

/* The matcher says a process is kept (so its environment may be read with its command
 * line) exactly when it asks for the command line of a rule whose retitle-proof criteria
 * all held: such a process is at least a retitle candidate, whatever the command line. */
static void test_kept_before_cmdline(void **state) {
        tune_policy_rule exe_and_cmdline = { .name = (char *) "a", .match_exe = (char *) "/usr/bin/python3*" };
        tune_policy_rule cmdline_only = { .name = (char *) "b" };
        tune_policy p = { .rules = &exe_and_cmdline, .n_rules = 1 };
        fake_proc ls = { .comm = "ls", .exe = "/usr/bin/ls", .cmdline = "ls -l", .uid = 0 };
        tune_proc_facts f;
        bool retitle;
        (void) state;

        set_cmdline(&exe_and_cmdline, "^nomatch");
        set_cmdline(&cmdline_only, "^VLLM::");

        /* The exe holds, the command line fails: kept, and a candidate. */
        facts_for(&f, &vllm_worker);
        assert_null(tune_policy_match(&p, &f, &retitle));
        assert_true(retitle);
        assert_true(f.kept);
        assert_true(vllm_worker.asked & TUNE_FACT_CMDLINE);
        tune_proc_facts_done(&f);

        /* The exe fails: the command line is never asked for, nothing kept. */
        facts_for(&f, &ls);
        assert_null(tune_policy_match(&p, &f, &retitle));
        assert_false(retitle);
        assert_false(f.kept);
        assert_false(ls.asked & TUNE_FACT_CMDLINE);
        tune_proc_facts_done(&f);

        /* Only a command line: asked for every process, kept for none (it would be every
         * exec on the host), matched or not. */
        p.rules = &cmdline_only;
        facts_for(&f, &ls);
        assert_null(tune_policy_match(&p, &f, &retitle));
        assert_false(f.kept);
        assert_true(ls.asked & TUNE_FACT_CMDLINE);
        tune_proc_facts_done(&f);
        facts_for(&f, &vllm_worker);
        assert_ptr_equal(tune_policy_match(&p, &f, &retitle), &cmdline_only);
        assert_false(f.kept);
        tune_proc_facts_done(&f);

        rule_done(&exe_and_cmdline);
        rule_done(&cmdline_only);
}

static void test_rank(void **state) {
        tune_policy_rule r = {};
        tune_proc_facts f;
        const char *vars_tgi[] = { "RANK=5" };
        tune_env_capture env = { .state = TUNE_ENV_READ, .vars = (char **) vars_tgi, .n = 1 };
        (void) state;

        /* vLLM: the rank survives only in the cmdline. */
        set_rank(&r, TUNE_RANK_CMDLINE, "Worker_TP([0-9]+)");
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_rank(&r, &f, NULL), 3);
        tune_proc_facts_done(&f);
        /* ... not in the comm ("VLLM::Worker_TP", 15 bytes). */
        rule_done(&r);
        r = (tune_policy_rule){};
        set_rank(&r, TUNE_RANK_COMM, "Worker_TP([0-9]+)");
        facts_for(&f, &vllm_worker);
        assert_int_equal(tune_rule_rank(&r, &f, NULL), -ENOENT);
        tune_proc_facts_done(&f);
        rule_done(&r);

        /* MindIE: --npu_device_id D */
        fake_proc mindie = { .comm = "mindie_llm_back", .exe = "/usr/local/bin/mindie_llm_backend",
                             .cmdline = "mindie_llm_backend --local_rank 1 --npu_device_id 6 --x 2", .uid = 0 };
        r = (tune_policy_rule){};
        set_rank(&r, TUNE_RANK_CMDLINE, "--npu_device_id[ =]([0-9]+)");
        facts_for(&f, &mindie);
        assert_int_equal(tune_rule_rank(&r, &f, NULL), 6);
        tune_proc_facts_done(&f);
        /* A group that is not a number. */
        rule_done(&r);
        r = (tune_policy_rule){};
        set_rank(&r, TUNE_RANK_CMDLINE, "--local_rank ([a-z0-9]+) --npu_device_id ([0-9]+)");
        mindie.cmdline = "mindie_llm_backend --local_rank abc --npu_device_id 6";
        facts_for(&f, &mindie);
        assert_int_equal(tune_rule_rank(&r, &f, NULL), -ENOENT);
        tune_proc_facts_done(&f);
        /* An absurdly long number. */
        mindie.cmdline = "mindie_llm_backend --local_rank 99999999999999 --npu_device_id 6";
        facts_for(&f, &mindie);
        assert_int_equal(tune_rule_rank(&r, &f, NULL), -ENOENT);
        tune_proc_facts_done(&f);
        rule_done(&r);

        /* TGI: RANK in the environment captured at exec. */
        r = (tune_policy_rule){ .rank_source = TUNE_RANK_ENV, .rank_env = (char *) "RANK" };
        assert_int_equal(tune_rule_rank(&r, NULL, &env), 5);
        vars_tgi[0] = "RANK=-1";
        assert_int_equal(tune_rule_rank(&r, NULL, &env), -ENOENT);
        vars_tgi[0] = "RANK=";
        assert_int_equal(tune_rule_rank(&r, NULL, &env), -ENOENT);
        assert_int_equal(tune_rule_rank(&r, NULL, NULL), -ENOENT);
        r.rank_env = (char *) "LOCAL_RANK";
        vars_tgi[0] = "RANK=5";
        assert_int_equal(tune_rule_rank(&r, NULL, &env), -ENOENT);

        r = (tune_policy_rule){};
        assert_int_equal(tune_rule_rank(&r, NULL, &env), -ENOENT);
}

/* The regexes see the first TUNE_MATCH_REGEX_PREFIX bytes of a command line (the rest is
 * the process's to fill): a title there matches, one past it does not, and the shipped
 * MindIE rule's anchored regex stays fast on a 32 KiB hostile line. */
static void test_regex_prefix(void **state) {
        static char long_line[TUNE_CMDLINE_MAX + 1];
        fake_proc p = vllm_worker;
        tune_policy_rule r = {};
        tune_proc_facts f;
        (void) state;

        set_cmdline(&r, "--npu_device_id[ =][0-9]+");
        memset(long_line, 'a', sizeof long_line - 1);
        memcpy(long_line + 100, " --npu_device_id 3", 18);
        p.cmdline = long_line;
        facts_for(&f, &p);
        assert_int_equal(tune_rule_matches(&r, &f), 1);
        tune_proc_facts_done(&f);
        memset(long_line + 100, 'a', 18);
        memcpy(long_line + TUNE_MATCH_REGEX_PREFIX + 10, " --npu_device_id 3", 18);
        facts_for(&f, &p);
        assert_int_equal(tune_rule_matches(&r, &f), 0);
        tune_proc_facts_done(&f);
        rule_done(&r);
}

/* A cmdline criterion that is plain text is matched by a substring search, which must give
 * the regex's answer on every line: at either end, in the middle, absent, past the
 * prefix or across its end; text with any ERE operator stays a regex. Rules as the policy
 * parser makes them. */
static void test_cmdline_literal(void **state) {
        static const struct { const char *re; bool literal; } patterns[] = {
                { "placement-latency --child", true },
                { "vllm serve", true },
                { "a,b=c:d/e_f~g@h%i#j!k&l;m<n>o\"p'q`r", true },
                { "vllm.entrypoints", false },
                { "^vllm", false },
                { "vllm$", false },
                { "a+b", false },
                { "(x)", false },
                { "x|y", false },
                { "x\\ y", false },
        };
        static char line[TUNE_CMDLINE_MAX + 1];
        const char *subjects[] = { "placement-latency --child 3", "x placement-latency --child", "vllm serve --model m",
                                   "vllm  serve", "VLLM SERVE", "", "python3 -m vllm.entrypoints.openai", "xvllm",
                                   "a+b x|y (x) x y", "a,b=c:d/e_f~g@h%i#j!k&l;m<n>o\"p'q`r" };
        (void) state;

        for (size_t i = 0; i < ELEMENTSOF(patterns); i++) {
                char json[512], esc[128];
                tune_policy *pol = NULL;
                tune_policy_errors errors = {};
                regex_t re;
                size_t k = 0;

                for (const char *c = patterns[i].re; *c; c++) {
                        if (*c == '"' || *c == '\\')
                                esc[k++] = '\\';
                        esc[k++] = *c;
                }
                esc[k] = 0;
                snprintf(json, sizeof json,
                         "{\"version\": 1, \"processes\": [{\"name\": \"r\", \"match\": {\"cmdline\": \"%s\"}}]}", esc);
                assert_int_equal(tune_policy_parse_string(json, "t.json", &pol, &errors), 0);
                tune_policy_errors_done(&errors);
                const tune_policy_rule *r = &pol->rules[0];
                assert_true(r->has_match_cmdline);
                assert_int_equal(r->match_cmdline_literal, patterns[i].literal);
                assert_int_equal(regcomp(&re, patterns[i].re, REG_EXTENDED | REG_NOSUB), 0);

                for (size_t j = 0; j <= ELEMENTSOF(subjects) + 1; j++) {
                        fake_proc p = { .comm = "x", .exe = "/x", .uid = 0 };
                        tune_proc_facts f;
                        int want;

                        if (j < ELEMENTSOF(subjects)) {
                                p.cmdline = subjects[j];
                                want = regexec(&re, subjects[j], 0, NULL, 0) == 0;
                        } else {
                                /* The text past the prefix, then across its end: the regex
                                 * sees the prefix only. */
                                size_t at = j == ELEMENTSOF(subjects) ? TUNE_MATCH_REGEX_PREFIX + 5
                                                                        : TUNE_MATCH_REGEX_PREFIX - 3;
                                memset(line, 'z', sizeof line - 1);
                                memcpy(line + at, patterns[i].re, strlen(patterns[i].re));
                                p.cmdline = line;
                                char c = line[TUNE_MATCH_REGEX_PREFIX];
                                line[TUNE_MATCH_REGEX_PREFIX] = 0;
                                want = regexec(&re, line, 0, NULL, 0) == 0;
                                line[TUNE_MATCH_REGEX_PREFIX] = c;
                                if (patterns[i].literal)
                                        assert_int_equal(want, 0);
                        }
                        facts_for(&f, &p);
                        assert_int_equal(tune_rule_matches(r, &f), want);
                        tune_proc_facts_done(&f);
                }
                regfree(&re);
                tune_policy_free(pol);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_criteria),
                cmocka_unit_test(test_cgroup_prefix),
                cmocka_unit_test(test_glob_match),
                cmocka_unit_test(test_policy_order_and_retitle),
                cmocka_unit_test(test_kept_before_cmdline),
                cmocka_unit_test(test_rank),
                cmocka_unit_test(test_regex_prefix),
                cmocka_unit_test(test_cmdline_literal),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
