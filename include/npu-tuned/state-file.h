/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Whole files of state in the state directory (the knob journal, the affinity records) and
 * the directory's lock (libtune/basic/state-file.c). A file is replaced whole, never
 * edited in place, so a crash leaves either the old or the new one. */

#include <stddef.h>

/* Held by whoever works on the state directory (the daemon, --restore). */
#define TUNE_STATE_DIR_LOCK_FILE "knobs.lock"

/* Called after each phase of a write ("journal-synced", "journal-renamed",
 * "journal-dir-synced") by the crash tests. */
typedef void (*tune_step_fn)(const char *what, void *userdata);

/* Read a regular file of at most max bytes (NUL-terminated; -EBADMSG when larger or not a
 * regular file). name is a plain file name. */
int tune_state_file_read(const char *state_dir, const char *name, size_t max, char **ret, size_t *ret_len);
/* Write one whole: temp file + fsync + rename + fsync(dir); step, when set, is called after
 * each of those phases. The state directory is created (0700) if missing. */
int tune_state_file_write(const char *state_dir, const char *name, const char *text, tune_step_fn step,
                          void *userdata);
/* The same without the two fsyncs: the file is whole and in place once this returns, and
 * stays so through the death of the calling process (the kernel holds the written pages),
 * but not through the kernel's own (a crash, a power loss). For state that only has to
 * outlive the daemon, never the boot (the affinity records). */
int tune_state_file_write_unsynced(const char *state_dir, const char *name, const char *text);
/* Delete one (and its temp file) and fsync the directory; 0 if there was none. */
int tune_state_file_delete(const char *state_dir, const char *name);
/* The same without the fsync of the directory: for files written unsynced (the affinity
 * records), whose removal needs to outlive the daemon, not the kernel. */
int tune_state_file_delete_unsynced(const char *state_dir, const char *name);

/* Take the state directory's lock (flock on knobs.lock, held while the fd is open) so that
 * a daemon and `--restore`, or two daemons, never work on one state directory at once.
 * -EBUSY when another process holds it. Returns the fd. */
int tune_state_dir_lock(const char *state_dir);
