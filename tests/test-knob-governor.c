/* SPDX-License-Identifier: GPL-2.0-only */
/* The CPU governor knob through the root resolver's cpufreq files: policies shared by
 * several CPUs, an inactive policy (all CPUs offline), a governor the driver does not
 * offer, the "inference CPUs" scope, no cpufreq driver at all; and on the live root,
 * libcpupower and the sysfs files must agree. */
#include "knobs/knob-test.h"

#define CPUFREQ "sys/devices/system/cpu/cpufreq"

static void add_policy(knob_test *t, int n, const char *affected, const char *governor, const char *available) {
        char rel[256];
        snprintf(rel, sizeof rel, CPUFREQ "/policy%d/affected_cpus", n);
        fake_write(t->root, rel, affected, 0644);
        snprintf(rel, sizeof rel, CPUFREQ "/policy%d/scaling_governor", n);
        fake_write(t->root, rel, governor, 0644);
        snprintf(rel, sizeof rel, CPUFREQ "/policy%d/scaling_available_governors", n);
        fake_write(t->root, rel, available, 0644);
}

/* CPUs 0-1 share policy0; CPU 2 has policy2; CPU 3 (offline) has an inactive policy3. */
static knob_test *governor_machine(const char *name) {
        knob_test *t = knob_test_new(name);
        add_policy(t, 0, "0 1\n", "powersave\n", "conservative ondemand userspace powersave performance schedutil \n");
        add_policy(t, 2, "2\n", "schedutil\n", "performance schedutil\n");
        add_policy(t, 3, "\n", "powersave\n", "performance powersave\n");
        fake_accel(t->root, "0000:c1:00.0", 0, 0);
        t->host.governor = strdup("performance");
        return t;
}

static void test_parse_cpus(void **state) {
        _cleanup_cpuset_ tune_cpuset s = {};
        _cleanup_free_ char *l = NULL;
        (void) state;

        assert_int_equal(tune_cpufreq_parse_cpus("0 1 2 3 8\n", &s), 0);
        assert_int_equal(tune_cpuset_format_list(&s, &l), 0);
        assert_string_equal(l, "0-3,8");
        assert_int_equal(tune_cpufreq_parse_cpus("\n", &s), 0);
        assert_true(tune_cpuset_is_empty(&s));
        assert_int_equal(tune_cpufreq_parse_cpus("0-3", &s), -EINVAL);
        assert_int_equal(tune_cpufreq_parse_cpus("x", &s), -EINVAL);
        assert_int_equal(tune_cpufreq_parse_cpus("99999", &s), -ERANGE);
}

static void test_sysfs_list(void **state) {
        knob_test *t = governor_machine("gov-list");
        tune_cpufreq_policy *p = NULL;
        unsigned n = 0;
        _cleanup_free_ char *l0 = NULL;
        (void) state;

        knob_test_load(t, 1);
        assert_ptr_equal(tune_cpufreq_ops_for(t->ctx), &tune_cpufreq_sysfs);
        assert_int_equal(tune_cpufreq_sysfs.list(t->ctx, t->topology, &p, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(p[0].name, "policy0");
        assert_int_equal(tune_cpuset_format_list(&p[0].cpus, &l0), 0);
        assert_string_equal(l0, "0-1");
        assert_string_equal(p[1].name, "policy2");
        assert_int_equal(p[1].cpu, 2);
        assert_string_equal(p[2].name, "policy3");
        assert_true(tune_cpuset_is_empty(&p[2].cpus));
        tune_cpufreq_policies_free(p, n);
        knob_test_free(t);
}

static void test_plan_apply_restore(void **state) {
        knob_test *t = governor_machine("gov");
        (void) state;

        /* policy2's driver does not offer performance. */
        fake_write(t->root, CPUFREQ "/policy2/scaling_available_governors", "schedutil powersave\n", 0644);
        knob_test_load(t, 1);
        knob_test_plan(t);
        assert_int_equal(t->plan.n, 3);
        const tune_knob_item *p0 = knob_test_item(t, "cpufreq/policy0");
        const tune_knob_item *p2 = knob_test_item(t, "cpufreq/policy2");
        const tune_knob_item *p3 = knob_test_item(t, "cpufreq/policy3");
        assert_int_equal(p0->outcome, TUNE_KNOB_PLANNED);
        assert_string_equal(p0->current, "powersave");
        assert_string_equal(p0->label, "CPUs 0-1");
        assert_int_equal(p0->cpu, 0);
        assert_int_equal(p2->outcome, TUNE_KNOB_SKIPPED);
        assert_int_equal(p2->skip, -EOPNOTSUPP);
        assert_non_null(strstr(p2->skip_reason, "does not offer \"performance\""));
        assert_int_equal(p3->outcome, TUNE_KNOB_SKIPPED);
        assert_int_equal(p3->skip, -ENODEV);

        knob_test_apply(t, NULL);
        assert_int_equal(t->journal->n, 1);
        _cleanup_free_ char *g0 = knob_test_file(t, CPUFREQ "/policy0/scaling_governor");
        _cleanup_free_ char *g2 = knob_test_file(t, CPUFREQ "/policy2/scaling_governor");
        _cleanup_free_ char *g3 = knob_test_file(t, CPUFREQ "/policy3/scaling_governor");
        assert_string_equal(g0, "performance");
        assert_string_equal(g2, "schedutil");
        assert_string_equal(g3, "powersave");

        /* The journal entry alone (path + CPU) is enough to restore. */
        assert_int_equal(tune_journal_find(t->journal, "cpufreq/policy0")->cpu, 0);
        assert_int_equal(knob_test_restore(t), 0);
        assert_int_equal(t->restored_outcomes[0], TUNE_RESTORE_WRITTEN);
        _cleanup_free_ char *back = knob_test_file(t, CPUFREQ "/policy0/scaling_governor");
        assert_string_equal(back, "powersave");
        knob_test_free(t);
}

static void test_inference_scope(void **state) {
        knob_test *t = governor_machine("gov-scope");
        _cleanup_free_ char *hk = NULL, *inf = NULL;
        (void) state;

        /* Housekeeping: CPU 0 (node 0) and CPU 2 (node 1); the NPU is on node 0, so the
         * inference CPUs are {1}: only policy0 (CPUs 0-1) is in scope. */
        t->host.governor_scope = TUNE_GOVERNOR_INFERENCE_CPUS;
        knob_test_load(t, 1);
        assert_int_equal(tune_cpuset_format_list(&t->housekeeping, &hk), 0);
        assert_int_equal(tune_cpuset_format_list(&t->inference, &inf), 0);
        assert_string_equal(hk, "0,2");
        assert_string_equal(inf, "1");
        knob_test_plan(t);
        assert_non_null(knob_test_item(t, "cpufreq/policy0"));
        assert_null(knob_test_item(t, "cpufreq/policy2"));
        knob_test_apply(t, NULL);
        _cleanup_free_ char *g2 = knob_test_file(t, CPUFREQ "/policy2/scaling_governor");
        assert_string_equal(g2, "schedutil");
        assert_int_equal(knob_test_restore(t), 0);

        /* No inference CPUs at all: left alone, with a note. */
        tune_cpuset_clear(&t->inference);
        knob_test_plan(t);
        assert_int_equal(t->plan.n, 0);
        assert_true(knob_test_has_note(t, "cpufreq", 0));
        knob_test_free(t);
}

static void test_no_cpufreq(void **state) {
        knob_test *t = knob_test_new("gov-none");
        (void) state;

        t->host.governor = strdup("performance");
        knob_test_load(t, 1);
        knob_test_plan(t);
        assert_int_equal(t->plan.n, 0);
        assert_true(knob_test_has_note(t, "cpufreq", -ENOENT));
        assert_non_null(strstr(t->plan.notes[0].message, "no cpufreq driver"));
        knob_test_free(t);
}

/* On the live root both paths must see the same policies and governors. */
static void test_live_paths_agree(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_topology_freep) tune_topology *topo = NULL;
        tune_cpufreq_policy *a = NULL, *b = NULL;
        unsigned na = 0, nb = 0;
        int ra, rb;
        (void) state;

        assert_int_equal(tune_ctx_new("/", &ctx), 0);
        assert_int_equal(tune_topology_load(ctx, &topo), 0);
        assert_ptr_equal(tune_cpufreq_ops_for(ctx), &tune_cpufreq_libcpupower);
        ra = tune_cpufreq_libcpupower.list(ctx, topo, &a, &na);
        rb = tune_cpufreq_sysfs.list(ctx, topo, &b, &nb);
        if (ra == -ENOENT && rb == -ENOENT) {
                print_message("this host has no cpufreq driver: libcpupower and /sys agree (no policies)\n");
                return;
        }
        assert_int_equal(ra, 0);
        assert_int_equal(rb, 0);
        /* sysfs also lists inactive policies; compare the active ones. */
        unsigned active = 0;
        for (unsigned i = 0; i < nb; i++)
                if (!tune_cpuset_is_empty(&b[i].cpus))
                        active++;
        assert_int_equal(na, active);
        for (unsigned i = 0; i < na; i++) {
                _cleanup_free_ char *ga = NULL, *gb = NULL;
                const tune_cpufreq_policy *match = NULL;
                for (unsigned k = 0; k < nb; k++)
                        if (tune_cpuset_equal(&a[i].cpus, &b[k].cpus))
                                match = &b[k];
                assert_non_null(match);
                assert_int_equal(tune_cpufreq_libcpupower.get(ctx, &a[i], &ga), 0);
                assert_int_equal(tune_cpufreq_sysfs.get(ctx, match, &gb), 0);
                assert_string_equal(ga, gb);
        }
        print_message("%u cpufreq policies; libcpupower and /sys agree\n", na);
        tune_cpufreq_policies_free(a, na);
        tune_cpufreq_policies_free(b, nb);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_cpus),
                cmocka_unit_test(test_sysfs_list),
                cmocka_unit_test(test_plan_apply_restore),
                cmocka_unit_test(test_inference_scope),
                cmocka_unit_test(test_no_cpufreq),
                cmocka_unit_test(test_live_paths_agree),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
