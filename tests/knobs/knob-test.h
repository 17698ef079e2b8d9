/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Shared steps of the knob unit tests: a fake machine, a hand-built host policy (the
 * policy parser is not needed), plan -> apply -> restore through the real engine. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "knobs/fake-tree.h"
#include "npu-tuned/knob.h"

typedef struct knob_test {
        char *root;
        char state_dir[4200];
        tune_ctx *ctx;
        tune_topology *topology;
        tune_accels accels;
        tune_cpuset housekeeping;
        tune_cpuset inference;
        tune_policy_host host;
        tune_knob_plan plan;
        tune_journal *journal;
        /* what the hooks saw */
        unsigned steps;
        char restored_ids[64][64];
        tune_restore_outcome restored_outcomes[64];
        unsigned n_restored;
} knob_test;

/* Everything left alone: tests set the fields they need. */
static inline tune_policy_host knob_test_host_none(void) {
        return (tune_policy_host){ .khugepaged_defrag = -1, .numa_balancing = -1 };
}

static inline knob_test *knob_test_new(const char *name) {
        knob_test *t = calloc(1, sizeof *t);
        assert_non_null(t);
        t->root = fake_root_new(name);
        snprintf(t->state_dir, sizeof t->state_dir, "%s/state", t->root);
        fake_machine(t->root);
        t->host = knob_test_host_none();
        return t;
}

/* Load topology and accelerators (after the test has added its files). */
static inline void knob_test_load(knob_test *t, unsigned housekeeping_per_node) {
        assert_int_equal(tune_ctx_new(t->root, &t->ctx), 0);
        assert_int_equal(tune_topology_load(t->ctx, &t->topology), 0);
        assert_int_equal(tune_accels_discover(t->ctx, NULL, 0, &t->accels), 0);
        assert_int_equal(tune_knob_housekeeping_cpus(t->topology, housekeeping_per_node, &t->housekeeping), 0);
        assert_int_equal(tune_knob_default_inference_cpus(t->topology, &t->accels, &t->housekeeping, &t->inference), 0);
}

static inline void knob_test_plan(knob_test *t) {
        tune_knob_plan_input in = {
                .host = &t->host,
                .topology = t->topology,
                .accels = &t->accels,
                .inference_cpus = &t->inference,
                .housekeeping_cpus = &t->housekeeping,
        };
        tune_knob_plan_done(&t->plan);
        assert_int_equal(tune_knobs_plan(t->ctx, &in, &t->plan), 0);
}

static inline void knob_test_step(const char *what, void *userdata) {
        knob_test *t = userdata;
        (void) what;
        t->steps++;
}

static inline void knob_test_restored(const tune_journal_entry *e, tune_restore_outcome o, int error,
                                      const char *current, void *userdata) {
        knob_test *t = userdata;
        (void) error;
        (void) current;
        if (t->n_restored < 64) {
                snprintf(t->restored_ids[t->n_restored], sizeof t->restored_ids[0], "%s", e->id);
                t->restored_outcomes[t->n_restored++] = o;
        }
}

static inline tune_knob_hooks knob_test_hooks(knob_test *t) {
        return (tune_knob_hooks){ .step = knob_test_step, .restored = knob_test_restored, .userdata = t };
}

/* Apply with an optional previous journal. */
static inline void knob_test_apply(knob_test *t, const tune_journal *previous) {
        tune_knob_hooks h = knob_test_hooks(t);
        t->journal = tune_journal_free(t->journal);
        assert_int_equal(tune_knobs_apply(t->ctx, &t->plan, t->state_dir, previous, &h, &t->journal), 0);
}

/* Restore what apply journaled; returns tune_knobs_restore()'s result. */
static inline int knob_test_restore(knob_test *t) {
        tune_knob_hooks h = knob_test_hooks(t);
        int r = 0;
        t->n_restored = 0;
        if (t->journal)
                r = tune_knobs_restore(t->ctx, t->journal, t->state_dir, &h);
        return r;
}

static inline const tune_knob_item *knob_test_item(const knob_test *t, const char *id) {
        for (unsigned i = 0; i < t->plan.n; i++)
                if (streq(t->plan.items[i].id, id))
                        return &t->plan.items[i];
        return NULL;
}

static inline bool knob_test_has_note(const knob_test *t, const char *backend, int error) {
        for (unsigned i = 0; i < t->plan.n_notes; i++)
                if (streq(t->plan.notes[i].backend, backend) && t->plan.notes[i].error == error)
                        return true;
        return false;
}

/* The raw bytes of a knob file, trailing newline stripped. Caller frees. */
static inline char *knob_test_file(const knob_test *t, const char *rel) {
        char *s = fake_read(t->root, rel);
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
                s[--n] = 0;
        return s;
}

/* The value the kernel would show (selected word, mask text), for comparisons. */
static inline char *knob_test_value(const knob_test *t, const char *rel, tune_knob_format f) {
        _cleanup_free_ char *raw = fake_read(t->root, rel);
        char *v = NULL;
        assert_int_equal(tune_knob_parse_value(f, raw, &v), 0);
        return v;
}

static inline bool knob_test_journal_exists(const knob_test *t) {
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", t->state_dir, TUNE_JOURNAL_FILE);
        return access(path, F_OK) == 0;
}

static inline void knob_test_free(knob_test *t) {
        if (!t)
                return;
        tune_journal_free(t->journal);
        tune_knob_plan_done(&t->plan);
        tune_cpuset_done(&t->housekeeping);
        tune_cpuset_done(&t->inference);
        tune_accels_done(&t->accels);
        tune_topology_free(t->topology);
        tune_ctx_free(t->ctx);
        free(t->host.governor);
        free(t->host.thp_enabled);
        free(t->host.thp_defrag);
        free(t->host.aspm_policy);
        fake_rm(t->root);
        free(t);
}

/* Run fn in a child process; returns its exit status (tests use it where the child drops
 * capabilities or could leave an immutable file behind). */
static inline int knob_test_in_child(int (*fn)(void *), void *arg) {
        int status;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(fn(arg));
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
