/* SPDX-License-Identifier: GPL-2.0-only */
/* The placer re-plans only the processes a change can move (libtune/placement/placer.c,
 * placer_replan_around()). Over random arrivals, exits, rule changes and cpuset rewrites on
 * hand-built topologies, it must leave every plan, and report every moved process, exactly
 * as a twin that re-plans every process on each change (tune_plan_params.replan_all), and
 * do it with fewer plans. Pure: no sysfs, no processes.
 *
 * NPU_TUNED_WALK_SEEDS=N runs N random walks per test instead of the default (a longer
 * search for a walk where the two differ). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake-topology.h"
#include "plan-assert.h"
#include "npu-tuned/parse.h"
#include "npu-tuned/plan.h"

#define N_RULES 10
#define N_CPUSETS 4
#define MAX_LIVE 48
#define MAX_LIVE_FULL 200


/* Small fixed wants (several fit on a node: the common case, where components stay apart),
 * an elastic share, a whole node, and the kinds planned without the others. */
static void make_rules(tune_policy_rule rules[static N_RULES]) {
        rules[0] = plan_test_rule(1, 2);
        rules[1] = plan_test_rule(2, 4);
        rules[2] = plan_test_rule(0, 4);  /* elastic: a fair share of the node */
        rules[3] = plan_test_rule(6, 18); /* more than a node has after housekeeping: borrows */
        rules[4] = plan_test_rule(1, 1);
        rules[4].accel_mode = TUNE_ACCEL_NONE;
        rules[4].unattributed = TUNE_UNATTRIBUTED_PLACE;
        assert_int_equal(tune_cpuset_parse_list(&rules[4].unattributed_cpus, "4-9"), 0);
        rules[5] = plan_test_rule(1, 1);
        rules[5].accel_mode = TUNE_ACCEL_NONE;
        rules[5].unattributed = TUNE_UNATTRIBUTED_LEAVE;
        rules[6] = plan_test_rule(1, 3);
        rules[6].accel_mode = TUNE_ACCEL_NONE;
        rules[6].unattributed = TUNE_UNATTRIBUTED_PLACE;
        assert_int_equal(tune_cpuset_parse_list(&rules[6].unattributed_nodes, "5"), 0);
        rules[7] = plan_test_rule(1, 2);
        /* Two that fill a node quickly (walks that fill the nodes): more than half a node,
         * and an elastic share with a larger least. */
        rules[8] = plan_test_rule(4, 8);
        rules[9] = plan_test_rule(3, 0);
}

static void rules_done(tune_policy_rule rules[static N_RULES]) {
        for (unsigned i = 0; i < N_RULES; i++) {
                tune_cpuset_done(&rules[i].unattributed_cpus);
                tune_cpuset_done(&rules[i].unattributed_nodes);
        }
}

typedef enum walk_kind {
        WALK_MIXED, /* every kind of rule, up to MAX_LIVE processes */
        WALK_CALM,  /* only rules that fit on their nodes, no cpusets: nobody borrows */
        WALK_FULL,  /* mostly arrivals, up to MAX_LIVE_FULL processes, most with rules that fill
                     * a node: every node full and nearly every process short, then mostly
                     * exits, which free CPUs in full nodes */
} walk_kind;

typedef struct walk {
        const tune_topology *t;
        tune_placer *inc, *all;
        tune_policy_rule rules[N_RULES];
        tune_plan_cpuset cpusets[N_CPUSETS];
        tune_accel accels[8];
        uint64_t live[MAX_LIVE_FULL];
        unsigned n_live;
        unsigned seed;
        walk_kind kind;
        unsigned steps;
} walk;

/* The rules a calm walk uses: small fixed wants, and the independent kinds. */
static const unsigned calm_rules[] = { 0, 1, 4, 5, 7 };
/* A full walk's: those that fill a node weighed three times, a few independent ones. */
static const unsigned full_rules[] = { 0, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 8, 8, 9, 9, 9 };

static const tune_policy_rule *walk_rule(const walk *w, unsigned x) {
        switch (w->kind) {
        case WALK_CALM:
                return &w->rules[calm_rules[x % ELEMENTSOF(calm_rules)]];
        case WALK_FULL:
                return &w->rules[full_rules[x % ELEMENTSOF(full_rules)]];
        default:
                return &w->rules[x % 8];
        }
}

/* Out of 10: changes below *arrive are arrivals (while below the walk's most processes),
 * those below *leave exits. A full walk fills for two thirds of its steps, then drains. */
static void walk_odds(const walk *w, unsigned step, unsigned *arrive, unsigned *leave, unsigned *most) {
        *arrive = 4;
        *leave = 7;
        *most = MAX_LIVE;
        if (w->kind != WALK_FULL)
                return;
        *most = MAX_LIVE_FULL;
        if (step < w->steps * 2 / 3)
                *arrive = 6, *leave = 8;
        else
                *arrive = 2, *leave = 7;
}

static unsigned walk_next(walk *w) {
        w->seed = w->seed * 1103515245u + 12345u;
        return w->seed >> 8;
}

/* Both placers' moved processes are the same ones, in the same order. */
static void assert_same_keys(const tune_keys *a, const tune_keys *b) {
        assert_int_equal(a->n, b->n);
        for (unsigned i = 0; i < a->n; i++)
                assert_int_equal(a->keys[i], b->keys[i]);
}

/* One random change, to both placers: an arrival (with a claim of a random tier and uid),
 * an exit, a rule or accelerator change, a cpuset rewrite. */
static void walk_step(walk *w, unsigned step) {
        tune_keys ka = {}, kb = {};
        unsigned x = walk_next(w), what = x % 10, arrive, leave, most;

        walk_odds(w, step, &arrive, &leave, &most);
        if (w->n_live == 0 || (what < arrive && w->n_live < most)) {
                uint64_t key = 1000 + step;
                /* Two nodes' accelerators join their nodes' deals: in a full walk, few do. */
                unsigned na = 1 + (w->kind == WALK_FULL ? (x >> 4) % 8 == 0 : (x >> 4) % 2), first = (x >> 6) % 8;
                const tune_accel *two[2] = { &w->accels[first], &w->accels[(first + 3) % 8] };
                const tune_policy_rule *rule = walk_rule(w, x >> 9);
                tune_claim claim = { .uid = (x >> 12) % 3, .tier = (x >> 14) % 4 == 0 ? TUNE_CLAIM_UNVERIFIED : (x >> 16) % 2 };

                assert_int_equal(tune_placer_set_claim(w->inc, key, rule, two, na, &claim, &ka), 0);
                assert_int_equal(tune_placer_set_claim(w->all, key, rule, two, na, &claim, &kb), 0);
                w->live[w->n_live++] = key;
        } else if (what < leave) {
                unsigned i = (x >> 4) % w->n_live;
                assert_int_equal(tune_placer_remove(w->inc, w->live[i], &ka), 0);
                assert_int_equal(tune_placer_remove(w->all, w->live[i], &kb), 0);
                w->live[i] = w->live[--w->n_live];
        } else if (what < leave + 1 || w->kind == WALK_CALM) {
                unsigned i = (x >> 4) % w->n_live, first = (x >> 7) % 8;
                const tune_accel *one[1] = { &w->accels[first] };
                const tune_policy_rule *rule = walk_rule(w, x >> 10);

                assert_int_equal(tune_placer_set(w->inc, w->live[i], rule, one, 1, &ka), 0);
                assert_int_equal(tune_placer_set(w->all, w->live[i], rule, one, 1, &kb), 0);
        } else {
                unsigned i = (x >> 4) % w->n_live, c = (x >> 8) % (N_CPUSETS + 1);
                const tune_plan_cpuset *cs = c < N_CPUSETS ? &w->cpusets[c] : NULL;
                int a = tune_placer_set_cpuset(w->inc, w->live[i], cs, &ka);

                assert_true(a >= 0);
                assert_int_equal(tune_placer_set_cpuset(w->all, w->live[i], cs, &kb), a);
        }
        assert_same_keys(&ka, &kb);
        tune_keys_done(&ka);
        tune_keys_done(&kb);
        assert_int_equal(tune_placer_count(w->inc), w->n_live);
        for (unsigned i = 0; i < w->n_live; i++) {
                const tune_plan *a = tune_placer_get(w->inc, w->live[i]), *b = tune_placer_get(w->all, w->live[i]);
                assert_non_null(a);
                assert_non_null(b);
                assert_same_decisions(a, b);
        }
}

/* NPU_TUNED_WALK_SEEDS, else n. */
static unsigned walk_seeds(unsigned n) {
        const char *e = getenv("NPU_TUNED_WALK_SEEDS");
        long v;

        if (!e || tune_parse_int(e, 1, 1000000, &v) < 0)
                return n;
        return (unsigned) v;
}

static void run_walks(tune_topology *t, unsigned housekeeping, walk_kind kind, unsigned n_seeds, unsigned steps, double most) {
        static const char *const cpus[N_CPUSETS] = { "0-47", "24-30", "100-140", "2-5,60-70" };
        tune_plan_params inc_params = { .housekeeping_cpus_per_node = housekeeping, .no_reasons = true };
        tune_plan_params all_params = { .housekeeping_cpus_per_node = housekeeping, .no_reasons = true, .replan_all = true };
        uint64_t made_inc = 0, made_all = 0;

        n_seeds = walk_seeds(n_seeds);
        for (unsigned s = 0; s < n_seeds; s++) {
                walk w = { .t = t, .seed = 7919u * (s + 1), .kind = kind, .steps = steps };

                make_rules(w.rules);
                for (unsigned i = 0; i < N_CPUSETS; i++)
                        assert_int_equal(tune_cpuset_parse_list(&w.cpusets[i].cpus, cpus[i]), 0);
                for (int i = 0; i < 8; i++)
                        w.accels[i] = fake_accel("ascend", i, "0000:00:00.0", i == 7 ? -1 : i % (int) t->n_nodes);
                assert_int_equal(tune_placer_new(t, &inc_params, &w.inc), 0);
                assert_int_equal(tune_placer_new(t, &all_params, &w.all), 0);
                for (unsigned step = 0; step < steps; step++)
                        walk_step(&w, step);
                made_inc += tune_placer_plans_made(w.inc);
                made_all += tune_placer_plans_made(w.all);
                tune_placer_free(w.inc);
                tune_placer_free(w.all);
                rules_done(w.rules);
                for (unsigned i = 0; i < N_CPUSETS; i++)
                        tune_plan_cpuset_done(&w.cpusets[i]);
        }
        fprintf(stderr, "plans made: incremental %llu, re-planning all %llu\n", (unsigned long long) made_inc,
                (unsigned long long) made_all);
        /* It must save plans, not only be right: at most this share of the reference's. */
        assert_true((double) made_inc <= most * (double) made_all);
}

/* The Atlas: 8 nodes of 24 CPUs, 2 housekeeping CPUs each; processes on all of them. */
static void test_incremental_atlas(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        (void) state;
        run_walks(t, 2, WALK_MIXED, 40, 250, 0.9);
}

/* The same, where every process fits on its accelerators' nodes: each change re-plans its
 * nodes' processes only. */
static void test_incremental_atlas_calm(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        (void) state;
        run_walks(t, 2, WALK_CALM, 40, 250, 0.5);
}

/* A small host where nodes run short and processes borrow from each other's nodes all the
 * time (the components merge), and without a distance table. */
static void test_incremental_crowded(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_topology_new(4, 8, NULL, NULL, 8 * GIB_KIB);
        (void) state;
        run_walks(t, 1, WALK_MIXED, 40, 200, 1.0);
}

/* The Atlas filled: up to 200 processes, most wanting more than their node can give them,
 * so every node is full and nearly every process short; then exits free CPUs in full
 * nodes. A change re-plans the processes of its nodes, and those short ones that could
 * borrow CPUs it frees, not every managed process. */
static void test_incremental_atlas_full(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_atlas_800i_a2();
        (void) state;
        run_walks(t, 2, WALK_FULL, 12, 400, 0.8);
}

/* The small host filled: 4 nodes of 8 CPUs, up to 200 processes. */
static void test_incremental_crowded_full(void **state) {
        _cleanup_(tune_topology_freep) tune_topology *t = fake_topology_new(4, 8, NULL, NULL, 8 * GIB_KIB);
        (void) state;
        run_walks(t, 1, WALK_FULL, 12, 400, 0.6);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_incremental_atlas),
                cmocka_unit_test(test_incremental_atlas_calm),
                cmocka_unit_test(test_incremental_crowded),
                cmocka_unit_test(test_incremental_atlas_full),
                cmocka_unit_test(test_incremental_crowded_full),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
