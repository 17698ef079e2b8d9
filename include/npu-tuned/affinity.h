/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Apply CPU sets to the threads of a live process, and give them back.
 *
 * tune_affinity_apply() walks /proc/PID/task (through the root resolver), asks a chooser
 * which CPUs each thread gets (by its comm: see tune_plan_thread_cpus()), records the
 * thread's original affinity (tune_affinity_originals) BEFORE changing it, and repeats
 * the walk until a walk finds no thread it has not handled: a thread created while we walk inherits its
 * creator's old mask and would otherwise be missed. Threads and processes that vanish
 * meanwhile (ESRCH, task directory gone) are counted, not errors.
 *
 * The daemon calls tune_affinity_apply_known() (over the threads its watcher knows) when it
 * places a process and when a re-plan changed its CPUs, tune_affinity_apply_thread() on a FORK (new thread) or COMM (rename)
 * event, tune_affinity_originals_forget() on a thread's EXIT, tune_affinity_check() on
 * reconcile (did the process re-bind itself?), and tune_affinity_restore() on stop.
 *
 * The kernel is reached through a small backend (sched_getaffinity/sched_setaffinity);
 * tests pass a fake one to drive a fake /proc tree. With the kernel backend the context
 * must be live (root "/"): -EOPNOTSUPP otherwise. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "npu-tuned/context.h"
#include "npu-tuned/cpuset.h"

/* A walk that keeps finding new threads this many times gives up with -EAGAIN (a thread
 * storm: the FORK events will bring the rest). */
#define TUNE_AFFINITY_ROUNDS_MAX 16

typedef struct tune_affinity_backend {
        int (*get)(void *userdata, pid_t tid, tune_cpuset *ret);      /* 0 or -errno */
        int (*set)(void *userdata, pid_t tid, const tune_cpuset *cpus); /* 0 or -errno */
        void *userdata;
} tune_affinity_backend;

/* sched_getaffinity(2) / sched_setaffinity(2). */
extern const tune_affinity_backend tune_affinity_backend_kernel;

#define TUNE_AFFINITY_SETS_MAX 3 /* control, compute, the pool */

typedef struct tune_affinity_entry {
        pid_t tid;
        tune_cpuset original; /* the affinity it had before we first changed it */
        tune_cpuset applied;  /* what we set last */
} tune_affinity_entry;

/* The originals of one process's threads, sorted by tid. */
typedef struct tune_affinity_originals {
        pid_t pid;             /* 0 until the first apply */
        uint64_t start_time;   /* /proc/PID/stat field 22, set by the caller; when non-zero,
                                * check and restore refuse (-ESRCH) a pid that now names
                                * another process (the originals kept across a daemon restart) */
        tune_affinity_entry *entries;
        unsigned n;
        unsigned cap; /* entries allocated, when known: 0 (or less than n) says only n */
        /* The sets the process's plan hands its threads (its role sets), kept only in the
         * affinity record: there a thread missing from entries whose mask lies inside one
         * was placed after the record was written (a new thread, or one that inherited
         * ours), so a placement writes its record once, not once per role. */
        tune_cpuset sets[TUNE_AFFINITY_SETS_MAX];
        unsigned n_sets;
} tune_affinity_originals;

void tune_affinity_originals_done(tune_affinity_originals *j);
const tune_affinity_entry *tune_affinity_originals_find(const tune_affinity_originals *j, pid_t tid) _pure_;
/* The process's original: the main thread's, else the first recorded thread's; NULL
 * when none is recorded. */
const tune_cpuset *tune_affinity_originals_process_original(const tune_affinity_originals *j) _pure_;
/* Whether s (not empty) lies inside one of j's sets or of the sets applied to one of its
 * threads: a thread missing from a record has such a mask when it was placed after the
 * record was written, or born after we placed its creator (it inherits the creator's);
 * a record's entry may also hold the union of two sets (daemon/placement/placement.c: written
 * before a move). */
bool tune_affinity_originals_cover(const tune_affinity_originals *j, const tune_cpuset *s) _pure_;
/* The thread exited: drop its entry (no-op when unknown). */
void tune_affinity_originals_forget(tune_affinity_originals *j, pid_t tid);

typedef struct tune_affinity_stats {
        unsigned seen;      /* threads looked at */
        unsigned set;       /* affinity changed */
        unsigned unchanged; /* already had the target (or restore target) */
        unsigned skipped;   /* the chooser (or restore) left it alone */
        unsigned vanished;  /* gone before we were done with it */
        unsigned undone;    /* ... of those, set and then found gone (its tid may be another
                             * thread's by then): set back to the mask it had */
        unsigned failed;    /* other errors; the first is returned */
        unsigned rounds;    /* walks of /proc/PID/task */
} tune_affinity_stats;

/* The name of the thread being placed, read from /proc only when a chooser asks: most
 * rules pick roles by main thread alone, and a read is three system calls per thread. */
typedef struct tune_thread_name tune_thread_name;
/* Its comm, NUL terminated without the newline; NULL when unreadable (gone). */
const char *tune_thread_name_get(tune_thread_name *name);

/* Which CPUs thread tid of pid gets: set *ret, or leave it NULL to leave the thread alone.
 * A negative return aborts the apply. */
typedef int (*tune_affinity_choose_fn)(pid_t pid, pid_t tid, tune_thread_name *name, void *userdata,
                                       const tune_cpuset **ret);

/* Returns 0 when every thread was handled (vanished ones included), -ESRCH when the
 * process is gone, -EAGAIN when the thread set never settled, or the first per-thread
 * error (the walk goes on: every thread changed is recorded). stats may be NULL and is
 * added to, not reset. backend NULL: the kernel. */
int tune_affinity_apply(const tune_ctx *ctx, const tune_affinity_backend *backend, pid_t pid,
                        tune_affinity_choose_fn choose, void *userdata,
                        tune_affinity_originals *originals, tune_affinity_stats *stats);
/* A thread the caller knows of: its tid, and its name if known (else NULL). */
typedef struct tune_affinity_known {
        pid_t tid;
        const char *comm;
} tune_affinity_known;
/* tune_affinity_apply() over the caller's list of pid's threads, without a listing of
 * its own: for a caller that has just listed them and learns of every later thread by its
 * FORK event (the daemon's watcher), so that no walk is needed to catch the threads
 * created meanwhile. The main thread first, then the others in the order given. -ESRCH
 * when the process is gone (its main thread's directory is, or pidfd says so); a listed
 * thread that is gone is counted as vanished. pidfd: the process's (pidfd_open()), or -1;
 * with one, and the main thread's name in the list, the main thread's set is checked by
 * it instead of by a directory held open around it. */
int tune_affinity_apply_known(const tune_ctx *ctx, const tune_affinity_backend *backend, pid_t pid, int pidfd,
                              const tune_affinity_known *threads, size_t n_threads, tune_affinity_choose_fn choose,
                              void *userdata, tune_affinity_originals *originals, tune_affinity_stats *stats);
/* One thread (FORK or COMM event). comm: its name when the caller has just learnt it (a
 * COMM event carries it), handed to the chooser without a read; NULL: read if asked.
 * -ESRCH when tid is not (or no longer) a thread of pid. */
int tune_affinity_apply_thread(const tune_ctx *ctx, const tune_affinity_backend *backend, pid_t pid, pid_t tid,
                               const char *comm, tune_affinity_choose_fn choose, void *userdata,
                               tune_affinity_originals *originals, tune_affinity_stats *stats);

/* Threads whose affinity is no longer what we applied (the process re-bound itself, or
 * someone else did): counted in *ret_drifted, the first in *ret_first_tid (may be NULL).
 * Vanished threads are not drift. */
int tune_affinity_check(const tune_ctx *ctx, const tune_affinity_backend *backend,
                        const tune_affinity_originals *originals, unsigned *ret_drifted, pid_t *ret_first_tid);

/* Give the threads still running their originals. A thread whose affinity is no longer
 * what we applied changed it itself: left alone (skipped). A thread we never saw whose
 * affinity is one we applied inherited it from a placed thread: it gets the process's
 * original (the main thread's, else the first recorded). */
int tune_affinity_restore(const tune_ctx *ctx, const tune_affinity_backend *backend,
                          const tune_affinity_originals *originals, tune_affinity_stats *stats);
