/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "npu-tuned/context.h"
#include "options.h"

/* npu-tuned --restore: give back the affinities in the records, then the knobs in the
 * journal, and exit. Returns the exit status: 0 when done or nothing to do, 1 when the
 * journal is unreadable (knobs left alone) or something could not be restored (its record
 * or journal entry is kept). */
int run_restore(const daemon_options *o);

/* Give the processes recorded in state_dir's affinity records (by a daemon that did not
 * stop cleanly) their original CPU affinities back, where the process is still the one
 * recorded (pid and start time) and its rule said restore_on_stop, then remove the
 * records. Called by `npu-tuned --restore` and at start, before the watcher's first scan
 * places the processes again (which then records their true originals, not ours). The
 * caller holds the state directory's lock. -EIO when some record could not be restored
 * (it is kept); errors are logged. */
int restore_affinity_records(const tune_ctx *ctx, const char *state_dir);
