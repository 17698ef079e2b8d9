/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Reads of another process that may block for as long as that process likes, made with a
 * deadline, so that the event loop never waits on one (docs/trust.md, "Nothing a process
 * does can block the loop").
 *
 * /proc/PID/cmdline, environ, numa_maps, maps and move_pages(2)/migrate_pages(2)/pagemap
 * take the target's mmap_lock. Any user can hold their own process's lock as long as they
 * like (a page fault on a file of a FUSE server they run, a second thread's mmap() queued
 * behind it), and every reader then sleeps in the kernel, uninterruptibly for all but a
 * kill. The loop hands such a read to a worker thread and waits at most a deadline; past
 * it the read fails with -ETIMEDOUT and the worker is written off: it finishes (or stays
 * in the kernel) on its own, and drops and frees its result itself.
 *
 * Bounded: at most PROC_GUARD_WORKERS threads in all, and at most
 * PROC_GUARD_STUCK_PER_UID of them written off on one user's processes; past either a
 * read fails at once with -EBUSY, so no user can make the daemon start threads without
 * end, nor take every worker from the others. A process whose read timed out is not read
 * again for PROC_GUARD_FIRST_BACKOFF_USEC, after a second timeout for
 * PROC_GUARD_BACKOFF_USEC (-ETIMEDOUT at once), and is logged at most twice. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "npu-tuned/context.h"
#include "npu-tuned/memmove.h"

#define PROC_GUARD_WORKERS 8u
#define PROC_GUARD_STUCK_PER_UID 2u
/* A /proc read of a process: some µs, a few ms for numa_maps of a huge process. */
#define PROC_GUARD_READ_TIMEOUT_MS 100u
/* One step of a memory migration: a batch of move_pages(2) copies up to 4 MiB. */
#define PROC_GUARD_MEMMOVE_TIMEOUT_MS 1000u
/* A process's first timeout backs it off this long, the next ones PROC_GUARD_BACKOFF_USEC
 * (the default note of proc_guard_set_note() says both). */
#define PROC_GUARD_FIRST_BACKOFF_USEC (1000u * 1000ULL)
#define PROC_GUARD_BACKOFF_USEC (30u * 1000000ULL)
/* Processes remembered as unreadable; the oldest is forgotten first. */
#define PROC_GUARD_UNREADABLE_MAX 64u

typedef struct ProcGuard ProcGuard;

/* A guard whose workers read below ctx's root (a context of their own: the guard may
 * outlive ctx while a written-off worker is still in the kernel). */
int proc_guard_new(const tune_ctx *ctx, ProcGuard **ret);
/* Idle workers exit; written-off ones free the guard when the last of them returns. */
ProcGuard *proc_guard_free(ProcGuard *g);
DEFINE_TRIVIAL_CLEANUP_FUNC(ProcGuard *, proc_guard_free);

/* What a timed-out read means, said in its log line (a static string); by default that it
 * counts as unreadable and is not read again for 30 s. */
void proc_guard_set_note(ProcGuard *g, const char *note);

/* Install the guard as ctx's slow reader (tune_ctx_set_slow_reader()). */
void proc_guard_install(ProcGuard *g, tune_ctx *ctx);

/* Work of a worker: fn(job, ctx) returns >= 0 or -errno. */
typedef long (*proc_guard_fn)(void *job, const tune_ctx *ctx);
/* Run fn on a worker for process pid, waiting at most timeout_ms; what names the work in
 * the log line of a timeout ("reading /proc/PID/cmdline"), note what the timeout means
 * (NULL: proc_guard_set_note()'s). Returns fn's result with *ret_done true: the
 * caller owns job again. Otherwise *ret_done is false and job is the guard's (freed with
 * free_job now, or by the worker once fn returns): -ETIMEDOUT past the deadline or while
 * pid is backed off, -EBUSY when no worker may take it, -ENOMEM. */
long proc_guard_run(ProcGuard *g, pid_t pid, unsigned timeout_ms, const char *what, const char *note,
                    proc_guard_fn fn, void (*free_job)(void *job), void *job, bool *ret_done);

/* The kernel memory backend (tune_memmove_backend_kernel) with each call on a worker and
 * PROC_GUARD_MEMMOVE_TIMEOUT_MS for it: a step past it fails with -ETIMEDOUT. */
const tune_memmove_backend *proc_guard_memmove_backend(ProcGuard *g);

/* Where the guard keeps its memory backend (for proc-guard-memmove.c). */
tune_memmove_backend *proc_guard_memmove_slot(ProcGuard *g);

/* Workers now (started, written off): for tests and the log. */
void proc_guard_counts(ProcGuard *g, unsigned *ret_threads, unsigned *ret_stuck);
