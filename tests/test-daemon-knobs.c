/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's knob part (daemon/knobs/knobs.c) through its plain inputs, no Manager: start
 * journals the originals and writes the knobs, stop gives them back and removes the
 * journal; dry-run changes nothing; a state directory held by another owner stops it
 * before any write; one held by this daemon's StateDir already (the watcher's start) is
 * used as it is; and after a kill the journal restores through knobs_load_journal() and
 * knobs_restore_journal(), as --restore does. On a fake tree; no root needed. */
#include "events.h"
#include "knobs/knob-test.h"
#include "knobs.h"
#include "state-owner.h"

/* The events the knob part reports, through the real events/events.c (which logs them)
 * into a sink that counts them, where the daemon's sink emits the D-Bus signals. */
static unsigned applied_events, restored_events, drift_events;

static void count_knob_changed(void *userdata, const char *id, const char *path, const char *value, bool restored) {
        if (restored)
                restored_events++;
        else
                applied_events++;
}

static void count_knob_drift(void *userdata, const char *id, const char *path, const char *expected, const char *found) {
        drift_events++;
}

static const event_sink counting_sink = {
        .knob_changed = count_knob_changed,
        .knob_drift = count_knob_drift,
};

#define THP "sys/kernel/mm/transparent_hugepage"
#define NB "proc/sys/kernel/numa_balancing"

typedef struct daemon_test {
        knob_test *t;
        sd_event *event;
        tune_policy policy;
        StateDir *state_dir;
} daemon_test;

static daemon_test *daemon_test_new(const char *name) {
        daemon_test *d = calloc(1, sizeof *d);

        assert_non_null(d);
        applied_events = restored_events = drift_events = 0;
        d->t = knob_test_new(name);
        fake_write(d->t->root, THP "/enabled", "always [madvise] never\n", 0644);
        fake_write(d->t->root, THP "/defrag", "always defer defer+madvise [madvise] never\n", 0644);
        fake_write(d->t->root, NB, "1\n", 0644);
        d->t->host.thp_enabled = strdup("never");
        d->t->host.numa_balancing = 0;
        knob_test_load(d->t, 1);
        d->policy.host = d->t->host;
        assert_int_equal(sd_event_new(&d->event), 0);
        assert_int_equal(state_dir_new(d->t->state_dir, &d->state_dir), 0);
        return d;
}

static knobs_inputs inputs(daemon_test *d, bool dry_run) {
        return (knobs_inputs){
                .event = d->event,
                .ctx = d->t->ctx,
                .topology = d->t->topology,
                .accels = &d->t->accels,
                .policy = &d->policy,
                .state_dir = d->state_dir,
                .dry_run = dry_run,
                .events = &counting_sink,
        };
}

static void daemon_test_free(daemon_test *d) {
        state_dir_free(d->state_dir);
        sd_event_unref(d->event);
        knob_test_free(d->t); /* frees the host strings the policy shares */
        free(d);
}

static void assert_value(const knob_test *t, const char *rel, tune_knob_format f, const char *expected) {
        _cleanup_free_ char *v = knob_test_value(t, rel, f);
        if (!streq(v, expected))
                fail_msg("%s shows \"%s\", expected \"%s\"", rel, v, expected);
}

static knob_status status_of(const Knobs *k, const char *id) {
        const tune_knob_plan *p = knobs_get_plan(k);
        const char *note = NULL;

        for (unsigned i = 0; i < p->n; i++)
                if (streq(p->items[i].id, id)) {
                        knob_status s = knobs_item_status(k, &p->items[i], &note);
                        assert_non_null(note);
                        return s;
                }
        fail_msg("no knob %s in the plan", id);
        return _KNOB_STATUS_MAX;
}

/* The bus property Knobs says these words; npu-tunectl and scripts read them. Written out
 * here, not taken from knobs.c, so that rewording one fails this test. */
static void test_status_words(void **state) {
        static const struct {
                knob_status status;
                const char *word;
        } words[] = {
                { KNOB_STATUS_APPLIED, "applied" },     { KNOB_STATUS_ALREADY, "already" },
                { KNOB_STATUS_NOT_OWNED, "not-owned" }, { KNOB_STATUS_CHANGED_BY_OTHER, "changed-by-other" },
                { KNOB_STATUS_SKIPPED, "skipped" },     { KNOB_STATUS_REFUSED, "refused" },
                { KNOB_STATUS_PLANNED, "planned" },
        };

        assert_int_equal(ELEMENTSOF(words), _KNOB_STATUS_MAX); /* a new status needs its word here */
        for (size_t i = 0; i < ELEMENTSOF(words); i++)
                assert_string_equal(knob_status_to_string(words[i].status), words[i].word);
        assert_string_equal(knob_status_to_string(_KNOB_STATUS_MAX), "unknown");
        assert_string_equal(knob_status_to_string((knob_status) -1), "unknown");
}

static void test_start_stop(void **state) {
        daemon_test *d = daemon_test_new("daemon-knobs-start-stop");
        knobs_inputs in = inputs(d, false);
        Knobs *k = NULL;

        assert_int_equal(knobs_start(&in, &k), 0);
        assert_non_null(k);
        assert_int_equal(applied_events, 2);
        assert_true(state_dir_locked(d->state_dir));
        assert_value(d->t, THP "/enabled", TUNE_KNOB_SELECTED, "never");
        assert_value(d->t, NB, TUNE_KNOB_PLAIN, "0");
        assert_true(knob_test_journal_exists(d->t));
        {
                _cleanup_(tune_journal_freep) tune_journal *j = NULL;
                assert_int_equal(tune_journal_load(d->t->state_dir, &j, NULL), 0);
                assert_string_equal(tune_journal_find(j, "thp/enabled")->original, "madvise");
                assert_string_equal(tune_journal_find(j, "sysctl/kernel.numa_balancing")->original, "1");
                assert_null(tune_journal_find(j, "thp/defrag")); /* not asked for: not ours */
        }
        assert_int_equal(status_of(k, "thp/enabled"), KNOB_STATUS_APPLIED);
        assert_int_equal(status_of(k, "sysctl/kernel.numa_balancing"), KNOB_STATUS_APPLIED);

        assert_int_equal(knobs_stop(k), 0);
        assert_int_equal(restored_events, 2);
        assert_value(d->t, THP "/enabled", TUNE_KNOB_SELECTED, "madvise");
        assert_value(d->t, NB, TUNE_KNOB_PLAIN, "1");
        assert_false(knob_test_journal_exists(d->t));
        assert_int_equal(status_of(k, "thp/enabled"), KNOB_STATUS_NOT_OWNED); /* given back */
        assert_int_equal(knobs_stop(k), 0); /* nothing left to give back */
        assert_int_equal(restored_events, 2);
        assert_int_equal(drift_events, 0);
        knobs_free(k);
        daemon_test_free(d);
}

static void test_dry_run(void **state) {
        daemon_test *d = daemon_test_new("daemon-knobs-dry-run");
        knobs_inputs in = inputs(d, true);
        Knobs *k = NULL;

        assert_int_equal(knobs_start(&in, &k), 0);
        assert_value(d->t, THP "/enabled", TUNE_KNOB_SELECTED, "madvise");
        assert_value(d->t, NB, TUNE_KNOB_PLAIN, "1");
        assert_false(knob_test_journal_exists(d->t));
        assert_false(state_dir_locked(d->state_dir));
        assert_int_equal(applied_events, 0);
        assert_int_equal(status_of(k, "thp/enabled"), KNOB_STATUS_PLANNED);
        assert_int_equal(knobs_stop(k), 0);
        knobs_free(k);
        daemon_test_free(d);
}

static void test_state_dir_held_elsewhere(void **state) {
        daemon_test *d = daemon_test_new("daemon-knobs-busy");
        knobs_inputs in = inputs(d, false);
        _cleanup_(state_dir_freep) StateDir *other = NULL;
        Knobs *k = NULL;

        assert_int_equal(state_dir_new(d->t->state_dir, &other), 0);
        assert_int_equal(state_dir_lock(other), 0); /* another npu-tuned */
        assert_int_equal(knobs_start(&in, &k), -EBUSY);
        assert_null(k);
        assert_value(d->t, THP "/enabled", TUNE_KNOB_SELECTED, "madvise");
        assert_false(knob_test_journal_exists(d->t));
        daemon_test_free(d);
}

static void test_state_dir_held_here(void **state) {
        daemon_test *d = daemon_test_new("daemon-knobs-held");
        knobs_inputs in = inputs(d, false);
        Knobs *k = NULL;

        /* The watcher's start took it: the knobs work under the same lock. */
        assert_int_equal(state_dir_lock(d->state_dir), 0);
        assert_int_equal(knobs_start(&in, &k), 0);
        assert_value(d->t, THP "/enabled", TUNE_KNOB_SELECTED, "never");
        /* Freeing the knobs does not let go of the lock: the StateDir holds it. */
        assert_int_equal(knobs_stop(k), 0);
        knobs_free(k);
        assert_true(state_dir_locked(d->state_dir));
        assert_int_equal(tune_state_dir_lock(d->t->state_dir), -EBUSY);
        daemon_test_free(d);
}

static void test_restore_after_kill(void **state) {
        daemon_test *d = daemon_test_new("daemon-knobs-restore");
        knobs_inputs in = inputs(d, false);
        _cleanup_(tune_journal_freep) tune_journal *j = NULL;
        Knobs *k = NULL;

        assert_int_equal(knobs_start(&in, &k), 0);
        knobs_free(k); /* killed: no stop, the journal stays */
        assert_true(knob_test_journal_exists(d->t));
        assert_value(d->t, THP "/enabled", TUNE_KNOB_SELECTED, "never");

        assert_int_equal(knobs_load_journal(d->t->ctx, d->t->state_dir, &j), 0);
        assert_non_null(j);
        assert_int_equal(knobs_restore_journal(d->t->ctx, j, d->t->state_dir), 0);
        assert_value(d->t, THP "/enabled", TUNE_KNOB_SELECTED, "madvise");
        assert_value(d->t, NB, TUNE_KNOB_PLAIN, "1");
        assert_false(knob_test_journal_exists(d->t));

        /* Nothing left: no journal is 0 with none. */
        tune_journal *none = (tune_journal *) 0x1;
        assert_int_equal(knobs_load_journal(d->t->ctx, d->t->state_dir, &none), 0);
        assert_null(none);
        daemon_test_free(d);
}

static void test_corrupt_journal_leaves_knobs(void **state) {
        daemon_test *d = daemon_test_new("daemon-knobs-corrupt");
        knobs_inputs in = inputs(d, false);
        tune_journal *j = NULL;
        Knobs *k = NULL;

        fake_write(d->t->root, "state/" TUNE_JOURNAL_FILE, "npu-tuned-journal 1\ngarbage\n", 0600);
        assert_int_equal(knobs_load_journal(d->t->ctx, d->t->state_dir, &j), -EBADMSG);
        assert_null(j);
        /* At start: logged, knobs left alone, the rest of the daemon runs. */
        assert_int_equal(knobs_start(&in, &k), 0);
        assert_value(d->t, THP "/enabled", TUNE_KNOB_SELECTED, "madvise");
        knobs_free(k);
        daemon_test_free(d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_status_words),
                cmocka_unit_test(test_start_stop),
                cmocka_unit_test(test_dry_run),
                cmocka_unit_test(test_state_dir_held_elsewhere),
                cmocka_unit_test(test_state_dir_held_here),
                cmocka_unit_test(test_restore_after_kill),
                cmocka_unit_test(test_corrupt_journal_leaves_knobs),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
