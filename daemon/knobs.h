/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The daemon's host knob part: apply at start (originals journaled first), watch for
 * changes by others, restore on SIGTERM/SIGINT; `--restore` and `--dry-run`. */

#include "npu-tuned/policy.h"
#include "options.h"

struct Manager;
typedef struct Knobs Knobs;

/* Plan and apply the policy's host knobs (or print them with --dry-run), after restoring
 * or adopting what a dead run left in the journal. A knob the kernel refuses is reported,
 * never fatal; fails only when another npu-tuned holds the state directory. Sets m->knobs. */
int knobs_start(struct Manager *m);
/* Give every knob back, newest first, and remove the journal (called when the loop ends). */
int knobs_stop(struct Manager *m);
Knobs *knobs_free(Knobs *k);

/* npu-tuned --restore: restore from the journal and exit. Returns the exit status: 0 when
 * done or nothing to do, 1 when the journal is unreadable (knobs left alone) or a knob
 * could not be restored (the journal keeps it). */
int run_restore(const daemon_options *o);

