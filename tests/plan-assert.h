/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Assertions the plan tests share (cmocka must be included before this header). */

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "npu-tuned/plan.h"

static inline void assert_set(const tune_cpuset *s, const char *want) {
        _cleanup_free_ char *got = NULL;
        assert_int_equal(tune_cpuset_format_list(s, &got), 0);
        if (!streq(got, want))
                fprintf(stderr, "set is \"%s\", want \"%s\"\n", got, want);
        assert_string_equal(got, want);
}

/* The plan's pool, and how it is split between the control and the compute role. */
static inline void assert_split(const tune_plan *p, const char *pool, const char *control, const char *compute) {
        assert_set(&p->pool, pool);
        assert_set(&p->role_cpus[TUNE_ROLE_CONTROL], control);
        assert_set(&p->role_cpus[TUNE_ROLE_COMPUTE], compute);
}

static inline void print_reasons(const tune_plan *p) {
        fprintf(stderr, "placement (%s):\n", tune_plan_action_to_string(p->action));
        for (unsigned i = 0; i < p->n_reasons; i++)
                fprintf(stderr, "  %s\n", p->reasons[i]);
}

static inline bool has_reason(const tune_plan *p, const char *needle) {
        for (unsigned i = 0; i < p->n_reasons; i++)
                if (strstr(p->reasons[i], needle))
                        return true;
        return false;
}

static inline void assert_reason(const tune_plan *p, const char *needle) {
        if (!has_reason(p, needle)) {
                fprintf(stderr, "no reason contains \"%s\"\n", needle);
                print_reasons(p);
        }
        assert_true(has_reason(p, needle));
}

/* The decisions of two plans, not their reasons. */
static inline void assert_same_decisions(const tune_plan *a, const tune_plan *b) {
        assert_int_equal(a->action, b->action);
        assert_true(tune_cpuset_equal(&a->home_nodes, &b->home_nodes));
        assert_true(tune_cpuset_equal(&a->pool, &b->pool));
        for (unsigned r = 0; r < _TUNE_ROLE_MAX; r++)
                assert_true(tune_cpuset_equal(&a->role_cpus[r], &b->role_cpus[r]));
        assert_true(tune_cpuset_equal(&a->borrowed_nodes, &b->borrowed_nodes));
        assert_true(tune_cpuset_equal(&a->asked_nodes, &b->asked_nodes));
        assert_true(tune_cpuset_equal(&a->mem_nodes, &b->mem_nodes));
        assert_int_equal(a->cpus_wanted, b->cpus_wanted);
        assert_int_equal(a->shared, b->shared);
        assert_int_equal(a->memory_decided, b->memory_decided);
        assert_int_equal(a->in_cpuset, b->in_cpuset);
        assert_int_equal(a->cpuset_far, b->cpuset_far);
        assert_int_equal(a->independent, b->independent);
}

/* A rule as the plan tests write it: control threads by name and the main thread, compute
 * threads by name, memory moved. */
static char plan_test_control_glob[] = "acl_thread", plan_test_compute_glob[] = "omp-*";
static char *plan_test_control_globs[] __attribute__((unused)) = { plan_test_control_glob, NULL };
static char *plan_test_compute_globs[] __attribute__((unused)) = { plan_test_compute_glob, NULL };

static inline tune_policy_rule plan_test_rule(unsigned control_cpus, unsigned compute_cpus) {
        return (tune_policy_rule) {
                .name = (char *) "test",
                .accel_mode = TUNE_ACCEL_AUTO,
                .control = { .name_globs = plan_test_control_globs, .main_thread = true, .cpus = control_cpus },
                .compute = { .name_globs = plan_test_compute_globs, .cpus = compute_cpus },
                .memory_migrate = true,
        };
}
