/* SPDX-License-Identifier: GPL-2.0-only */
/* The watcher's attribution of processes it finds already running (the start-up scan,
 * --explain), on a fake /proc: a vLLM-shaped server whose TP workers wiped their
 * environment with setproctitle, the visible list "1,0" only in the launcher's.
 *
 *   pid 1            init, EDU_VISIBLE_DEVICES=0,1 (must never stand in)
 *   pid 4000100      python3 -m vllm serve, EDU_VISIBLE_DEVICES=1,0 (the launcher)
 *     4000101/102    VLLM::Worker_TP0/1, environ wiped
 *   pid 4000200      bash (no rule could match it), EDU_VISIBLE_DEVICES=0,1
 *     4000201        python3, environ wiped (an sglang-like launcher)
 *       4000202      VLLM::Worker_TP0, environ wiped
 *   pid 4000301      VLLM::Worker_TP0 whose launcher died: ppid 1, environ wiped
 *
 * and, added by the tests of launcher shapes (each its own pids, 40008xx-40011xx): a
 * launcher no rule could match that passed its environment on unchanged, an intermediate
 * "python3 -c ... spawn_main" process, a launcher that wiped its own environment after
 * starting children that kept theirs.
 *
 * The pids are high so that pidfd_open() on the real kernel finds nothing. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake-proc.h"
#include <systemd/sd-event.h>

#include "npu-tuned/context.h"
#include "npu-tuned/policy.h"
#include "watcher.h"

static char root[256];

static void put(const char *rel, const void *data, size_t len) {
        fake_proc_put(root, rel, data, len);
}

/* One process: stat (start time = pid, so ancestors start first), status, comm, exe,
 * cmdline (words separated by NULs) and environ as given (len bytes). */
static void process(int pid, int ppid, const char *comm, const char *exe, const char *cmdline, const char *env,
                    size_t env_len) {
        char rel[128], buf[512], path[512];
        int n;

        snprintf(rel, sizeof rel, "proc/%d/stat", pid);
        n = snprintf(buf, sizeof buf, "%d (%s) S %d %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid, comm,
                     ppid, pid, pid, pid);
        put(rel, buf, (size_t) n);
        snprintf(rel, sizeof rel, "proc/%d/status", pid);
        n = snprintf(buf, sizeof buf, "Name:\t%s\nTgid:\t%d\nPPid:\t%d\nUid:\t0\t0\t0\t0\n", comm, pid, ppid);
        put(rel, buf, (size_t) n);
        snprintf(rel, sizeof rel, "proc/%d/comm", pid);
        n = snprintf(buf, sizeof buf, "%s\n", comm);
        put(rel, buf, (size_t) n);
        snprintf(rel, sizeof rel, "proc/%d/task/%d/comm", pid, pid);
        put(rel, buf, (size_t) n);
        snprintf(rel, sizeof rel, "proc/%d/cmdline", pid);
        n = snprintf(buf, sizeof buf, "%s", cmdline);
        for (int i = 0; i < n; i++)
                if (buf[i] == ' ')
                        buf[i] = 0;
        put(rel, buf, (size_t) n + 1);
        snprintf(rel, sizeof rel, "proc/%d/environ", pid);
        put(rel, env, env_len);
        snprintf(path, sizeof path, "%s/proc/%d/exe", root, pid);
        assert_int_equal(symlink(exe, path), 0);
}

static const char wiped[64]; /* what setproctitle leaves: NULs */
#define ENV(s) s, sizeof(s) - 1

/* An environment of exactly sizeof(wiped) bytes holding var: the one a worker was given
 * before setproctitle wiped it (the wipe keeps its size). */
static const char *env_sized(char buf[static sizeof wiped], const char *var) {
        size_t n = strlen(var) + 1;

        memset(buf, 0, sizeof wiped);
        memcpy(buf, var, n);
        memcpy(buf + n, "PAD=", 4);
        memset(buf + n + 4, 'x', sizeof wiped - n - 5);
        return buf;
}

/* Its real uid, and its children as /proc/PID/task/PID/children lists them. */
static void set_uid(int pid, const char *comm, int ppid, unsigned uid) {
        char rel[128], buf[256];
        int n;

        snprintf(rel, sizeof rel, "proc/%d/status", pid);
        n = snprintf(buf, sizeof buf, "Name:\t%s\nTgid:\t%d\nPPid:\t%d\nUid:\t%u\t%u\t%u\t%u\n", comm, pid, ppid, uid,
                     uid, uid, uid);
        put(rel, buf, (size_t) n);
}

static void set_children(int pid, const char *list) {
        char rel[128];

        snprintf(rel, sizeof rel, "proc/%d/task/%d/children", pid, pid);
        put(rel, list, strlen(list));
}

static const char policy_json[] =
        "{ \"version\": 1,"
        "  \"accelerators\": { \"kinds\": [ { \"name\": \"edu\", \"pci_id\": \"1234:11e8\","
        "                                   \"visible_devices_env\": \"EDU_VISIBLE_DEVICES\" } ] },"
        "  \"processes\": [ { \"name\": \"vllm-worker\","
        "    \"match\": { \"exe\": \"*/python3*\", \"cmdline\": \"^[A-Za-z0-9_.-]+::Worker(_[A-Z]+[0-9]+)*( |$)\" },"
        "    \"accelerators\": \"auto\", \"rank\": { \"from\": \"cmdline\", \"regex\": \"_TP([0-9]+)\" } } ] }";

static tune_accel edu_items[2];
static tune_accels edu = { .items = edu_items, .n = 2 };

static int setup(void **state) {
        snprintf(root, sizeof root, "/tmp/test-watcher-scan-XXXXXX");
        assert_non_null(mkdtemp(root));
        process(1, 0, "init", "/usr/lib/systemd/systemd", "/sbin/init", ENV("EDU_VISIBLE_DEVICES=0,1\0"));
        process(4000100, 1, "python3", "/usr/bin/python3.11", "python3 -m vllm.entrypoints.openai.api_server",
                ENV("PATH=/bin\0EDU_VISIBLE_DEVICES=1,0\0"));
        process(4000101, 4000100, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP0", wiped, sizeof wiped);
        process(4000102, 4000100, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP1", wiped, sizeof wiped);
        process(4000200, 1, "bash", "/usr/bin/bash", "bash run.sh", ENV("EDU_VISIBLE_DEVICES=0,1\0"));
        process(4000201, 4000200, "python3", "/usr/bin/python3.11", "python3 launch.py", wiped, sizeof wiped);
        process(4000202, 4000201, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP0", wiped, sizeof wiped);
        process(4000301, 1, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP0", wiped, sizeof wiped);
        for (int i = 0; i < 2; i++) {
                edu_items[i] = (tune_accel){ .index = i, .vendor = 0x1234, .device = 0x11e8, .numa_node = 1 + 2 * i };
                snprintf(edu_items[i].kind, sizeof edu_items[i].kind, "edu");
                snprintf(edu_items[i].pci, sizeof edu_items[i].pci, "0000:%02x:00.0", 0x21 + 0x40 * i);
        }
        *state = NULL;
        return 0;
}

static int teardown(void **state) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
        return 0;
}

typedef struct fixture {
        tune_ctx *ctx;
        tune_policy *policy;
        sd_event *event;
        Watcher *w;
} fixture;

static void fixture_open(fixture *f) {
        watcher_params params;

        assert_int_equal(tune_ctx_new(root, &f->ctx), 0);
        tune_policy_errors errors = {};
        int r = tune_policy_parse_string(policy_json, "test.json", &f->policy, &errors);
        for (unsigned i = 0; i < errors.n; i++) {
                char *m = NULL;
                (void) tune_policy_error_format(&errors.items[i], &m);
                fprintf(stderr, "policy: %s\n", m);
                free(m);
        }
        tune_policy_errors_done(&errors);
        assert_int_equal(r, 0);
        assert_int_equal(sd_event_new(&f->event), 0);
        watcher_params_from_policy(f->policy, &params);
        assert_int_equal(watcher_new(f->event, f->ctx, &edu, f->policy, &params, NULL, NULL, &f->w), 0);
}

static void fixture_close(fixture *f) {
        watcher_release_all(f->w);
        watcher_free(f->w);
        sd_event_unref(f->event);
        tune_policy_free(f->policy);
        tune_ctx_free(f->ctx);
}

static void expect(Watcher *w, pid_t pid, tune_attribution_source source, const char *accels, bool refused,
                   pid_t env_from) {
        managed_process *p = NULL;
        char *s = NULL;

        assert_int_equal(watcher_evaluate_pid(w, pid, &p), 0);
        assert_int_equal(tune_attribution_format_accels(&p->attribution, &s), 0);
        fprintf(stderr, "pid %d: rank %d, %s from %s%s, environment %s from %d\n", (int) pid, p->rank, s,
                tune_attribution_source_to_string(p->attribution.source), p->attribution.rank_refused ? " (refused)" : "",
                tune_env_state_to_string(p->env.state), (int) p->env.from_pid);
        assert_string_equal(s, accels);
        assert_int_equal(p->attribution.source, source);
        assert_int_equal(p->attribution.rank_refused, refused);
        if (env_from)
                assert_int_equal(p->env.from_pid, env_from);
        free(s);
}

/* Each worker alone, first: nothing of its launcher is in the registry (--explain's first
 * evaluation; a scan that meets a worker before its launcher). The launcher's environment
 * in /proc stands in: visible[rank], not device rank. */
static void test_launcher_environment(void **state) {
        fixture f = {};
        (void) state;

        fixture_open(&f);
        expect(f.w, 4000101, TUNE_ATTRIBUTION_ENV_INHERITED, "edu:1", false, 4000100);
        expect(f.w, 4000102, TUNE_ATTRIBUTION_ENV_INHERITED, "edu:0", false, 4000100);
        fixture_close(&f);
}

/* The launcher wiped its own environment too; the shell above it is no process a rule
 * could match, so its environment does not stand in (it need not be what the launcher
 * passed on). Nor does init's, for a worker whose launcher died. No guess: unattributed,
 * rank refused. */
static void test_no_guess(void **state) {
        fixture f = {};
        (void) state;

        fixture_open(&f);
        expect(f.w, 4000202, TUNE_ATTRIBUTION_NONE, "", true, 0);
        expect(f.w, 4000301, TUNE_ATTRIBUTION_NONE, "", true, 0);
        fixture_close(&f);
}

/* A worker that is not a descendant of the pid in its stat (the pid was reused by a
 * process that started later): not an ancestor, not used. */
static void test_reused_parent_pid(void **state) {
        fixture f = {};
        (void) state;

        process(4000401, 4000500, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP1", wiped, sizeof wiped);
        process(4000500, 1, "python3", "/usr/bin/python3.11", "python3 other.py", ENV("EDU_VISIBLE_DEVICES=1,0\0"));
        fixture_open(&f);
        expect(f.w, 4000401, TUNE_ATTRIBUTION_NONE, "", true, 0);
        fixture_close(&f);
}

/* An ancestor's environment is read once (watcher-ancestry.c): the second worker of a
 * launcher is attributed from what the first one's walk read, even when the launcher's
 * environ can no longer be read. */
static void test_ancestor_read_once(void **state) {
        fixture f = {};
        char rel[300];
        (void) state;

        fixture_open(&f);
        expect(f.w, 4000101, TUNE_ATTRIBUTION_ENV_INHERITED, "edu:1", false, 4000100);
        snprintf(rel, sizeof rel, "%s/proc/4000100/environ", root);
        assert_int_equal(unlink(rel), 0);
        expect(f.w, 4000102, TUNE_ATTRIBUTION_ENV_INHERITED, "edu:0", false, 4000100);
        fixture_close(&f);
}

/* The walk's reads are bounded (docs/trust.md, "Bounded work"): per walk, 1 MiB of
 * environment; per user, 4 MiB a second. Eight python3 ancestors with 600 KiB of
 * environment holding no NAME=value (so it counts as wiped) above the launcher: each
 * worker's walk reads two of them and stops, the next one starts where the kept answers
 * end, and once its user has read 4 MiB within a second a walk goes without until the
 * next. Before: every walk read all eight, 4.8 MB, for every worker that renamed itself. */
static void test_ancestor_walk_bounded(void **state) {
        static char big[600 * 1024];
        watcher_stats st;
        fixture f = {};
        (void) state;

        memset(big, 'a', sizeof big);
        process(4000600, 1, "python3", "/usr/bin/python3.11", "python3 -m vllm.entrypoints.openai.api_server",
                ENV("PATH=/bin\0EDU_VISIBLE_DEVICES=1,0\0"));
        for (int i = 0; i < 8; i++)
                process(4000601 + i, 4000600 + i, "python3", "/usr/bin/python3.11", "python3 -c pass", big, sizeof big);
        for (int i = 0; i < 6; i++)
                process(4000700 + i, 4000608, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP0", wiped,
                        sizeof wiped);
        fixture_open(&f);
        for (int i = 0; i < 3; i++) /* 1.2 MB each: two ancestors, then out of this walk's budget */
                expect(f.w, 4000700 + i, TUNE_ATTRIBUTION_NONE, "", true, 0);
        watcher_get_stats(f.w, &st);
        assert_int_equal(st.ancestry_limited, 0);
        /* 3.6 MB read: one more ancestor, and this user's second is spent. */
        expect(f.w, 4000703, TUNE_ATTRIBUTION_NONE, "", true, 0);
        watcher_get_stats(f.w, &st);
        assert_int_equal(st.ancestry_limited, 1);
        /* The next second: past the seven kept answers, the last one and the launcher. */
        usleep(1100 * 1000);
        expect(f.w, 4000704, TUNE_ATTRIBUTION_ENV_INHERITED, "edu:1", false, 4000600);
        expect(f.w, 4000705, TUNE_ATTRIBUTION_ENV_INHERITED, "edu:1", false, 4000600);
        fixture_close(&f);
}

/* A launcher no rule could match (a program of its own, a shell), with
 * EDU_VISIBLE_DEVICES=1,0, that fork+exec'd the workers with its environment unchanged:
 * the size of theirs (wiped, the size kept) is the size of its own, so it stands in. One
 * whose environment has another size (it exported something before the exec: its own
 * /proc environ is not what it passed on), or of another user, does not. */
static void test_launcher_keeps_environment(void **state) {
        char env[sizeof wiped];
        fixture f = {};
        (void) state;

        process(4000800, 1, "npt-launch", "/usr/local/bin/npt-launch", "npt-launch 2",
                env_sized(env, "EDU_VISIBLE_DEVICES=1,0"), sizeof env);
        process(4000801, 4000800, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP0", wiped, sizeof wiped);
        process(4000802, 4000800, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP1", wiped, sizeof wiped);
        /* The same, but the launcher's environment is 8 bytes shorter than what it gave. */
        process(4000810, 1, "sh", "/usr/bin/busybox", "sh -c launch", env_sized(env, "EDU_VISIBLE_DEVICES=1,0"),
                sizeof env - 8);
        process(4000811, 4000810, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP0", wiped, sizeof wiped);
        /* The same size, but another user's launcher above root's worker. */
        process(4000820, 1, "npt-launch", "/usr/local/bin/npt-launch", "npt-launch 2",
                env_sized(env, "EDU_VISIBLE_DEVICES=1,0"), sizeof env);
        set_uid(4000820, "npt-launch", 1, 65534);
        process(4000821, 4000820, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP0", wiped, sizeof wiped);
        fixture_open(&f);
        expect(f.w, 4000801, TUNE_ATTRIBUTION_ENV_INHERITED, "edu:1", false, 4000800);
        expect(f.w, 4000802, TUNE_ATTRIBUTION_ENV_INHERITED, "edu:0", false, 4000800);
        expect(f.w, 4000811, TUNE_ATTRIBUTION_NONE, "", true, 0);
        expect(f.w, 4000821, TUNE_ATTRIBUTION_NONE, "", true, 0);
        fixture_close(&f);
}

/* vLLM's spawn start method: the launcher fork+execs "python3 -c from multiprocessing.spawn
 * import spawn_main; ..." (the engine core, before it retitles), which starts the workers
 * the same way. The intermediate's environment stands in while it keeps it; once it
 * retitled too (VLLM::EngineCore, wiped: same size as the workers'), the launcher above it
 * does, here one no rule could match that passed its environment on unchanged. */
static void test_spawn_main_intermediate(void **state) {
        char env[sizeof wiped];
        fixture f = {};
        (void) state;

        process(4000900, 1, "python3", "/usr/bin/python3.11", "python3 -m vllm.entrypoints.openai.api_server",
                ENV("PATH=/bin\0EDU_VISIBLE_DEVICES=1,0\0"));
        process(4000901, 4000900, "python3", "/usr/bin/python3.11",
                "python3 -c from_multiprocessing.spawn_import_spawn_main;_spawn_main(tracker_fd=5,_pipe_handle=7) "
                "--multiprocessing-fork",
                ENV("PATH=/bin\0EDU_VISIBLE_DEVICES=1,0\0"));
        process(4000902, 4000901, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP1", wiped, sizeof wiped);
        process(4000910, 1, "npt-launch", "/usr/local/bin/npt-launch", "npt-launch 2",
                env_sized(env, "EDU_VISIBLE_DEVICES=1,0"), sizeof env);
        process(4000911, 4000910, "VLLM::EngineCor", "/usr/bin/python3.11", "VLLM::EngineCore", wiped, sizeof wiped);
        process(4000912, 4000911, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP0", wiped, sizeof wiped);
        fixture_open(&f);
        expect(f.w, 4000902, TUNE_ATTRIBUTION_ENV_INHERITED, "edu:0", false, 4000901);
        expect(f.w, 4000912, TUNE_ATTRIBUTION_ENV_INHERITED, "edu:1", false, 4000910);
        fixture_close(&f);
}

/* A launcher retitled by setproctitle after starting its children: its environment and
 * the workers' are wiped, but a child that keeps its own (multiprocessing's resource
 * tracker, a helper it forked before the wipe) holds what it passed on, of the workers'
 * size: it stands in. Children that disagree (a launcher giving each its own list), or
 * another user's, do not; nor does init's list for the orphans of a dead one. */
static void test_wiped_launcher_children(void **state) {
        char env[sizeof wiped], other[sizeof wiped];
        fixture f = {};
        (void) state;

        process(4001000, 1, "VLLM::APIServer", "/usr/bin/python3.11", "VLLM::APIServer", wiped, sizeof wiped);
        process(4001001, 4001000, "python3", "/usr/bin/python3.11",
                "python3 -c from_multiprocessing.resource_tracker_import_main;main(5)",
                env_sized(env, "EDU_VISIBLE_DEVICES=1,0"), sizeof env);
        process(4001002, 4001000, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP0", wiped, sizeof wiped);
        process(4001003, 4001000, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP1", wiped, sizeof wiped);
        set_children(4001000, "4001001 4001002 4001003 ");
        /* Two children that kept environments of that size, with other lists. */
        process(4001100, 1, "VLLM::APIServer", "/usr/bin/python3.11", "VLLM::APIServer", wiped, sizeof wiped);
        process(4001101, 4001100, "python3", "/usr/bin/python3.11", "python3 helper.py",
                env_sized(env, "EDU_VISIBLE_DEVICES=1,0"), sizeof env);
        process(4001102, 4001100, "python3", "/usr/bin/python3.11", "python3 helper.py",
                env_sized(other, "EDU_VISIBLE_DEVICES=0,1"), sizeof other);
        process(4001103, 4001100, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP0", wiped, sizeof wiped);
        set_children(4001100, "4001101 4001102 4001103 ");
        /* The only child that kept it is another user's. */
        process(4001200, 1, "VLLM::APIServer", "/usr/bin/python3.11", "VLLM::APIServer", wiped, sizeof wiped);
        process(4001201, 4001200, "python3", "/usr/bin/python3.11", "python3 helper.py",
                env_sized(env, "EDU_VISIBLE_DEVICES=1,0"), sizeof env);
        set_uid(4001201, "python3", 4001200, 65534);
        process(4001202, 4001200, "VLLM::Worker_TP", "/usr/bin/python3.11", "VLLM::Worker_TP0", wiped, sizeof wiped);
        set_children(4001200, "4001201 4001202 ");
        set_children(1, "4000100 4000200 4000301 ");
        fixture_open(&f);
        expect(f.w, 4001002, TUNE_ATTRIBUTION_ENV_INHERITED, "edu:1", false, 4001001);
        expect(f.w, 4001003, TUNE_ATTRIBUTION_ENV_INHERITED, "edu:0", false, 4001001);
        expect(f.w, 4001103, TUNE_ATTRIBUTION_NONE, "", true, 0);
        expect(f.w, 4001202, TUNE_ATTRIBUTION_NONE, "", true, 0);
        expect(f.w, 4000301, TUNE_ATTRIBUTION_NONE, "", true, 0);
        fixture_close(&f);
}

/* A restart: what the daemon before it captured at the worker's exec (the state
 * directory kept it) comes back through watcher_keep_attribution() for the same process
 * (pid and start time), and decides before any relative: even the orphan of a dead
 * launcher, which nothing in /proc could attribute, gets its devices back, and says
 * where they came from. Not for another start time (the pid was reused). */
static void test_remembered(void **state) {
        char *vars[] = { (char *) "EDU_VISIBLE_DEVICES=1,0" };
        tune_env_capture env = { .state = TUNE_ENV_READ, .vars = vars, .n = 1, .from_pid = 4000301, .restored = true };
        managed_process *p = NULL;
        char origin[96];
        fixture f = {};
        (void) state;

        fixture_open(&f);
        assert_int_equal(watcher_keep_attribution(f.w, 4000301, 4000301, 0, 0, &env), 0);
        assert_int_equal(watcher_keep_attribution(f.w, 4000102, 12, 0, 0, &env), -ESRCH);
        /* The same pid and start time, but it exec'd another program since (an exec moves
         * its environment): not the process recorded. */
        assert_int_equal(watcher_keep_attribution(f.w, 4000101, 4000101, 140732962411238ULL, 140732962414567ULL, &env),
                         -ESRCH);
        expect(f.w, 4000301, TUNE_ATTRIBUTION_ENV, "edu:1", false, 4000301);
        assert_int_equal(watcher_evaluate_pid(f.w, 4000301, &p), 0);
        assert_true(p->env.restored);
        tune_attribution_describe_source(&p->attribution, &p->env, origin, sizeof origin);
        assert_string_equal(origin, "attributed before the restart (from env)");
        /* Its launcher's environment, here, would have said the same: the record still decides. */
        env.from_pid = 4000100;
        env.inherited = true;
        assert_int_equal(watcher_keep_attribution(f.w, 4000102, 4000102, 0, 0, &env), 0);
        expect(f.w, 4000102, TUNE_ATTRIBUTION_ENV_INHERITED, "edu:0", false, 4000100);
        assert_int_equal(watcher_evaluate_pid(f.w, 4000102, &p), 0);
        assert_true(p->env.restored);
        fixture_close(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_launcher_environment),
                cmocka_unit_test(test_no_guess),
                cmocka_unit_test(test_reused_parent_pid),
                cmocka_unit_test(test_ancestor_read_once),
                cmocka_unit_test(test_ancestor_walk_bounded),
                cmocka_unit_test(test_launcher_keeps_environment),
                cmocka_unit_test(test_spawn_main_intermediate),
                cmocka_unit_test(test_wiped_launcher_children),
                cmocka_unit_test(test_remembered),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
