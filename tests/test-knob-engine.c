/* SPDX-License-Identifier: GPL-2.0-only */
/* The engine shared by every knob: a dead run's journal gives the originals (never the
 * tuned values the knobs show), entries the new plan drops are given back, a value someone
 * else set after us is left alone, a failed restore stays journaled, and nothing is
 * written when the journal cannot be. */
#include "knobs/knob-test.h"

#define THP "sys/kernel/mm/transparent_hugepage"
#define NB "proc/sys/kernel/numa_balancing"

static knob_test *engine_machine(const char *name) {
        knob_test *t = knob_test_new(name);
        fake_write(t->root, THP "/enabled", "always [madvise] never\n", 0644);
        fake_write(t->root, THP "/defrag", "always defer defer+madvise [madvise] never\n", 0644);
        fake_write(t->root, NB, "1\n", 0644);
        t->host.thp_enabled = strdup("never");
        t->host.thp_defrag = strdup("defer");
        t->host.numa_balancing = 0;
        return t;
}

static tune_journal *load_journal(const knob_test *t) {
        tune_journal *j = NULL;
        assert_int_equal(tune_journal_load(t->state_dir, &j, NULL), 0);
        return j;
}

static void assert_value(const knob_test *t, const char *rel, tune_knob_format f, const char *expected) {
        _cleanup_free_ char *v = knob_test_value(t, rel, f);
        if (!streq(v, expected))
                fail_msg("%s shows \"%s\", expected \"%s\"", rel, v, expected);
}

/* Killed after apply, started again: the originals come from the journal. */
static void test_adopt_after_kill(void **state) {
        knob_test *t = engine_machine("engine-adopt");
        (void) state;

        knob_test_load(t, 1);
        knob_test_plan(t);
        knob_test_apply(t, NULL);
        assert_int_equal(t->steps, 3 + 3 * 2 + 3); /* journal, 3 writes (before/after), journal */
        /* SIGKILL: the in-memory state is lost, the journal stays. */
        t->journal = tune_journal_free(t->journal);
        assert_value(t, THP "/enabled", TUNE_KNOB_SELECTED, "never");

        /* The second run sees tuned values everywhere. */
        _cleanup_(tune_journal_freep) tune_journal *previous = load_journal(t);
        knob_test_plan(t);
        assert_string_equal(knob_test_item(t, "thp/enabled")->current, "never");
        knob_test_apply(t, previous);
        const tune_knob_item *e = knob_test_item(t, "thp/enabled");
        assert_true(e->adopted);
        assert_false(e->adopted_changed);
        assert_int_equal(e->outcome, TUNE_KNOB_ALREADY);
        assert_string_equal(e->original, "madvise");
        assert_int_equal(t->journal->n, 3);
        assert_string_equal(tune_journal_find(t->journal, "thp/enabled")->original, "madvise");
        /* The ownership order is kept across runs. */
        assert_int_equal(tune_journal_find(t->journal, "thp/enabled")->seq,
                         tune_journal_find(previous, "thp/enabled")->seq);

        /* The on-disk journal (rewritten) still says madvise. */
        _cleanup_(tune_journal_freep) tune_journal *disk = load_journal(t);
        assert_string_equal(tune_journal_find(disk, "thp/enabled")->original, "madvise");

        /* Normal stop: the true originals come back. */
        assert_int_equal(knob_test_restore(t), 0);
        assert_value(t, THP "/enabled", TUNE_KNOB_SELECTED, "madvise");
        assert_value(t, THP "/defrag", TUNE_KNOB_SELECTED, "madvise");
        assert_value(t, NB, TUNE_KNOB_PLAIN, "1");
        assert_false(knob_test_journal_exists(t));
        knob_test_free(t);
}

/* The second run asks for other values and fewer knobs. */
static void test_adopt_with_new_policy(void **state) {
        knob_test *t = engine_machine("engine-newpolicy");
        (void) state;

        knob_test_load(t, 1);
        knob_test_plan(t);
        knob_test_apply(t, NULL);
        t->journal = tune_journal_free(t->journal);

        _cleanup_(tune_journal_freep) tune_journal *previous = load_journal(t);
        free(t->host.thp_enabled);
        t->host.thp_enabled = strdup("always");
        t->host.numa_balancing = -1; /* no longer asked for: given back at once */
        knob_test_plan(t);
        knob_test_apply(t, previous);
        assert_int_equal(t->n_restored, 1);
        assert_string_equal(t->restored_ids[0], "sysctl/kernel.numa_balancing");
        assert_int_equal(t->restored_outcomes[0], TUNE_RESTORE_WRITTEN);
        assert_value(t, NB, TUNE_KNOB_PLAIN, "1");
        assert_null(tune_journal_find(t->journal, "sysctl/kernel.numa_balancing"));
        assert_value(t, THP "/enabled", TUNE_KNOB_SELECTED, "always");
        assert_string_equal(knob_test_item(t, "thp/enabled")->original, "madvise");

        assert_int_equal(knob_test_restore(t), 0);
        assert_value(t, THP "/enabled", TUNE_KNOB_SELECTED, "madvise");
        knob_test_free(t);
}

/* Die at the first "before-write" step: as a SIGKILL there would. */
static void die_before_write(const char *what, void *userdata) {
        (void) userdata;
        if (strncmp(what, "before-write", 12) == 0)
                _exit(0);
}

static int child_adopt_then_die(void *arg) {
        knob_test *t = arg;
        tune_knob_hooks h = { .step = die_before_write };
        tune_journal *previous = NULL, *j = NULL;

        if (tune_journal_load(t->state_dir, &previous, NULL) < 0)
                return 60;
        (void) tune_knobs_apply(t->ctx, &t->plan, t->state_dir, previous, &h, &j);
        return 61; /* not reached */
}

/* Killed after the second run journaled its new value but before writing it: the knob
 * still shows the first run's value, which is ours too ("prior"), so restore gives the
 * original back instead of leaving it as someone else's. */
static void test_adopt_killed_before_new_write(void **state) {
        knob_test *t = engine_machine("engine-prior");
        (void) state;

        knob_test_load(t, 1);
        knob_test_plan(t);
        knob_test_apply(t, NULL);
        t->journal = tune_journal_free(t->journal);

        free(t->host.thp_enabled);
        t->host.thp_enabled = strdup("always");
        knob_test_plan(t);
        assert_int_equal(knob_test_in_child(child_adopt_then_die, t), 0);
        assert_value(t, THP "/enabled", TUNE_KNOB_SELECTED, "never"); /* the first run's value */
        t->journal = load_journal(t);
        tune_journal_entry *e = tune_journal_find(t->journal, "thp/enabled");
        assert_string_equal(e->original, "madvise");
        assert_string_equal(e->desired, "always");
        assert_string_equal(e->prior, "never");
        assert_int_equal(knob_test_restore(t), 0);
        assert_value(t, THP "/enabled", TUNE_KNOB_SELECTED, "madvise");
        assert_false(knob_test_journal_exists(t));
        knob_test_free(t);
}

/* Between the runs someone else set a knob: their value is the original now. */
static void test_adopt_changed_by_others(void **state) {
        knob_test *t = engine_machine("engine-others");
        (void) state;

        knob_test_load(t, 1);
        knob_test_plan(t);
        knob_test_apply(t, NULL);
        t->journal = tune_journal_free(t->journal);
        fake_write(t->root, THP "/enabled", "[always] madvise never\n", 0644);

        _cleanup_(tune_journal_freep) tune_journal *previous = load_journal(t);
        knob_test_plan(t);
        knob_test_apply(t, previous);
        const tune_knob_item *e = knob_test_item(t, "thp/enabled");
        assert_true(e->adopted_changed);
        assert_string_equal(e->original, "always");
        assert_int_equal(knob_test_restore(t), 0);
        assert_value(t, THP "/enabled", TUNE_KNOB_SELECTED, "always");
        knob_test_free(t);
}

/* While we own it someone else sets a knob: on restore theirs stays. */
static void test_left_alone(void **state) {
        knob_test *t = engine_machine("engine-leftalone");
        (void) state;

        knob_test_load(t, 1);
        knob_test_plan(t);
        knob_test_apply(t, NULL);
        fake_write(t->root, THP "/defrag", "always defer defer+madvise madvise [never]\n", 0644);
        assert_int_equal(knob_test_restore(t), 0);
        for (unsigned i = 0; i < t->n_restored; i++)
                if (streq(t->restored_ids[i], "thp/defrag"))
                        assert_int_equal(t->restored_outcomes[i], TUNE_RESTORE_LEFT_ALONE);
                else
                        assert_int_equal(t->restored_outcomes[i], TUNE_RESTORE_WRITTEN);
        assert_value(t, THP "/defrag", TUNE_KNOB_SELECTED, "never");
        assert_value(t, THP "/enabled", TUNE_KNOB_SELECTED, "madvise");
        assert_false(knob_test_journal_exists(t));
        knob_test_free(t);
}

/* A knob that vanished (device unplugged): nothing to restore, settled. */
static void test_gone(void **state) {
        knob_test *t = engine_machine("engine-gone");
        char path[4300];
        (void) state;

        knob_test_load(t, 1);
        knob_test_plan(t);
        knob_test_apply(t, NULL);
        snprintf(path, sizeof path, "%s/" NB, t->root);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(knob_test_restore(t), 0);
        assert_int_equal(t->restored_outcomes[0], TUNE_RESTORE_GONE);
        assert_false(knob_test_journal_exists(t));
        knob_test_free(t);
}

static int child_restore_fails(void *arg) {
        knob_test *t = arg;
        if (knob_test_restore(t) != -EPERM)
                return 50;
        if (t->journal->n != 1 || !tune_journal_find(t->journal, "thp/enabled"))
                return 51;
        return 0;
}

/* A restore the kernel refuses stays in the journal for the next --restore. */
static void test_restore_failure_kept(void **state) {
        knob_test *t = engine_machine("engine-fail");
        int r, status;
        (void) state;

        knob_test_load(t, 1);
        knob_test_plan(t);
        knob_test_apply(t, NULL);
        r = fake_set_immutable(t->root, THP "/enabled", true);
        if (r < 0) {
                print_message("immutable files not available here (%s): case not run\n", strerror(-r));
                knob_test_free(t);
                skip();
        }
        status = knob_test_in_child(child_restore_fails, t);
        assert_int_equal(fake_set_immutable(t->root, THP "/enabled", false), 0);
        assert_int_equal(status, 0);
        assert_value(t, THP "/defrag", TUNE_KNOB_SELECTED, "madvise"); /* the others were restored */
        assert_true(knob_test_journal_exists(t));
        _cleanup_(tune_journal_freep) tune_journal *left = load_journal(t);
        assert_int_equal(left->n, 1);
        assert_non_null(tune_journal_find(left, "thp/enabled"));
        /* The next --restore finishes the job. */
        t->journal = tune_journal_free(t->journal);
        t->journal = TAKE_PTR(left);
        assert_int_equal(knob_test_restore(t), 0);
        assert_value(t, THP "/enabled", TUNE_KNOB_SELECTED, "madvise");
        assert_false(knob_test_journal_exists(t));
        knob_test_free(t);
}

/* No journal, no writes. */
static void test_journal_unwritable(void **state) {
        knob_test *t = engine_machine("engine-nojournal");
        tune_knob_hooks h = knob_test_hooks(t);
        (void) state;

        fake_write(t->root, "not-a-dir", "", 0644);
        snprintf(t->state_dir, sizeof t->state_dir, "%s/not-a-dir/state", t->root);
        knob_test_load(t, 1);
        knob_test_plan(t);
        assert_int_equal(tune_knobs_apply(t->ctx, &t->plan, t->state_dir, NULL, &h, &t->journal), -ENOTDIR);
        assert_null(t->journal);
        assert_value(t, THP "/enabled", TUNE_KNOB_SELECTED, "madvise");
        assert_value(t, NB, TUNE_KNOB_PLAIN, "1");
        for (unsigned i = 0; i < t->plan.n; i++)
                assert_int_not_equal(t->plan.items[i].outcome, TUNE_KNOB_APPLIED);
        knob_test_free(t);
}

/* Nothing to change: no journal at all. */
static void test_nothing_to_do(void **state) {
        knob_test *t = engine_machine("engine-noop");
        (void) state;

        free(t->host.thp_enabled);
        t->host.thp_enabled = strdup("madvise");
        free(t->host.thp_defrag);
        t->host.thp_defrag = NULL;
        t->host.numa_balancing = 1;
        knob_test_load(t, 1);
        knob_test_plan(t);
        knob_test_apply(t, NULL);
        assert_null(t->journal);
        assert_false(knob_test_journal_exists(t));
        assert_int_equal(t->steps, 0);
        knob_test_free(t);
}

static void test_cpu_sets(void **state) {
        knob_test *t = knob_test_new("engine-cpusets");
        _cleanup_free_ char *hk = NULL, *inf = NULL;
        (void) state;

        /* An NPU whose firmware gives no node: its local CPUs count. */
        fake_accel(t->root, "0000:c1:00.0", -1, 0);
        fake_write(t->root, "sys/bus/pci/devices/0000:c1:00.0/local_cpulist", "1-3\n", 0644);
        knob_test_load(t, 1);
        assert_int_equal(tune_cpuset_format_list(&t->housekeeping, &hk), 0);
        assert_string_equal(hk, "0,2");
        assert_int_equal(tune_cpuset_format_list(&t->inference, &inf), 0);
        assert_string_equal(inf, "1"); /* 3 is offline, 2 is housekeeping */
        knob_test_free(t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_adopt_after_kill),
                cmocka_unit_test(test_adopt_with_new_policy),
                cmocka_unit_test(test_adopt_killed_before_new_write),
                cmocka_unit_test(test_adopt_changed_by_others),
                cmocka_unit_test(test_left_alone),
                cmocka_unit_test(test_gone),
                cmocka_unit_test(test_restore_failure_kept),
                cmocka_unit_test(test_journal_unwritable),
                cmocka_unit_test(test_nothing_to_do),
                cmocka_unit_test(test_cpu_sets),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
