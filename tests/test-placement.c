/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's placement (daemon/placement/), the real code, without root: a real Watcher
 * fed proc connector events as data (as tests/test-watcher-events.c does) over a fake
 * /proc and cgroup tree, calling placement through placement_watcher_ops; a fake kernel
 * behind placement's affinity and memmove backends, whose masks and pages are what the
 * test asserts; the affinity records in a real state directory.
 *
 *   topology   2 nodes of 4 CPUs: node 0 CPUs 0-3, node 1 CPUs 4-7
 *   edu:0      on node 1
 *   pid 4100   "server" (uid 0), rule "server": edu:0, control = main thread and
 *              threads named "acl*", compute = the rest; every thread starts on 0-7
 *
 * The story: matched and pinned by role, a thread appears, a thread renames into the
 * control role, its cgroup's cpuset is rewritten (planned again inside it), it exits;
 * in another run the daemon stops and gives the originals back; in a third its memory
 * moves to its memory node and is verified. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "attribution-store.h"
#include "fake-proc.h"
#include "fake-topology.h"
#include "npu-tuned/affinity-record.h"
#include "npu-tuned/policy.h"
#include "placement.h"
#include "watcher-internal.h"
#include "fake-watcher.h"

#define PID 4100
#define MAX_TASKS 16

/* ---- the fake kernel: sched_{get,set}affinity over a table of tasks ---- */

typedef struct fake_kernel {
        pid_t tids[MAX_TASKS];
        tune_cpuset masks[MAX_TASKS];
        unsigned n;
} fake_kernel;

static int fake_index(const fake_kernel *k, pid_t tid) {
        for (unsigned i = 0; i < k->n; i++)
                if (k->tids[i] == tid)
                        return (int) i;
        return -1;
}

static int fake_get(void *userdata, pid_t tid, tune_cpuset *ret) {
        fake_kernel *k = userdata;
        int i = fake_index(k, tid);

        if (i < 0)
                return -ESRCH;
        return tune_cpuset_copy(ret, &k->masks[i]);
}

static int fake_set(void *userdata, pid_t tid, const tune_cpuset *cpus) {
        fake_kernel *k = userdata;
        int i = fake_index(k, tid);

        if (i < 0)
                return -ESRCH;
        return tune_cpuset_copy(&k->masks[i], cpus);
}

/* A task on mask (a new thread: its creator's, as clone() gives it); a tid seen before is
 * a new task that reuses it. */
static void fake_task_add(fake_kernel *k, pid_t tid, const tune_cpuset *mask) {
        int i = fake_index(k, tid);

        if (i < 0) {
                assert_true(k->n < MAX_TASKS);
                i = (int) k->n++;
                k->tids[i] = tid;
        }
        assert_int_equal(tune_cpuset_copy(&k->masks[i], mask), 0);
}

static const tune_cpuset *fake_mask(const fake_kernel *k, pid_t tid) {
        int i = fake_index(k, tid);
        assert_true(i >= 0);
        return &k->masks[i];
}

static bool mask_is(const fake_kernel *k, pid_t tid, const char *want) {
        _cleanup_free_ char *got = NULL;
        return tune_cpuset_format_list(fake_mask(k, tid), &got) >= 0 && streq(got, want);
}

static void assert_mask(const fake_kernel *k, pid_t tid, const char *want) {
        _cleanup_free_ char *got = NULL;

        assert_int_equal(tune_cpuset_format_list(fake_mask(k, tid), &got), 0);
        if (strcmp(got, want) != 0)
                fprintf(stderr, "thread %d: CPUs %s, expected %s\n", (int) tid, got, want);
        assert_string_equal(got, want);
}

/* ---- the world ---- */

/* The rule, its memory section apart. */
#define POLICY_RESTORE(memory, restore) \
        "{ \"version\": 1," \
        "  \"accelerators\": { \"kinds\": [ { \"name\": \"edu\", \"pci_id\": \"1234:11e8\" } ] }," \
        "  \"processes\": [ { \"name\": \"server\", \"match\": { \"comm\": \"server\", \"user\": 0 }," \
        "    \"accelerators\": [ \"edu:0\" ]," \
        "    \"threads\": { \"control\": { \"main_thread\": true, \"names\": [ \"acl*\" ], \"cpus\": 1 }," \
        "                   \"compute\": { \"cpus\": 0 } }," \
        "    \"memory\": " memory ", \"binding\": \"daemon\", \"restore_on_stop\": " restore " } ] }"
#define POLICY(memory) POLICY_RESTORE(memory, "true")

static const char policy_json[] = POLICY("{ \"migrate\": false }");
/* Nothing to give back at a stop: no affinity record. */
static const char policy_keep_json[] = POLICY_RESTORE("{ \"migrate\": false }", "false");
/* Its memory moved at once (no settle delay, no rate limit). */
static const char policy_memory_json[] = POLICY("{ \"migrate\": true, \"settle_delay_ms\": 0, \"rate_mib_s\": 0 }");

/* ---- the fake kernel's memory: PAGES pages of PID at MM_START, each on a node ---- */

#define PAGES 8
#define MM_START 0x10000000UL

typedef struct fake_mm {
        const char *root;
        int nodes[PAGES];
} fake_mm;

/* numa_maps as the kernel would show the pages now (numa_maps.c reads the counts). */
static void fake_mm_write_numa_maps(fake_mm *mm) {
        unsigned on[2] = {};
        char rel[64], text[160];

        for (unsigned i = 0; i < PAGES; i++)
                on[mm->nodes[i]]++;
        snprintf(text, sizeof text, "%lx default anon=%u dirty=%u N0=%u N1=%u kernelpagesize_kB=4\n", MM_START, PAGES,
                 PAGES, on[0], on[1]);
        snprintf(rel, sizeof rel, "proc/%d/numa_maps", PID);
        fake_proc_put(mm->root, rel, text, strlen(text));
}

static long fake_move_pages(void *userdata, pid_t pid, unsigned long count, void **pages, const int *nodes,
                            int *status, int flags) {
        fake_mm *mm = userdata;

        assert_int_equal(pid, PID);
        for (unsigned long i = 0; i < count; i++) {
                uint64_t at = ((uint64_t) (uintptr_t) pages[i] - MM_START) / 4096;
                if (at >= PAGES) {
                        status[i] = -ENOENT;
                        continue;
                }
                if (nodes)
                        mm->nodes[at] = nodes[i];
                status[i] = mm->nodes[at];
        }
        if (nodes)
                fake_mm_write_numa_maps(mm);
        return 0;
}

typedef struct world {
        char root[64];
        char state_dir[128];
        sd_event *event;
        tune_ctx *ctx;
        tune_policy *policy;
        tune_topology *topology;
        tune_accel edu_item;
        tune_accels accels;
        fake_kernel kernel;
        tune_affinity_backend affinity;
        fake_mm mm;
        tune_memmove_backend memmove;
        Placement *placement;
        Watcher *w;
        tune_cpuset all; /* 0-7: every task's mask before anyone placed it */
} world;

static void put(world *t, const char *rel, const char *text) {
        fake_proc_put(t->root, rel, text, strlen(text));
}

/* Thread tid of PID in /proc, and in the fake kernel on mask. */
static void put_thread(world *t, pid_t tid, const char *comm, const tune_cpuset *mask) {
        char rel[128], text[160];

        snprintf(rel, sizeof rel, "proc/%d/task/%d/comm", PID, tid);
        snprintf(text, sizeof text, "%s\n", comm);
        put(t, rel, text);
        snprintf(rel, sizeof rel, "proc/%d/task/%d/stat", PID, tid);
        snprintf(text, sizeof text, "%d (%s) S 1 %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", tid, comm, PID,
                 PID, 1000 + tid);
        put(t, rel, text);
        if (mask)
                fake_task_add(&t->kernel, tid, mask);
}

static void put_process(world *t) {
        char rel[128], text[512], link[512];

        snprintf(rel, sizeof rel, "proc/%d/stat", PID);
        snprintf(text, sizeof text, "%d (server) S 1 %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5000 0 0\n", PID, PID,
                 PID);
        put(t, rel, text);
        snprintf(rel, sizeof rel, "proc/%d/status", PID);
        snprintf(text, sizeof text, "Name:\tserver\nTgid:\t%d\nPid:\t%d\nPPid:\t1\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n",
                 PID, PID);
        put(t, rel, text);
        snprintf(rel, sizeof rel, "proc/%d/comm", PID);
        put(t, rel, "server\n");
        snprintf(rel, sizeof rel, "proc/%d/cmdline", PID);
        put(t, rel, "server");
        snprintf(rel, sizeof rel, "proc/%d/environ", PID);
        put(t, rel, "");
        snprintf(rel, sizeof rel, "proc/%d/cgroup", PID);
        put(t, rel, "0::/server.slice\n");
        /* Its memory: every page on node 0. */
        snprintf(rel, sizeof rel, "proc/%d/maps", PID);
        snprintf(text, sizeof text, "%lx-%lx rw-p 00000000 00:00 0 \n", MM_START, MM_START + PAGES * 4096);
        put(t, rel, text);
        fake_mm_write_numa_maps(&t->mm);
        snprintf(link, sizeof link, "%s/proc/%d/exe", t->root, PID);
        assert_int_equal(symlink("/usr/bin/server", link), 0);
        put_thread(t, PID, "server", &t->all);
}

/* The cgroup the process lives in: its effective cpuset. */
static void put_cpuset(world *t, const char *cpus, const char *mems) {
        char text[64];

        snprintf(text, sizeof text, "%s\n", cpus);
        put(t, "sys/fs/cgroup/server.slice/cpuset.cpus.effective", text);
        snprintf(text, sizeof text, "%s\n", mems);
        put(t, "sys/fs/cgroup/server.slice/cpuset.mems.effective", text);
}

static void drop(world *t, pid_t tid) {
        char cmd[256];

        if (tid == PID)
                snprintf(cmd, sizeof cmd, "rm -rf '%s/proc/%d'", t->root, PID);
        else
                snprintf(cmd, sizeof cmd, "rm -rf '%s/proc/%d/task/%d'", t->root, PID, tid);
        assert_int_equal(system(cmd), 0);
}

static int setup_with(void **state, const char *policy) {
        world *t = calloc(1, sizeof *t);
        watcher_params params = {};

        assert_non_null(t);
        snprintf(t->root, sizeof t->root, "/tmp/test-placement-XXXXXX");
        assert_non_null(mkdtemp(t->root));
        /* Below the test root, so the walk from "/" meets only directories we own. */
        snprintf(t->state_dir, sizeof t->state_dir, "%s/state", t->root);
        assert_int_equal(tune_cpuset_parse_list(&t->all, "0-7"), 0);
        put(t, "proc/1/stat", "1 (init) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0\n");
        put(t, "proc/self/mounts", "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n");
        put(t, "proc/self/cgroup", "0::/system.slice/npu-tuned.service\n");
        put(t, "sys/fs/cgroup/cpuset.cpus.effective", "0-7\n");
        put(t, "sys/fs/cgroup/cpuset.mems.effective", "0-1\n");
        put_cpuset(t, "0-7", "0-1");

        assert_int_equal(sd_event_new(&t->event), 0);
        assert_int_equal(tune_ctx_new(t->root, &t->ctx), 0);
        t->policy = fake_policy_parse(policy);
        t->topology = fake_topology_new(2, 4, (const int[]){ 10, 20, 20, 10 }, NULL, 16 * GIB_KIB);
        t->edu_item = fake_accel("edu", 0, "0000:21:00.0", 1);
        t->accels = (tune_accels){ .items = &t->edu_item, .n = 1 };
        t->affinity = (tune_affinity_backend){ .get = fake_get, .set = fake_set, .userdata = &t->kernel };
        t->mm.root = t->root;
        t->memmove = (tune_memmove_backend){ .move_pages = fake_move_pages, .userdata = &t->mm };

        placement_inputs in = {
                .event = t->event,
                .ctx = t->ctx,
                .topology = t->topology,
                .state_dir = t->state_dir,
                .policy = t->policy,
                .accels = &t->accels,
                .affinity = &t->affinity,
                .memmove = &t->memmove,
        };
        assert_int_equal(placement_new(&in, &t->placement), 0);
        watcher_params_from_policy(t->policy, &params);
        /* The reconcile tick, which reads the cgroup cpuset again: soon, for the test. */
        params.reconcile_interval_ms = 20;
        assert_int_equal(watcher_new(t->event, t->ctx, &t->accels, t->policy, &params, &placement_watcher_ops,
                                     t->placement, &t->w),
                         0);
        placement_attach_watcher(t->placement, t->w);
        *state = t;
        return 0;
}

static int setup(void **state) {
        return setup_with(state, policy_json);
}

static int setup_keep(void **state) {
        return setup_with(state, policy_keep_json);
}

static int setup_memory(void **state) {
        return setup_with(state, policy_memory_json);
}

static int teardown(void **state) {
        world *t = *state;
        char cmd[128];

        watcher_release_all(t->w);
        watcher_free(t->w);
        placement_free(t->placement);
        tune_policy_free(t->policy);
        tune_topology_free(t->topology);
        tune_ctx_free(t->ctx);
        sd_event_unref(t->event);
        for (unsigned i = 0; i < t->kernel.n; i++)
                tune_cpuset_done(&t->kernel.masks[i]);
        tune_cpuset_done(&t->all);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->root);
        assert_int_equal(system(cmd), 0);
        free(t);
        return 0;
}

/* ---- what placement did ---- */

static const tune_plan *plan_of(world *t) {
        managed_process *mp = watcher_find(t->w, PID);
        assert_non_null(mp);
        const tune_plan *pl = placement_get(t->placement, mp);
        assert_non_null(pl);
        assert_int_equal(pl->action, TUNE_PLAN_PLACE);
        return pl;
}

static void assert_role(world *t, pid_t tid, tune_role role) {
        const tune_plan *pl = plan_of(t);
        if (!tune_cpuset_equal(fake_mask(&t->kernel, tid), &pl->role_cpus[role]))
                fprintf(stderr, "thread %d is not on the CPUs of role %s\n", (int) tid, tune_role_to_string(role));
        assert_true(tune_cpuset_equal(fake_mask(&t->kernel, tid), &pl->role_cpus[role]));
}

/* The record the daemon left for --restore: every thread we pinned, with its original. */
static void assert_record(world *t, const pid_t *tids, unsigned n) {
        _cleanup_(tune_affinity_record_done) tune_affinity_record rec = {};

        assert_int_equal(tune_affinity_record_load(t->state_dir, PID, &rec), 0);
        assert_true(rec.restore_on_stop);
        assert_int_equal(rec.originals.pid, PID);
        assert_int_equal(rec.originals.start_time, 5000);
        for (unsigned i = 0; i < n; i++) {
                const tune_affinity_entry *e = tune_affinity_originals_find(&rec.originals, tids[i]);
                assert_non_null(e);
                assert_true(tune_cpuset_equal(&e->original, &t->all));
        }
}

static bool state_file_exists(world *t, const char *name) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", t->state_dir, name);
        return access(path, F_OK) == 0;
}

static bool record_exists(world *t) {
        char name[64];
        snprintf(name, sizeof name, TUNE_AFFINITY_RECORD_PREFIX "%d" TUNE_AFFINITY_RECORD_SUFFIX, PID);
        return state_file_exists(t, name);
}

/* Matched at its exec and its main thread pinned (control); its first worker thread
 * (compute) pinned at its FORK. */
static void start(world *t) {
        put_process(t);
        fake_event_exec(t->w, PID);
        assert_non_null(watcher_find(t->w, PID));
        put_thread(t, PID + 1, "worker", fake_mask(&t->kernel, PID));
        fake_event_fork(t->w, PID, PID + 1, PID, 0);
        const tune_plan *pl = plan_of(t);
        /* Near edu:0: node 1's CPUs, the control role apart from compute. */
        assert_true(tune_cpuset_is_subset(&pl->pool, &t->topology->nodes[1].cpus));
        assert_false(tune_cpuset_is_empty(&pl->role_cpus[TUNE_ROLE_CONTROL]));
        assert_false(tune_cpuset_is_empty(&pl->role_cpus[TUNE_ROLE_COMPUTE]));
        assert_false(tune_cpuset_equal(&pl->role_cpus[TUNE_ROLE_CONTROL], &pl->role_cpus[TUNE_ROLE_COMPUTE]));
        assert_role(t, PID, TUNE_ROLE_CONTROL);
        assert_role(t, PID + 1, TUNE_ROLE_COMPUTE);
        /* One write, before the main thread's pin: the worker got a role set the record
         * lists (restore recognises it by that), and needed no write of its own. */
        assert_record(t, (const pid_t[]){ PID }, 1);
}

static void test_story(void **state) {
        world *t = *state;
        placement_stats stats;

        start(t);
        /* CPU 4 is node 1's housekeeping CPU (the IRQs'). */
        assert_mask(&t->kernel, PID, "5");
        assert_mask(&t->kernel, PID + 1, "6-7");

        /* A thread appears: it inherits its creator's mask (the main thread's, control),
         * and its FORK event places it by its own role. */
        put_thread(t, PID + 2, "worker", fake_mask(&t->kernel, PID));
        fake_event_fork(t->w, PID, PID + 2, PID, 0);
        assert_role(t, PID + 2, TUNE_ROLE_COMPUTE);
        assert_mask(&t->kernel, PID + 2, "6-7");

        /* It renames into the control role (an ACL thread): moved there. */
        put_thread(t, PID + 2, "acl_thread", NULL);
        fake_event_comm(t->w, PID + 2, PID, "acl_thread");
        assert_role(t, PID + 2, TUNE_ROLE_CONTROL);
        assert_mask(&t->kernel, PID + 2, "5");
        /* Still the first record: both sets are ones it lists. */
        assert_record(t, (const pid_t[]){ PID }, 1);

        /* The kubelet rewrites its cgroup's cpuset to 0-3 (node 0 only, far from edu:0):
         * the reconcile tick sees it, plans inside it, and every thread moves in. */
        put_cpuset(t, "0-3", "0");
        for (int i = 0; i < 100 && mask_is(&t->kernel, PID + 1, "6-7"); i++)
                assert_true(sd_event_run(t->event, 20 * 1000) >= 0);
        const tune_plan *pl = plan_of(t);
        _cleanup_cpuset_ tune_cpuset cgroup = {};
        assert_int_equal(tune_cpuset_parse_list(&cgroup, "0-3"), 0);
        assert_true(tune_cpuset_is_subset(&pl->pool, &cgroup));
        assert_role(t, PID, TUNE_ROLE_CONTROL);
        assert_role(t, PID + 1, TUNE_ROLE_COMPUTE);
        assert_role(t, PID + 2, TUNE_ROLE_CONTROL);
        /* CPU 0: node 0's housekeeping CPU. */
        assert_mask(&t->kernel, PID, "1");
        assert_mask(&t->kernel, PID + 1, "2-3");
        assert_mask(&t->kernel, PID + 2, "1");
        /* The new sets are outside those the record lists: written again before the
         * first thread moved, with every thread and the originals from before our first
         * pin. */
        assert_record(t, (const pid_t[]){ PID, PID + 1, PID + 2 }, 3);
        placement_get_stats(t->placement, &stats);
        assert_int_equal(stats.placements, 2);

        /* It exits: nothing to give back, its record goes. */
        drop(t, PID);
        fake_event_exit(t->w, PID, PID);
        assert_null(watcher_find(t->w, PID));
        assert_false(record_exists(t));
}

static int on_busy(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        return 0; /* left readable: ready again at every turn */
}

/* Under a rule that restores at a stop, what it was attributed from is in its affinity
 * record, written before its first pin, and in no file of its own; gone with the record
 * when it exits; in a file of its own when the daemon stops (the record goes with the
 * restore), for the next start. */
static void test_attribution_in_record(void **state) {
        world *t = *state;
        char name[64];

        snprintf(name, sizeof name, "attribution-%d", PID);
        put_process(t);
        fake_event_exec(t->w, PID);
        assert_role(t, PID, TUNE_ROLE_CONTROL);
        while (sd_event_run(t->event, 0) > 0)
                ;
        assert_false(state_file_exists(t, name));
        {
                _cleanup_(tune_affinity_record_done) tune_affinity_record rec = {};
                _cleanup_(attribution_saved_done) attribution_saved saved = {};

                assert_int_equal(tune_affinity_record_load(t->state_dir, PID, &rec), 0);
                assert_non_null(rec.attribution);
                assert_int_equal(attribution_saved_parse(rec.attribution, &saved), 0);
                assert_int_equal(saved.pid, PID);
                assert_int_equal(saved.start_time, 5000);
                assert_string_equal(saved.source, "rule");
                assert_string_equal(saved.accels, "edu:0");
        }

        /* It exits: its record goes, and with it what it was attributed from. */
        drop(t, PID);
        fake_event_exit(t->w, PID, PID);
        assert_false(record_exists(t));
        assert_false(state_file_exists(t, name));

        /* Again, and the daemon stops: its record goes with the restore, its file stays. */
        put_process(t);
        fake_event_exec(t->w, PID);
        assert_true(record_exists(t));
        assert_false(state_file_exists(t, name));
        watcher_release_all(t->w);
        assert_false(record_exists(t));
        assert_true(state_file_exists(t, name));
}

/* Under a rule with nothing to give back (no record), what it was attributed from is kept
 * once the events in hand are handled (the loop's next turn), not on the way to its
 * threads' pins; gone with it when it exits first; kept at once when the daemon stops
 * first (a restart's worth). */
static void test_attribution_after_batch(void **state) {
        world *t = *state;
        char name[64];

        snprintf(name, sizeof name, "attribution-%d", PID);
        /* A source always ready, as the connector is on a host whose events never stop:
         * the file must not wait for a quiet moment that never comes. */
        int busy[2];
        sd_event_source *busy_source = NULL;
        assert_int_equal(pipe2(busy, O_CLOEXEC), 0);
        assert_int_equal(write(busy[1], "x", 1), 1);
        assert_int_equal(sd_event_add_io(t->event, &busy_source, busy[0], EPOLLIN, on_busy, NULL), 0);
        put_process(t);
        fake_event_exec(t->w, PID);
        assert_non_null(watcher_find(t->w, PID));
        assert_role(t, PID, TUNE_ROLE_CONTROL);
        assert_false(state_file_exists(t, name));
        for (int i = 0; i < 3 && !state_file_exists(t, name); i++)
                assert_true(sd_event_run(t->event, 0) > 0);
        assert_true(state_file_exists(t, name));
        sd_event_source_disable_unref(busy_source);
        close(busy[0]);
        close(busy[1]);

        /* It exits: its file goes. */
        drop(t, PID);
        fake_event_exit(t->w, PID, PID);
        assert_false(state_file_exists(t, name));

        /* Again, and it exits before the loop comes to it: nothing is written. */
        put_process(t);
        fake_event_exec(t->w, PID);
        assert_non_null(watcher_find(t->w, PID));
        drop(t, PID);
        fake_event_exit(t->w, PID, PID);
        while (sd_event_run(t->event, 0) > 0)
                ;
        assert_false(state_file_exists(t, name));

        /* Again, and the daemon stops before the loop comes to it: kept now. */
        put_process(t);
        fake_event_exec(t->w, PID);
        assert_non_null(watcher_find(t->w, PID));
        assert_false(state_file_exists(t, name));
        watcher_release_all(t->w);
        assert_true(state_file_exists(t, name));
}

/* The daemon stops while the process runs: every thread gets its original back (the one
 * it had before the first pin), and the record goes with it. */
static void test_restore_on_stop(void **state) {
        world *t = *state;

        start(t);
        put_thread(t, PID + 2, "worker", fake_mask(&t->kernel, PID));
        fake_event_fork(t->w, PID, PID + 2, PID, 0);
        assert_mask(&t->kernel, PID + 2, "6-7");
        assert_true(record_exists(t));

        watcher_release_all(t->w);
        assert_mask(&t->kernel, PID, "0-7");
        assert_mask(&t->kernel, PID + 1, "0-7");
        assert_mask(&t->kernel, PID + 2, "0-7");
        assert_false(record_exists(t));
        /* The ready record, made after the first pin for the next process's first record,
         * goes when placement does: nothing is left for the next start. */
        assert_true(state_file_exists(t, TUNE_AFFINITY_RECORD_READY_NAME));
        t->placement = placement_free(t->placement);
        assert_false(state_file_exists(t, TUNE_AFFINITY_RECORD_READY_NAME));
}

/* Its memory moves to its memory node (edu:0's, node 1) through the memmove backend, in
 * steps from the event loop, and is verified from numa_maps afterwards. */
static void test_memory(void **state) {
        world *t = *state;
        placement_stats stats = {};

        start(t);
        const tune_plan *pl = plan_of(t);
        _cleanup_free_ char *mem = NULL;
        assert_int_equal(tune_cpuset_format_list(&pl->mem_nodes, &mem), 0);
        assert_string_equal(mem, "1");
        for (int i = 0; i < 100 && stats.migrations == 0; i++) {
                assert_true(sd_event_run(t->event, 20 * 1000) >= 0);
                placement_get_stats(t->placement, &stats);
        }
        assert_int_equal(stats.migrations, 1);
        for (unsigned i = 0; i < PAGES; i++)
                assert_int_equal(t->mm.nodes[i], 1);
        assert_true(placement_locality(watcher_find(t->w, PID)) > 99.9);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_story, setup, teardown),
                cmocka_unit_test_setup_teardown(test_restore_on_stop, setup, teardown),
                cmocka_unit_test_setup_teardown(test_attribution_in_record, setup, teardown),
                cmocka_unit_test_setup_teardown(test_attribution_after_batch, setup_keep, teardown),
                cmocka_unit_test_setup_teardown(test_memory, setup_memory, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
