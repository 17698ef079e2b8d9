/* SPDX-License-Identifier: GPL-2.0-only */
/* THP knobs on a fake tree: apply writes the bytes, restore puts the selected value back,
 * and every way the kernel can say no (missing files, a value not offered, read-only,
 * EACCES, EPERM) is a reported skip or refusal that changes nothing. */
#include "knobs/knob-test.h"

#define THP "sys/kernel/mm/transparent_hugepage"

static knob_test *thp_machine(const char *name) {
        knob_test *t = knob_test_new(name);
        fake_write(t->root, THP "/enabled", "always [madvise] never\n", 0644);
        fake_write(t->root, THP "/defrag", "always defer defer+madvise [madvise] never\n", 0644);
        fake_write(t->root, THP "/khugepaged/defrag", "1\n", 0644);
        t->host.thp_enabled = strdup("never");
        t->host.thp_defrag = strdup("defer+madvise");
        t->host.khugepaged_defrag = 0;
        return t;
}

static void test_values(void **state) {
        char *v = NULL;
        (void) state;

        assert_int_equal(tune_knob_parse_value(TUNE_KNOB_SELECTED, "always [madvise] never\n", &v), 0);
        assert_string_equal(v, "madvise");
        free(v);
        assert_int_equal(tune_knob_parse_value(TUNE_KNOB_SELECTED, "[always] madvise never", &v), 0);
        assert_string_equal(v, "always");
        free(v);
        /* What a plain file (a fake tree) holds after a write. */
        assert_int_equal(tune_knob_parse_value(TUNE_KNOB_SELECTED, "never\n", &v), 0);
        assert_string_equal(v, "never");
        free(v);
        assert_int_equal(tune_knob_parse_value(TUNE_KNOB_SELECTED, "always madvise never", &v), -EBADMSG);
        assert_int_equal(tune_knob_parse_value(TUNE_KNOB_SELECTED, "[always] [madvise]", &v), -EBADMSG);
        assert_int_equal(tune_knob_parse_value(TUNE_KNOB_SELECTED, "always [] never", &v), -EBADMSG);
        assert_int_equal(tune_knob_parse_value(TUNE_KNOB_SELECTED, "", &v), -EBADMSG);
        assert_true(tune_knob_selected_offers("always defer defer+madvise [madvise] never", "defer+madvise"));
        assert_true(tune_knob_selected_offers("always [madvise] never", "madvise"));
        assert_false(tune_knob_selected_offers("always [madvise] never", "defer"));
        assert_false(tune_knob_selected_offers("always [madvise] never", "mad"));
        assert_false(tune_knob_selected_offers("always [madvise] never", "[madvise]"));
        assert_true(tune_knob_selected_offers("never", "always")); /* no choices listed */
        assert_true(tune_knob_value_equal(TUNE_KNOB_CPUMASK, "00000000,000000ff", "ff"));
        assert_false(tune_knob_value_equal(TUNE_KNOB_CPUMASK, "ff", "7f"));
        assert_true(tune_knob_value_equal(TUNE_KNOB_PLAIN, "1", "1"));
        assert_false(tune_knob_value_equal(TUNE_KNOB_PLAIN, "1", NULL));
}

static void test_apply_restore(void **state) {
        knob_test *t = thp_machine("thp");
        (void) state;

        knob_test_load(t, 1);
        knob_test_plan(t);
        assert_int_equal(t->plan.n, 3);
        knob_test_apply(t, NULL);
        assert_non_null(t->journal);
        assert_int_equal(t->journal->n, 3);
        assert_true(knob_test_journal_exists(t));
        for (unsigned i = 0; i < t->plan.n; i++)
                assert_int_equal(t->plan.items[i].outcome, TUNE_KNOB_APPLIED);

        _cleanup_free_ char *enabled = knob_test_file(t, THP "/enabled");
        _cleanup_free_ char *defrag = knob_test_file(t, THP "/defrag");
        _cleanup_free_ char *khp = knob_test_file(t, THP "/khugepaged/defrag");
        assert_string_equal(enabled, "never");
        assert_string_equal(defrag, "defer+madvise");
        assert_string_equal(khp, "0");

        /* The journal on disk holds the originals as the kernel showed them. */
        tune_journal *disk = NULL;
        assert_int_equal(tune_journal_load(t->state_dir, &disk, NULL), 0);
        assert_string_equal(tune_journal_find(disk, "thp/enabled")->original, "madvise");
        assert_string_equal(tune_journal_find(disk, "thp/enabled")->desired, "never");
        assert_int_equal(tune_journal_find(disk, "thp/enabled")->state, TUNE_JOURNAL_APPLIED);
        tune_journal_free(disk);

        assert_int_equal(knob_test_restore(t), 0);
        /* Newest first. */
        assert_int_equal(t->n_restored, 3);
        assert_string_equal(t->restored_ids[0], "thp/khugepaged/defrag");
        assert_string_equal(t->restored_ids[2], "thp/enabled");
        for (unsigned i = 0; i < 3; i++)
                assert_int_equal(t->restored_outcomes[i], TUNE_RESTORE_WRITTEN);
        _cleanup_free_ char *e2 = knob_test_value(t, THP "/enabled", TUNE_KNOB_SELECTED);
        _cleanup_free_ char *d2 = knob_test_value(t, THP "/defrag", TUNE_KNOB_SELECTED);
        _cleanup_free_ char *k2 = knob_test_file(t, THP "/khugepaged/defrag");
        assert_string_equal(e2, "madvise");
        assert_string_equal(d2, "madvise");
        assert_string_equal(k2, "1");
        assert_false(knob_test_journal_exists(t));
        knob_test_free(t);
}

static void test_no_thp(void **state) {
        knob_test *t = knob_test_new("thp-none");
        (void) state;

        t->host.thp_enabled = strdup("never");
        knob_test_load(t, 1);
        knob_test_plan(t);
        assert_int_equal(t->plan.n, 0);
        assert_true(knob_test_has_note(t, "thp", -ENOENT));
        knob_test_apply(t, NULL);
        assert_null(t->journal);
        assert_false(knob_test_journal_exists(t));
        knob_test_free(t);
}

static void test_missing_file_and_not_offered(void **state) {
        knob_test *t = thp_machine("thp-missing");
        char path[4300];
        (void) state;

        snprintf(path, sizeof path, "%s/" THP "/khugepaged/defrag", t->root);
        assert_int_equal(unlink(path), 0);
        free(t->host.thp_defrag);
        t->host.thp_defrag = strdup("sometimes"); /* not a value the kernel offers */
        knob_test_load(t, 1);
        knob_test_plan(t);
        const tune_knob_item *k = knob_test_item(t, "thp/khugepaged/defrag");
        const tune_knob_item *d = knob_test_item(t, "thp/defrag");
        assert_int_equal(k->outcome, TUNE_KNOB_SKIPPED);
        assert_int_equal(k->skip, -ENOENT);
        assert_int_equal(d->outcome, TUNE_KNOB_SKIPPED);
        assert_int_equal(d->skip, -EOPNOTSUPP);
        assert_non_null(strstr(d->skip_reason, "does not offer \"sometimes\""));
        knob_test_apply(t, NULL);
        assert_int_equal(knob_test_item(t, "thp/enabled")->outcome, TUNE_KNOB_APPLIED);
        assert_int_equal(t->journal->n, 1);
        _cleanup_free_ char *defrag = knob_test_file(t, THP "/defrag");
        assert_string_equal(defrag, "always defer defer+madvise [madvise] never"); /* untouched */
        assert_int_equal(knob_test_restore(t), 0);
        knob_test_free(t);
}

static void test_read_only(void **state) {
        knob_test *t = thp_machine("thp-ro");
        (void) state;

        fake_write(t->root, THP "/enabled", "always [madvise] never\n", 0444);
        knob_test_load(t, 1);
        knob_test_plan(t);
        const tune_knob_item *e = knob_test_item(t, "thp/enabled");
        assert_int_equal(e->outcome, TUNE_KNOB_SKIPPED);
        assert_int_equal(e->skip, -EROFS);
        knob_test_apply(t, NULL);
        assert_null(tune_journal_find(t->journal, "thp/enabled"));
        _cleanup_free_ char *enabled = knob_test_file(t, THP "/enabled");
        assert_string_equal(enabled, "always [madvise] never");
        assert_int_equal(knob_test_restore(t), 0);
        knob_test_free(t);
}

/* In a child without CAP_DAC_OVERRIDE: a file it may not read is skipped with EACCES at
 * plan; a file it may read but not write is refused with EACCES at apply, journaled as
 * refused, and restore leaves it as it was. Exit codes say which check failed. */
static int child_eacces(void *arg) {
        knob_test *t = arg;
        tune_knob_hooks h = knob_test_hooks(t);
        tune_journal *j = NULL;
        const tune_knob_item *e, *d;

        if (geteuid() == 0 && fake_drop_dac_override() < 0)
                return 10;
        if (tune_knobs_plan(t->ctx, &(tune_knob_plan_input){ .host = &t->host, .topology = t->topology,
                                                             .accels = &t->accels, .inference_cpus = &t->inference,
                                                             .housekeeping_cpus = &t->housekeeping },
                            &t->plan) < 0)
                return 11;
        d = knob_test_item(t, "thp/defrag");
        if (!d || d->outcome != TUNE_KNOB_SKIPPED || d->skip != -EACCES)
                return 12;
        if (tune_knobs_apply(t->ctx, &t->plan, t->state_dir, NULL, &h, &j) < 0 || !j)
                return 13;
        e = knob_test_item(t, "thp/enabled");
        if (e->outcome != TUNE_KNOB_REFUSED || e->error != -EACCES)
                return 14;
        if (tune_journal_find(j, "thp/enabled")->state != TUNE_JOURNAL_REFUSED ||
            tune_journal_find(j, "thp/enabled")->error != -EACCES)
                return 15;
        if (tune_knobs_restore(t->ctx, j, t->state_dir, &h) < 0)
                return 16;
        if (t->n_restored != 2 || t->restored_outcomes[1] != TUNE_RESTORE_UNCHANGED)
                return 17;
        tune_journal_free(j);
        return 0;
}

static void test_eacces(void **state) {
        knob_test *t = thp_machine("thp-eacces");
        char path[4300];
        (void) state;

        /* Readable by others, writable only by its owner (someone else). */
        snprintf(path, sizeof path, "%s/" THP "/enabled", t->root);
        if (geteuid() == 0 ? chown(path, 65534, 65534) < 0 : true) {
                knob_test_free(t);
                skip(); /* needs root to give the file to another owner */
        }
        /* Not readable at all (write-only for its owner root). */
        fake_write(t->root, THP "/defrag", "always defer defer+madvise [madvise] never\n", 0200);
        knob_test_load(t, 1);
        assert_int_equal(knob_test_in_child(child_eacces, t), 0);
        _cleanup_free_ char *enabled = knob_test_file(t, THP "/enabled");
        assert_string_equal(enabled, "always [madvise] never");
        _cleanup_free_ char *khp = knob_test_file(t, THP "/khugepaged/defrag");
        assert_string_equal(khp, "1"); /* written, then restored */
        assert_false(knob_test_journal_exists(t));
        knob_test_free(t);
}

/* An immutable file: the write fails with EPERM, as sysfs does for a knob the kernel
 * keeps (firmware-owned ASPM). In a child so that the parent can always clear the flag. */
static int child_eperm(void *arg) {
        knob_test *t = arg;
        knob_test_plan(t);
        knob_test_apply(t, NULL);
        const tune_knob_item *e = knob_test_item(t, "thp/enabled");
        if (e->outcome != TUNE_KNOB_REFUSED || e->error != -EPERM)
                return 20;
        if (knob_test_item(t, "thp/defrag")->outcome != TUNE_KNOB_APPLIED)
                return 21;
        if (knob_test_restore(t) != 0)
                return 22;
        return 0;
}

static void test_eperm(void **state) {
        knob_test *t = thp_machine("thp-eperm");
        int r, status;
        (void) state;

        knob_test_load(t, 1);
        r = fake_set_immutable(t->root, THP "/enabled", true);
        if (r < 0) {
                print_message("immutable files not available here (%s): EPERM case not run\n", strerror(-r));
                knob_test_free(t);
                skip();
        }
        status = knob_test_in_child(child_eperm, t);
        assert_int_equal(fake_set_immutable(t->root, THP "/enabled", false), 0);
        assert_int_equal(status, 0);
        _cleanup_free_ char *enabled = knob_test_file(t, THP "/enabled");
        assert_string_equal(enabled, "always [madvise] never");
        _cleanup_free_ char *defrag = knob_test_value(t, THP "/defrag", TUNE_KNOB_SELECTED);
        assert_string_equal(defrag, "madvise");
        knob_test_free(t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_values),
                cmocka_unit_test(test_apply_restore),
                cmocka_unit_test(test_no_thp),
                cmocka_unit_test(test_missing_file_and_not_offered),
                cmocka_unit_test(test_read_only),
                cmocka_unit_test(test_eacces),
                cmocka_unit_test(test_eperm),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
