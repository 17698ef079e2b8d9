/* SPDX-License-Identifier: GPL-2.0-only */
/* The planner and the world around it: a process held to a cgroup cpuset (a container, a
 * Kubernetes pod), memory nodes the daemon may not use, and firmware that lists CPUs in
 * several nodes. Pure: hand-built topologies. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake-topology.h"
#include "plan-assert.h"
#include "npu-tuned/plan.h"


static void make_cpuset(tune_plan_cpuset *c, const char *cpus, const char *mems) {
        *c = (tune_plan_cpuset) { .owner = strdup("cgroup /kubepods.slice/test") };
        assert_non_null(c->owner);
        assert_int_equal(tune_cpuset_parse_list(&c->cpus, cpus), 0);
        assert_int_equal(tune_cpuset_parse_list(&c->mems, mems), 0);
}

/* Plan one process of NPU 0 (node 0) on the Atlas, held to cpuset cpus/mems (NULL: none). */
static void plan_npu0(const tune_topology *t, unsigned housekeeping, unsigned control, unsigned compute,
                      const char *cpus, const char *mems, tune_plan *out) {
        tune_policy_rule rule = plan_test_rule(control, compute);
        tune_plan_params params = { .housekeeping_cpus_per_node = housekeeping };
        tune_accel npus[4];
        const tune_accel *ptr;
        tune_plan_cpuset cs = {};

        fake_atlas_npus(npus);
        ptr = &npus[0];
        if (cpus)
                make_cpuset(&cs, cpus, mems);
        tune_plan_request req = { .rule = &rule, .accels = &ptr, .n_accels = 1, .cpuset = cpus ? &cs : NULL };
        assert_int_equal(tune_plan_compute(t, &params, &req, 1, out), 0);
        tune_plan_cpuset_done(&cs);
}

/* Its cpuset holds a third of its NPU's node and two CPUs of the next node: the pool is
 * the part of the node inside the cpuset (no borrowing while the node has room), the
 * roles split there. */
static void test_part_of_the_node(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_plan out = {};
        (void) state;

        plan_npu0(t, 2, 2, 0, "16-23,30-31", "0-1", &out);
        assert_int_equal(out.action, TUNE_PLAN_PLACE);
        assert_true(out.in_cpuset);
        assert_false(out.cpuset_far);
        assert_split(&out, "16-23", "16-17", "18-23");
        assert_set(&out.mem_nodes, "0");
        assert_reason(&out, "planned inside them");
        tune_plan_done(&out);
}

/* Memory only on nodes its cpuset allows: node 0 is not in its mems, so the nearest
 * allowed node with room takes it. */
static void test_mems_outside(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_plan out = {};
        (void) state;

        plan_npu0(t, 0, 2, 4, "0-23", "4-5", &out);
        assert_int_equal(out.action, TUNE_PLAN_PLACE);
        assert_set(&out.pool, "0-5");
        assert_set(&out.mem_nodes, "4");
        assert_reason(&out, "memory: node 0 is not one it may use (not in its cpuset's mems)");
        tune_plan_done(&out);
}

/* The daemon's own mems_usable is the same kind of limit. */
static void test_mems_usable(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_plan out = {};
        (void) state;

        assert_int_equal(tune_cpuset_parse_list(&t->mems_usable, "1-7"), 0);
        plan_npu0(t, 0, 2, 4, NULL, NULL, &out);
        assert_set(&out.mem_nodes, "1");
        assert_reason(&out, "not in the daemon's mems_usable");
        tune_plan_done(&out);
}

/* No CPU of its NPU's node in its cpuset: still placed inside the cpuset, roles split,
 * and the reasons say so with the fix. Memory still goes to the NPU's node when allowed. */
static void test_cpuset_far(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_plan out = {};
        (void) state;

        plan_npu0(t, 2, 1, 0, "60-63", "", &out);
        assert_int_equal(out.action, TUNE_PLAN_PLACE);
        assert_true(out.cpuset_far);
        assert_split(&out, "60-63", "60", "61-63");
        assert_set(&out.home_nodes, "0");
        assert_set(&out.mem_nodes, "0");
        assert_reason(&out, "its cpuset has no CPU on its accelerators' node(s) 0: placed inside its cpuset, on node(s) 2");
        assert_reason(&out, "single-numa-node");
        tune_plan_done(&out);
}

/* Two processes on one node, one held to a cpuset: it gets CPUs of its cpuset, the other
 * the rest, no overlap. */
static void test_two_processes_one_restricted(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_policy_rule rule = plan_test_rule(2, 0);
        tune_accel npus[4];
        const tune_accel *ptr[2];
        tune_plan_cpuset cs;
        tune_plan out[2] = {};
        (void) state;

        fake_atlas_npus(npus);
        ptr[0] = &npus[0];
        ptr[1] = &npus[1];
        make_cpuset(&cs, "0-5", "");
        tune_plan_request reqs[2] = {
                { .key = 1, .rule = &rule, .accels = &ptr[0], .n_accels = 1 },
                { .key = 2, .rule = &rule, .accels = &ptr[1], .n_accels = 1, .cpuset = &cs },
        };
        assert_int_equal(tune_plan_compute(t, NULL, reqs, 2, out), 0);
        assert_int_equal(out[1].action, TUNE_PLAN_PLACE);
        assert_set(&out[1].pool, "0-5");
        assert_false(tune_cpuset_overlaps(&out[0].pool, &out[1].pool));
        assert_int_equal(tune_cpuset_count(&out[0].pool), 18); /* elastic: the rest of the node */
        tune_plan_done(&out[0]);
        tune_plan_done(&out[1]);
        tune_plan_cpuset_done(&cs);
}

/* Its cpuset is nothing but housekeeping CPUs: the pool is the whole cpuset, shared. */
static void test_whole_cpuset(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        tune_plan out = {};
        (void) state;

        plan_npu0(t, 2, 1, 0, "0-1", "", &out);
        assert_int_equal(out.action, TUNE_PLAN_PLACE);
        assert_true(out.shared);
        assert_split(&out, "0-1", "0", "1");
        assert_reason(&out, "its pool is its whole cpuset 0-1, shared");
        tune_plan_done(&out);
}

/* The placer follows a cpuset rewrite: a new plan inside the new cpuset, and the process
 * itself among the changed keys, so the daemon re-pins it. */
static void test_placer_cpuset_change(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        _cleanup_(tune_placer_freep) tune_placer *pl = NULL;
        tune_policy_rule rule = plan_test_rule(2, 0);
        tune_accel npus[4];
        const tune_accel *ptr;
        tune_plan_cpuset a, b;
        tune_keys changed = {};
        (void) state;

        fake_atlas_npus(npus);
        ptr = &npus[0];
        make_cpuset(&a, "8-15", "0");
        make_cpuset(&b, "4-7", "1");
        assert_int_equal(tune_placer_new(t, NULL, &pl), 0);
        assert_int_equal(tune_placer_set(pl, 7, &rule, &ptr, 1, NULL), 0);
        assert_set(&tune_placer_get(pl, 7)->pool, "0-23");
        assert_int_equal(tune_placer_set_cpuset(pl, 7, &a, &changed), 1);
        assert_true(tune_keys_contain(&changed, 7));
        assert_set(&tune_placer_get(pl, 7)->pool, "8-15");
        assert_set(&tune_placer_get(pl, 7)->mem_nodes, "0");
        assert_int_equal(tune_placer_set_cpuset(pl, 7, &a, &changed), 0);
        assert_int_equal(tune_placer_set_cpuset(pl, 7, &b, &changed), 1);
        assert_set(&tune_placer_get(pl, 7)->pool, "4-7");
        assert_set(&tune_placer_get(pl, 7)->mem_nodes, "1");
        /* A rule change keeps the cpuset. */
        assert_int_equal(tune_placer_set(pl, 7, &rule, &ptr, 1, NULL), 0);
        assert_set(&tune_placer_get(pl, 7)->pool, "4-7");
        assert_int_equal(tune_placer_set_cpuset(pl, 7, NULL, &changed), 1);
        assert_set(&tune_placer_get(pl, 7)->pool, "0-23");
        assert_int_equal(tune_placer_set_cpuset(pl, 99, NULL, NULL), -ENOENT);
        tune_keys_done(&changed);
        tune_plan_cpuset_done(&a);
        tune_plan_cpuset_done(&b);
}

/* The cpuset shrinks to one CPU of the node and one borrowed: compute keeps the home CPU
 * even though control had it before (roles are not kept where they were then). */
static void test_cpuset_shrinks_compute_stays_home(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        _cleanup_(tune_placer_freep) tune_placer *pl = NULL;
        tune_policy_rule rule = plan_test_rule(1, 1);
        tune_accel npus[4];
        const tune_accel *ptr;
        tune_plan_cpuset cs;
        (void) state;

        fake_atlas_npus(npus);
        ptr = &npus[0];
        make_cpuset(&cs, "0,30", "");
        assert_int_equal(tune_placer_new(t, NULL, &pl), 0);
        assert_int_equal(tune_placer_set(pl, 1, &rule, &ptr, 1, NULL), 0);
        assert_set(&tune_placer_get(pl, 1)->role_cpus[TUNE_ROLE_CONTROL], "0");
        assert_int_equal(tune_placer_set_cpuset(pl, 1, &cs, NULL), 1);
        assert_set(&tune_placer_get(pl, 1)->role_cpus[TUNE_ROLE_COMPUTE], "0");
        assert_set(&tune_placer_get(pl, 1)->role_cpus[TUNE_ROLE_CONTROL], "30");
        tune_plan_cpuset_done(&cs);
}

/* hwloc's 8em64t-2s2ca2c-buggynuma: every node lists every CPU. Two processes on two
 * "different" nodes must not share CPUs; memory follows each one's own node. */
static void test_overlapping_nodes(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_topology_new(2, 8, NULL, NULL, 8 * GIB_KIB);
        tune_policy_rule rule = plan_test_rule(1, 0);
        tune_accel a0 = fake_accel("ascend", 0, "0000:01:00.0", 0), a1 = fake_accel("ascend", 1, "0000:02:00.0", 1);
        const tune_accel *p0 = &a0, *p1 = &a1;
        tune_plan out[2] = {};
        (void) state;

        /* Node 1 lists node 0's CPUs (as the capture does). */
        tune_cpuset_clear(&t->nodes[1].cpus);
        assert_int_equal(tune_cpuset_add_range(&t->nodes[1].cpus, 0, 7), 0);
        t->nodes_overlap = true;
        tune_plan_request reqs[2] = {
                { .key = 1, .rule = &rule, .accels = &p0, .n_accels = 1 },
                { .key = 2, .rule = &rule, .accels = &p1, .n_accels = 1 },
        };
        assert_int_equal(tune_plan_compute(t, NULL, reqs, 2, out), 0);
        assert_int_equal(out[0].action, TUNE_PLAN_PLACE);
        assert_int_equal(out[1].action, TUNE_PLAN_PLACE);
        assert_false(tune_cpuset_overlaps(&out[0].pool, &out[1].pool));
        assert_int_equal(tune_cpuset_count(&out[0].pool) + tune_cpuset_count(&out[1].pool), 8);
        assert_set(&out[0].mem_nodes, "0");
        assert_set(&out[1].mem_nodes, "1");
        assert_reason(&out[1], "one pool per distinct CPU set");
        tune_plan_done(&out[0]);
        tune_plan_done(&out[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_part_of_the_node),
                cmocka_unit_test(test_mems_outside),
                cmocka_unit_test(test_mems_usable),
                cmocka_unit_test(test_cpuset_far),
                cmocka_unit_test(test_two_processes_one_restricted),
                cmocka_unit_test(test_whole_cpuset),
                cmocka_unit_test(test_placer_cpuset_change),
                cmocka_unit_test(test_cpuset_shrinks_compute_stays_home),
                cmocka_unit_test(test_overlapping_nodes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
