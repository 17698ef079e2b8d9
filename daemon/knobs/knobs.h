/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The daemon's host knob part: apply at start (originals journaled first), watch for
 * changes by others, restore on SIGTERM/SIGINT and for `--restore`; `--dry-run`. */

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/context.h"
#include "npu-tuned/journal.h"
#include "npu-tuned/knob.h"
#include "npu-tuned/policy.h"
#include "npu-tuned/topology.h"
#include "state-owner.h"

typedef struct Knobs Knobs;

/* What the knob part works from. Everything is borrowed and must outlive the Knobs; the
 * policy and accelerators are those of one policy load (a reload makes a new Knobs). */
typedef struct knobs_inputs {
        sd_event *event;              /* the reconcile timer */
        const tune_ctx *ctx;
        const tune_topology *topology;
        const tune_accels *accels;
        const tune_policy *policy;    /* NULL: no host settings */
        StateDir *state_dir;          /* the journal's directory; locked here if not yet */
        bool dry_run;                 /* print current -> desired, change nothing */
        const struct event_sink *events; /* where events go besides the log (events/events.h); may be NULL */
} knobs_inputs;

/* Plan and apply the policy's host knobs (or print them with dry_run), after restoring
 * or adopting what a dead run left in the journal. A knob the kernel refuses is reported,
 * never fatal; fails only when another npu-tuned holds the state directory (or out of
 * memory). */
int knobs_start(const knobs_inputs *in, Knobs **ret);
/* A new policy: knobs whose desired value is unchanged are left as they are (not written,
 * still owned, originals kept), changed ones are written, ones the policy no longer sets
 * are restored, new ones journaled and applied. Consumes old (may be NULL). */
int knobs_reload(Knobs *old, const knobs_inputs *in, Knobs **ret);
/* Give every knob back, newest first, and remove the journal (called when the loop ends). */
int knobs_stop(Knobs *k);
Knobs *knobs_free(Knobs *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(Knobs *, knobs_free);

/* What an item of the plan is now. Code compares these; the words of
 * knob_status_to_string() are for the edges only (the bus property Knobs, which
 * npu-tunectl and scripts read, and the log), so they never change. */
typedef enum knob_status {
        KNOB_STATUS_APPLIED,          /* "applied": npu-tuned's value, owned: restored on stop */
        KNOB_STATUS_ALREADY,          /* "already": held the desired value already, nothing to give back */
        KNOB_STATUS_NOT_OWNED,        /* "not-owned": written, but not owned (any more: given back) */
        KNOB_STATUS_CHANGED_BY_OTHER, /* "changed-by-other": owned, someone else wrote it since */
        KNOB_STATUS_SKIPPED,          /* "skipped": not tuned (missing file, not offered, ...) */
        KNOB_STATUS_REFUSED,          /* "refused": the kernel said no: not owned */
        KNOB_STATUS_PLANNED,          /* "planned": not written (dry run, or no journal) */
        _KNOB_STATUS_MAX,
} knob_status;

const char *knob_status_to_string(knob_status s) _pure_;

/* knobs-dry-run.c: the plan as --dry-run prints it (previous: a dead run's journal, may
 * be NULL). */
void knobs_print_dry_run(const tune_knob_plan *plan, const tune_journal *previous);

/* The plan of this run with each item's outcome (empty when k is NULL), for the bus. */
const tune_knob_plan *knobs_get_plan(const Knobs *k);
/* What an item of that plan is now; *ret_note (may be NULL) the reason for skipped/refused,
 * else "". */
knob_status knobs_item_status(const Knobs *k, const tune_knob_item *it, const char **ret_note);

/* For `--restore` (daemon/core/restore.c). The journal a previous run left in state_dir:
 * 0 with *ret NULL when there is none (or it is from an earlier boot, then removed);
 * < 0 when it is unusable, logged: the knobs must then be left alone. */
int knobs_load_journal(const tune_ctx *ctx, const char *state_dir, tune_journal **ret);
/* Restore every knob of j, newest first, logging each one (and honouring the crash-test
 * hooks below a test root). < 0 when some knob could not be restored (kept in the
 * journal). */
int knobs_restore_journal(const tune_ctx *ctx, tune_journal *j, const char *state_dir);
