/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The state directory (/run/npu-tuned, --state-dir): the knob journal and the affinity
 * records live there, and its lock says who works on them. One StateDir per process owns
 * the lock: whoever needs it first (the watcher's start, the knobs, --restore) takes it,
 * and it is held until the StateDir is freed, reloads included. Only state_dir_acquire()
 * logs. */

#include <stdbool.h>

#include "npu-tuned/macro.h"

typedef struct StateDir StateDir;

int state_dir_new(const char *path, StateDir **ret);
StateDir *state_dir_free(StateDir *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(StateDir *, state_dir_free);

const char *state_dir_path(const StateDir *d) _pure_;
/* Take the lock unless this process holds it already: 0, -EBUSY when another process
 * holds it, or another negative errno when it cannot be taken (the caller decides what
 * that means; a later call tries again). Logs nothing. */
int state_dir_lock(StateDir *d);
bool state_dir_locked(const StateDir *d) _pure_;
/* state_dir_lock(), saying why not, the same for every part that needs the directory.
 * 1: held. < 0: the daemon must not run on (logged as an error): another npu-tuned holds
 * it (-EBUSY), or the directory is refused for its owner or mode. 0: not held for another
 * reason, which leaves the rest of the daemon running: logged as a warning that ends with
 * consequence (what the caller leaves alone for want of it). */
int state_dir_acquire(StateDir *d, const char *consequence);
