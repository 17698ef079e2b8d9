/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The libtune context: the one root resolver. Every sysfs/procfs path libtune touches is
 * opened relative to the context's root directory fd, so a test can point the whole
 * library at a fake tree (npu-tuned --root DIR). Paths are written as the kernel names
 * them ("/sys/devices/system/node/online"); the leading '/' is stripped and the rest is
 * resolved below the root. */

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "npu-tuned/macro.h"

typedef struct tune_ctx tune_ctx;

/* Largest sysfs/procfs file libtune reads into memory by default (bounded reads: /proc is
 * hostile input). */
#define TUNE_READ_MAX (256u * 1024u)

int tune_ctx_new(const char *root, tune_ctx **ret);
tune_ctx *tune_ctx_free(tune_ctx *ctx);
DEFINE_TRIVIAL_CLEANUP_FUNC(tune_ctx *, tune_ctx_free);

const char *tune_ctx_root(const tune_ctx *ctx);
/* True when the root is the real "/": only then may libtune call into libnuma,
 * libcpupower and syscalls that act on live processes. */
bool tune_ctx_is_live(const tune_ctx *ctx);
int tune_ctx_root_fd(const tune_ctx *ctx);

/* openat() below the root. Returns an fd or a negative errno. */
int tune_open(const tune_ctx *ctx, const char *path, int flags, mode_t mode);
int tune_opendir(const tune_ctx *ctx, const char *path, DIR **ret);
/* One entry name (no "/") of a directory opened with tune_open(): below a test root a
 * symlink there is refused (it could point out of the tree). Returns an fd or -errno. */
int tune_open_at(const tune_ctx *ctx, int dirfd, const char *name, int flags);
/* A small kernel attribute (/proc/PID/task/TID/comm, .../stat) into buf, NUL terminated:
 * one read for procfs, which hands a virtual file out whole; -EFBIG when it does not fit
 * in fewer than size - 1 bytes. No allocation: the placement path reads these for every thread. */
int tune_read_virtual_at(const tune_ctx *ctx, int dirfd, const char *name, char *buf, size_t size, size_t *ret_len);
/* Whether path exists below the root (follows symlinks). */
bool tune_exists(const tune_ctx *ctx, const char *path);
/* Read a whole file, at most max bytes (-EFBIG if longer), NUL terminated. *ret_len may be NULL. */
int tune_read_file(const tune_ctx *ctx, const char *path, size_t max, char **ret, size_t *ret_len);
/* Read at most max bytes (0: TUNE_READ_MAX); a longer file is cut, not refused, and
 * *ret_truncated (may be NULL) says so. NUL terminated. */
int tune_read_prefix(const tune_ctx *ctx, const char *path, size_t max, char **ret, size_t *ret_len,
                     bool *ret_truncated);
/* The same into buf, at most size - 1 bytes of the file (size >= 2), NUL-terminated: for
 * the /proc texts every exec or match reads and only parses (stat, status, cgroup), no
 * heap copy. */
int tune_read_prefix_into(const tune_ctx *ctx, const char *path, char *buf, size_t size, size_t *ret_len,
                          bool *ret_truncated);
/* Read the file and strip trailing whitespace/newlines. */
int tune_read_string(const tune_ctx *ctx, const char *path, char **ret);
/* The same into buf (a file that does not fit in size - 1 bytes: -EFBIG, buf undefined):
 * for the small attribute files read at every placement, without the heap. */
int tune_read_string_into(const tune_ctx *ctx, const char *path, char *buf, size_t size);
int tune_read_int(const tune_ctx *ctx, const char *path, long *ret);
/* The kernel's boot id below the root ("" when the tree has none): state files (the knob
 * journal, the affinity records) carry it to tell a previous run of this boot from one of
 * an earlier boot. */
int tune_boot_id(const tune_ctx *ctx, char **ret);
/* Write value (as a single write()) to an existing file; O_TRUNC so fake trees read back
 * what was written (sysfs ignores it). Returns -errno of open or write. */
int tune_write_string(const tune_ctx *ctx, const char *path, const char *value);
/* readlink() below the root; returns the link text. */
int tune_readlink(const tune_ctx *ctx, const char *path, char **ret);

/* The files of /proc/PID that take the process's mmap_lock (cmdline, environ, numa_maps,
 * smaps, maps): a reader of that lock waits as long as another holds it, and an
 * unprivileged process can hold its own for as long as it likes (a page fault on a FUSE
 * file it serves; docs/trust.md). A program that must not wait (the daemon's event loop)
 * installs a slow reader: libtune hands it such reads, and it reads with a deadline
 * (elsewhere, on a thread it can give up on). The hook reads like tune_read_prefix() and
 * returns what it does: 0 or -errno (-ETIMEDOUT, -EBUSY: it gave up or would not try).
 * Without one, libtune reads directly (tests, tools, --restore). */
typedef int (*tune_slow_read_fn)(void *userdata, const tune_ctx *ctx, pid_t pid, const char *path, size_t max,
                                 char **ret, size_t *ret_len, bool *ret_truncated);
void tune_ctx_set_slow_reader(tune_ctx *ctx, tune_slow_read_fn fn, void *userdata);
bool tune_ctx_has_slow_reader(const tune_ctx *ctx) _pure_;
/* tune_read_prefix() of such a file of process pid: through the slow reader when one is set. */
int tune_read_slow(const tune_ctx *ctx, pid_t pid, const char *path, size_t max, char **ret, size_t *ret_len,
                   bool *ret_truncated);

/* One file of a tune_read_slow_pair(): path and max in, the rest out (r: 0 or -errno). */
typedef struct tune_slow_file {
        const char *path;
        size_t max;
        char *text;
        size_t len;
        bool truncated;
        int r;
} tune_slow_file;
/* Two such files of one process read with one hand-off to the slow reader (an exec's
 * match reads the command line, and a process it keeps has its environment read next:
 * each hand-off to another thread costs a wake-up on the path to the first pin). A slow
 * reader that reads pairs installs this too; without it the pair is two reads. */
typedef void (*tune_slow_read_pair_fn)(void *userdata, const tune_ctx *ctx, pid_t pid, tune_slow_file files[static 2]);
void tune_ctx_set_slow_pair_reader(tune_ctx *ctx, tune_slow_read_pair_fn fn);
void tune_read_slow_pair(const tune_ctx *ctx, pid_t pid, tune_slow_file files[static 2]);

/* Bounded printf into a path buffer: -ENAMETOOLONG rather than truncation. */
int tune_path(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);
