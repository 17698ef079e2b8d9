/* SPDX-License-Identifier: GPL-2.0-only */
/* The plan end to end on generated sysfs trees (tests/fixtures/gen-fakeroot.py): the
 * readers (topology, accelerators) feed the plan, as in the daemon.
 *
 * The generated Atlas 800I A2 has node 0 with 3.2 GiB free, node 2 with 2.8 GiB, but
 * their sibling dies (nodes 1 and 3, distance 12) have ~20 GiB: there the rule "nearest
 * node by distance with the minimum free" sends memory to the siblings, not to node 4 as
 * the reference deployment did (its nodes 1 and 3 must have been short too: see the hand-built fixture in
 * test-plan.c, which reproduces the reference deployment's outcome). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/plan.h"
#include "npu-tuned/topology.h"
#include "plan-assert.h"

static int run(char *const argv[]) {
        int status;
        pid_t pid = fork();

        if (pid < 0)
                return -errno;
        if (pid == 0) {
                execvp(argv[0], argv);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -ECHILD;
}

typedef struct fixture {
        char dir[64];
        tune_ctx *ctx;
        tune_topology *t;
        tune_accels accels;
} fixture;

static void fixture_load(fixture *f, const char *machine) {
        const char *src = getenv("NPU_SOURCE_ROOT");
        char gen[4096];

        assert_non_null(src);
        snprintf(gen, sizeof gen, "%s/tests/fixtures/gen-fakeroot.py", src);
        snprintf(f->dir, sizeof f->dir, "/tmp/test-plan-fixtures-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        assert_int_equal(run((char *const[]) { (char *) "python3", gen, (char *) machine, f->dir, NULL }), 0);
        assert_int_equal(tune_ctx_new(f->dir, &f->ctx), 0);
        assert_int_equal(tune_topology_load(f->ctx, &f->t), 0);
        assert_int_equal(tune_accels_discover(f->ctx, NULL, 0, &f->accels), 0);
}

static void fixture_done(fixture *f) {
        tune_accels_done(&f->accels);
        tune_topology_free(f->t);
        tune_ctx_free(f->ctx);
        assert_int_equal(run((char *const[]) { (char *) "rm", (char *) "-rf", (char *) "--", f->dir, NULL }), 0);
}

static char ctl_glob[] = "acl_thread", work_glob[] = "omp-*";
static char *ctl_globs[] = { ctl_glob, NULL }, *work_globs[] = { work_glob, NULL };

static tune_policy_rule atlas_rule(void) {
        return (tune_policy_rule) {
                .name = (char *) "atlas",
                .control = { .name_globs = ctl_globs, .main_thread = true, .cpus = 2 },
                .compute = { .name_globs = work_globs, .cpus = 8 },
                .memory_migrate = true,
                .memory_min_free_kib = UINT64_C(8) * 1024 * 1024,
        };
}


/* One process per NPU, as vllm-ascend runs TP4. */
static void test_generated_atlas(void **state) {
        fixture f = {};
        tune_policy_rule rule = atlas_rule();
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        const tune_accel *npu[4];
        tune_plan_request reqs[4];
        tune_plan out[4] = {};
        (void) state;

        fixture_load(&f, "atlas-800i-a2");
        assert_int_equal(f.t->n_nodes, 8);
        for (int i = 0; i < 4; i++) {
                npu[i] = tune_accels_find(&f.accels, "ascend", i);
                assert_non_null(npu[i]);
                reqs[i] = (tune_plan_request) { .key = (uint64_t) i, .rule = &rule, .accels = &npu[i], .n_accels = 1 };
        }
        assert_int_equal(tune_plan_compute(f.t, &params, reqs, 4, out), 0);
        /* davinci0/1 on node 0 (CPUs 0-23), davinci2/3 on node 2 (48-71). */
        assert_set(&out[0].pool, "2-11");
        assert_set(&out[1].pool, "12-21");
        assert_set(&out[2].pool, "50-59");
        assert_set(&out[3].pool, "60-69");
        assert_set(&out[0].role_cpus[TUNE_ROLE_CONTROL], "2-3");
        assert_set(&out[3].role_cpus[TUNE_ROLE_COMPUTE], "62-69");
        for (int i = 0; i < 4; i++)
                for (int k = 0; k < i; k++)
                        assert_false(tune_cpuset_overlaps(&out[i].pool, &out[k].pool));
        /* Memory: the sibling dies, distance 12, ~20 GiB free. */
        assert_set(&out[0].mem_nodes, "1");
        assert_set(&out[2].mem_nodes, "3");
        assert_true(has_reason(&out[0], "memory: node 0 has 3.2 GiB free < 8.0 GiB minimum; nearest node with room "
                                        "by distance: node 1 (distance 12, 20.0 GiB free)"));
        for (int i = 0; i < 4; i++)
                tune_plan_done(&out[i]);
        fixture_done(&f);
}

/* The NPU at 0000:c2:00.0 reports numa_node -1: refused, until the policy's override. */
static void test_generated_unknown_node(void **state) {
        fixture f = {};
        tune_policy_rule rule = atlas_rule();
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        const tune_accel *npu;
        tune_plan_request req = { .rule = &rule, .n_accels = 1 };
        tune_plan out = {};
        (void) state;

        fixture_load(&f, "atlas-800i-a2-unknown-node");
        npu = tune_accels_find(&f.accels, "ascend", 1);
        assert_non_null(npu);
        assert_string_equal(npu->pci, "0000:c2:00.0");
        assert_int_equal(npu->numa_node, -1);
        req.accels = &npu;
        assert_int_equal(tune_plan_compute(f.t, &params, &req, 1, &out), 0);
        assert_int_equal(out.action, TUNE_PLAN_REFUSE);
        assert_true(has_reason(&out, "firmware reports no NUMA node and the policy has no node override for 0000:c2:00.0"));
        tune_plan_done(&out);

        assert_int_equal(tune_accels_override_node(&f.accels, f.t, "0000:c2:00.0", 0), 0);
        npu = tune_accels_find(&f.accels, "ascend", 1);
        req.accels = &npu;
        assert_int_equal(tune_plan_compute(f.t, &params, &req, 1, &out), 0);
        assert_int_equal(out.action, TUNE_PLAN_PLACE);
        assert_set(&out.pool, "2-11");
        assert_true(has_reason(&out, "NUMA node 0 (set by the policy's node override)"));
        tune_plan_done(&out);
        fixture_done(&f);
}

/* Fake claims (docs/trust.md): any user can name a program like a vLLM worker and set
 * ASCEND_RT_VISIBLE_DEVICES=0. Before the trust model every fake took an equal share of
 * the accelerator's node: with 23 of them the real server's pool went from 24 CPUs to 3,
 * two of them on another node. Now 23 unverified fakes leave it exactly as it was; and
 * where any user may open the device (so the fakes verify), one user's 23 processes get
 * that user's share of the node, never more. The default policy's worker rule: control
 * 2, compute "the rest". */
#define N_FAKES 23
static void plan_real_and_fakes(const fixture *f, const tune_policy_rule *rule, unsigned n_real, unsigned n_fakes,
                                bool fakes_verified, tune_plan *out) {
        tune_plan_params params = { .housekeeping_cpus_per_node = 0 };
        const tune_accel *npu[4], *npu0;
        tune_plan_request reqs[4 + N_FAKES];

        npu0 = tune_accels_find(&f->accels, "ascend", 0);
        assert_non_null(npu0);
        assert_true(n_real <= 4 && n_fakes <= N_FAKES);
        for (unsigned i = 0; i < n_real; i++) {
                npu[i] = tune_accels_find(&f->accels, "ascend", (int) i);
                assert_non_null(npu[i]);
                /* The real server: a service account whose group may open /dev/davinci*. */
                reqs[i] = (tune_plan_request) { .key = i, .rule = rule, .accels = &npu[i], .n_accels = 1,
                                                .claim = { .uid = 1001, .tier = TUNE_CLAIM_VERIFIED,
                                                           .why = "may open /dev/davinci" } };
        }
        for (unsigned i = 0; i < n_fakes; i++)
                reqs[n_real + i] = (tune_plan_request) { .key = 100 + i, .rule = rule, .accels = &npu0, .n_accels = 1,
                                                         .claim = { .uid = 65534, .tier = fakes_verified ? TUNE_CLAIM_VERIFIED : TUNE_CLAIM_UNVERIFIED } };
        for (unsigned i = 0; i < n_real + n_fakes; i++)
                out[i] = (tune_plan) {};
        assert_int_equal(tune_plan_compute(f->t, &params, reqs, n_real + n_fakes, out), 0);
}

static void done_all(tune_plan *out, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                tune_plan_done(&out[i]);
}

static void test_generated_atlas_fake_claims(void **state) {
        static char g[] = "acl_thread";
        static char *globs[] = { g, NULL };
        tune_policy_rule rule = {
                .name = (char *) "vllm-worker",
                .control = { .name_globs = globs, .main_thread = true, .cpus = 2 },
                .compute = { .cpus = 0 },
        };
        tune_plan alone[4] = {}, out[4 + N_FAKES];
        fixture f = {};
        (void) state;

        fixture_load(&f, "atlas-800i-a2");

        /* One real process on davinci0 alone: all of node 0. */
        plan_real_and_fakes(&f, &rule, 1, 0, false, alone);
        assert_set(&alone[0].pool, "0-23");
        done_all(alone, 1);

        /* ... and with 23 unverified fakes from nobody: the same 24 CPUs; the fakes get
         * only CPUs no verified claim wants (borrowed from node 1) or nothing. */
        plan_real_and_fakes(&f, &rule, 1, N_FAKES, false, out);
        assert_int_equal(out[0].action, TUNE_PLAN_PLACE);
        assert_set(&out[0].pool, "0-23");
        assert_set(&out[0].role_cpus[TUNE_ROLE_CONTROL], "0-1");
        assert_true(tune_cpuset_is_empty(&out[0].borrowed_nodes));
        for (unsigned i = 1; i <= N_FAKES; i++) {
                assert_false(tune_cpuset_overlaps(&out[i].pool, &out[0].pool));
                if (out[i].action == TUNE_PLAN_REFUSE)
                        assert_true(has_reason(&out[i], "its claim is not verified"));
        }
        assert_true(has_reason(&out[0], "claim of uid 1001 verified: may open /dev/davinci"));
        done_all(out, 1 + N_FAKES);

        /* The whole TP4 server (davinci0-3 on nodes 0 and 2) keeps exactly its pools. */
        plan_real_and_fakes(&f, &rule, 4, 0, false, alone);
        plan_real_and_fakes(&f, &rule, 4, N_FAKES, false, out);
        for (unsigned i = 0; i < 4; i++) {
                assert_true(tune_cpuset_equal(&out[i].pool, &alone[i].pool));
                assert_true(tune_cpuset_equal(&out[i].role_cpus[TUNE_ROLE_COMPUTE], &alone[i].role_cpus[TUNE_ROLE_COMPUTE]));
        }
        done_all(out, 4 + N_FAKES);
        done_all(alone, 4);

        /* A host where anyone may open the device: the fakes verify, but they are one
         * user's: that user gets half of node 0, not 23/24 of it. */
        plan_real_and_fakes(&f, &rule, 1, N_FAKES, true, out);
        assert_set(&out[0].pool, "0-11");
        assert_true(tune_cpuset_is_empty(&out[0].borrowed_nodes));
        done_all(out, 1 + N_FAKES);

        /* The same host (anyone may open the device, so every claim verifies) with the real
         * server running as root, and 3 other users' look-alikes on its accelerator: root
         * is vouched for, the others only verified by access, so the server keeps its
         * whole pool; before trust tiers each uid took a share and root got 6 CPUs. */
        {
                const tune_accel *npu0 = tune_accels_find(&f.accels, "ascend", 0);
                tune_plan_params params = { .housekeeping_cpus_per_node = 0 };
                tune_plan_request reqs[4];

                reqs[0] = (tune_plan_request) { .key = 0, .rule = &rule, .accels = &npu0, .n_accels = 1,
                                                .claim = { .uid = 0, .tier = TUNE_CLAIM_VOUCHED, .why = "runs as root" } };
                for (unsigned i = 1; i < 4; i++)
                        reqs[i] = (tune_plan_request) { .key = i, .rule = &rule, .accels = &npu0, .n_accels = 1,
                                                        .claim = { .uid = 1000 + i, .tier = TUNE_CLAIM_VERIFIED,
                                                                   .why = "may open /dev/davinci0" } };
                for (unsigned i = 0; i < 4; i++)
                        out[i] = (tune_plan) {};
                assert_int_equal(tune_plan_compute(f.t, &params, reqs, 4, out), 0);
                assert_int_equal(out[0].action, TUNE_PLAN_PLACE);
                assert_set(&out[0].pool, "0-23");
                assert_set(&out[0].role_cpus[TUNE_ROLE_CONTROL], "0-1");
                for (unsigned i = 1; i < 4; i++)
                        assert_false(tune_cpuset_overlaps(&out[i].pool, &out[0].pool));
                done_all(out, 4);
        }
        fixture_done(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_generated_atlas),
                cmocka_unit_test(test_generated_unknown_node),
                cmocka_unit_test(test_generated_atlas_fake_claims),
        };
        if (run((char *const[]) { (char *) "python3", (char *) "-c", (char *) "", NULL }) != 0) {
                fprintf(stderr, "SKIP: python3 (needed by tests/fixtures/gen-fakeroot.py) is not installed\n");
                return 77;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
