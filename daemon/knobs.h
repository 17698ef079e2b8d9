/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The daemon's host knob part: apply at start (originals journaled first), watch for
 * changes by others, restore on SIGTERM/SIGINT and for `--restore`; `--dry-run`. */

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/context.h"
#include "npu-tuned/journal.h"
#include "npu-tuned/policy.h"
#include "npu-tuned/topology.h"
#include "state-dir.h"

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
} knobs_inputs;

/* Plan and apply the policy's host knobs (or print them with dry_run), after restoring
 * or adopting what a dead run left in the journal. A knob the kernel refuses is reported,
 * never fatal; fails only when another npu-tuned holds the state directory (or out of
 * memory). */
int knobs_start(const knobs_inputs *in, Knobs **ret);
/* Give every knob back, newest first, and remove the journal (called when the loop ends). */
int knobs_stop(Knobs *k);
Knobs *knobs_free(Knobs *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(Knobs *, knobs_free);

/* For `--restore` (daemon/restore.c). The journal a previous run left in state_dir:
 * 0 with *ret NULL when there is none (or it is from an earlier boot, then removed);
 * < 0 when it is unusable, logged: the knobs must then be left alone. */
int knobs_load_journal(const tune_ctx *ctx, const char *state_dir, tune_journal **ret);
/* Restore every knob of j, newest first, logging each one (and honouring the crash-test
 * hooks below a test root). < 0 when some knob could not be restored (kept in the
 * journal). */
int knobs_restore_journal(const tune_ctx *ctx, tune_journal *j, const char *state_dir);
