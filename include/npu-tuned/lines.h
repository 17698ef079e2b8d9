/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Stream a text file line by line through the root resolver, bounded: for /proc files
 * that can be large (numa_maps, maps of a process with many VMAs) and that must not be
 * read whole into memory. */

#include <stddef.h>
#include <sys/types.h>

#include "npu-tuned/context.h"

/* fn gets each line without its newline (not NUL terminated: len bytes); a negative
 * return stops the walk with that error. Lines longer than max_line are skipped and
 * counted in *ret_long_lines (may be NULL). A file longer than max_total: -EFBIG.
 * A missing file: -ENOENT. */
typedef int (*tune_line_fn)(const char *line, size_t len, void *userdata);
int tune_foreach_line(const tune_ctx *ctx, const char *path, size_t max_line, size_t max_total,
                      tune_line_fn fn, void *userdata, unsigned *ret_long_lines);
/* The same over a file of process pid that takes its mmap_lock (numa_maps, maps: see
 * tune_read_slow()): with a slow reader set, the whole file (at most max_total) is read
 * through it and walked in memory; without one, it is streamed as above. */
int tune_foreach_line_slow(const tune_ctx *ctx, pid_t pid, const char *path, size_t max_line, size_t max_total,
                           tune_line_fn fn, void *userdata, unsigned *ret_long_lines);
