/* SPDX-License-Identifier: GPL-2.0-only */
/* Host knobs in the daemon: the story of one run is
 *   lock the state dir -> read a dead run's journal (adopt its originals) -> plan ->
 *   journal -> write -> watch for changes by others -> SIGTERM -> restore -> remove journal.
 * libtune does the work and returns reasons; this file logs them. */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "events.h"
#include "npu-tuned/journal.h"
#include "npu-tuned/knob.h"
#include "npu-tuned/state-dir.h"
#include "irqbalance-client.h"
#include "knobs.h"
#include "log.h"

#define RECONCILE_INTERVAL_MS_DEFAULT 10000u

/* Crash-test hooks (below a test root only): see test_hooks_init(). */
typedef struct test_hooks {
        unsigned step, kill_at, delay_us;
        unsigned seed;
        const event_sink *events; /* where the restore events go (the hooks' userdata); NULL: the log only */
} test_hooks;

struct Knobs {
        const tune_ctx *ctx;
        sd_event *event;
        StateDir *state_dir;
        const tune_policy_host *host;
        unsigned interval_ms;
        tune_cpuset housekeeping;
        tune_cpuset inference;
        tune_knob_plan plan;
        bool *drift_logged;         /* per plan item */
        tune_journal *journal;      /* what we own now; NULL: nothing */
        sd_event_source *timer;
        test_hooks test;
        const event_sink *events;   /* where events go besides the log; may be NULL */
        bool reload;                /* started by knobs_reload(): the journal is this run's */
        const tune_accels *accels;  /* whose IRQs are steered (borrowed from knobs_inputs) */
        Irqbalance *irqbalance;     /* told to leave our IRQs and CPUs alone; NULL: not running or refused */
};

/* ---- reports ------------------------------------------------------------------------- */

static const char *or_none(const char *s) {
        return s ? s : "?";
}

/* The plan's "irqbalance is running" warning: moot once irqbalance was told. */
static bool is_irqbalance_note(const tune_knob_note *n) {
        return n->kind == TUNE_KNOB_NOTE_IRQBALANCE_RUNNING;
}

static bool is_irq(const tune_knob_item *it) {
        return it->backend->kind == TUNE_KNOB_KIND_IRQ;
}

static void log_notes(const tune_knob_plan *p, bool irqbalance_told) {
        for (unsigned i = 0; i < p->n_notes; i++) {
                const tune_knob_note *n = &p->notes[i];
                if (irqbalance_told && is_irqbalance_note(n))
                        continue;
                if (n->error < 0)
                        log_notice("%s: %s", n->backend, n->message);
                else
                        log_warning("%s: %s", n->backend, n->message);
        }
}

/* IRQs come by the hundred: one line each at debug level, a summary at info. */
static void log_irq_summary(const Knobs *k) {
        unsigned moved = 0, already = 0, skipped = 0, refused = 0;
        char managed[512] = "";
        size_t len = 0;

        for (unsigned i = 0; i < k->plan.n; i++) {
                const tune_knob_item *it = &k->plan.items[i];
                if (!is_irq(it))
                        continue;
                switch (it->outcome) {
                case TUNE_KNOB_APPLIED:
                        moved++;
                        break;
                case TUNE_KNOB_ALREADY:
                        already++;
                        break;
                case TUNE_KNOB_SKIPPED:
                case TUNE_KNOB_REFUSED:
                        if (it->outcome == TUNE_KNOB_SKIPPED)
                                skipped++;
                        else
                                refused++;
                        if (len + 32 < sizeof managed) {
                                char irq[16] = "default"; /* irq/default: no number, the default of new IRQs */
                                if (it->irq >= 0)
                                        (void) snprintf(irq, sizeof irq, "%d", it->irq);
                                len += (size_t) snprintf(managed + len, sizeof managed - len, "%s%s", len ? ", " : "",
                                                         irq);
                        }
                        break;
                default:
                        break;
                }
        }
        if (moved + already + skipped + refused == 0)
                return;
        log_info("IRQ affinity: %u IRQ(s) set, %u already right, %u skipped or refused%s%s%s (managed IRQs and "
                 "missing files are left to the kernel; -v lists each).",
                 moved, already, skipped + refused, len ? " (" : "", managed, len ? ")" : "");
}

/* reload: the originals come from this run's own journal, which is no news. */
static void log_item(const tune_knob_item *it, bool reload) {
        const bool irq = is_irq(it);
        const char *label = it->label ? it->label : "";
        const char *sep = it->label ? " (" : "", *end = it->label ? ")" : "";

        if (it->adopted && !it->adopted_changed)
                log_full(irq || reload ? LOG_DEBUG : LOG_INFO,
                         "%s: original value \"%s\" taken from the previous run's journal (the knob shows \"%s\").", it->id,
                         or_none(it->original), or_none(it->current));
        if (it->adopted_changed)
                log_notice("%s: changed by someone else since the previous run (now \"%s\"): that is the original now.",
                           it->id, or_none(it->current));
        switch (it->outcome) {
        case TUNE_KNOB_APPLIED:
                break; /* the event says it (knobs_start_locked()) */
        case TUNE_KNOB_ALREADY:
                log_debug("%s%s%s%s: already %s", it->id, sep, label, end, or_none(it->current));
                break;
        case TUNE_KNOB_SKIPPED:
                log_full(irq ? LOG_DEBUG : LOG_NOTICE, "%s%s%s%s: skipped: %s", it->id, sep, label, end,
                         or_none(it->skip_reason));
                break;
        case TUNE_KNOB_REFUSED:
                log_full(irq ? LOG_DEBUG : LOG_WARNING, "%s%s%s%s: the kernel refused \"%s\": %s", it->id, sep, label,
                         end, or_none(it->desired), tune_knob_refusal_reason(it->backend, it->id, it->error));
                break;
        case TUNE_KNOB_PLANNED:
                break;
        }
}

static void on_restored(const tune_journal_entry *e, tune_restore_outcome o, int error, const char *current,
                        void *userdata) {
        test_hooks *hooks = userdata;
        /* The journal names the backend as data; what the code compares is its kind. NULL:
         * a backend this npu-tuned does not know (then restore failed). */
        const tune_knob_backend *b = tune_knob_backend_by_name(e->backend);

        switch (o) {
        case TUNE_RESTORE_WRITTEN:
                event_knob_changed(hooks ? hooks->events : NULL, b, e->id, NULL, e->path, NULL, e->original, true);
                break;
        case TUNE_RESTORE_UNCHANGED:
                log_debug("%s: already holds its original \"%s\".", e->id, e->original);
                break;
        case TUNE_RESTORE_LEFT_ALONE:
                log_notice("%s: now \"%s\", set by someone else after npu-tuned set \"%s\": left alone (original was "
                           "\"%s\").",
                           e->id, or_none(current), e->desired, e->original);
                break;
        case TUNE_RESTORE_GONE:
                log_notice("%s: %s no longer exists: nothing to restore.", e->id, e->path);
                break;
        case TUNE_RESTORE_FAILED:
                log_warning_errno(error, "%s: failed to restore \"%s\" (%s); kept in the journal for the next --restore.",
                                  e->id, e->original, tune_knob_refusal_reason(b, e->id, error));
                break;
        case TUNE_RESTORE_REFUSED:
                log_error_errno(error, "%s: the journal names %s, %s: nothing written, kept in the journal; inspect it "
                                       "(docs/trust.md).",
                                e->id, e->path,
                                error == -EBADMSG ? "which is not the file of this knob" : "which is not a kernel file");
                break;
        }
}

/* ---- crash-test hooks ---------------------------------------------------------------- */

/* NPU_TUNED_TEST_KILL_AT_STEP=N: raise SIGKILL at the Nth step of apply/restore.
 * NPU_TUNED_TEST_STEP_DELAY_US=N: sleep a random 0..N µs at every step (seed
 * NPU_TUNED_TEST_SEED), so that an outside SIGKILL lands between steps.
 * Honoured only below a test root (--root other than /). -v logs every step. */
static void knobs_step(const char *what, void *userdata) {
        test_hooks *k = userdata;

        k->step++;
        log_debug("knob step %u: %s", k->step, what);
        if (k->kill_at && k->step == k->kill_at)
                (void) raise(SIGKILL);
        if (k->delay_us) {
                struct timespec ts;
                unsigned us = (unsigned) rand_r(&k->seed) % k->delay_us;
                ts.tv_sec = us / 1000000;
                ts.tv_nsec = (long) (us % 1000000) * 1000;
                (void) nanosleep(&ts, NULL);
        }
}

static unsigned env_uint(const char *name) {
        const char *s = getenv(name);
        char *end;
        unsigned long v;

        if (!s || !*s)
                return 0;
        errno = 0;
        v = strtoul(s, &end, 10);
        return errno || *end || v > 100000000 ? 0 : (unsigned) v;
}

static void test_hooks_init(test_hooks *k, const tune_ctx *ctx) {
        const bool wanted = getenv("NPU_TUNED_TEST_KILL_AT_STEP") || getenv("NPU_TUNED_TEST_STEP_DELAY_US");

        *k = (test_hooks){};
        if (!wanted)
                return;
        if (tune_ctx_is_live(ctx)) {
                log_warning("NPU_TUNED_TEST_* hooks are honoured only below a test --root: ignoring them.");
                return;
        }
        k->kill_at = env_uint("NPU_TUNED_TEST_KILL_AT_STEP");
        k->delay_us = env_uint("NPU_TUNED_TEST_STEP_DELAY_US");
        k->seed = env_uint("NPU_TUNED_TEST_SEED");
}

static tune_knob_hooks knobs_hooks(test_hooks *k) {
        return (tune_knob_hooks){ .step = knobs_step, .restored = on_restored, .userdata = k };
}

/* ---- the journal of a previous run --------------------------------------------------- */

int knobs_load_journal(const tune_ctx *ctx, const char *state_dir, tune_journal **ret) {
        _cleanup_(tune_journal_freep) tune_journal *j = NULL;
        _cleanup_free_ char *boot_id = NULL;
        unsigned line = 0;
        int r;

        *ret = NULL;
        r = tune_journal_load(state_dir, &j, &line);
        if (r == -ENOENT)
                return 0;
        if (r == -EPROTONOSUPPORT)
                return log_error_errno(r, "%s/%s was written by a newer npu-tuned (journal version above %d): leaving "
                                          "every host knob as it is. Restore with that version.",
                                       state_dir, TUNE_JOURNAL_FILE, TUNE_JOURNAL_VERSION);
        if (r == -EBADMSG) {
                if (line > 0)
                        return log_error_errno(r, "%s/%s is corrupt or truncated (line %u): leaving every host knob as "
                                                  "it is, no guessing. Inspect it, restore by hand, then remove it.",
                                               state_dir, TUNE_JOURNAL_FILE, line);
                return log_error_errno(r, "%s/%s is corrupt (checksum or count mismatch): leaving every host knob as it "
                                          "is, no guessing. Inspect it, restore by hand, then remove it.",
                                       state_dir, TUNE_JOURNAL_FILE);
        }
        if (r < 0)
                return log_error_errno(r, "Failed to read %s/%s: %m; leaving every host knob as it is.", state_dir,
                                       TUNE_JOURNAL_FILE);
        if (!streq(j->root, tune_ctx_root(ctx)))
                return log_error_errno(EXDEV, "%s/%s belongs to root %s, not %s: leaving every host knob as it is.",
                                       state_dir, TUNE_JOURNAL_FILE, j->root, tune_ctx_root(ctx));
        r = tune_boot_id(ctx, &boot_id);
        if (r < 0)
                return log_oom();
        if (*j->boot_id && *boot_id && !streq(j->boot_id, boot_id)) {
                log_notice("%s/%s is from an earlier boot (%s): the kernel has reset those knobs since; discarding it.",
                           state_dir, TUNE_JOURNAL_FILE, j->boot_id);
                r = tune_journal_delete(state_dir);
                if (r < 0)
                        return log_error_errno(r, "Failed to remove %s/%s: %m", state_dir, TUNE_JOURNAL_FILE);
                return 0;
        }
        *ret = TAKE_PTR(j);
        return 0;
}

/* ---- start, watch, stop -------------------------------------------------------------- */

Knobs *knobs_free(Knobs *k) {
        if (!k)
                return NULL;
        sd_event_source_disable_unref(k->timer);
        irqbalance_release(k->irqbalance);
        tune_knob_plan_done(&k->plan);
        tune_journal_free(k->journal);
        tune_cpuset_done(&k->housekeeping);
        tune_cpuset_done(&k->inference);
        free(k->drift_logged);
        free(k);
        return NULL;
}

static bool item_owned(const Knobs *k, const tune_knob_item *it) {
        return k->journal && (it->outcome == TUNE_KNOB_APPLIED || it->outcome == TUNE_KNOB_ALREADY) &&
               tune_journal_find(k->journal, it->id);
}

/* A knob someone else changed while we own it: say so once; write ours again only when
 * the policy asks (reassert). */
static int on_drift_check(sd_event_source *s, uint64_t usec, void *userdata) {
        Knobs *k = userdata;

        for (unsigned i = 0; i < k->plan.n; i++) {
                const tune_knob_item *it = &k->plan.items[i];
                _cleanup_free_ char *cur = NULL;
                int r;

                if (!item_owned(k, it) || tune_knob_item_read(k->ctx, it, &cur) < 0)
                        continue;
                if (tune_knob_value_equal(it->format, cur, it->desired))
                        continue;
                if (!k->drift_logged[i]) {
                        k->drift_logged[i] = true;
                        event_knob_drift(k->events, it->id, it->path, it->desired, cur, k->host->reassert);
                }
                if (k->host->reassert) {
                        r = tune_knob_item_write(k->ctx, it, it->desired);
                        if (r < 0)
                                log_debug_errno(r, "%s: re-asserting \"%s\" failed: %m", it->id, it->desired);
                }
        }
        return sd_event_source_set_time(s, usec + (uint64_t) k->interval_ms * 1000);
}

static int knobs_start_locked(Knobs *k, const knobs_inputs *in, tune_journal *owned);

/* An accelerator's IRQ, steered to its node's housekeeping CPUs (knob-irq.c says whose
 * vector it is). The other IRQs are only kept off the inference CPUs, which irqbalance may
 * still balance among the rest. */
static bool is_accelerator_irq(const Knobs *k, const tune_knob_item *it) {
        return is_irq(it) && it->irq >= 0 && it->accel >= 0 && k->accels && (unsigned) it->accel < k->accels->n;
}

/* irqbalance would move the IRQs we steer and put others on the inference CPUs at its next
 * rebalance: tell it over its socket to leave both alone. */
static void cooperate_with_irqbalance(Knobs *k) {
        _cleanup_free_ unsigned *irqs = NULL;
        _cleanup_free_ char *list = NULL;
        unsigned n = 0;
        bool any = false;
        int r;

        for (unsigned i = 0; i < k->plan.n_notes; i++)
                any = any || is_irqbalance_note(&k->plan.notes[i]);
        if (!any)
                return;
        irqs = calloc(k->plan.n + 1, sizeof(unsigned));
        if (!irqs) {
                log_oom();
                return;
        }
        for (unsigned i = 0; i < k->plan.n; i++) {
                const tune_knob_item *it = &k->plan.items[i];
                if (is_accelerator_irq(k, it) && (it->outcome == TUNE_KNOB_APPLIED || it->outcome == TUNE_KNOB_ALREADY))
                        irqs[n++] = (unsigned) it->irq;
        }
        r = irqbalance_cooperate(k->ctx, irqs, n, &k->inference, &k->irqbalance);
        if (r == -ESRCH)
                return;
        if (r < 0) {
                log_warning_errno(r, "Failed to tell irqbalance over its socket which IRQs and CPUs to leave alone: %m.");
                return;
        }
        (void) tune_cpuset_format_list(&k->inference, &list);
        log_info("Told irqbalance (pid %d) to leave %u accelerator IRQ(s) alone and keep IRQs off CPUs %s; it gets "
                 "its settings back when npu-tuned stops.",
                 irqbalance_pid(k->irqbalance), n, list && *list ? list : "-");
}

/* owned: on a reload, the journal of what this run owns (taken over); at start NULL. */
static int knobs_start_with(const knobs_inputs *in, tune_journal *owned, Knobs **ret) {
        _cleanup_(tune_journal_freep) tune_journal *taken = owned;
        _cleanup_(knobs_freep) Knobs *k = NULL;
        int r;

        k = calloc(1, sizeof *k);
        if (!k)
                return log_oom();
        k->ctx = in->ctx;
        k->event = in->event;
        k->state_dir = in->state_dir;
        k->events = in->events;
        k->reload = owned != NULL;
        k->interval_ms = RECONCILE_INTERVAL_MS_DEFAULT;
        k->accels = in->accels;
        test_hooks_init(&k->test, in->ctx);
        k->test.events = in->events;
        r = knobs_start_locked(k, in, TAKE_PTR(taken));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(k);
        return 0;
}

int knobs_start(const knobs_inputs *in, Knobs **ret) {
        return knobs_start_with(in, NULL, ret);
}

int knobs_reload(Knobs *old, const knobs_inputs *in, Knobs **ret) {
        tune_journal *owned;

        if (!old || !old->journal || in->dry_run) {
                /* Nothing owned, or a dry run now: give back what we own, start afresh. */
                (void) knobs_stop(old);
                knobs_free(old);
                return knobs_start(in, ret);
        }
        /* The journal of what we own is the "previous" journal of the new plan: the engine
         * keeps the originals, writes only what differs and restores what is no longer
         * planned (tune_knobs_apply()). */
        owned = TAKE_PTR(old->journal);
        knobs_free(old);
        return knobs_start_with(in, owned, ret);
}

static int knobs_start_locked(Knobs *k, const knobs_inputs *in, tune_journal *owned) {
        _cleanup_(tune_journal_freep) tune_journal *previous = owned;
        const char *state_dir = state_dir_path(in->state_dir);
        tune_knob_hooks hooks = knobs_hooks(&k->test);
        int r;

        /* Desired values. */
        if (in->policy) {
                k->host = &in->policy->host;
                if (in->policy->options.reconcile_interval_ms > 0)
                        k->interval_ms = in->policy->options.reconcile_interval_ms;
        }

        /* The CPU sets. Inference CPUs: the non-housekeeping CPUs of the accelerators'
         * nodes, i.e. every CPU the planner may hand out there. Deliberately not the pools
         * placed right now (tune_placer_inference_cpus): IRQ affinity should not churn as
         * processes come and go. */
        r = tune_knob_housekeeping_cpus(in->topology, k->host ? k->host->irq_housekeeping_cpus_per_node : 0,
                                        &k->housekeeping);
        if (r >= 0)
                r = tune_knob_default_inference_cpus(in->topology, in->accels, &k->housekeeping, &k->inference);
        if (r < 0)
                return log_oom();

        if (k->host) {
                tune_knob_plan_input plan_in = {
                        .host = k->host,
                        .topology = in->topology,
                        .accels = in->accels,
                        .inference_cpus = &k->inference,
                        .housekeeping_cpus = &k->housekeeping,
                };
                r = tune_knobs_plan(k->ctx, &plan_in, &k->plan);
                if (r < 0)
                        return log_error_errno(r, "Failed to plan host knobs: %m");
        }

        if (in->dry_run) {
                unsigned line;
                if (tune_journal_load(state_dir, &previous, &line) < 0)
                        previous = NULL;
                knobs_print_dry_run(&k->plan, previous);
                return 0;
        }

        /* Held already when the watcher's start took it. */
        r = state_dir_acquire(k->state_dir, "host knobs are left alone (no journal, no writes)");
        if (r <= 0)
                return r;

        if (!k->reload) {
                r = knobs_load_journal(k->ctx, state_dir, &previous);
                if (r < 0)
                        return 0; /* logged: knobs left alone, the rest of the daemon runs */
        }
        if (!k->host && !previous) {
                log_info("No host knob settings in the policy: CPU governor, THP, IRQs and ASPM left alone.");
                return 0;
        }
        if (k->reload)
                log_info("Reload: %u host knob(s) owned; only those whose desired value changed are written, those "
                         "the policy no longer sets are restored.", previous->n);
        else if (previous)
                log_info("Found the journal of a previous run (%u knob(s)): its originals are kept.", previous->n);

        r = tune_knobs_apply(k->ctx, &k->plan, state_dir, previous, &hooks, &k->journal);
        if (r < 0) {
                log_error_errno(r, "Failed to write the knob journal to %s: %m; host knobs are left alone.", state_dir);
                return 0;
        }
        cooperate_with_irqbalance(k);
        log_notes(&k->plan, k->irqbalance);
        for (unsigned i = 0; i < k->plan.n; i++) {
                const tune_knob_item *it = &k->plan.items[i];
                log_item(it, k->reload);
                if (it->outcome == TUNE_KNOB_APPLIED)
                        event_knob_changed(k->events, it->backend, it->id, it->label, it->path, or_none(it->current),
                                           or_none(it->desired), false);
        }
        log_irq_summary(k);
        if (!k->journal) {
                log_info("Host knobs: nothing to change.");
                return 0;
        }
        unsigned n_owned = 0, refused = 0;
        for (unsigned i = 0; i < k->plan.n; i++) {
                if (k->plan.items[i].outcome == TUNE_KNOB_REFUSED)
                        refused++;
                else if (item_owned(k, &k->plan.items[i]))
                        n_owned++;
        }
        /* A knob the kernel refused is not ours: it keeps a journal entry only so that a
         * restore can tell (it still holds the original). */
        if (refused > 0)
                log_warning("Host knobs: %u owned, %u refused by the kernel (not owned; npu-tunectl knobs lists them), "
                            "originals in %s/%s.",
                            n_owned, refused, state_dir, TUNE_JOURNAL_FILE);
        else
                log_info("Host knobs: %u owned, originals in %s/%s.", n_owned, state_dir, TUNE_JOURNAL_FILE);

        /* From here on the knobs are ours: nothing may fail the start (the loop's end
         * restores them). */
        uint64_t now;
        k->drift_logged = calloc(k->plan.n + 1, sizeof(bool));
        r = k->drift_logged ? sd_event_now(k->event, CLOCK_MONOTONIC, &now) : -ENOMEM;
        if (r >= 0)
                r = sd_event_add_time(k->event, &k->timer, CLOCK_MONOTONIC, now + (uint64_t) k->interval_ms * 1000, 0,
                                      on_drift_check, k);
        if (r >= 0)
                r = sd_event_source_set_enabled(k->timer, SD_EVENT_ON);
        if (r < 0)
                log_warning_errno(r, "Failed to watch host knobs for changes by others, ignoring: %m");
        else
                (void) sd_event_source_set_description(k->timer, "knob-reconcile");
        return 0;
}

int knobs_stop(Knobs *k) {
        const char *state_dir;
        tune_knob_hooks hooks;
        int r;

        if (k && !k->journal)
                k->irqbalance = irqbalance_release(k->irqbalance);
        if (!k || !k->journal)
                return 0;
        state_dir = state_dir_path(k->state_dir);
        hooks = knobs_hooks(&k->test);
        k->timer = sd_event_source_disable_unref(k->timer);
        log_info("Restoring %u host knob(s).", k->journal->n);
        r = tune_knobs_restore(k->ctx, k->journal, state_dir, &hooks);
        if (r < 0)
                log_warning_errno(r, "%u host knob(s) could not be restored: %m; kept in %s/%s for npu-tuned --restore.",
                                  k->journal->n, state_dir, TUNE_JOURNAL_FILE);
        else
                log_info("Host knobs restored; journal removed.");
        k->journal = tune_journal_free(k->journal);
        /* After the IRQs are back where they were: then irqbalance may move them again. */
        k->irqbalance = irqbalance_release(k->irqbalance);
        return r;
}

/* ---- what the bus and the client read ---- */

const tune_knob_plan *knobs_get_plan(const Knobs *k) {
        static const tune_knob_plan empty = {};
        return k ? &k->plan : &empty;
}

const char *knob_status_to_string(knob_status s) {
        /* The words of the bus API (units/org.nputuned1.Manager.xml): never reword one. */
        static const char *const words[_KNOB_STATUS_MAX] = {
                [KNOB_STATUS_APPLIED] = "applied",
                [KNOB_STATUS_ALREADY] = "already",
                [KNOB_STATUS_NOT_OWNED] = "not-owned",
                [KNOB_STATUS_CHANGED_BY_OTHER] = "changed-by-other",
                [KNOB_STATUS_SKIPPED] = "skipped",
                [KNOB_STATUS_REFUSED] = "refused",
                [KNOB_STATUS_PLANNED] = "planned",
        };
        return (unsigned) s < _KNOB_STATUS_MAX ? words[s] : "unknown";
}

knob_status knobs_item_status(const Knobs *k, const tune_knob_item *it, const char **ret_note) {
        const char *note = NULL;
        knob_status status;

        switch (it->outcome) {
        case TUNE_KNOB_PLANNED:
                status = KNOB_STATUS_PLANNED; /* --dry-run, or the journal could not be written */
                break;
        case TUNE_KNOB_SKIPPED:
                status = KNOB_STATUS_SKIPPED;
                note = it->skip_reason;
                break;
        case TUNE_KNOB_REFUSED:
                status = KNOB_STATUS_REFUSED;
                note = tune_knob_refusal_reason(it->backend, it->id, it->error);
                break;
        default:
                if (!item_owned(k, it))
                        /* held the desired value already and nothing of ours to give back */
                        status = it->outcome == TUNE_KNOB_ALREADY ? KNOB_STATUS_ALREADY : KNOB_STATUS_NOT_OWNED;
                else if (k->drift_logged && k->drift_logged[it - k->plan.items])
                        status = KNOB_STATUS_CHANGED_BY_OTHER;
                else /* written by this run, or before a reload (the knob already held it then) */
                        status = KNOB_STATUS_APPLIED;
                break;
        }
        if (ret_note)
                *ret_note = note ? note : "";
        return status;
}

/* ---- npu-tuned --restore (daemon/core/restore.c) ----------------------------------------- */

int knobs_restore_journal(const tune_ctx *ctx, tune_journal *j, const char *state_dir) {
        test_hooks test;
        tune_knob_hooks hooks;

        test_hooks_init(&test, ctx);
        hooks = knobs_hooks(&test);
        return tune_knobs_restore(ctx, j, state_dir, &hooks);
}
