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
/* Delete one (and its temp file) and fsync the directory; 0 if there was none. */
int tune_state_file_delete(const char *state_dir, const char *name);
/* The same without the fsync of the directory: for files written unsynced (the affinity
 * records), whose removal needs to outlive the daemon, not the kernel. */
int tune_state_file_delete_unsynced(const char *state_dir, const char *name);

/* Create, replace and remove, for a caller that holds the state directory open at dfd (from
 * tune_state_dir_open(), trusted when it was opened), unsynced, for state that only has
 * to outlive the calling process (the affinity records):
 * - create: a file that should not be there yet. Up to TUNE_STATE_FILE_ONE_WRITE_MAX bytes
 *   it is created under its own name and written by one write(): the kernel checks for a
 *   fatal signal only between pages, so the caller's death leaves the file whole or empty,
 *   never torn, and an empty one means the caller died before anything that followed the
 *   write. A longer text, or a file that is there after all, goes the replace way.
 * - replace: temp file + rename, as tune_state_file_write() without its two fsyncs: the
 *   file is whole and in place once this returns, and stays so through the death of the
 *   caller (the kernel holds the written pages), not through the kernel's own.
 * - remove: the file alone, not its temp file (0 if there was none): a temp file is left
 *   only by a death in the middle of a replace, and whoever starts next clears it. */
#define TUNE_STATE_FILE_ONE_WRITE_MAX 4096u
int tune_state_file_create_at(int dfd, const char *name, const char *text);
int tune_state_file_replace_at(int dfd, const char *name, const char *text);
int tune_state_file_remove_at(int dfd, const char *name);
/* A file made ready ahead of its first write, so that the write is all that sits where it
 * is needed (before a pin): ready creates name empty (a leftover of that name replaced)
 * and returns its fd; fill writes text into it by one pwrite() at offset 0, with the
 * create's guarantee (whole or empty after a death; up to TUNE_STATE_FILE_ONE_WRITE_MAX
 * bytes, else -E2BIG and nothing written); a failed fill leaves the file empty. The
 * caller then renames it where it belongs (renameat()), after what the write was for. */
int tune_state_file_ready_at(int dfd, const char *name);
int tune_state_file_fill(int fd, const char *text);

/* Take the state directory's lock (flock on knobs.lock, held while the fd is open) so that
 * a daemon and `--restore`, or two daemons, never work on one state directory at once.
 * -EBUSY when another process holds it. Returns the fd. */
int tune_state_dir_lock(const char *state_dir);
