/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Whether the state directory and its files can be trusted (docs/trust.md, "State").
 *
 * npu-tuned runs as root and acts on what its state directory holds: a knob journal it
 * writes back, affinity records it re-pins processes by. Another user who can put a file
 * there could make it write any value to a knob or pin any process, so the directory is
 * trusted only when nobody else can write it:
 * - opened without following a symlink (O_NOFOLLOW | O_DIRECTORY), every component after
 *   the root as well: a directory on the way that another user can write (without the
 *   sticky bit) could be swapped for another;
 * - owned by the user the daemon runs as (root), not writable by group or others; the
 *   daemon makes it 0700 (no other user needs to list which pids it manages);
 * - its files regular, owned by that user, mode 0600 or stricter, one link.
 * A directory or file that fails is refused with -EPERM (another owner, or a file with
 * more than one link), -EACCES (writable by group or others), -ELOOP (a symlink) or
 * -ENOTDIR, before anything is read or written. */

#include <errno.h>
#include <stdbool.h>
#include <sys/stat.h>

/* Open (create = make it, its parents 0755 and itself 0700, when missing) the state
 * directory and check it as above. Returns the O_DIRECTORY fd or a negative errno. */
int tune_state_dir_open(const char *path, bool create);
/* Check an open state file (its fstat): 0, or -EPERM / -EACCES / -EBADMSG (not a regular file). */
int tune_state_file_check(const struct stat *st);
/* Whether an error of tune_state_dir_open() (or of anything that opens the directory or
 * its files: the journal's and the records' functions) is a refusal to trust it. */
static inline bool tune_state_dir_is_refusal(int error) {
        return error == -EPERM || error == -EACCES || error == -ELOOP || error == -ENOTDIR;
}
/* Words for the refusal, for the daemon's message: "is writable by group or others". */
const char *tune_state_dir_refusal(int error);
