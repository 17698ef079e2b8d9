/* SPDX-License-Identifier: GPL-2.0-only */
/* /proc parsers on real formats and hostile text; readers on a fake tree and on
 * ourselves. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake-proc.h"

#include "npu-tuned/context.h"
#include "npu-tuned/macro.h"
#include "npu-tuned/match.h"
#include "npu-tuned/proc.h"

/* A real line (python3 retitled), fields 1..22+. */
static const char stat_real[] =
        "4242 (VLLM::Worker_TP) S 4200 4200 4100 34816 4200 4194560 32123 0 12 0 3456 789 0 0 20 0 57 0 "
        "123456789 12345678901 234567 18446744073709551615 1 1 0 0 0 0 0 16781312 16386 0 0 0 17 1 0 0 0 0 0\n";

static void test_stat(void **state) {
        tune_proc_stat st;
        (void) state;

        assert_int_equal(tune_parse_proc_stat(stat_real, &st), 0);
        assert_int_equal(st.pid, 4242);
        assert_string_equal(st.comm, "VLLM::Worker_TP");
        assert_int_equal(st.state, 'S');
        assert_int_equal(st.ppid, 4200);
        assert_int_equal(st.flags, 4194560);
        assert_true(st.start_time == 123456789ULL);
        assert_true(st.env_start == 0 && st.env_end == 0); /* the line ends before field 50 */
        /* A whole line of Linux 6.1 (52 fields): where the exec put the environment. */
        assert_int_equal(tune_parse_proc_stat("183 (VLLM::Worker_TP) S 171 171 1 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 7 0 809 "
                                              "26927104 1040 18446744073709551615 94797434417152 94797434427937 "
                                              "140732962404304 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 94797434437232 "
                                              "94797434438696 94797452255232 140732962411211 140732962411238 "
                                              "140732962411238 140732962414567 0\n", &st), 0);
        assert_true(st.start_time == 809);
        assert_true(st.env_start == 140732962411238ULL);
        assert_true(st.env_end == 140732962414567ULL);

        /* A comm holding ") (" and spaces: the LAST ')' ends it. */
        assert_int_equal(tune_parse_proc_stat("7 (a) (b c) R 1 7 7 0 -1 2097216 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0\n", &st), 0);
        assert_string_equal(st.comm, "a) (b c");
        assert_int_equal(st.ppid, 1);
        assert_true(st.flags & TUNE_PF_KTHREAD);
        assert_true(st.start_time == 99);
        /* Empty comm is allowed by the kernel (prctl with ""). */
        assert_int_equal(tune_parse_proc_stat("8 () S 1 8 8 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0\n", &st), 0);
        assert_string_equal(st.comm, "");

        /* Garbage. */
        assert_int_equal(tune_parse_proc_stat("", &st), -EBADMSG);
        assert_int_equal(tune_parse_proc_stat("4242 VLLM S 1", &st), -EBADMSG);
        assert_int_equal(tune_parse_proc_stat("x (a) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", &st), -EBADMSG);
        assert_int_equal(tune_parse_proc_stat("-4 (a) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", &st), -EBADMSG);
        /* Cut before field 22. */
        assert_int_equal(tune_parse_proc_stat("4242 (a) S 4200 4200 4100 34816 4200 4194560 32123 0 12\n", &st), -EBADMSG);
        /* A comm longer than the kernel allows. */
        assert_int_equal(tune_parse_proc_stat("1 (0123456789abcdefg) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0\n", &st), -EBADMSG);
        /* Start time past 64 bits. */
        assert_int_equal(tune_parse_proc_stat("1 (a) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99999999999999999999999 0\n", &st), -ERANGE);
        /* Letters where numbers go. */
        assert_int_equal(tune_parse_proc_stat("1 (a) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12x 0\n", &st), -EBADMSG);
        assert_int_equal(tune_parse_proc_stat("1 (a) S zero 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12 0\n", &st), -EBADMSG);
        assert_int_equal(tune_parse_proc_stat(NULL, &st), -EINVAL);
}

static void test_status(void **state) {
        tune_proc_status s;
        (void) state;

        assert_int_equal(tune_parse_proc_status("Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\n"
                                                "Ngid:\t0\nPid:\t4242\nPPid:\t4200\nTracerPid:\t0\n"
                                                "Uid:\t1000\t0\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n",
                                                &s),
                         0);
        assert_int_equal(s.tgid, 4242);
        assert_int_equal(s.ppid, 4200);
        assert_int_equal(s.ruid, 1000);
        assert_int_equal(s.euid, 0);
        assert_int_equal(tune_parse_proc_status("Tgid:\t1\nPPid:\t0\n", &s), -EBADMSG);
        assert_int_equal(tune_parse_proc_status("Tgid:\t1\nPPid:\t0\nUid:\tx\t0\t0\t0\n", &s), -EBADMSG);
        assert_int_equal(tune_parse_proc_status("Tgid:\t1\nPPid:\t0\nUid:\t-1\t0\t0\t0\n", &s), -EBADMSG);
        assert_int_equal(tune_parse_proc_status("Tgid:\t1\nPPid:\t0\nUid:\t5\n", &s), -EBADMSG);
        /* The numbers as strtol() reads them (what the parse did before it read them by
         * hand): a sign, a tail after the digits, the bounds. */
        assert_int_equal(tune_parse_proc_status("Tgid:\t+7x\nPPid:\t-0\nUid:\t5 \t+6\t0\t0\n", &s), 0);
        assert_int_equal(s.tgid, 7);
        assert_int_equal(s.ppid, 0);
        assert_int_equal(s.ruid, 5);
        assert_int_equal(s.euid, 6);
        assert_int_equal(tune_parse_proc_status("Tgid:\t2147483647\nPPid:\t0\nUid:\t4294967294 0\n", &s), 0);
        assert_int_equal(s.tgid, 2147483647);
        assert_int_equal(s.ruid, 4294967294u);
        assert_int_equal(tune_parse_proc_status("Tgid:\t2147483648\nPPid:\t0\nUid:\t0 0\n", &s), -EBADMSG);
        assert_int_equal(tune_parse_proc_status("Tgid:\t1\nPPid:\t0\nUid:\t4294967295 0\n", &s), -EBADMSG);
        assert_int_equal(tune_parse_proc_status("Tgid:\t99999999999999999999\nPPid:\t0\nUid:\t0 0\n", &s), -EBADMSG);
        assert_int_equal(tune_parse_proc_status("Tgid:\t1\nPPid:\t-3\nUid:\t0 0\n", &s), -EBADMSG);
        assert_int_equal(tune_parse_proc_status("Tgid:\t1\nPPid:\t0\nUid:\t0 x\n", &s), -EBADMSG);
        assert_int_equal(tune_parse_proc_status("Tgid:\t+\nPPid:\t0\nUid:\t0 0\n", &s), -EBADMSG);
}

/* The one-pass parse gives what the two parsers give, each part with its own result. */
static void assert_status_facts_agree(const char *text) {
        tune_status_facts f;
        tune_proc_status st;
        tune_creds c;

        memset(&f, 0xa5, sizeof f);
        assert_int_equal(tune_parse_status_facts(text, &f), 0);
        assert_int_equal(f.status_r, tune_parse_proc_status(text, &st));
        assert_int_equal(f.creds_r, tune_parse_creds(text, &c));
        if (f.status_r >= 0)
                assert_memory_equal(&f.status, &st, sizeof st);
        if (f.creds_r >= 0) {
                assert_int_equal(f.creds.ruid, c.ruid);
                assert_int_equal(f.creds.euid, c.euid);
                assert_int_equal(f.creds.fsuid, c.fsuid);
                assert_int_equal(f.creds.fsgid, c.fsgid);
                assert_int_equal(f.creds.n_groups, c.n_groups);
                assert_int_equal(f.creds.groups_truncated, c.groups_truncated);
                assert_memory_equal(f.creds.groups, c.groups, c.n_groups * sizeof(gid_t));
        }
}

static void test_status_facts(void **state) {
        static const char full[] = "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nNgid:\t0\n"
                                   "Pid:\t4242\nPPid:\t4200\nTracerPid:\t0\nUid:\t1000\t0\t1000\t1001\n"
                                   "Gid:\t100\t100\t100\t102\nFDSize:\t64\nGroups:\t4 24 27 \nNStgid:\t4242\n"
                                   "NSpid:\t4242\nVmPeak:\t  1000 kB\n";
        tune_status_facts f;
        (void) state;

        assert_int_equal(tune_parse_status_facts(full, &f), 0);
        assert_int_equal(f.status_r, 0);
        assert_int_equal(f.status.tgid, 4242);
        assert_int_equal(f.status.ppid, 4200);
        assert_int_equal(f.status.ruid, 1000);
        assert_int_equal(f.status.euid, 0);
        assert_int_equal(f.creds_r, 0);
        assert_int_equal(f.creds.fsuid, 1001);
        assert_int_equal(f.creds.fsgid, 102);
        assert_int_equal(f.creds.n_groups, 3);
        assert_int_equal(f.creds.groups[2], 27);
        assert_status_facts_agree(full);
        /* Blanks around the key, keys that only start like one, the first of two lines. */
        assert_status_facts_agree("  Tgid :\t7\nPPidx:\t9\nPPid:\t1\nGidx:\t1 1 1 1\nUid:\t0 0 0 0\n"
                                  "Uid:\t5 5 5 5\nGroupsy:\t1\nGid :\t3\t3\t3\t3\n\tGroups:\t\n");
        /* One part without its keys, the other whole: each result on its own. */
        assert_status_facts_agree("Tgid:\t7\nPPid:\t1\nUid:\t0 0 0 0\n");
        assert_status_facts_agree("Uid:\t0 0 0 0\nGid:\t0 0 0 0\nGroups:\t1 2\n");
        assert_status_facts_agree("Tgid:\t7\nPPid:\t1\nUid:\t0 0 0 0\nGid:\t0 0 0 0\nGroups:\t1 x\n");
        assert_status_facts_agree("Tgid:\t7\nPPid:\t1\nUid:\t0 0 0\nGid:\t0 0 0 0\n");
        assert_status_facts_agree("Tgid:\t7\nPPid:\t1\nUid:\t0 0 0 0\nGid:\t0 0 0 0");
        assert_status_facts_agree("");
        assert_int_equal(tune_parse_status_facts("Tgid:\t7\n", &f), 0);
        assert_int_equal(f.status_r, -EBADMSG);
        assert_int_equal(f.creds_r, -EBADMSG);
        assert_int_equal(tune_parse_status_facts(NULL, &f), -EINVAL);
}

static void test_proc_path(void **state) {
        char buf[64], small[12];
        (void) state;

        assert_int_equal(tune_proc_path(buf, sizeof buf, 12, 0, "stat"), 0);
        assert_string_equal(buf, "/proc/12/stat");
        assert_int_equal(tune_proc_path(buf, sizeof buf, 12, 13, "comm"), 0);
        assert_string_equal(buf, "/proc/12/task/13/comm");
        assert_int_equal(tune_proc_path(buf, sizeof buf, 2147483647, 2147483646, NULL), 0);
        assert_string_equal(buf, "/proc/2147483647/task/2147483646");
        assert_int_equal(tune_proc_path(buf, sizeof buf, 7, 0, NULL), 0);
        assert_string_equal(buf, "/proc/7");
        assert_int_equal(tune_proc_path(small, sizeof small, 12, 0, "stat"), -ENAMETOOLONG);
        assert_int_equal(tune_proc_path(small, sizeof small, 12, 0, "st"), 0); /* 11 bytes and the NUL */
        assert_string_equal(small, "/proc/12/st");
        assert_int_equal(tune_proc_path(buf, sizeof buf, 0, 0, "stat"), -EINVAL);
        assert_int_equal(tune_proc_path(buf, sizeof buf, 12, -1, "stat"), -EINVAL);
}

static void test_cgroup(void **state) {
        _cleanup_free_ char *a = NULL, *b = NULL;
        char *c = NULL;
        (void) state;

        assert_int_equal(tune_parse_proc_cgroup("0::/system.slice/vllm.service\n", &a), 0);
        assert_string_equal(a, "/system.slice/vllm.service");
        /* Hybrid hierarchy: v1 lines first. */
        assert_int_equal(tune_parse_proc_cgroup("12:cpuset:/\n1:name=systemd:/user.slice\n0::/user.slice/u.scope\n", &b), 0);
        assert_string_equal(b, "/user.slice/u.scope");
        assert_int_equal(tune_parse_proc_cgroup("12:cpuset:/\n", &c), -ENOENT);
        assert_int_equal(tune_parse_proc_cgroup("0::\n", &c), -EBADMSG);
        assert_int_equal(tune_parse_proc_cgroup("0::relative\n", &c), -EBADMSG);
        assert_null(c);
}

static void test_cmdline_comm_escape(void **state) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
        char comm[TUNE_COMM_MAX], buf[32];
        static const char args[] = "python3\0-m\0vllm.entrypoints\0";
        /* setproctitle: the title, then NUL padding over the old argv and environ. */
        static const char title[] = "VLLM::Worker_TP3\0\0\0\0\0\0\0\0\0";
        (void) state;

        assert_int_equal(tune_cmdline_join(args, sizeof args - 1, &a), 0);
        assert_string_equal(a, "python3 -m vllm.entrypoints");
        assert_int_equal(tune_cmdline_join(title, sizeof title - 1, &b), 0);
        assert_string_equal(b, "VLLM::Worker_TP3");
        assert_int_equal(tune_cmdline_join(NULL, 0, &c), 0);
        assert_string_equal(c, "");

        assert_int_equal(tune_parse_comm("acl_thread\n", comm), 0);
        assert_string_equal(comm, "acl_thread");
        assert_int_equal(tune_parse_comm("0123456789abcdef\n", comm), -EBADMSG);
        assert_int_equal(tune_parse_comm("a\nb\n", comm), -EBADMSG);

        tune_escape("ok name", buf, sizeof buf);
        assert_string_equal(buf, "ok name");
        tune_escape("a\nb\x1b[31m\\", buf, sizeof buf);
        assert_string_equal(buf, "a\\x0ab\\x1b[31m\\x5c");
        tune_escape("0123456789012345678901234567890123456789", buf, 16);
        assert_string_equal(buf, "012345678901...");
        assert_true(strlen(buf) < 16);
        tune_escape("\x01\x02\x03\x04\x05", buf, 12);
        assert_true(strlen(buf) < 12);
        tune_escape(NULL, buf, sizeof buf);
        assert_string_equal(buf, "(null)");
}

/* What goes on the bus and into tables: valid UTF-8 stays, the rest is escaped, and the
 * result is always clean (issue: a comm of \xff\xfeBAD broke ListProcesses for everyone). */
static void test_escape_utf8(void **state) {
        static const struct {
                const char *in, *out_bs, *out;
        } cases[] = {
                { "vllm", "vllm", "vllm" },
                { "\xff\xfe" "BAD", "\\xff\\xfeBAD", "\\xff\\xfeBAD" },
                { "\x1b]0;PWNED\x07\x1b[2J\n", "\\x1b]0;PWNED\\x07\\x1b[2J\\x0a", "\\x1b]0;PWNED\\x07\\x1b[2J\\x0a" },
                { "推理-服务", "推理-服务", "推理-服务" },          /* valid multibyte UTF-8 kept */
                { "a\xc2\x9b""31m", "a\\xc2\\x9b31m", "a\\xc2\\x9b31m" }, /* C1 CSI (U+009B) */
                { "\xc0\xaf", "\\xc0\\xaf", "\\xc0\\xaf" },           /* overlong '/' */
                { "\xed\xa0\x80", "\\xed\\xa0\\x80", "\\xed\\xa0\\x80" },  /* a surrogate */
                { "\xe6\x8e", "\\xe6\\x8e", "\\xe6\\x8e" },             /* truncated sequence */
                { "\xe6\x8eZ", "\\xe6\\x8eZ", "\\xe6\\x8eZ" },          /* ... and what follows read afresh */
                { "a\\b", "a\\x5cb", "a\\b" },
                { "", "", "" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *a = NULL, *b = NULL;
                assert_int_equal(tune_escape_utf8(cases[i].in, true, &a), 0);
                assert_string_equal(a, cases[i].out_bs);
                assert_int_equal(tune_escape_utf8(cases[i].in, false, &b), 0);
                assert_string_equal(b, cases[i].out);
                assert_true(tune_utf8_clean(a));
                assert_true(tune_utf8_clean(b));
                assert_int_equal(tune_utf8_clean(cases[i].in), streq(cases[i].in, cases[i].out));
        }
}

/* ---- A fake /proc ---- */

static char root[256];

static void put(const char *rel, const void *data, size_t len) {
        fake_proc_put(root, rel, data, len);
}
#define PUTS(rel, s) put(rel, s, strlen(s))

static int setup_fake(void **state) {
        snprintf(root, sizeof root, "/tmp/test-proc-XXXXXX");
        assert_non_null(mkdtemp(root));
        PUTS("proc/123/stat", "123 (python3) S 1 123 123 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 3 0 5555 0 0\n");
        PUTS("proc/123/status", "Name:\tpython3\nTgid:\t123\nPPid:\t1\nUid:\t0\t0\t0\t0\n");
        PUTS("proc/123/comm", "python3\n");
        put("proc/123/cmdline", "python3\0serve\0", 14);
        put("proc/123/environ", "PATH=/bin\0CUDA_VISIBLE_DEVICES=1,0\0", 35);
        PUTS("proc/123/cgroup", "0::/system.slice/x.service\n");
        PUTS("proc/123/task/123/comm", "python3\n");
        PUTS("proc/123/task/130/comm", "acl_thread\n");
        PUTS("proc/123/task/125/comm", "hccl_watchdog_t\n");
        PUTS("proc/123/task/notanumber/comm", "x\n");
        {
                char path[512];
                snprintf(path, sizeof path, "%s/proc/123/exe", root);
                assert_int_equal(symlink("/usr/bin/python3.11 (deleted)", path), 0);
                /* environ that cannot be read: a directory */
                snprintf(path, sizeof path, "%s/proc/456/environ/", root);
                fake_proc_mkparents(path);
        }
        PUTS("proc/456/stat", "456 (x) S 1 456 456 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7 0 0\n");
        /* A huge environ, with our variable past the read bound. */
        {
                size_t big = TUNE_ENVIRON_MAX + 100;
                char *e = malloc(big);
                assert_non_null(e);
                memset(e, 'A', big);
                memcpy(e, "X=", 2);
                e[TUNE_ENVIRON_MAX - 10] = 0;
                memcpy(e + TUNE_ENVIRON_MAX + 20, "\0CUDA_VISIBLE_DEVICES=3", 23);
                put("proc/789/environ", e, big);
                free(e);
        }
        *state = NULL;
        return 0;
}

static int teardown_fake(void **state) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
        return 0;
}

static void test_readers_fake(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_free_ char *cmdline = NULL, *exe = NULL, *cgroup = NULL, *env = NULL, *env2 = NULL;
        _cleanup_free_ pid_t *tids = NULL, *pids = NULL;
        _cleanup_free_ dev_t *devs = NULL;
        tune_proc_stat st;
        tune_proc_status status;
        char comm[TUNE_COMM_MAX];
        size_t n, len;
        bool truncated;
        (void) state;

        assert_int_equal(tune_ctx_new(root, &ctx), 0);
        assert_int_equal(tune_proc_read_stat(ctx, 123, &st), 0);
        assert_true(st.start_time == 5555);
        assert_int_equal(tune_proc_read_status(ctx, 123, &status), 0);
        assert_int_equal(status.ruid, 0);
        {
                /* A Groups line past TUNE_STATUS_MAX: read up to it, as both readers see. */
                static const char head[] = "Tgid:\t321\nPPid:\t1\nUid:\t7\t7\t7\t8\nGid:\t9\t9\t9\t10\nGroups:\t";
                size_t big = TUNE_STATUS_MAX + 4096, o = sizeof head - 1;
                char *text = malloc(big);
                tune_status_facts f;
                tune_creds c;
                assert_non_null(text);
                memcpy(text, head, o);
                for (unsigned g = 1000; o + 7 < big; g++)
                        o += (size_t) sprintf(text + o, "%u ", g);
                fake_proc_put(root, "proc/321/status", text, o);
                free(text);
                assert_int_equal(tune_proc_read_status_facts(ctx, 321, &f), 0);
                assert_int_equal(f.status_r, 0);
                assert_int_equal(f.status.tgid, 321);
                assert_int_equal(f.creds_r, 0);
                assert_int_equal(tune_proc_read_creds(ctx, 321, &c), 0);
                assert_int_equal(f.creds.fsuid, 8);
                assert_int_equal(c.fsgid, 10);
                assert_int_equal(f.creds.n_groups, TUNE_CREDS_GROUPS_MAX);
                assert_true(f.creds.groups_truncated && c.groups_truncated);
                assert_int_equal(f.creds.groups[TUNE_CREDS_GROUPS_MAX - 1], c.groups[TUNE_CREDS_GROUPS_MAX - 1]);
                assert_int_equal(tune_proc_read_status_facts(ctx, 99999, &f), -ENOENT);
                char path[sizeof root + 32];
                snprintf(path, sizeof path, "%s/proc/321/status", root);
                assert_int_equal(unlink(path), 0);
                *strrchr(path, '/') = 0;
                assert_int_equal(rmdir(path), 0); /* the pid list below is the setup's */
        }
        assert_int_equal(tune_proc_read_comm(ctx, 123, 0, comm), 0);
        assert_string_equal(comm, "python3");
        assert_int_equal(tune_proc_read_comm(ctx, 123, 130, comm), 0);
        assert_string_equal(comm, "acl_thread");
        assert_int_equal(tune_proc_read_cmdline(ctx, 123, &cmdline), 0);
        assert_string_equal(cmdline, "python3 serve");
        assert_int_equal(tune_proc_read_exe(ctx, 123, &exe), 0);
        assert_string_equal(exe, "/usr/bin/python3.11");
        assert_int_equal(tune_proc_read_cgroup(ctx, 123, &cgroup), 0);
        assert_string_equal(cgroup, "/system.slice/x.service");
        assert_int_equal(tune_proc_read_environ(ctx, 123, &env, &len, &truncated), 0);
        assert_int_equal(len, 35);
        assert_false(truncated);
        assert_int_equal(tune_proc_list_tasks(ctx, 123, &tids, &n), 0);
        assert_int_equal(n, 3);
        assert_int_equal(tids[0], 123);
        assert_int_equal(tids[1], 125);
        assert_int_equal(tids[2], 130);
        assert_int_equal(tune_proc_list_pids(ctx, &pids, &n), 0);
        assert_int_equal(n, 3);
        assert_int_equal(pids[0], 123);
        assert_int_equal(pids[2], 789);

        /* An environ that cannot be read. */
        char *x = NULL;
        assert_true(tune_proc_read_environ(ctx, 456, &x, &len, &truncated) < 0);
        assert_null(x);
        /* A vanished process. */
        assert_int_equal(tune_proc_read_stat(ctx, 999, &st), -ENOENT);
        assert_int_equal(tune_proc_read_comm(ctx, 999, 0, comm), -ENOENT);
        /* Bounded: cut at TUNE_ENVIRON_MAX, and told so. */
        assert_int_equal(tune_proc_read_environ(ctx, 789, &env2, &len, &truncated), 0);
        assert_int_equal(len, TUNE_ENVIRON_MAX);
        assert_true(truncated);
        /* Device numbers need the live system. */
        assert_int_equal(tune_proc_list_char_devices(ctx, 123, &devs, &n), -EOPNOTSUPP);
        assert_int_equal(tune_proc_read_stat(ctx, 0, &st), -EINVAL);
}

static int count_loads;
static int counting_loader(tune_proc_facts *f, tune_fact fact, void *userdata) {
        count_loads++;
        return tune_proc_facts_load_from_proc(f, fact, userdata);
}

static void test_facts_loader(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        tune_proc_facts f;
        (void) state;

        assert_int_equal(tune_ctx_new(root, &ctx), 0);
        tune_proc_facts_init(&f, ctx, 123, NULL);
        f.load = counting_loader;
        count_loads = 0;
        assert_true(tune_proc_facts_get(&f, TUNE_FACT_COMM));
        assert_string_equal(f.comm, "python3");
        assert_true(tune_proc_facts_get(&f, TUNE_FACT_CGROUP));
        assert_true(tune_proc_facts_get(&f, TUNE_FACT_CGROUP)); /* cached */
        assert_int_equal(count_loads, 2);
        assert_true(tune_proc_facts_get(&f, TUNE_FACT_UID));
        assert_int_equal(f.uid, 0);
        tune_proc_facts_done(&f);

        /* Unreadable: failed once, not retried. */
        tune_proc_facts_init(&f, ctx, 999, "given");
        f.load = counting_loader;
        count_loads = 0;
        assert_true(tune_proc_facts_get(&f, TUNE_FACT_COMM)); /* given, no read */
        assert_false(tune_proc_facts_get(&f, TUNE_FACT_EXE));
        assert_false(tune_proc_facts_get(&f, TUNE_FACT_EXE));
        assert_int_equal(count_loads, 1);
        tune_proc_facts_done(&f);
}

/* The readers on ourselves, through the live root. */
static void test_readers_live(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_free_ dev_t *devs = NULL;
        _cleanup_free_ char *exe = NULL;
        _cleanup_close_ int fd = -EBADF;
        tune_proc_stat st;
        struct stat null_st;
        char comm[TUNE_COMM_MAX];
        size_t n;
        dev_t rdev;
        (void) state;

        assert_int_equal(tune_ctx_new("/", &ctx), 0);
        assert_int_equal(tune_proc_read_stat(ctx, getpid(), &st), 0);
        assert_int_equal(st.pid, getpid());
        assert_int_equal(st.ppid, getppid());
        assert_true(st.start_time > 0);
        assert_int_equal(tune_proc_read_comm(ctx, getpid(), 0, comm), 0);
        assert_string_equal(comm, "test-proc");
        assert_int_equal(tune_proc_read_exe(ctx, getpid(), &exe), 0);
        assert_non_null(strstr(exe, "test-proc"));

        fd = open("/dev/full", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(stat("/dev/full", &null_st), 0);
        assert_int_equal(tune_read_rdev(ctx, "/dev/full", &rdev), 0);
        assert_true(rdev == null_st.st_rdev);
        assert_int_equal(tune_read_rdev(ctx, "/etc/hostname", &rdev), -ENOTTY);
        assert_int_equal(tune_proc_list_char_devices(ctx, getpid(), &devs, &n), 0);
        bool found = false;
        for (size_t i = 0; i < n; i++) {
                if (devs[i] == null_st.st_rdev)
                        found = true;
                if (i > 0)
                        assert_true(devs[i - 1] < devs[i]); /* sorted, unique */
        }
        assert_true(found);
}

/* /proc/PID/task/TID/children: "1 2 3 " (the kernel's trailing space), bounded. */
static void test_pid_list(void **state) {
        pid_t l[3];
        size_t n = 99;
        (void) state;

        assert_int_equal(tune_parse_pid_list("", 3, l, &n), 0);
        assert_int_equal(n, 0);
        assert_int_equal(tune_parse_pid_list("171 183 184 ", 3, l, &n), 0);
        assert_int_equal(n, 3);
        assert_int_equal(l[0], 171);
        assert_int_equal(l[2], 184);
        assert_int_equal(tune_parse_pid_list("1 2 3 4 5\n", 3, l, &n), 0);
        assert_int_equal(n, 3); /* the first max */
        assert_int_equal(tune_parse_pid_list("12 x3 ", 3, l, &n), -EBADMSG);
        assert_int_equal(tune_parse_pid_list("0 ", 3, l, &n), -EBADMSG);
        assert_int_equal(tune_parse_pid_list("99999999999 ", 3, l, &n), -EBADMSG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stat),
                cmocka_unit_test(test_status),
                cmocka_unit_test(test_status_facts),
                cmocka_unit_test(test_proc_path),
                cmocka_unit_test(test_cgroup),
                cmocka_unit_test(test_cmdline_comm_escape),
                cmocka_unit_test(test_escape_utf8),
                cmocka_unit_test(test_pid_list),
                cmocka_unit_test_setup_teardown(test_readers_fake, setup_fake, teardown_fake),
                cmocka_unit_test_setup_teardown(test_facts_loader, setup_fake, teardown_fake),
                cmocka_unit_test(test_readers_live),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
