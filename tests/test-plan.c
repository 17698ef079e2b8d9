/* SPDX-License-Identifier: GPL-2.0-only */
/* The placement plan on hand-built topologies: the Atlas 800I A2 of the reference deployment, plus
 * smaller machines for edge cases. Pure: no sysfs, no processes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <json.h>

#include "fake-topology.h"
#include "plan-assert.h"
#include "npu-tuned/plan.h"
#include "npu-tuned/thread-role.h"

static char control_g0[] = "acl_thread", control_g1[] = "hccl_*", control_g2[] = "ctl-*";
static char compute_g0[] = "omp-*", compute_g1[] = "work-*", acl_glob[] = "acl_thread";
static char *control_globs[] = { control_g0, control_g1, control_g2, NULL };
static char *compute_globs[] = { compute_g0, compute_g1, NULL };

/* A rule as the reference deployment would write it: control threads by name + the main thread, compute
 * threads by name, memory to a node with min_free_gib free. */
static tune_policy_rule make_rule(unsigned control_cpus, unsigned compute_cpus, uint64_t min_free_kib) {
        return (tune_policy_rule) {
                .name = (char *) "test",
                .accel_mode = TUNE_ACCEL_AUTO,
                .control = { .name_globs = control_globs, .main_thread = true, .cpus = control_cpus },
                .compute = { .name_globs = compute_globs, .cpus = compute_cpus },
                .memory_migrate = true,
                .memory_min_free_kib = min_free_kib,
        };
}

static void placements_done(tune_plan *p, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                tune_plan_done(&p[i]);
}

/* Invariants every plan must keep, whatever the input. */
static void assert_invariants(const tune_topology *t, const tune_plan_params *params,
                              const tune_plan *p, unsigned n) {
        _cleanup_cpuset_ tune_cpuset available = {};

        for (unsigned i = 0; i < t->n_nodes; i++) {
                _cleanup_cpuset_ tune_cpuset a = {};
                assert_int_equal(tune_plan_available_cpus(t, params, t->nodes[i].id, &a), 0);
                assert_int_equal(tune_cpuset_or(&available, &a), 0);
        }
        for (unsigned k = 0; k < n; k++) {
                if (p[k].action != TUNE_PLAN_PLACE) {
                        assert_true(tune_cpuset_is_empty(&p[k].pool));
                        continue;
                }
                assert_false(tune_cpuset_is_empty(&p[k].pool));
                for (unsigned r = 0; r < _TUNE_ROLE_MAX; r++) {
                        assert_false(tune_cpuset_is_empty(&p[k].role_cpus[r]));
                        assert_true(tune_cpuset_is_subset(&p[k].role_cpus[r], &p[k].pool));
                }
                assert_true(tune_cpuset_equal(&p[k].role_cpus[TUNE_ROLE_OTHER], &p[k].pool));
                if (p[k].shared)
                        continue;
                assert_true(tune_cpuset_is_subset(&p[k].pool, &available));
                if (p[k].cpus_wanted > 0)
                        assert_true(tune_cpuset_count(&p[k].pool) <= p[k].cpus_wanted);
                for (unsigned j = 0; j < k; j++)
                        if (p[j].action == TUNE_PLAN_PLACE && !p[j].shared)
                                assert_false(tune_cpuset_overlaps(&p[k].pool, &p[j].pool));
        }
}

/* memory.shared moves pages a process shares with others (MPOL_MF_MOVE_ALL): only for a
 * claim someone other than the process vouches for (root's, a named user or cgroup). A
 * look-alike that can open the devices (verified by its own access) moves its own pages
 * only, and its plan says so (docs/trust.md, "Trust tiers"). */
static void test_memory_shared_vouched_only(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_policy_rule rule = make_rule(2, 8, 0);
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        tune_accel npus[4];
        const tune_accel *ptr[2];
        tune_plan_request reqs[2];
        tune_plan out[2] = {};
        bool said = false;
        (void) state;

        rule.memory_shared = true;
        fake_atlas_npus(npus);
        for (unsigned k = 0; k < 2; k++) {
                ptr[k] = &npus[k];
                reqs[k] = (tune_plan_request) { .key = k, .rule = &rule, .accels = &ptr[k], .n_accels = 1 };
        }
        reqs[0].claim = (tune_claim) { .uid = 0, .tier = TUNE_CLAIM_VOUCHED, .why = "runs as root" };
        reqs[1].claim = (tune_claim) { .uid = 1000, .tier = TUNE_CLAIM_VERIFIED, .why = "may open /dev/davinci1" };
        assert_int_equal(tune_plan_compute(t, &params, reqs, 2, out), 0);
        assert_int_equal(out[0].action, TUNE_PLAN_PLACE);
        assert_int_equal(out[1].action, TUNE_PLAN_PLACE);
        assert_false(tune_cpuset_is_empty(&out[0].mem_nodes));
        assert_false(tune_cpuset_is_empty(&out[1].mem_nodes));
        assert_true(out[0].memory_shared);
        assert_false(out[1].memory_shared);
        for (unsigned i = 0; i < out[1].n_reasons; i++)
                said = said || strstr(out[1].reasons[i], "its own pages only");
        assert_true(said);
        placements_done(out, 2);
}

/* The Atlas 800I A2 with one process per NPU (TP4 as four workers): each gets CPUs on its
 * NPU's node, 2 housekeeping CPUs per node stay free, control 2 + compute 8, no overlap. */
static void test_atlas_four_processes(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_policy_rule rule = make_rule(2, 8, 8 * GIB_KIB);
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        tune_accel npus[4];
        const tune_accel *ptr[4];
        tune_plan_request reqs[4];
        tune_plan out[4] = {};
        (void) state;

        fake_atlas_npus(npus);
        for (unsigned k = 0; k < 4; k++) {
                ptr[k] = &npus[k];
                reqs[k] = (tune_plan_request) { .key = k, .rule = &rule, .accels = &ptr[k], .n_accels = 1 };
        }
        assert_int_equal(tune_plan_compute(t, &params, reqs, 4, out), 0);
        for (unsigned k = 0; k < 4; k++) {
                const tune_node *node = tune_topology_node(t, npus[k].numa_node);
                assert_int_equal(out[k].action, TUNE_PLAN_PLACE);
                assert_int_equal(tune_cpuset_count(&out[k].pool), 10);
                assert_true(tune_cpuset_is_subset(&out[k].pool, &node->cpus));
                assert_int_equal(tune_cpuset_count(&out[k].role_cpus[TUNE_ROLE_CONTROL]), 2);
                assert_int_equal(tune_cpuset_count(&out[k].role_cpus[TUNE_ROLE_COMPUTE]), 8);
                assert_false(tune_cpuset_overlaps(&out[k].role_cpus[TUNE_ROLE_CONTROL],
                                                  &out[k].role_cpus[TUNE_ROLE_COMPUTE]));
                assert_true(tune_cpuset_is_empty(&out[k].borrowed_nodes));
        }
        /* Node 0 = CPUs 0-23, 0-1 housekeeping; node 2 = CPUs 48-71, 48-49 housekeeping. */
        assert_set(&out[0].pool, "2-11");
        assert_set(&out[0].role_cpus[TUNE_ROLE_CONTROL], "2-3");
        assert_set(&out[0].role_cpus[TUNE_ROLE_COMPUTE], "4-11");
        assert_set(&out[1].pool, "12-21");
        assert_set(&out[1].role_cpus[TUNE_ROLE_CONTROL], "12-13");
        assert_set(&out[1].role_cpus[TUNE_ROLE_COMPUTE], "14-21");
        assert_set(&out[2].pool, "50-59");
        assert_set(&out[3].pool, "60-69");
        assert_set(&out[3].role_cpus[TUNE_ROLE_CONTROL], "60-61");
        assert_set(&out[3].role_cpus[TUNE_ROLE_COMPUTE], "62-69");
        assert_invariants(t, &params, out, 4);
        assert_reason(&out[0], "accelerator ascend 0 (0000:c1:00.0): NUMA node 0");
        assert_reason(&out[0], "node 0: 24 usable CPU(s), 22 after 2 housekeeping CPU(s), shared by 2 managed process(es)");
        assert_reason(&out[0], "wants 10 CPUs (control 2 + compute 8); got 10: 2-11");
        /* Memory: the reference deployment's outcome, NUMA4 for the node-0 NPUs and NUMA6 for node 2's. */
        assert_set(&out[0].mem_nodes, "4");
        assert_set(&out[1].mem_nodes, "4");
        assert_set(&out[2].mem_nodes, "6");
        assert_set(&out[3].mem_nodes, "6");
        placements_done(out, 4);
}

/* The reference deployment's memory case. NPU0 sits on node 0 with 3.2 GiB free; the rule wants 8 GiB.
 * Nearest first: node 1 (distance 12) has only 4.0 GiB, nodes 2 and 3 (distance 20) have
 * 2.8 and 5.0 GiB, so the nearest node with 8 GiB is node 4 (distance 28, 28 GiB free) -
 * where the reference deployment moved the memory by hand. With a lower minimum the nearer nodes win,
 * which shows it is the distance order, not "the node with most free memory". */
static void test_reference_memory_case(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        tune_accel npus[4];
        const tune_accel *ptr;
        struct { uint64_t min_free_kib; const char *want; } cases[] = {
                { 8 * GIB_KIB, "4" },       /* the reference deployment */
                { 4 * GIB_KIB, "1" },       /* node 1 has exactly 4.0 GiB: enough */
                { 3 * GIB_KIB, "0" },       /* node 0 itself has 3.2 GiB */
                { 25 * GIB_KIB, "4" },      /* only node 4 has 28 GiB */
                { 0, "0" },                 /* no minimum: the accelerator's node */
        };
        (void) state;

        fake_atlas_npus(npus);
        ptr = &npus[0];
        for (unsigned i = 0; i < ELEMENTSOF(cases); i++) {
                tune_policy_rule rule = make_rule(2, 8, cases[i].min_free_kib);
                tune_plan_request req = { .rule = &rule, .accels = &ptr, .n_accels = 1 };
                tune_plan out = {};

                assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
                assert_int_equal(out.action, TUNE_PLAN_PLACE);
                assert_set(&out.mem_nodes, cases[i].want);
                assert_true(out.memory_decided);
                if (i == 0) {
                        print_reasons(&out);
                        assert_reason(&out, "memory: node 0 has 3.2 GiB free < 8.0 GiB minimum; "
                                      "nearest node with room by distance: node 4 (distance 28, 28.0 GiB free); "
                                      "nearer nodes without room: node 1 (distance 12, 4.0 GiB), "
                                      "node 2 (distance 20, 2.8 GiB), node 3 (distance 20, 5.0 GiB)");
                        /* CPUs stay next to the NPU: only memory moves away. */
                        assert_set(&out.pool, "2-11");
                }
                tune_plan_done(&out);
        }

        /* An accelerator's own memory exposed as a node (NVIDIA GPU memory on POWER9 or
         * Grace) never takes host memory, however near and free: node 1 becomes one. */
        {
                tune_policy_rule rule = make_rule(2, 8, 4 * GIB_KIB);
                tune_plan_request req = { .rule = &rule, .accels = &ptr, .n_accels = 1 };
                tune_plan out = {};

                t->nodes[1].accelerator_memory = true;
                assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
                assert_set(&out.mem_nodes, "3");
                t->nodes[1].accelerator_memory = false;
                tune_plan_done(&out);
        }

        /* No node has the minimum: memory is left alone and the plan says so. */
        tune_policy_rule rule = make_rule(2, 8, 64 * GIB_KIB);
        tune_plan_request req = { .rule = &rule, .accels = &ptr, .n_accels = 1 };
        tune_plan out = {};
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        assert_true(tune_cpuset_is_empty(&out.mem_nodes));
        assert_reason(&out, "memory: node 0 has 3.2 GiB free < 64.0 GiB minimum; no node has 64.0 GiB free: memory left where it is");
        tune_plan_done(&out);

        /* A rule that does not move memory says so. */
        rule = make_rule(2, 8, 0);
        rule.memory_migrate = false;
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        assert_true(tune_cpuset_is_empty(&out.mem_nodes));
        assert_reason(&out, "the rule does not move memory");
        tune_plan_done(&out);
}

/* Firmware reported no node (numa_node -1) for an NPU on a multi-node host. */
static void test_unknown_accelerator_node(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        _cleanup_(tune_topology_freep) tune_topology *one = fake_topology_new(1, 2, NULL, NULL, 8 * GIB_KIB);
        tune_policy_rule rule = make_rule(2, 8, 0);
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        tune_accel unknown = fake_accel("ascend", 5, "0000:c5:00.0", -1);
        tune_accel bogus = fake_accel("ascend", 6, "0000:c6:00.0", 9);
        tune_accel known = fake_accel("ascend", 2, "0000:81:00.0", 2);
        const tune_accel *ptr[2] = { &unknown };
        tune_plan_request req = { .rule = &rule, .accels = ptr, .n_accels = 1 };
        tune_plan out = {};
        (void) state;

        /* 1. No override: a clear refusal that names the device and the fix. */
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        assert_int_equal(out.action, TUNE_PLAN_REFUSE);
        assert_true(tune_cpuset_is_empty(&out.pool));
        assert_reason(&out, "accelerator ascend 5 (0000:c5:00.0): firmware reports no NUMA node and the policy has no node override for 0000:c5:00.0");
        assert_reason(&out, "not placed: none of its accelerators has a known NUMA node");
        tune_plan_done(&out);

        /* 2. A node the host does not have: same refusal. */
        ptr[0] = &bogus;
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        assert_int_equal(out.action, TUNE_PLAN_REFUSE);
        assert_reason(&out, "firmware reports NUMA node 9, which this host does not have");
        tune_plan_done(&out);

        /* 3. The policy's override (tune_accels_override_node() already applied it). */
        unknown.numa_node = 4;
        unknown.numa_node_overridden = true;
        ptr[0] = &unknown;
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        assert_int_equal(out.action, TUNE_PLAN_PLACE);
        assert_set(&out.pool, "98-107");
        assert_reason(&out, "accelerator ascend 5 (0000:c5:00.0): NUMA node 4 (set by the policy's node override)");
        tune_plan_done(&out);

        /* 4. One known, one unknown: placed by the known one, and said so. */
        unknown.numa_node = -1;
        unknown.numa_node_overridden = false;
        ptr[0] = &unknown;
        ptr[1] = &known;
        req.n_accels = 2;
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        assert_int_equal(out.action, TUNE_PLAN_PLACE);
        assert_set(&out.home_nodes, "2");
        assert_set(&out.pool, "50-59");
        assert_reason(&out, "placed by the 1 accelerator(s) with a known node; 1 with an unknown node ignored");
        tune_plan_done(&out);

        /* 5. A one-node host (this dev machine: numa_node is -1 there): it is node 0. */
        params.housekeeping_cpus_per_node = 0;
        rule = make_rule(1, 1, 0);
        req.n_accels = 1;
        assert_int_equal(tune_plan_compute(one, &params, &req, 1, &out), 0);
        assert_int_equal(out.action, TUNE_PLAN_PLACE);
        assert_split(&out, "0-1", "0", "1");
        assert_reason(&out, "this host has only node 0, so it is that one");
        tune_plan_done(&out);
}

/* A node with too few CPUs: the process borrows from the nearest node by distance, the
 * plan says so, compute keeps the home CPUs; a node's own processes are served before
 * borrowers; when nothing is left, a clear refusal. */
static void test_too_few_cpus(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_policy_rule rule = make_rule(4, 20, 0);
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        tune_accel npu0 = fake_accel("ascend", 0, "0000:c1:00.0", 0);
        tune_accel on1 = fake_accel("ascend", 4, "0000:c3:00.0", 1);
        const tune_accel *p0 = &npu0, *p1 = &on1;
        tune_plan_request reqs[2] = {
                { .key = 0, .rule = &rule, .accels = &p0, .n_accels = 1 },
                { .key = 1, .rule = &rule, .accels = &p1, .n_accels = 1 },
        };
        tune_plan out[2] = {};
        (void) state;

        /* 24 wanted, node 0 has 22 after housekeeping: 2 from node 1 (distance 12; its
         * CPUs 24-25 are housekeeping). */
        assert_int_equal(tune_plan_compute(t, &params, reqs, 1, out), 0);
        print_reasons(&out[0]);
        assert_int_equal(out[0].action, TUNE_PLAN_PLACE);
        assert_set(&out[0].pool, "2-23,26-27");
        assert_set(&out[0].borrowed_nodes, "1");
        assert_set(&out[0].role_cpus[TUNE_ROLE_COMPUTE], "4-23");
        assert_set(&out[0].role_cpus[TUNE_ROLE_CONTROL], "2-3,26-27");
        assert_reason(&out[0], "its home node(s) had 22 free CPU(s) of 24 wanted: borrowed 2 from node 1 (distance 12), the nearest node with spare CPUs");
        placements_done(out, 1);

        /* Node 1 gets its own process: it is served first, both borrow from node 2 (the
         * next by distance from either, lower id on the tie with node 3). */
        assert_int_equal(tune_plan_compute(t, &params, reqs, 2, out), 0);
        assert_set(&out[0].pool, "2-23,50-51");
        assert_set(&out[1].pool, "26-47,52-53");
        assert_set(&out[0].borrowed_nodes, "2");
        assert_set(&out[1].borrowed_nodes, "2");
        assert_reason(&out[0], "borrowed 2 from node 2 (distance 20)");
        assert_invariants(t, &params, out, 2);
        placements_done(out, 2);

        /* A 1-node, 4-CPU host, five processes wanting 2 CPUs each: max-min fair, one CPU
         * each for the first four (arrival order breaks the tie), the fifth is refused. */
        _cleanup_(tune_topology_freep) tune_topology *small = fake_topology_new(1, 4, NULL, NULL, 8 * GIB_KIB);
        tune_policy_rule two = make_rule(1, 1, 0);
        tune_plan_request five[5];
        tune_plan o5[5] = {};
        for (unsigned k = 0; k < 5; k++)
                five[k] = (tune_plan_request) { .key = k, .rule = &two, .accels = &p0, .n_accels = 1 };
        params.housekeeping_cpus_per_node = 0;
        assert_int_equal(tune_plan_compute(small, &params, five, 2, o5), 0);
        assert_set(&o5[0].pool, "0-1");
        assert_set(&o5[1].pool, "2-3");
        placements_done(o5, 2);
        assert_int_equal(tune_plan_compute(small, &params, five, 3, o5), 0);
        assert_set(&o5[0].pool, "0-1");
        assert_set(&o5[1].pool, "2");
        assert_set(&o5[2].pool, "3");
        assert_reason(&o5[1], "short of 1 CPU(s): no node had spare CPUs left");
        assert_reason(&o5[1], "one CPU cannot be split by role: every thread gets the whole pool 2");
        placements_done(o5, 3);
        assert_int_equal(tune_plan_compute(small, &params, five, 5, o5), 0);
        for (unsigned k = 0; k < 4; k++)
                assert_int_equal(tune_cpuset_count(&o5[k].pool), 1);
        assert_int_equal(o5[4].action, TUNE_PLAN_REFUSE);
        assert_reason(&o5[4], "not placed: no node has a free CPU left for it");
        assert_invariants(small, &params, o5, 5);
        placements_done(o5, 5);

        /* Not enough for both roles' sizes: the roles are scaled to the pool. */
        tune_plan o1 = {};
        tune_policy_rule big = make_rule(2, 6, 0);
        five[0].rule = &big;
        assert_int_equal(tune_plan_compute(small, &params, five, 1, &o1), 0);
        assert_split(&o1, "0-3", "0", "1-3");
        assert_reason(&o1, "short of 4 CPU(s): no node had spare CPUs left");
        assert_reason(&o1, "the pool has 4 CPUs, fewer than the 8 the roles want: control gets 1, compute 3");
        placements_done(&o1, 1);
}

/* A process whose accelerators are on two nodes spans both: half the CPUs on each. */
static void test_spanning_two_nodes(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_policy_rule rule = make_rule(2, 8, 8 * GIB_KIB);
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        tune_accel npus[4];
        const tune_accel *ptr[2];
        tune_plan out = {};
        (void) state;

        fake_atlas_npus(npus);
        ptr[0] = &npus[0];
        ptr[1] = &npus[2];
        tune_plan_request req = { .rule = &rule, .accels = ptr, .n_accels = 2 };
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        print_reasons(&out);
        assert_int_equal(out.action, TUNE_PLAN_PLACE);
        assert_set(&out.home_nodes, "0,2");
        assert_split(&out, "2-6,50-54", "2-3", "4-6,50-54");
        assert_true(tune_cpuset_is_empty(&out.borrowed_nodes));
        /* Each home node's memory choice: 0 -> 4, 2 -> 6. */
        assert_set(&out.mem_nodes, "4,6");
        assert_int_equal(tune_plan_memory_target(&out), 4);
        assert_reason(&out, "memory: node 2 has 2.8 GiB free < 8.0 GiB minimum; nearest node with room by distance: "
                      "node 6 (distance 28, 20.0 GiB free); nearer nodes without room: node 3 (distance 12, 5.0 GiB), "
                      "node 0 (distance 20, 3.2 GiB), node 1 (distance 20, 4.0 GiB)");
        tune_plan_done(&out);

        /* Node 0 is crowded: two processes homed there want 11 each, the spanning one 20
         * (10 per node). Round-robin on node 0's 22 CPUs gives 8, 7 and 7; the spanning
         * process takes its missing 3 from its other home node 2 (not "borrowing"), the
         * other two borrow from node 1, the nearest node with spare CPUs. */
        tune_policy_rule big = make_rule(1, 10, 0), wide = make_rule(4, 16, 0);
        const tune_accel *p0 = &npus[0];
        tune_plan_request reqs[3] = {
                { .key = 1, .rule = &big, .accels = &p0, .n_accels = 1 },
                { .key = 2, .rule = &big, .accels = &p0, .n_accels = 1 },
                { .key = 3, .rule = &wide, .accels = ptr, .n_accels = 2 },
        };
        tune_plan o[3] = {};
        assert_int_equal(tune_plan_compute(t, &params, reqs, 3, o), 0);
        print_reasons(&o[2]);
        assert_set(&o[0].pool, "2-9,26-28");  /* 24-25: node 1's housekeeping */
        assert_set(&o[1].pool, "10-16,29-32");
        assert_set(&o[2].pool, "17-23,50-62");
        assert_set(&o[0].borrowed_nodes, "1");
        assert_set(&o[1].borrowed_nodes, "1");
        assert_true(tune_cpuset_is_empty(&o[2].borrowed_nodes));
        assert_false(has_reason(&o[2], "borrowed"));
        assert_invariants(t, &params, o, 3);
        placements_done(o, 3);
}

/* More claims and nodes than a plan keeps its scratch for on the stack (16 claims, 64
 * nodes): twenty processes homed on node 0 of an 80-node host (4 CPUs a node, distances
 * unknown) share node 0 round-robin, one CPU each to the first four, and borrow the rest
 * from the nodes by id. */
static void test_many_claims_many_nodes(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_topology_new(80, 4, NULL, NULL, 32 * GIB_KIB);
        tune_policy_rule rule = make_rule(1, 3, 0);
        tune_plan_params params = {};
        tune_accel npu = fake_accel("ascend", 0, "0000:01:00.0", 0);
        const tune_accel *ptr = &npu;
        tune_plan_request reqs[20];
        tune_plan out[20] = {};
        _cleanup_cpuset_ tune_cpuset all = {};
        (void) state;

        for (unsigned k = 0; k < 20; k++)
                reqs[k] = (tune_plan_request) { .key = k, .rule = &rule, .accels = &ptr, .n_accels = 1 };
        assert_int_equal(tune_plan_compute(t, &params, reqs, 20, out), 0);
        assert_invariants(t, &params, out, 20);
        for (unsigned k = 0; k < 20; k++) {
                assert_int_equal(out[k].action, TUNE_PLAN_PLACE);
                assert_int_equal(tune_cpuset_count(&out[k].pool), 4);
                assert_true(tune_cpuset_has(&out[k].pool, k) == (k < 4));
                assert_int_equal(tune_cpuset_is_empty(&out[k].borrowed_nodes), false);
                assert_int_equal(tune_cpuset_or(&all, &out[k].pool), 0);
        }
        assert_set(&all, "0-79");
        assert_set(&out[0].pool, "0,4-6");
        assert_set(&out[19].pool, "76-79");
        placements_done(out, 20);
}

/* Fair splitting and re-planning through the placer: elastic shares shrink when a process
 * joins a node and grow back when one exits; fixed ones never move; only changed processes
 * are reported. */
static void test_placer_fair_split(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        _cleanup_(tune_placer_freep) tune_placer *p = NULL;
        tune_policy_rule elastic = make_rule(2, 0, 0); /* control 2, compute "the rest" */
        tune_policy_rule fixed = make_rule(2, 4, 0);
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        tune_accel npus[4];
        tune_keys changed = {};
        const tune_plan *a, *b;
        (void) state;

        fake_atlas_npus(npus);
        assert_int_equal(tune_placer_new(t, &params, &p), 0);

        assert_int_equal(tune_placer_set(p, 100, &elastic, (const tune_accel *[]) { &npus[0] }, 1, &changed), 0);
        assert_int_equal(changed.n, 0);
        a = tune_placer_get(p, 100);
        assert_split(a, "2-23", "2-3", "4-23");

        /* A second process on node 0: an even split, the first keeps the low half. */
        assert_int_equal(tune_placer_set(p, 200, &elastic, (const tune_accel *[]) { &npus[1] }, 1, &changed), 0);
        assert_int_equal(changed.n, 1);
        assert_true(tune_keys_contain(&changed, 100));
        a = tune_placer_get(p, 100);
        b = tune_placer_get(p, 200);
        assert_set(&a->pool, "2-12");
        assert_set(&b->pool, "13-23");
        assert_set(&b->role_cpus[TUNE_ROLE_CONTROL], "13-14");
        assert_reason(b, "shared by 2 managed process(es)");

        /* A process on node 2 changes nothing on node 0. */
        assert_int_equal(tune_placer_set(p, 300, &fixed, (const tune_accel *[]) { &npus[2] }, 1, &changed), 0);
        assert_int_equal(changed.n, 0);
        assert_set(&tune_placer_get(p, 300)->pool, "50-55");
        assert_int_equal(tune_placer_count(p), 3);

        _cleanup_cpuset_ tune_cpuset inference = {};
        assert_int_equal(tune_placer_inference_cpus(p, &inference), 0);
        assert_set(&inference, "2-23,50-55");

        /* The first exits: the second grows back over the whole node, keeping its CPUs. */
        assert_int_equal(tune_placer_remove(p, 100, &changed), 0);
        assert_int_equal(changed.n, 1);
        assert_true(tune_keys_contain(&changed, 200));
        b = tune_placer_get(p, 200);
        assert_split(b, "2-23", "13-14", "2-12,15-23");
        assert_reason(b, "(kept where they were)");
        assert_null(tune_placer_get(p, 100));
        assert_int_equal(tune_placer_remove(p, 100, &changed), -ENOENT);

        /* Re-planning on the same topology changes nothing. */
        assert_int_equal(tune_placer_set_topology(p, t, &changed), 0);
        assert_int_equal(changed.n, 0);

        /* Memory is decided once: MemFree changing later does not move it... */
        tune_policy_rule mem = make_rule(2, 4, 8 * GIB_KIB);
        assert_int_equal(tune_placer_set(p, 400, &mem, (const tune_accel *[]) { &npus[3] }, 1, &changed), 0);
        assert_set(&tune_placer_get(p, 400)->mem_nodes, "6");
        t->nodes[2].mem_free_kib = 30 * GIB_KIB;
        assert_int_equal(tune_placer_set_topology(p, t, &changed), 0);
        assert_set(&tune_placer_get(p, 400)->mem_nodes, "6");
        assert_reason(tune_placer_get(p, 400), "decided when first placed");
        /* ...unless its rule is set again (e.g. a policy reload). */
        assert_int_equal(tune_placer_set(p, 400, &mem, (const tune_accel *[]) { &npus[3] }, 1, &changed), 0);
        assert_set(&tune_placer_get(p, 400)->mem_nodes, "2");
        tune_keys_done(&changed);
}

/* No attributable accelerator: the rule's unattributed setting decides. */
static void test_unattributed(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_policy_rule rule = make_rule(2, 4, 0);
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        tune_plan_request req = { .rule = &rule };
        tune_plan out = {};
        (void) state;

        rule.unattributed = TUNE_UNATTRIBUTED_LEAVE;
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        assert_int_equal(out.action, TUNE_PLAN_LEAVE);
        assert_reason(&out, "the rule leaves such processes alone");
        tune_plan_done(&out);

        rule.unattributed = TUNE_UNATTRIBUTED_PLACE;
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        assert_int_equal(out.action, TUNE_PLAN_REFUSE);
        assert_reason(&out, "names neither unattributed_cpus nor unattributed_nodes");
        tune_plan_done(&out);

        assert_int_equal(tune_cpuset_add(&rule.unattributed_nodes, 5), 0);
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        assert_int_equal(out.action, TUNE_PLAN_PLACE);
        assert_set(&out.pool, "122-127");
        assert_false(out.shared);
        tune_plan_done(&out);
        tune_cpuset_done(&rule.unattributed_nodes);

        /* Explicit CPUs: used as given (minus offline ones), not exclusive. */
        assert_int_equal(tune_cpuset_parse_list(&rule.unattributed_cpus, "0-3,500"), 0);
        tune_plan_request two[2] = { { .key = 1, .rule = &rule }, { .key = 2, .rule = &rule } };
        tune_plan o[2] = {};
        assert_int_equal(tune_plan_compute(t, &params, two, 2, o), 0);
        assert_int_equal(o[0].action, TUNE_PLAN_PLACE);
        assert_true(o[0].shared);
        assert_set(&o[0].pool, "0-3");
        assert_set(&o[1].pool, "0-3");
        assert_set(&o[0].role_cpus[TUNE_ROLE_CONTROL], "0");   /* 2 + 4 wanted, scaled to 4 */
        assert_set(&o[0].role_cpus[TUNE_ROLE_COMPUTE], "1-3");
        assert_reason(&o[0], "not exclusive");
        placements_done(o, 2);
        tune_cpuset_done(&rule.unattributed_cpus);

        /* accel_mode "none" ignores accelerators the caller found. */
        tune_accel npu = fake_accel("ascend", 0, "0000:c1:00.0", 0);
        const tune_accel *ptr = &npu;
        rule.accel_mode = TUNE_ACCEL_NONE;
        rule.unattributed = TUNE_UNATTRIBUTED_LEAVE;
        req.accels = &ptr;
        req.n_accels = 1;
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        assert_int_equal(out.action, TUNE_PLAN_LEAVE);
        tune_plan_done(&out);

        assert_int_equal(tune_plan_compute(t, &params, (tune_plan_request[]) { { .rule = NULL } }, 1, &out), -EINVAL);
}

static void test_thread_classify(void **state) {
        tune_policy_rule rule = make_rule(2, 8, 0);
        static char *only_control[] = { acl_glob, NULL };
        (void) state;

        assert_int_equal(tune_thread_classify(&rule, 100, 100, "python3"), TUNE_ROLE_CONTROL);
        assert_int_equal(tune_thread_classify(&rule, 100, 101, "acl_thread"), TUNE_ROLE_CONTROL);
        assert_int_equal(tune_thread_classify(&rule, 100, 102, "hccl_watchdog_t"), TUNE_ROLE_CONTROL);
        assert_int_equal(tune_thread_classify(&rule, 100, 103, "omp-worker-3"), TUNE_ROLE_COMPUTE);
        /* Neither role's globs, both roles have selectors: the whole pool. */
        assert_int_equal(tune_thread_classify(&rule, 100, 104, "python3"), TUNE_ROLE_OTHER);
        assert_int_equal(tune_thread_classify(&rule, 100, 104, NULL), TUNE_ROLE_OTHER);
        /* Renamed: classified again from the new name. */
        assert_int_equal(tune_thread_classify(&rule, 100, 104, "work-1"), TUNE_ROLE_COMPUTE);
        /* A comm that looks like a glob is just text. */
        assert_int_equal(tune_thread_classify(&rule, 100, 105, "ctl-*"), TUNE_ROLE_CONTROL);
        assert_int_equal(tune_thread_classify(&rule, 100, 105, "[omp]"), TUNE_ROLE_OTHER);

        /* Compute without selectors is the catch-all: unnamed OpenMP workers land there. */
        rule.compute.name_globs = NULL;
        assert_int_equal(tune_thread_classify(&rule, 100, 104, "python3"), TUNE_ROLE_COMPUTE);
        assert_int_equal(tune_thread_classify(&rule, 100, 100, "python3"), TUNE_ROLE_CONTROL);
        /* The reverse. */
        rule.compute.name_globs = compute_globs;
        rule.control = (tune_policy_role) { .cpus = 2 };
        assert_int_equal(tune_thread_classify(&rule, 100, 100, "python3"), TUNE_ROLE_CONTROL);
        assert_int_equal(tune_thread_classify(&rule, 100, 101, "work-1"), TUNE_ROLE_COMPUTE);
        /* Main thread in compute. */
        rule.compute.main_thread = true;
        rule.control.name_globs = only_control;
        assert_int_equal(tune_thread_classify(&rule, 100, 100, "acl_thread"), TUNE_ROLE_COMPUTE);
        /* No selectors at all: everything is "other" (the whole pool). */
        rule.control = (tune_policy_role) { .cpus = 2 };
        rule.compute = (tune_policy_role) { .cpus = 2 };
        assert_false(tune_rule_has_role_selectors(&rule));
        assert_int_equal(tune_thread_classify(&rule, 100, 100, "acl_thread"), TUNE_ROLE_OTHER);
        assert_string_equal(tune_role_to_string(TUNE_ROLE_COMPUTE), "compute");
        assert_null(tune_role_to_string(_TUNE_ROLE_MAX));
}

static void test_thread_cpus(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_policy_rule rule = make_rule(2, 8, 0);
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        tune_accel npu = fake_accel("ascend", 0, "0000:c1:00.0", 0);
        const tune_accel *ptr = &npu;
        tune_plan_request req = { .rule = &rule, .accels = &ptr, .n_accels = 1 };
        tune_plan out = {};
        tune_role role;
        (void) state;

        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        assert_set(tune_plan_thread_cpus(&out, &rule, 7, 7, "python3", &role), "2-3");
        assert_int_equal(role, TUNE_ROLE_CONTROL);
        assert_set(tune_plan_thread_cpus(&out, &rule, 7, 8, "omp-1", &role), "4-11");
        assert_set(tune_plan_thread_cpus(&out, &rule, 7, 9, "other", &role), "2-11");
        assert_int_equal(role, TUNE_ROLE_OTHER);
        out.action = TUNE_PLAN_LEAVE;
        assert_null(tune_plan_thread_cpus(&out, &rule, 7, 9, "other", NULL));
        tune_plan_done(&out);
}

/* Odd machines: an accelerator on a node without CPUs (memory-only, e.g. CXL), and a
 * firmware without a distance table. */
static void test_cpuless_node_and_no_distances(void **state) {
        const int d[9] = { 10, 20, 30, 20, 10, 15, 30, 15, 10 };
        const uint64_t free_kib[3] = { 1 * GIB_KIB, 16 * GIB_KIB, 16 * GIB_KIB };
        _cleanup_(tune_topology_freep) tune_topology *t = fake_topology_new(3, 4, d, free_kib, 16 * GIB_KIB);
        _cleanup_(tune_topology_freep) tune_topology *nod = fake_topology_new(3, 4, NULL, free_kib, 16 * GIB_KIB);
        tune_policy_rule rule = make_rule(1, 2, 4 * GIB_KIB);
        tune_plan_params params = {};
        tune_accel a = fake_accel("accel", 0, "0000:01:00.0", 1);
        const tune_accel *ptr = &a;
        tune_plan_request req = { .rule = &rule, .accels = &ptr, .n_accels = 1 };
        tune_plan out = {};
        (void) state;

        /* Node 1 has memory but no CPUs: all 3 CPUs come from node 2 (distance 15, nearer
         * than node 0 at 20); memory stays on node 1, which has room. */
        tune_cpuset_clear(&t->nodes[1].cpus);
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        print_reasons(&out);
        assert_int_equal(out.action, TUNE_PLAN_PLACE);
        assert_set(&out.pool, "8-10");
        assert_set(&out.borrowed_nodes, "2");
        assert_set(&out.mem_nodes, "1");
        assert_reason(&out, "node 1: 0 usable CPU(s)");
        assert_reason(&out, "its home node(s) had 0 free CPU(s) of 3 wanted: borrowed 3 from node 2 (distance 15)");
        tune_plan_done(&out);

        /* No distance table: node 0 is short of memory; a node with room is still found,
         * and the plan says it could not go by distance. */
        a.numa_node = 0;
        assert_int_equal(tune_plan_compute(nod, &params, &req, 1, &out), 0);
        print_reasons(&out);
        assert_set(&out.pool, "0-2");
        assert_set(&out.mem_nodes, "1");
        assert_reason(&out, "memory: node 0 has 1.0 GiB free < 4.0 GiB minimum; no distance table: node 1, which has room (16.0 GiB free)");
        tune_plan_done(&out);
}

static void test_placement_json(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_policy_rule rule = make_rule(2, 8, 8 * GIB_KIB);
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        tune_accel npu = fake_accel("ascend", 0, "0000:c1:00.0", 0);
        const tune_accel *ptr = &npu;
        tune_plan_request req = { .rule = &rule, .accels = &ptr, .n_accels = 1 };
        tune_plan out = {};
        json_object *o = NULL, *v, *roles;
        (void) state;

        assert_int_equal(tune_plan_compute(t, &params, &req, 1, &out), 0);
        assert_int_equal(tune_plan_to_json(&out, &o), 0);
        assert_true(json_object_object_get_ex(o, "action", &v));
        assert_string_equal(json_object_get_string(v), "place");
        assert_true(json_object_object_get_ex(o, "pool", &v));
        assert_string_equal(json_object_get_string(v), "2-11");
        assert_true(json_object_object_get_ex(o, "mem_nodes", &v));
        assert_string_equal(json_object_get_string(v), "4");
        assert_true(json_object_object_get_ex(o, "roles", &roles));
        assert_true(json_object_object_get_ex(roles, "control", &v));
        assert_string_equal(json_object_get_string(v), "2-3");
        assert_true(json_object_object_get_ex(roles, "compute", &v));
        assert_string_equal(json_object_get_string(v), "4-11");
        assert_true(json_object_object_get_ex(o, "reasons", &v));
        assert_int_equal(json_object_array_length(v), out.n_reasons);
        assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 0)), out.reasons[0]);
        json_object_put(o);
        tune_plan_done(&out);
}

/* Random arrivals, exits and cpuset changes on the Atlas: the invariants hold after every
 * step, and the placer's shortcut for a process whose plan is independent of the others'
 * (planned alone, nobody else re-planned) leaves every plan as re-planning all of them
 * would: a full re-plan right after changes none. A twin placer that plans without reasons
 * (the daemon's) makes the same decisions at every step, keeps no reasons, and explains
 * each plan with the reasons the first one has. */
static void test_placer_random(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        _cleanup_(tune_placer_freep) tune_placer *p = NULL;
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        tune_plan_params quiet_params = { .housekeeping_cpus_per_node = 2, .no_reasons = true };
        _cleanup_(tune_placer_freep) tune_placer *quiet = NULL;
        tune_policy_rule rules[6] = { make_rule(2, 8, 0), make_rule(2, 0, 0), make_rule(0, 4, 8 * GIB_KIB), make_rule(6, 18, 0),
                                      make_rule(1, 1, 0), make_rule(1, 1, 0) };
        tune_plan_cpuset cpuset = {};
        tune_accel npus[8];
        uint64_t live[64];
        unsigned n_live = 0, seed = 12345, n_independent = 0;
        (void) state;

        /* Independent: by-hand CPUs that other processes may share, and a rule that leaves
         * processes without an accelerator alone. */
        rules[4].accel_mode = TUNE_ACCEL_NONE;
        rules[4].unattributed = TUNE_UNATTRIBUTED_PLACE;
        assert_int_equal(tune_cpuset_parse_list(&rules[4].unattributed_cpus, "4-9"), 0);
        rules[5].accel_mode = TUNE_ACCEL_NONE;
        rules[5].unattributed = TUNE_UNATTRIBUTED_LEAVE;
        assert_int_equal(tune_cpuset_parse_list(&cpuset.cpus, "0-47"), 0);
        for (int i = 0; i < 8; i++)
                npus[i] = fake_accel("ascend", i, "0000:00:00.0", i == 7 ? -1 : i);
        assert_int_equal(tune_placer_new(t, &params, &p), 0);
        assert_int_equal(tune_placer_new(t, &quiet_params, &quiet), 0);
        for (unsigned step = 0; step < 400; step++) {
                tune_keys changed = {};
                seed = seed * 1103515245u + 12345u;
                unsigned x = seed >> 8;
                if (n_live < ELEMENTSOF(live) && (n_live == 0 || x % 3 != 0)) {
                        uint64_t key = 1000 + step;
                        unsigned na = 1 + (x >> 4) % 2, first = (x >> 6) % 8;
                        const tune_accel *two[2] = { &npus[first], &npus[(first + 3) % 8] };
                        assert_int_equal(tune_placer_set(p, key, &rules[(x >> 9) % 6], two, na, &changed), 0);
                        tune_keys_done(&changed);
                        assert_int_equal(tune_placer_set(quiet, key, &rules[(x >> 9) % 6], two, na, &changed), 0);
                        live[n_live++] = key;
                } else if (x % 7 == 0) {
                        unsigned i = (x >> 4) % n_live;
                        assert_true(tune_placer_set_cpuset(p, live[i], (x >> 8) % 2 ? &cpuset : NULL, &changed) >= 0);
                        tune_keys_done(&changed);
                        assert_true(tune_placer_set_cpuset(quiet, live[i], (x >> 8) % 2 ? &cpuset : NULL, &changed) >= 0);
                } else {
                        unsigned i = (x >> 4) % n_live;
                        assert_int_equal(tune_placer_remove(p, live[i], &changed), 0);
                        tune_keys_done(&changed);
                        assert_int_equal(tune_placer_remove(quiet, live[i], &changed), 0);
                        live[i] = live[--n_live];
                }
                tune_keys_done(&changed);
                assert_int_equal(tune_placer_count(p), n_live);

                tune_plan all[64];
                for (unsigned i = 0; i < n_live; i++) {
                        tune_plan explained = {};

                        all[i] = *tune_placer_get(p, live[i]);
                        n_independent += all[i].independent;
                        const tune_plan *q = tune_placer_get(quiet, live[i]);
                        assert_same_decisions(&all[i], q);
                        assert_true(q->no_reasons);
                        assert_int_equal(q->n_reasons, 0);
                        assert_int_equal(tune_placer_explain(quiet, live[i], &explained), 0);
                        assert_same_decisions(&all[i], &explained);
                        assert_true(all[i].n_reasons > 0);
                        assert_int_equal(explained.n_reasons, all[i].n_reasons);
                        for (unsigned k = 0; k < all[i].n_reasons; k++)
                                assert_string_equal(explained.reasons[k], all[i].reasons[k]);
                        tune_plan_done(&explained);
                }
                assert_invariants(t, &params, all, n_live);
                assert_int_equal(tune_placer_set_topology(p, t, &changed), 0);
                assert_int_equal(changed.n, 0);
                assert_int_equal(tune_placer_set_topology(quiet, t, &changed), 0);
                assert_int_equal(changed.n, 0);
        }
        assert_true(n_independent > 0);
        for (unsigned i = 4; i < 6; i++)
                tune_cpuset_done(&rules[i].unattributed_cpus);
        tune_plan_cpuset_done(&cpuset);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_atlas_four_processes),
                cmocka_unit_test(test_memory_shared_vouched_only),
                cmocka_unit_test(test_reference_memory_case),
                cmocka_unit_test(test_unknown_accelerator_node),
                cmocka_unit_test(test_too_few_cpus),
                cmocka_unit_test(test_spanning_two_nodes),
                cmocka_unit_test(test_many_claims_many_nodes),
                cmocka_unit_test(test_placer_fair_split),
                cmocka_unit_test(test_unattributed),
                cmocka_unit_test(test_thread_classify),
                cmocka_unit_test(test_thread_cpus),
                cmocka_unit_test(test_cpuless_node_and_no_distances),
                cmocka_unit_test(test_placement_json),
                cmocka_unit_test(test_placer_random),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
