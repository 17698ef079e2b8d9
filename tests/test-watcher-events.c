/* SPDX-License-Identifier: GPL-2.0-only */
/* The process watcher driven by a fake connector: proc connector events fed as data to
 * its event dispatch, over a fake /proc (a --root tree this test writes), with a consumer
 * that writes down every callback. No root, no netlink, no real processes: below a test
 * root the watcher uses no pidfds and checks start times in the fake stat files. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "npu-tuned/policy.h"
#include "watcher-internal.h"
#include "fake-watcher.h"

static const char policy_json[] =
        "{\"version\": 1, \"processes\": ["
        " {\"name\": \"vllm\", \"priority\": 30, \"match\": {\"comm\": \"vllm*\", \"user\": 1000}},"
        " {\"name\": \"sglang\", \"priority\": 20, \"match\": {\"comm\": \"sglang*\", \"user\": 1000}},"
        " {\"name\": \"trainer\", \"priority\": 10, \"match\": {\"exe\": \"/usr/bin/python3\", \"comm\": \"trainer\"}}"
        "]}";

typedef struct world {
        char root[64];
        sd_event *event;
        tune_ctx *ctx;
        tune_policy *policy;
        Watcher *w;
        char log[16384];
        size_t len;
        bool quiet; /* callbacks not written down (thousands of them) */
        bool reads_give_up; /* the slow reader gives up (-ETIMEDOUT), as past its deadline */
        unsigned slow_reads, pair_reads; /* hand-offs to the slow reader, of one file and of two */
} world;

/* ---- the fake /proc ---- */

static void put(world *t, const char *rel, const char *text) {
        char path[512];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", t->root, rel);
        for (char *p = path + strlen(t->root) + 1; *p; p++)
                if (*p == '/') {
                        *p = 0;
                        (void) mkdir(path, 0755);
                        *p = '/';
                }
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void put_thread(world *t, pid_t pid, pid_t tid, const char *comm) {
        char rel[128], text[64];

        snprintf(rel, sizeof rel, "proc/%d/task/%d/comm", pid, tid);
        snprintf(text, sizeof text, "%s\n", comm);
        put(t, rel, text);
}

/* Remove the process (tid 0) or one of its threads from /proc. */
static void drop(world *t, pid_t pid, pid_t tid) {
        char cmd[640];

        if (tid > 0)
                snprintf(cmd, sizeof cmd, "rm -rf '%s/proc/%d/task/%d'", t->root, pid, tid);
        else
                snprintf(cmd, sizeof cmd, "rm -rf '%s/proc/%d'", t->root, pid);
        assert_int_equal(system(cmd), 0);
}

/* A process with its main thread, as /proc shows it. */
/* /proc/PID/status of a process of uid. */
static void put_status(world *t, pid_t pid, const char *comm, uid_t uid) {
        char rel[64], text[256];

        snprintf(rel, sizeof rel, "proc/%d/status", pid);
        snprintf(text, sizeof text, "Name:\t%s\nTgid:\t%d\nPid:\t%d\nPPid:\t1\nUid:\t%u\t%u\t%u\t%u\n", comm, pid, pid,
                 (unsigned) uid, (unsigned) uid, (unsigned) uid, (unsigned) uid);
        put(t, rel, text);
}

static void put_process(world *t, pid_t pid, uint64_t start_time, const char *comm, const char *exe) {
        char rel[128], text[512], link[512];

        snprintf(rel, sizeof rel, "proc/%d/stat", pid);
        snprintf(text, sizeof text, "%d (%s) S 1 %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", pid, comm, pid,
                 pid, (unsigned long long) start_time);
        put(t, rel, text);
        put_status(t, pid, comm, 1000);
        snprintf(rel, sizeof rel, "proc/%d/comm", pid);
        snprintf(text, sizeof text, "%s\n", comm);
        put(t, rel, text);
        snprintf(rel, sizeof rel, "proc/%d/cmdline", pid);
        put(t, rel, comm);
        snprintf(rel, sizeof rel, "proc/%d/environ", pid);
        put(t, rel, "");
        snprintf(rel, sizeof rel, "proc/%d/cgroup", pid);
        put(t, rel, "0::/test.slice\n");
        snprintf(link, sizeof link, "%s/proc/%d/exe", t->root, pid);
        (void) unlink(link);
        assert_int_equal(symlink(exe, link), 0);
        put_thread(t, pid, pid, comm);
}

/* ---- the fake connector ---- */

static void exec_event(world *t, pid_t pid) {
        fake_event_exec(t->w, pid);
}

static void fork_event_at(world *t, pid_t parent, pid_t child_pid, pid_t child_tgid, uint64_t timestamp_ns) {
        fake_event_fork(t->w, parent, child_pid, child_tgid, timestamp_ns);
}

static void fork_event(world *t, pid_t parent, pid_t child_pid, pid_t child_tgid) {
        fake_event_fork(t->w, parent, child_pid, child_tgid, 0);
}

static void comm_event(world *t, pid_t tid, pid_t tgid, const char *comm) {
        fake_event_comm(t->w, tid, tgid, comm);
}

static void exit_event(world *t, pid_t tid, pid_t tgid) {
        fake_event_exit(t->w, tid, tgid);
}

/* ---- the consumer: a log of callbacks ---- */

_printf_(2, 3) static void note(world *t, const char *fmt, ...) {
        va_list ap;

        if (t->quiet)
                return;
        va_start(ap, fmt);
        t->len += (size_t) vsnprintf(t->log + t->len, sizeof t->log - t->len, fmt, ap);
        va_end(ap);
        assert_true(t->len < sizeof t->log - 1);
        t->log[t->len++] = '\n';
        t->log[t->len] = 0;
}

static void on_matched(Watcher *w, managed_process *p, void *userdata) {
        note(userdata, "matched %d %s threads=%u", p->pid, p->rule->name, p->n_threads);
}

static void on_changed(Watcher *w, managed_process *p, unsigned changes, void *userdata) {
        note(userdata, "changed %d %s%s%s%s", p->pid, changes & WATCHER_CHANGE_RULE ? "rule " : "",
             changes & WATCHER_CHANGE_RANK ? "rank " : "", changes & WATCHER_CHANGE_ACCELS ? "accels " : "",
             changes & WATCHER_CHANGE_EXEC ? "exec" : "");
}

static void on_thread_new(Watcher *w, managed_process *p, managed_thread *th, void *userdata) {
        note(userdata, "thread_new %d %d %s", p->pid, th->tid, th->comm);
}

static void on_thread_renamed(Watcher *w, managed_process *p, managed_thread *th, const char *old, void *userdata) {
        note(userdata, "renamed %d %d %s->%s", p->pid, th->tid, old, th->comm);
}

static void on_thread_exit(Watcher *w, managed_process *p, managed_thread *th, void *userdata) {
        note(userdata, "thread_exit %d %d", p->pid, th->tid);
}

static void on_gone(Watcher *w, managed_process *p, watcher_exit_reason reason, void *userdata) {
        note(userdata, "exit %d %s", p->pid, watcher_exit_reason_to_string(reason));
}

static const watcher_ops ops = {
        .on_process_matched = on_matched,
        .on_process_changed = on_changed,
        .on_thread_new = on_thread_new,
        .on_thread_renamed = on_thread_renamed,
        .on_thread_exit = on_thread_exit,
        .on_process_exit = on_gone,
};

/* The callbacks since the last call, one per line. */
static void expect(world *t, const char *want) {
        assert_string_equal(t->log, want);
        t->len = 0;
        t->log[0] = 0;
}

/* Rules whose roles take threads by main thread alone, and by name. */
static const char policy_roles_json[] =
        "{\"version\": 1, \"processes\": ["
        " {\"name\": \"bymain\", \"match\": {\"comm\": \"bymain\", \"user\": 1000},"
        "  \"threads\": {\"control\": {\"main_thread\": true, \"cpus\": 1}, \"compute\": {\"cpus\": 1}}},"
        " {\"name\": \"byname\", \"match\": {\"comm\": \"byname\", \"user\": 1000},"
        "  \"threads\": {\"control\": {\"main_thread\": true, \"names\": [\"acl*\"], \"cpus\": 1}, \"compute\": {\"cpus\": 1}}}"
        "]}";

/* A rule that needs the command line, a read of the slow reader. */
static const char policy_cmdline_json[] =
        "{\"version\": 1, \"processes\": ["
        " {\"name\": \"server\", \"match\": {\"cmdline\": \"^serve\", \"user\": 1000}}"
        "]}";

/* The daemon's slow reader (daemon/common/proc-guard.c) without its threads: reads, or
 * gives up as past its deadline. */
static int fake_slow_read(void *userdata, const tune_ctx *ctx, pid_t pid, const char *path, size_t max, char **ret,
                          size_t *ret_len, bool *ret_truncated) {
        world *t = userdata;

        t->slow_reads++;
        if (t->reads_give_up)
                return -ETIMEDOUT;
        return tune_read_prefix(ctx, path, max, ret, ret_len, ret_truncated);
}

static void fake_slow_read_pair(void *userdata, const tune_ctx *ctx, pid_t pid, tune_slow_file files[static 2]) {
        world *t = userdata;

        t->pair_reads++;
        for (unsigned i = 0; i < 2; i++) {
                files[i].text = NULL;
                files[i].r = t->reads_give_up ? -ETIMEDOUT
                                              : tune_read_prefix(ctx, files[i].path, files[i].max, &files[i].text,
                                                                 &files[i].len, &files[i].truncated);
        }
}

static int setup_with(void **state, const char *json, bool all_thread_names) {
        world *t = calloc(1, sizeof *t);
        watcher_params params = {};

        assert_non_null(t);
        snprintf(t->root, sizeof t->root, "/tmp/npu-watcher-events-XXXXXX");
        assert_non_null(mkdtemp(t->root));
        put(t, "proc/1/stat", "1 (init) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0\n");
        assert_int_equal(sd_event_new(&t->event), 0);
        assert_int_equal(tune_ctx_new(t->root, &t->ctx), 0);
        t->policy = fake_policy_parse(json);
        watcher_params_from_policy(t->policy, &params);
        params.gave_up_retry_ms = 100;
        params.all_thread_names = all_thread_names;
        tune_ctx_set_slow_reader(t->ctx, fake_slow_read, t);
        tune_ctx_set_slow_pair_reader(t->ctx, fake_slow_read_pair);
        assert_int_equal(watcher_new(t->event, t->ctx, NULL, t->policy, &params, &ops, t, &t->w), 0);
        *state = t;
        return 0;
}

/* The stories below follow thread names: every name is read. */
static int setup(void **state) {
        return setup_with(state, policy_json, true);
}

static int setup_cmdline(void **state) {
        return setup_with(state, policy_cmdline_json, false);
}

/* As the daemon runs it: names only where a rule's roles take threads by name. */
static int setup_roles(void **state) {
        return setup_with(state, policy_roles_json, false);
}

static int teardown(void **state) {
        world *t = *state;
        char cmd[128];

        watcher_release_all(t->w);
        watcher_free(t->w);
        tune_policy_free(t->policy);
        tune_ctx_free(t->ctx);
        sd_event_unref(t->event);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->root);
        assert_int_equal(system(cmd), 0);
        free(t);
        return 0;
}

/* ---- the stories ---- */

/* A rule whose roles go by main thread alone has no use for thread names: none is read
 * (a thread whose name file cannot be read is still taken, named by its COMM events);
 * under a rule that takes threads by name, names are read as before. */
static void test_thread_names_by_rule(void **state) {
        world *t = *state;
        char path[512];

        put_process(t, 300, 3000, "bymain", "/usr/bin/python3");
        exec_event(t, 300);
        expect(t, "matched 300 bymain threads=1\n");
        put_thread(t, 300, 301, "worker");
        fork_event(t, 300, 301, 300);
        expect(t, "thread_new 300 301 \n");
        put_thread(t, 300, 302, "late");
        snprintf(path, sizeof path, "%s/proc/300/task/302/comm", t->root);
        assert_int_equal(unlink(path), 0);
        fork_event(t, 300, 302, 300);
        expect(t, "thread_new 300 302 \n");
        comm_event(t, 302, 300, "acl_thread");
        expect(t, "renamed 300 302 ->acl_thread\n");
        /* The main thread's name is the process's, known without a read. */
        comm_event(t, 300, 300, "bymain");
        expect(t, "");

        put_process(t, 400, 4000, "byname", "/usr/bin/python3");
        exec_event(t, 400);
        expect(t, "matched 400 byname threads=1\n");
        put_thread(t, 400, 402, "acl_thread");
        fork_event(t, 400, 402, 400);
        expect(t, "thread_new 400 402 acl_thread\n");
        /* Its name file gone: the thread is gone (or going); its exit event follows. */
        put_thread(t, 400, 403, "work-1");
        snprintf(path, sizeof path, "%s/proc/400/task/403/comm", t->root);
        assert_int_equal(unlink(path), 0);
        fork_event(t, 400, 403, 400);
        expect(t, "");
}

static void test_exec_threads_exit(void **state) {
        world *t = *state;

        put_process(t, 100, 1000, "vllm", "/usr/bin/python3");
        exec_event(t, 100);
        expect(t, "matched 100 vllm threads=1\n");
        put_thread(t, 100, 101, "worker");
        fork_event(t, 100, 101, 100);
        expect(t, "thread_new 100 101 worker\n");

        put_thread(t, 100, 102, "acl_thread");
        fork_event(t, 100, 102, 100);
        fork_event(t, 100, 102, 100); /* seen twice: one thread */
        expect(t, "thread_new 100 102 acl_thread\n");

        drop(t, 100, 101);
        exit_event(t, 101, 100);
        expect(t, "thread_exit 100 101\n");

        drop(t, 100, 0);
        exit_event(t, 100, 100);
        expect(t, "exit 100 exited\n");
        exit_event(t, 100, 100); /* late duplicate: nothing */
        expect(t, "");
}

static void test_unmatch_on_exec(void **state) {
        world *t = *state;

        put_process(t, 100, 1000, "vllm", "/usr/bin/python3");
        exec_event(t, 100);
        expect(t, "matched 100 vllm threads=1\n");

        /* It exec'd into something no rule matches: the consumer lets it go. */
        put_process(t, 100, 1000, "bash", "/usr/bin/bash");
        exec_event(t, 100);
        expect(t, "exit 100 unmatched\n");
        /* And back into a server: managed again. */
        put_process(t, 100, 1000, "sglang", "/usr/bin/python3");
        exec_event(t, 100);
        expect(t, "matched 100 sglang threads=1\n");
}

static void test_pid_reuse(void **state) {
        world *t = *state;

        put_process(t, 100, 1000, "vllm", "/usr/bin/python3");
        exec_event(t, 100);
        expect(t, "matched 100 vllm threads=1\n");

        /* The process died unseen (lost EXIT) and another one got its pid: the old one is
         * released as such, the new one matched on its own. */
        drop(t, 100, 0);
        put_process(t, 100, 5000, "vllm", "/usr/bin/python3");
        exec_event(t, 100);
        expect(t, "exit 100 pid-reused\nmatched 100 vllm threads=1\n");
        assert_int_equal(watcher_find(t->w, 100)->start_time, 5000);

        /* A thread event for the old identity's pid finds only the new process. */
        put_thread(t, 100, 104, "w");
        fork_event(t, 100, 104, 100);
        expect(t, "thread_new 100 104 w\n");

        /* Gone without any event: a check by the consumer sees it. */
        drop(t, 100, 0);
        assert_int_equal(watcher_check_process(t->w, watcher_find(t->w, 100) ?: &(managed_process){ .pid = 100 }), 0);
}

/* After an overrun the resync finds a child that a managed process started, and only then
 * is the child's FORK event read (it was queued before the resync): the child is the same
 * process, still managed, not a pid reuse. (4096 processes of 8 threads lost half their
 * threads this way: released, with their EXEC events among those lost.) */
static void test_fork_event_after_resync(void **state) {
        world *t = *state;

        put_process(t, 100, 1000, "vllm", "/usr/bin/python3");
        exec_event(t, 100);
        expect(t, "matched 100 vllm threads=1\n");
        put_process(t, 110, 1100, "vllm-worker", "/usr/bin/python3");
        watcher_resync(t->w);
        expect(t, "matched 110 vllm threads=1\n");
        fork_event(t, 100, 110, 110);
        expect(t, "");
        assert_non_null(watcher_find(t->w, 110));
        /* A FORK read after the child's exec made a candidate under the new program's
         * name; the EXEC event was lost: the resync must match it all the same. */
        put_process(t, 120, 1300, "vllm-child", "/usr/bin/python3");
        fork_event(t, 100, 120, 120);
        expect(t, "");
        watcher_resync(t->w);
        expect(t, "matched 120 vllm threads=1\n");
        /* A child with another start time under a known pid is a reuse, as before. */
        drop(t, 110, 0);
        put_process(t, 110, 1200, "vllm-worker", "/usr/bin/python3");
        fork_event(t, 100, 110, 110);
        expect(t, "exit 110 pid-reused\n");
        assert_null(watcher_find(t->w, 110));
}

static void test_retitle(void **state) {
        world *t = *state;

        /* python3 matches no rule yet, but would as "trainer": kept as a candidate. */
        put_process(t, 200, 2000, "python3", "/usr/bin/python3");
        exec_event(t, 200);
        expect(t, "");
        assert_null(watcher_find(t->w, 200));

        put_process(t, 200, 2000, "trainer", "/usr/bin/python3");
        comm_event(t, 200, 200, "trainer");
        expect(t, "matched 200 trainer threads=1\n");

        /* Retitled into another rule's name: the thread is renamed, the rule changes. */
        put_process(t, 200, 2000, "vllm-x", "/usr/bin/python3");
        comm_event(t, 200, 200, "vllm-x");
        expect(t, "renamed 200 200 trainer->vllm-x\nchanged 200 rule \n");

        /* Within the same rule: a rename, nothing else changed. */
        put_process(t, 200, 2000, "vllm-y", "/usr/bin/python3");
        comm_event(t, 200, 200, "vllm-y");
        expect(t, "renamed 200 200 vllm-x->vllm-y\n");

        /* Into nothing: let go, but still watched as a candidate (its exe still fits). */
        put_process(t, 200, 2000, "idle", "/usr/bin/python3");
        comm_event(t, 200, 200, "idle");
        expect(t, "renamed 200 200 vllm-y->idle\nexit 200 unmatched\n");
        put_process(t, 200, 2000, "trainer", "/usr/bin/python3");
        comm_event(t, 200, 200, "trainer");
        expect(t, "matched 200 trainer threads=1\n");
}

static void test_rename_storm(void **state) {
        static const char *const names[] = { "worker", "worker", "acl_thread", "tokenizer", "tokenizer", "worker" };
        world *t = *state;
        char want[64];
        unsigned renames = 0;
        const char *last = "worker";

        put_process(t, 100, 1000, "vllm", "/usr/bin/python3");
        exec_event(t, 100);
        put_thread(t, 100, 101, "worker");
        fork_event(t, 100, 101, 100);
        expect(t, "matched 100 vllm threads=1\nthread_new 100 101 worker\n");

        for (unsigned i = 0; i < 3000; i++) {
                const char *n = names[i % ELEMENTSOF(names)];
                size_t before = t->len;

                put_thread(t, 100, 101, n);
                comm_event(t, 101, 100, n);
                if (!streq(n, last)) {
                        snprintf(want, sizeof want, "renamed 100 101 %s->%s\n", last, n);
                        assert_string_equal(t->log + before, want);
                        renames++;
                } else
                        assert_int_equal(t->len, before); /* the same name again: no callback */
                last = n;
                t->len = 0;
                t->log[0] = 0;
        }
        assert_int_equal(renames, 1500); /* 3 real changes in every 6 events */
        assert_string_equal(managed_process_find_thread(watcher_find(t->w, 100), 101)->comm, last);

        /* A thread whose fork was not seen shows up through its COMM event. */
        put_thread(t, 100, 105, "late");
        comm_event(t, 105, 100, "late");
        expect(t, "thread_new 100 105 late\n");

        /* Renames in a process nobody manages: nothing. */
        put_process(t, 300, 3000, "bash", "/usr/bin/bash");
        put_thread(t, 300, 301, "x");
        comm_event(t, 301, 300, "y");
        expect(t, "");
}

static void test_exec_resyncs_threads(void **state) {
        world *t = *state;

        put_process(t, 100, 1000, "vllm", "/usr/bin/python3");
        exec_event(t, 100);
        put_thread(t, 100, 101, "old");
        put_thread(t, 100, 102, "stays");
        fork_event(t, 100, 101, 100);
        fork_event(t, 100, 102, 100);
        expect(t, "matched 100 vllm threads=1\nthread_new 100 101 old\nthread_new 100 102 stays\n");

        /* exec replaced the threads (their EXIT events were lost): the thread list is
         * brought in line before the consumer hears of the exec. */
        drop(t, 100, 101);
        put_thread(t, 100, 102, "renamed");
        put_thread(t, 100, 103, "new");
        exec_event(t, 100);
        expect(t, "thread_exit 100 101\nrenamed 100 102 stays->renamed\nthread_new 100 103 new\nchanged 100 exec\n");
}

/* A process matched at its exec has one thread, the main one: /proc/PID/task is not
 * listed (a thread there is what no real exec leaves). The threads it starts come by
 * their FORK events; one whose FORK was lost in an overrun, by the resync after it. */
static void test_exec_match_lists_no_threads(void **state) {
        world *t = *state;

        put_process(t, 100, 1000, "vllm", "/usr/bin/python3");
        put_thread(t, 100, 109, "not-listed");
        exec_event(t, 100);
        expect(t, "matched 100 vllm threads=1\n");
        assert_int_equal(watcher_find(t->w, 100)->n_threads, 1);
        assert_int_equal(watcher_find(t->w, 100)->threads[0].tid, 100);
        put_thread(t, 100, 101, "worker");
        fork_event(t, 100, 101, 100);
        expect(t, "thread_new 100 101 worker\n");
        drop(t, 100, 109);
        put_thread(t, 100, 102, "acl_thread"); /* its FORK lost */
        watcher_on_lost(NULL, t->w);
        expect(t, "thread_new 100 102 acl_thread\n");
        assert_int_equal(watcher_find(t->w, 100)->n_threads, 3);
}

static void test_release_all(void **state) {
        world *t = *state;

        put_process(t, 100, 1000, "vllm", "/usr/bin/python3");
        put_process(t, 101, 1001, "sglang", "/usr/bin/python3");
        exec_event(t, 100);
        exec_event(t, 101);
        expect(t, "matched 100 vllm threads=1\nmatched 101 sglang threads=1\n");
        watcher_release_all(t->w);
        expect(t, "exit 100 stop\nexit 101 stop\n");
}

/* A match refused because the table of managed processes is full is not forgotten: when
 * a managed process goes, it is evaluated again (before: never managed, nothing retried).
 * (The trainer rule names no user: its matches are held to the table's size.) */
static void test_refused_match_retried(void **state) {
        world *t = *state;
        watcher_stats st;

        t->w->params.max_managed = 1;
        put_process(t, 100, 1000, "trainer", "/usr/bin/python3");
        exec_event(t, 100);
        expect(t, "matched 100 trainer threads=1\n");
        put_process(t, 200, 2000, "trainer", "/usr/bin/python3");
        exec_event(t, 200);
        expect(t, ""); /* no room */
        drop(t, 100, 0);
        exit_event(t, 100, 100);
        expect(t, "exit 100 exited\n");
        for (int i = 0; i < 5; i++)
                assert_true(sd_event_run(t->event, 0) >= 0);
        expect(t, "matched 200 trainer threads=1\n");
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.retried, 1);
}

/* A full table does not keep root's server out (docs/trust.md, "Trust tiers"): other
 * users' look-alikes may fill max_managed_processes, but a vouched match (root's, or a
 * rule that names its user or cgroup) is managed all the same; another user's is not. */
static void test_table_full_vouched(void **state) {
        world *t = *state;
        watcher_stats st;

        t->w->params.max_managed = 1;
        put_process(t, 100, 1000, "trainer", "/usr/bin/python3");
        exec_event(t, 100);
        expect(t, "matched 100 trainer threads=1\n");
        put_process(t, 200, 2000, "trainer", "/usr/bin/python3");
        exec_event(t, 200);
        expect(t, ""); /* no room for uid 1000's second: the rule names no user */
        /* Root's: vouched. */
        put_process(t, 300, 3000, "trainer", "/usr/bin/python3");
        put_status(t, 300, "trainer", 0);
        exec_event(t, 300);
        expect(t, "matched 300 trainer threads=1\n");
        /* A rule that names the user (vllm: "user": 1000): vouched too. */
        put_process(t, 400, 4000, "vllm", "/usr/bin/python3");
        exec_event(t, 400);
        expect(t, "matched 400 vllm threads=1\n");
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.managed, 3);
        assert_int_equal(st.skipped_full, 1);
}

/* The attack as it was measured (docs/trust.md): 9 users with 520 look-alikes each against
 * the default table of 4,096, then root's real worker. Each user gets its share (512), 8
 * users fill the table, the 9th is refused; root's worker is managed at its exec. */
static void test_nine_users_full_table(void **state) {
        world *t = *state;
        watcher_stats st;
        char want[64];
        pid_t pid = 10000;

        assert_int_equal(t->w->params.max_managed, 4096);
        t->quiet = true;
        for (unsigned uid = 2000; uid < 2009; uid++)
                for (unsigned i = 0; i < 520; i++, pid++) {
                        put_process(t, pid, (uint64_t) pid * 10, "trainer", "/usr/bin/python3");
                        put_status(t, pid, "trainer", uid);
                        exec_event(t, pid);
                }
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.managed, 4096);
        t->quiet = false;
        put_process(t, pid, (uint64_t) pid * 10, "trainer", "/usr/bin/python3");
        put_status(t, pid, "trainer", 0);
        exec_event(t, pid);
        snprintf(want, sizeof want, "matched %d trainer threads=1\n", pid);
        expect(t, want);
        t->quiet = true; /* 4,097 exits at the teardown */
}

/* Renames of one process within 100 ms of an evaluation are folded into one evaluation at
 * the end of the window, with the name it has then: a process renaming itself without end
 * costs ten matches a second, and the last name still counts. */
static void test_renames_debounced(void **state) {
        world *t = *state;
        watcher_stats st;
        char name[16];

        /* python3 as "x": a candidate (the trainer rule matches its exe, not its comm). */
        put_process(t, 300, 3000, "x", "/usr/bin/python3");
        exec_event(t, 300);
        expect(t, "");
        comm_event(t, 300, 300, "y"); /* evaluated at once */
        for (int i = 0; i < 50; i++) {
                snprintf(name, sizeof name, "n%d", i);
                comm_event(t, 300, 300, name);
        }
        put_process(t, 300, 3000, "trainer", "/usr/bin/python3");
        comm_event(t, 300, 300, "trainer");
        expect(t, ""); /* folded */
        watcher_get_stats(t->w, &st);
        assert_true(st.comm_coalesced >= 51);
        for (int i = 0; i < 30 && !strstr(t->log, "matched 300"); i++)
                assert_true(sd_event_run(t->event, 20 * 1000) >= 0);
        expect(t, "matched 300 trainer threads=1\n");
}

/* A FORK by a candidate: while no event was lost, the event stream vouches that the
 * candidate is still the process it was (its EXIT would have released it), and its stat is
 * not read again; after an overrun it is, and a candidate whose pid another process now
 * has is let go instead of handing its environment to that one's child. */
static void test_fork_by_candidate(void **state) {
        world *t = *state;
        watcher_stats st;

        put_process(t, 200, 2000, "python3", "/usr/bin/python3");
        exec_event(t, 200);
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.candidates, 1);
        /* Its pid silently names another program now (this cannot happen without a lost
         * EXIT: it shows that the stat is not read). */
        put_process(t, 200, 9000, "bash", "/usr/bin/bash");
        put_process(t, 201, 9100, "python3", "/usr/bin/python3");
        fork_event(t, 200, 201, 201);
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.candidates, 2); /* the child kept, for the environment it inherits */

        /* Events are lost: from now on the candidate's start time is checked. */
        watcher_on_lost(NULL, t->w);
        put_process(t, 200, 2000, "python3", "/usr/bin/python3");
        exec_event(t, 200); /* (the resync let the bash go; the python3 again) */
        watcher_on_lost(NULL, t->w); /* coalesced: no resync now */
        put_process(t, 200, 9500, "bash", "/usr/bin/bash");
        put_process(t, 202, 9600, "python3", "/usr/bin/python3");
        watcher_get_stats(t->w, &st);
        unsigned before = st.candidates;
        fork_event(t, 200, 202, 202);
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.candidates, before - 1); /* 200 let go, 202 not taken */
        expect(t, "");
}

/* A candidate's child is kept at its FORK without a read of its stat (most children exec
 * at once, and the EXEC reads it): the child need not even be in /proc yet. Its start time
 * comes from the next read made for another reason (its EXEC, a resync), taken while the
 * stream vouches for the pid; once events were lost it cannot, and the entry is let go,
 * the process taken anew from its stat. */
static Entry *entry_of(world *t, pid_t pid) {
        Entry *e = registry_get(t->w->registry, pid);
        assert_non_null(e);
        return e;
}

/* A process as put_process() puts it, with its command line and an environment block. */
static void put_with_environ(world *t, pid_t pid, uint64_t start_time, const char *comm, const char *exe,
                             const char *cmdline, const char *env, size_t env_len) {
        char rel[64], path[512];
        FILE *f;

        put_process(t, pid, start_time, comm, exe);
        snprintf(rel, sizeof rel, "proc/%d/cmdline", pid);
        put(t, rel, cmdline);
        snprintf(path, sizeof path, "%s/proc/%d/environ", t->root, pid);
        f = fopen(path, "we");
        assert_non_null(f);
        fwrite(env, 1, env_len, f);
        fclose(f);
}

/* A reload that names a new variable to capture (a rule's rank_env): the first processes
 * exec'd after it have theirs captured. */
static void test_reload_captures_new_env_name(void **state) {
        world *t = *state;
        tune_policy *ranked = fake_policy_parse(
                "{\"version\": 1, \"processes\": ["
                " {\"name\": \"vllm\", \"match\": {\"comm\": \"vllm*\", \"user\": 1000},"
                "  \"rank\": {\"from\": \"env\", \"env\": \"MY_SHARD_RANK\"}}"
                "]}");
        static const char env[] = "PATH=/bin\0MY_SHARD_RANK=3\0";

        put_with_environ(t, 100, 1000, "vllm", "/usr/bin/python3", "vllm", env, sizeof env - 1);
        exec_event(t, 100);
        expect(t, "matched 100 vllm threads=1\n");
        assert_null(tune_env_capture_get(&entry_of(t, 100)->p.env, "MY_SHARD_RANK"));

        assert_int_equal(watcher_reload(t->w, NULL, ranked), 0);
        tune_policy_free(t->policy);
        t->policy = ranked;
        exec_event(t, 100);
        assert_non_null(tune_env_capture_get(&entry_of(t, 100)->p.env, "MY_SHARD_RANK"));
        assert_string_equal(tune_env_capture_get(&entry_of(t, 100)->p.env, "MY_SHARD_RANK"), "3");
        assert_int_equal(entry_of(t, 100)->p.rank, 3);
}

/* An exec event, the callbacks it made, and its hand-offs to the slow reader: of two files
 * at once (pairs) and of one (singles). */
static void exec_counting_reads(world *t, pid_t pid, const char *want, unsigned pairs, unsigned singles) {
        t->slow_reads = t->pair_reads = 0;
        exec_event(t, pid);
        expect(t, want);
        assert_int_equal(t->pair_reads, pairs);
        assert_int_equal(t->slow_reads, singles);
}

/* At an exec, the command line and the environment of a process the watcher keeps cost one
 * hand-off to the slow reader (each one a wake-up on the way to the first pin), and
 * what it keeps of both is what the files say; a process no rule can keep costs no read
 * of its environment. */
static void test_exec_cmdline_environ_one_hand_off(void **state) {
        world *t = *state;
        tune_policy *p = fake_policy_parse(
                "{\"version\": 1, \"processes\": ["
                " {\"name\": \"worker\", \"priority\": 20, \"match\": {\"exe\": \"*/python3*\", \"cmdline\": \"^VLLM::Worker\"},"
                "  \"rank\": {\"from\": \"env\", \"env\": \"MY_SHARD_RANK\"}},"
                " {\"name\": \"byexe\", \"priority\": 10, \"match\": {\"exe\": \"/opt/engine\"},"
                "  \"rank\": {\"from\": \"env\", \"env\": \"MY_SHARD_RANK\"}},"
                " {\"name\": \"bytitle\", \"match\": {\"cmdline\": \"^serve\"}}"
                "]}");
        static const char env[] = "PATH=/bin\0MY_SHARD_RANK=5\0";

        assert_int_equal(watcher_reload(t->w, NULL, p), 0);
        tune_policy_free(t->policy);
        t->policy = p;

        /* Matched on its exe and command line: one hand-off for both. */
        put_with_environ(t, 300, 3000, "python3", "/usr/bin/python3.11", "VLLM::Worker_TP0", env, sizeof env - 1);
        exec_counting_reads(t, 300, "matched 300 worker threads=1\n", 1, 0);
        assert_string_equal(entry_of(t, 300)->p.cmdline, "VLLM::Worker_TP0");
        assert_string_equal(tune_env_capture_get(&entry_of(t, 300)->p.env, "MY_SHARD_RANK"), "5");
        assert_int_equal(entry_of(t, 300)->p.rank, 5);

        /* The same exe, another title: a retitle candidate, also one hand-off, its
         * environment kept for when it renames itself. */
        put_with_environ(t, 301, 3010, "python3", "/usr/bin/python3.11", "python3 -m launcher", env, sizeof env - 1);
        exec_counting_reads(t, 301, "", 1, 0);
        assert_string_equal(tune_env_capture_get(&entry_of(t, 301)->p.env, "MY_SHARD_RANK"), "5");

        /* Matched by its exe alone: the environment first, the command line (which the
         * match leaves to its consumers) with it. */
        put_with_environ(t, 302, 3020, "engine", "/opt/engine", "engine --port 8000", env, sizeof env - 1);
        exec_counting_reads(t, 302, "matched 302 byexe threads=1\n", 1, 0);
        assert_string_equal(entry_of(t, 302)->p.cmdline, "engine --port 8000");
        assert_int_equal(entry_of(t, 302)->p.rank, 5);

        /* Another program: a rule with only a command line reads that of every exec, but
         * no environment rides along with it. */
        put_process(t, 303, 3030, "ls", "/usr/bin/ls");
        put(t, "proc/303/cmdline", "ls -l");
        exec_counting_reads(t, 303, "", 0, 1);
        assert_null(watcher_find(t->w, 303));
}

static void test_fork_child_stat_deferred(void **state) {
        world *t = *state;
        watcher_stats st;
        Entry *e;

        put_process(t, 200, 2000, "python3", "/usr/bin/python3");
        exec_event(t, 200);
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.candidates, 1);
        fork_event(t, 200, 201, 201); /* not in /proc (yet): kept all the same */
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.candidates, 2);
        e = registry_get(t->w->registry, 201);
        assert_non_null(e);
        assert_true(e->start_pending);
        assert_string_equal(e->p.comm, "python3"); /* its parent's, as the kernel copies it */

        /* It execs into a program a rule takes: the EXEC's stat gives its start time. */
        put_process(t, 201, 2100, "vllm-worker", "/usr/bin/python3");
        exec_event(t, 201);
        expect(t, "matched 201 vllm threads=1\n");
        assert_non_null(watcher_find(t->w, 201));
        assert_int_equal(watcher_find(t->w, 201)->start_time, 2100);

        /* A resync reads every process: the pending start time is taken from it. */
        put_process(t, 202, 2200, "python3", "/usr/bin/python3");
        fork_event(t, 200, 202, 202);
        assert_true(entry_of(t, 202)->start_pending);
        watcher_on_lost(NULL, t->w);
        e = registry_get(t->w->registry, 202);
        assert_non_null(e);
        assert_false(e->start_pending);
        assert_int_equal(e->p.start_time, 2200);

        /* Events lost after a child's FORK (coalesced: no resync yet): its EXEC finds an
         * entry the stream no longer vouches for. It goes, and the process is matched from
         * its own stat. */
        fork_event(t, 200, 203, 203);
        assert_true(entry_of(t, 203)->start_pending);
        watcher_on_lost(NULL, t->w);
        put_process(t, 203, 2300, "vllm-b", "/usr/bin/python3");
        exec_event(t, 203);
        expect(t, "matched 203 vllm threads=1\n");
        assert_int_equal(watcher_find(t->w, 203)->start_time, 2300);
        assert_false(entry_of(t, 203)->start_pending);

        /* A policy reload evaluates every entry again: a pending start time is settled
         * from a read first, and a child already gone is let go. */
        put_process(t, 204, 2400, "python3", "/usr/bin/python3");
        fork_event(t, 200, 204, 204);
        fork_event(t, 200, 205, 205); /* never in /proc */
        assert_true(entry_of(t, 204)->start_pending);
        assert_true(entry_of(t, 205)->start_pending);
        assert_int_equal(watcher_reload(t->w, NULL, t->policy), 0);
        assert_false(entry_of(t, 204)->start_pending);
        assert_int_equal(entry_of(t, 204)->p.start_time, 2400);
        assert_null(registry_get(t->w->registry, 205));

        /* Events lost after a FORK whose kernel time is known: the child that FORK announced
         * began before it and keeps its entry, with the environment it inherited; a process
         * that began after it (the pid reused after a lost EXIT) does not. stat counts
         * CLOCK_BOOTTIME ticks, the event CLOCK_MONOTONIC ns. */
        struct timespec mono, boot;
        assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &mono), 0);
        assert_int_equal(clock_gettime(CLOCK_BOOTTIME, &boot), 0);
        const uint64_t tick_ns = 1000000000u / (uint64_t) sysconf(_SC_CLK_TCK);
        const uint64_t fork_mono_ns = (uint64_t) mono.tv_sec * 1000000000u + (uint64_t) mono.tv_nsec;
        const uint64_t fork_tick = ((uint64_t) boot.tv_sec * 1000000000u + (uint64_t) boot.tv_nsec) / tick_ns;
        fork_event_at(t, 200, 206, 206, fork_mono_ns);
        fork_event_at(t, 200, 207, 207, fork_mono_ns);
        watcher_on_lost(NULL, t->w);
        put_process(t, 206, fork_tick - 1, "python3", "/usr/bin/python3");
        put_process(t, 207, fork_tick + 100, "python3", "/usr/bin/python3");
        e = entry_of(t, 206);
        assert_true(e->p.env.inherited);
        assert_true(entry_settle_start(e));
        assert_int_equal(e->p.start_time, fork_tick - 1);
        assert_true(e->p.env.inherited);
        assert_false(entry_settle_start(entry_of(t, 207)));
}

/* A managed process's thread events (a FORK, a rename): while no event was lost the stream
 * vouches that its pid is still that process (its main thread's EXIT would come first), so
 * nothing is read or polled per event; after an overrun its identity is checked again. */
static void test_thread_event_vouched(void **state) {
        world *t = *state;
        watcher_stats st;

        put_process(t, 100, 1000, "vllm", "/usr/bin/python3");
        exec_event(t, 100);
        expect(t, "matched 100 vllm threads=1\n");
        /* Its stat silently names another process (impossible without a lost EXIT: it
         * shows that no stat is read for a thread's event). */
        put_process(t, 100, 9000, "vllm", "/usr/bin/python3");
        put_thread(t, 100, 101, "w");
        fork_event(t, 100, 101, 100);
        expect(t, "thread_new 100 101 w\n");
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.managed, 1);

        /* Events are lost: the next thread event checks the start time, and lets go of an
         * entry whose pid another process has now. */
        watcher_on_lost(NULL, t->w);
        watcher_on_lost(NULL, t->w); /* (the first one's resync has run: coalesced now) */
        put_thread(t, 100, 102, "w");
        fork_event(t, 100, 102, 100);
        assert_non_null(strstr(t->log, "exit 100 "));
}

/* One user's matches count against its share of entries (max_managed / 8, at least 64),
 * as its candidates do: the 65th process of uid 1000 that a rule matches is not managed,
 * unless one of that user's own candidates can make room; root's matches are not
 * counted, and the table stays open to everyone else. */
static void test_matches_per_user(void **state) {
        world *t = *state;
        watcher_stats st;
        char want[64];

        t->w->params.max_managed = 128; /* a share of 64 */
        put_process(t, 4000, 40000, "python3", "/usr/bin/python3");
        exec_event(t, 4000); /* a candidate of uid 1000: it may retitle into a trainer */
        for (int i = 0; i < 63; i++) {
                put_process(t, 4001 + i, 40001 + (uint64_t) i, "trainer", "/usr/bin/python3");
                exec_event(t, 4001 + i);
                snprintf(want, sizeof want, "matched %d trainer threads=1\n", 4001 + i);
                expect(t, want);
        }
        /* The share is full (63 managed + 1 candidate): the next match evicts the candidate. */
        put_process(t, 4064, 40064, "trainer", "/usr/bin/python3");
        exec_event(t, 4064);
        expect(t, "matched 4064 trainer threads=1\n");
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.candidates, 0);
        assert_int_equal(st.skipped_budget, 0);
        /* Now nothing of this user's can make room. */
        put_process(t, 4065, 40065, "trainer", "/usr/bin/python3");
        exec_event(t, 4065);
        expect(t, "");
        assert_null(watcher_find(t->w, 4065));
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.skipped_budget, 1);
        assert_int_equal(st.managed, 64);
        /* Root's trainer is managed all the same. */
        put_process(t, 4066, 40066, "trainer", "/usr/bin/python3");
        put_status(t, 4066, "trainer", 0);
        exec_event(t, 4066);
        expect(t, "matched 4066 trainer threads=1\n");
        /* One of the user's processes goes: the refused one is taken at its next look (an
         * exec, a rename, a resync). Refusals are not queued for a retry as those of a
         * full table are: the user's own exits would make the daemon re-read them all. */
        drop(t, 4001, 0);
        exit_event(t, 4001, 4001);
        expect(t, "exit 4001 exited\n");
        exec_event(t, 4065);
        expect(t, "matched 4065 trainer threads=1\n");
}

/* Overruns (ENOBUFS) a user can cause as often as they like: the first resyncs at once,
 * the others are coalesced into one resync a second later, never one each. */
static void test_overruns_coalesced(void **state) {
        world *t = *state;
        watcher_stats st;

        for (int i = 0; i < 1000; i++)
                watcher_on_lost(NULL, t->w);
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.overruns, 1000);
        assert_int_equal(st.resyncs, 1);
        assert_int_equal(st.resyncs_coalesced, 999);
        /* The coalesced one runs when the gap is over. */
        for (int i = 0; i < 30 && st.resyncs < 2; i++) {
                assert_true(sd_event_run(t->event, 100 * 1000) >= 0);
                watcher_get_stats(t->w, &st);
        }
        assert_int_equal(st.resyncs, 2);
}

/* A process that started after a resync, whose EXEC was lost in the next overrun (within
 * the second: coalesced), is matched by the resync that follows: coalesced, never dropped. */
static void test_overrun_after_resync_followed_up(void **state) {
        world *t = *state;
        watcher_stats st;

        watcher_on_lost(NULL, t->w);
        expect(t, "");
        put_process(t, 200, 2000, "vllm", "/usr/bin/python3"); /* its EXEC lost */
        watcher_on_lost(NULL, t->w);
        expect(t, "");
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.resyncs, 1);
        for (int i = 0; i < 30 && st.resyncs < 2; i++) {
                assert_true(sd_event_run(t->event, 100 * 1000) >= 0);
                watcher_get_stats(t->w, &st);
        }
        assert_int_equal(st.resyncs, 2);
        expect(t, "matched 200 vllm threads=1\n");
}

/* A match that gave up on the command line (its map held at its exec, or the host too
 * busy: the slow reader's deadline) is tried again once its back-off is over: no event
 * may come again (before: never managed; the burst row left a process so). Both at its
 * EXEC and when a resync finds it. */
static void test_gave_up_read_retried(void **state) {
        world *t = *state;

        put_process(t, 500, 5000, "serve", "/usr/bin/srv");
        put_process(t, 501, 5010, "serve", "/usr/bin/srv");
        t->reads_give_up = true;
        exec_event(t, 500);
        watcher_on_lost(NULL, t->w); /* the resync finds 501 */
        expect(t, "");
        t->reads_give_up = false;
        for (int i = 0; i < 30 && !strstr(t->log, "501"); i++)
                assert_true(sd_event_run(t->event, 100 * 1000) >= 0);
        expect(t, "matched 500 server threads=1\nmatched 501 server threads=1\n");
        /* Gone before its time: nothing. */
        put_process(t, 502, 5020, "serve", "/usr/bin/srv");
        t->reads_give_up = true;
        exec_event(t, 502);
        t->reads_give_up = false;
        drop(t, 502, 0);
        for (int i = 0; i < 3; i++)
                assert_true(sd_event_run(t->event, 100 * 1000) >= 0);
        expect(t, "");
}

/* More matches given up on a read than the retry queue holds (a burst on a host so busy
 * that the slow reader's workers for root were all stuck, and every read after failed at
 * once): the ones it forgot are found by a walk of /proc once reads work again (before:
 * never managed; two runs of the 4096-process burst left hundreds so). */
static void test_gave_up_queue_full_resyncs(void **state) {
        world *t = *state;
        enum { N = 300 }; /* more than the queue's 256 */
        char want[N * 40] = "";
        size_t len = 0;
        watcher_stats st;

        t->reads_give_up = true;
        for (int i = 0; i < N; i++) {
                put_process(t, 1000 + i, 10000 + i, "serve", "/usr/bin/srv");
                exec_event(t, 1000 + i);
        }
        expect(t, "");
        t->reads_give_up = false;
        for (int i = 0; i < N; i++)
                len += (size_t) snprintf(want + len, sizeof want - len, "matched %d server threads=1\n", 1000 + i);
        watcher_get_stats(t->w, &st);
        uint64_t resyncs = st.resyncs;
        /* The queue's retries (after 100 ms here) and, at least 1 s after the last walk,
         * the walk for the forgotten ones. */
        for (int i = 0; i < 40 && strlen(t->log) < len; i++)
                assert_true(sd_event_run(t->event, 100 * 1000) >= 0);
        watcher_get_stats(t->w, &st);
        assert_int_equal(st.resyncs, resyncs + 1);
        assert_int_equal(st.managed, N);
        /* In any order: the retried ones first, then the walk's, in pid order. */
        for (int i = 0; i < N; i++) {
                char line[64];
                snprintf(line, sizeof line, "matched %d server threads=1\n", 1000 + i);
                assert_non_null(strstr(t->log, line));
        }
        assert_int_equal(strlen(t->log), len);
        t->len = 0;
        t->log[0] = 0;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_exec_threads_exit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reload_captures_new_env_name, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_cmdline_environ_one_hand_off, setup, teardown),
                cmocka_unit_test_setup_teardown(test_thread_names_by_rule, setup_roles, teardown),
                cmocka_unit_test_setup_teardown(test_unmatch_on_exec, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pid_reuse, setup, teardown),
                cmocka_unit_test_setup_teardown(test_thread_event_vouched, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fork_event_after_resync, setup, teardown),
                cmocka_unit_test_setup_teardown(test_retitle, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rename_storm, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_resyncs_threads, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fork_by_candidate, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fork_child_stat_deferred, setup, teardown),
                cmocka_unit_test_setup_teardown(test_matches_per_user, setup, teardown),
                cmocka_unit_test_setup_teardown(test_overruns_coalesced, setup, teardown),
                cmocka_unit_test_setup_teardown(test_overrun_after_resync_followed_up, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gave_up_read_retried, setup_cmdline, teardown),
                cmocka_unit_test_setup_teardown(test_gave_up_queue_full_resyncs, setup_cmdline, teardown),
                cmocka_unit_test_setup_teardown(test_refused_match_retried, setup, teardown),
                cmocka_unit_test_setup_teardown(test_table_full_vouched, setup, teardown),
                cmocka_unit_test_setup_teardown(test_nine_users_full_table, setup, teardown),
                cmocka_unit_test_setup_teardown(test_renames_debounced, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_match_lists_no_threads, setup, teardown),
                cmocka_unit_test_setup_teardown(test_release_all, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
