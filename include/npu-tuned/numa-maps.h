/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* /proc/PID/numa_maps: where a process's pages are, per VMA and node. The line parser is
 * pure; the reader streams the file through the context's root (a fake tree may hold a
 * captured numa_maps), so it is bounded however many VMAs the process has.
 *
 * A line: "7f0a7352d000 default file=/usr/lib/libc.so.6 anon=4 dirty=4 N0=4 kernelpagesize_kB=4".
 * The kernel escapes ' ', '\t', '\n' and '=' in file names, and the memory policy may
 * contain a space ("prefer (many)"), so the parser looks only at the keys it knows and
 * ignores every other token. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "npu-tuned/context.h"
#include "npu-tuned/cpuset.h"

/* The kernel's MAX_NUMNODES is at most 1024 (NODES_SHIFT 10). */
#define TUNE_NUMA_NODES_MAX 1024
/* Longest numa_maps line accepted (a file name is at most PATH_MAX, escaped up to 4x). */
#define TUNE_NUMA_MAPS_LINE_MAX (20 * 1024)

typedef struct tune_numa_vma {
        uint64_t start;
        unsigned page_kib;    /* kernelpagesize_kB; 4 when the line has none */
        bool file;            /* a file= mapping (page cache, shmem, a device) */
        bool heap, stack, huge; /* "heap", "stack", hugetlbfs "huge" */
        uint64_t anon;        /* anon= pages */
        uint64_t total;       /* sum of the N<node>= pages */
        uint64_t *node_pages; /* [node] pages; n_slots entries, reused from line to line */
        unsigned n_slots;
        int max_node;         /* highest node with pages on this line; -1 if none */
} tune_numa_vma;

void tune_numa_vma_done(tune_numa_vma *v);

/* Parse one line (without its newline; len bytes, NUL not needed). Returns 0, -EINVAL for
 * a line without an address or with a malformed known key, -ERANGE for a node number
 * >= TUNE_NUMA_NODES_MAX or a count that overflows, -ENOMEM. */
int tune_numa_maps_parse_line(const char *line, size_t len, tune_numa_vma *v);

/* A process's pages summed over VMAs, in KiB (pages x their page size). */
typedef struct tune_numa_usage {
        uint64_t *node_kib;      /* [node], every VMA */
        uint64_t *node_anon_kib; /* [node], VMAs without file= (heap, stack, anonymous mmap) */
        unsigned n_nodes;        /* entries in both arrays: highest node seen + 1 */
        uint64_t total_kib;
        uint64_t anon_total_kib;
        unsigned n_vmas;
        unsigned n_bad_lines;    /* lines skipped as malformed */
} tune_numa_usage;

void tune_numa_usage_done(tune_numa_usage *u);
int tune_numa_usage_add(tune_numa_usage *u, const tune_numa_vma *v);
/* Parse a whole numa_maps text (tests, fuzzing); malformed lines are counted, not fatal. */
int tune_numa_maps_parse(const char *text, size_t len, tune_numa_usage *u);

/* KiB on any node of `nodes`; anon_only: count only VMAs without file=. */
uint64_t tune_numa_usage_kib_on(const tune_numa_usage *u, const tune_cpuset *nodes, bool anon_only) _pure_;
/* Percentage (0..100) of the counted KiB that is on `nodes`; 100 when nothing is counted. */
double tune_numa_usage_locality(const tune_numa_usage *u, const tune_cpuset *nodes, bool anon_only) _pure_;

/* Stream /proc/PID/numa_maps below the root, calling fn for every well-formed VMA (fn
 * returns < 0 to stop with that error). *ret_bad_lines (may be NULL) counts skipped lines.
 * -ESRCH when the process is gone (the file vanished, or reads fail with ESRCH). */
typedef int (*tune_numa_vma_fn)(const tune_numa_vma *v, void *userdata);
int tune_numa_maps_foreach(const tune_ctx *ctx, pid_t pid, tune_numa_vma_fn fn, void *userdata, unsigned *ret_bad_lines);
/* The whole usage of a process. */
int tune_numa_maps_read(const tune_ctx *ctx, pid_t pid, tune_numa_usage *ret);
