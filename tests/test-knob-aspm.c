/* SPDX-License-Identifier: GPL-2.0-only */
/* PCIe ASPM on a fake tree: the global policy (bracketed; EPERM when the firmware keeps
 * ASPM control; missing without CONFIG_PCIEASPM) and the accelerator links' l*_aspm files
 * (L1 only, off; links without link/ or without sub-states). */
#include "knobs/knob-test.h"

#define POLICY "sys/module/pcie_aspm/parameters/policy"
#define NPU0 "0000:c1:00.0"
#define NPU1 "0000:81:00.0"
#define LINK0 "sys/bus/pci/devices/" NPU0 "/link/"
#define LINK1 "sys/bus/pci/devices/" NPU1 "/link/"

static knob_test *aspm_machine(const char *name) {
        knob_test *t = knob_test_new(name);
        fake_write(t->root, POLICY, "[default] performance powersave powersupersave \n", 0644);
        fake_accel(t->root, NPU0, 0, 0);
        fake_accel(t->root, NPU1, 1, 1);
        fake_write(t->root, LINK0 "l0s_aspm", "1\n", 0644);
        fake_write(t->root, LINK0 "l1_aspm", "1\n", 0644);
        fake_write(t->root, LINK0 "l1_1_aspm", "1\n", 0644);
        fake_write(t->root, LINK0 "l1_2_aspm", "1\n", 0644);
        fake_write(t->root, LINK0 "clkpm", "1\n", 0644);
        /* NPU1's link has no L1 sub-states. */
        fake_write(t->root, LINK1 "l0s_aspm", "1\n", 0644);
        fake_write(t->root, LINK1 "l1_aspm", "0\n", 0644);
        t->host.aspm_policy = strdup("performance");
        return t;
}

static void assert_file(const knob_test *t, const char *rel, const char *expected) {
        _cleanup_free_ char *v = knob_test_file(t, rel);
        if (!streq(v, expected))
                fail_msg("%s holds \"%s\", expected \"%s\"", rel, v, expected);
}

static void test_policy(void **state) {
        knob_test *t = aspm_machine("aspm");
        (void) state;

        knob_test_load(t, 1);
        knob_test_plan(t);
        assert_int_equal(t->plan.n, 1);
        assert_string_equal(t->plan.items[0].current, "default");
        knob_test_apply(t, NULL);
        assert_file(t, POLICY, "performance");
        assert_int_equal(knob_test_restore(t), 0);
        _cleanup_free_ char *v = knob_test_value(t, POLICY, TUNE_KNOB_SELECTED);
        assert_string_equal(v, "default");
        knob_test_free(t);
}

static void test_policy_missing_or_not_offered(void **state) {
        knob_test *t = aspm_machine("aspm-missing");
        char path[4300];
        (void) state;

        free(t->host.aspm_policy);
        t->host.aspm_policy = strdup("turbo");
        knob_test_load(t, 1);
        knob_test_plan(t);
        assert_int_equal(t->plan.items[0].skip, -EOPNOTSUPP);

        snprintf(path, sizeof path, "%s/" POLICY, t->root);
        assert_int_equal(unlink(path), 0);
        knob_test_plan(t);
        assert_int_equal(t->plan.items[0].skip, -ENOENT);
        assert_non_null(strstr(t->plan.items[0].skip_reason, "CONFIG_PCIEASPM"));
        knob_test_free(t);
}

static int child_firmware_owned(void *arg) {
        knob_test *t = arg;
        knob_test_plan(t);
        knob_test_apply(t, NULL);
        const tune_knob_item *p = knob_test_item(t, "aspm/policy");
        if (p->outcome != TUNE_KNOB_REFUSED || p->error != -EPERM)
                return 40;
        if (!strstr(tune_knob_refusal_reason(&tune_knob_aspm, "aspm/policy", p->error), "firmware"))
                return 41;
        /* The links are still tuned. */
        if (knob_test_item(t, "aspm/" NPU0 "/l0s_aspm")->outcome != TUNE_KNOB_APPLIED)
                return 42;
        if (knob_test_restore(t) != 0)
                return 43;
        return 0;
}

/* The kernel answers EPERM when the firmware did not grant ASPM control. */
static void test_policy_eperm(void **state) {
        knob_test *t = aspm_machine("aspm-eperm");
        int r, status;
        (void) state;

        t->host.aspm_accelerator_link = TUNE_ASPM_LINK_L1_ONLY;
        knob_test_load(t, 1);
        r = fake_set_immutable(t->root, POLICY, true);
        if (r < 0) {
                print_message("immutable files not available here (%s): EPERM case not run\n", strerror(-r));
                knob_test_free(t);
                skip();
        }
        status = knob_test_in_child(child_firmware_owned, t);
        assert_int_equal(fake_set_immutable(t->root, POLICY, false), 0);
        assert_int_equal(status, 0);
        assert_file(t, POLICY, "[default] performance powersave powersupersave");
        assert_file(t, LINK0 "l0s_aspm", "1");
        knob_test_free(t);
}

static void test_link_l1_only(void **state) {
        knob_test *t = aspm_machine("aspm-l1");
        (void) state;

        free(t->host.aspm_policy);
        t->host.aspm_policy = NULL;
        t->host.aspm_accelerator_link = TUNE_ASPM_LINK_L1_ONLY;
        knob_test_load(t, 1);
        knob_test_plan(t);
        assert_int_equal(t->plan.n, 4);
        knob_test_apply(t, NULL);
        assert_file(t, LINK0 "l0s_aspm", "0");
        assert_file(t, LINK0 "l1_aspm", "1");
        assert_file(t, LINK0 "l1_1_aspm", "1"); /* sub-states left alone */
        assert_file(t, LINK0 "l1_2_aspm", "1");
        assert_file(t, LINK1 "l0s_aspm", "0");
        assert_file(t, LINK1 "l1_aspm", "1");
        assert_file(t, LINK0 "clkpm", "1");
        assert_int_equal(knob_test_restore(t), 0);
        assert_file(t, LINK0 "l0s_aspm", "1");
        assert_file(t, LINK1 "l0s_aspm", "1");
        assert_file(t, LINK1 "l1_aspm", "0");
        knob_test_free(t);
}

static void test_link_off(void **state) {
        knob_test *t = aspm_machine("aspm-off");
        char path[4300];
        (void) state;

        free(t->host.aspm_policy);
        t->host.aspm_policy = NULL;
        t->host.aspm_accelerator_link = TUNE_ASPM_LINK_OFF;
        /* A third NPU without link/ (kernel before 5.5). */
        fake_accel(t->root, "0000:41:00.0", 1, 2);
        knob_test_load(t, 1);
        knob_test_plan(t);
        assert_true(knob_test_has_note(t, "aspm", -ENOENT));
        assert_int_equal(knob_test_item(t, "aspm/" NPU1 "/l1_2_aspm")->skip, -ENOENT);
        knob_test_apply(t, NULL);
        assert_file(t, LINK0 "l1_2_aspm", "0");
        assert_file(t, LINK0 "l1_1_aspm", "0");
        assert_file(t, LINK0 "l1_aspm", "0");
        assert_file(t, LINK0 "l0s_aspm", "0");
        assert_file(t, LINK1 "l0s_aspm", "0");
        snprintf(path, sizeof path, "%s/" LINK1 "l1_2_aspm", t->root);
        assert_int_equal(access(path, F_OK), -1); /* not created */
        /* Restore runs newest first: l0s, l1, then the sub-states. */
        assert_int_equal(knob_test_restore(t), 0);
        assert_string_equal(t->restored_ids[0], "aspm/" NPU1 "/l0s_aspm");
        assert_file(t, LINK0 "l1_2_aspm", "1");
        assert_file(t, LINK0 "l1_aspm", "1");
        assert_file(t, LINK1 "l0s_aspm", "1");
        knob_test_free(t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_policy),
                cmocka_unit_test(test_policy_missing_or_not_offered),
                cmocka_unit_test(test_policy_eperm),
                cmocka_unit_test(test_link_l1_only),
                cmocka_unit_test(test_link_off),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
