/* SPDX-License-Identifier: GPL-2.0-only */
/* The worker pool of proc-guard.h: bounded threads, a deadline per read, written-off
 * workers that clean up after themselves, and processes backed off after a timeout. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "npu-tuned/proc.h"
#include "proc-guard.h"
#include "npu-tuned/text.h"

/* Small: a worker reads a file or makes one system call. */
#define WORKER_STACK (256u * 1024u)

typedef struct Task {
        struct Task *next;
        proc_guard_fn fn;
        void (*free_job)(void *job);
        void *job;
        uid_t uid;
        long r;
        /* Posted by the worker, under the lock, once r is set (and done): the caller
         * waits on it alone, so neither side takes the lock on the way back. */
        sem_t finished;
        bool done, abandoned;
} Task;

typedef struct Unreadable {
        pid_t pid;
        uint64_t start_time;
        uint64_t until; /* CLOCK_MONOTONIC µs */
        unsigned strikes; /* its timeouts: the first backs off briefly (kept after until) */
} Unreadable;

typedef struct StuckUid {
        uid_t uid;
        unsigned n;
} StuckUid;

struct ProcGuard {
        pthread_mutex_t lock;
        pthread_cond_t work; /* a task queued, or closing */
        tune_ctx *ctx;       /* the workers' own */
        Task *queue, **queue_tail;
        unsigned n_threads, n_busy, n_queued;
        unsigned n_stuck;
        StuckUid stuck[PROC_GUARD_WORKERS];
        bool closing;
        /* Used by the callers only (the loop thread), not the workers. */
        Unreadable unreadable[PROC_GUARD_UNREADABLE_MAX];
        unsigned n_unreadable;
        const char *note; /* what a timeout means, for the log */
        tune_memmove_backend memmove;
};

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static void guard_destroy(ProcGuard *g) {
        pthread_cond_destroy(&g->work);
        pthread_mutex_destroy(&g->lock);
        tune_ctx_free(g->ctx);
        free(g);
}

static StuckUid *stuck_of(ProcGuard *g, uid_t uid) {
        for (unsigned i = 0; i < ELEMENTSOF(g->stuck); i++)
                if (g->stuck[i].n > 0 && g->stuck[i].uid == uid)
                        return &g->stuck[i];
        return NULL;
}

/* Under the lock: a written-off task of uid, or one that came back. */
static void stuck_add(ProcGuard *g, uid_t uid) {
        StuckUid *s = stuck_of(g, uid);

        for (unsigned i = 0; !s && i < ELEMENTSOF(g->stuck); i++)
                if (g->stuck[i].n == 0)
                        s = &g->stuck[i];
        /* Never full: there are no more written-off tasks than workers. */
        s->uid = uid;
        s->n++;
        g->n_stuck++;
}

static void stuck_remove(ProcGuard *g, uid_t uid) {
        StuckUid *s = stuck_of(g, uid);

        if (s) {
                s->n--;
                g->n_stuck--;
        }
}

/* Under the lock: a written-off task is nobody's but ours; drop it with its job. */
static void task_free(Task *t) {
        sem_destroy(&t->finished);
        free(t);
}

static void task_drop(ProcGuard *g, Task *t) {
        stuck_remove(g, t->uid);
        if (t->free_job)
                t->free_job(t->job);
        task_free(t);
}

static void *worker(void *userdata) {
        ProcGuard *g = userdata;
        bool last;

        pthread_mutex_lock(&g->lock);
        for (;;) {
                Task *t;

                while (!g->queue && !g->closing)
                        pthread_cond_wait(&g->work, &g->lock);
                if (!g->queue)
                        break; /* closing */
                t = g->queue;
                g->queue = t->next;
                if (!g->queue)
                        g->queue_tail = &g->queue;
                g->n_queued--;
                if (t->abandoned) {
                        /* Given up before it started (every worker was busy past its
                         * deadline): not worth a try that would likely block too. */
                        task_drop(g, t);
                        continue;
                }
                g->n_busy++;
                pthread_mutex_unlock(&g->lock);

                long r = t->fn(t->job, g->ctx);

                pthread_mutex_lock(&g->lock);
                g->n_busy--;
                if (t->abandoned)
                        task_drop(g, t); /* the caller gave up on it: nobody wants the result */
                else {
                        /* Under the lock: a caller whose deadline just passed reads done
                         * under it, and frees t once it sees it set. After the post, t is
                         * the caller's. */
                        t->r = r;
                        t->done = true;
                        sem_post(&t->finished);
                }
        }
        g->n_threads--;
        last = g->n_threads == 0;
        pthread_mutex_unlock(&g->lock);
        if (last)
                guard_destroy(g);
        return NULL;
}

/* Under the lock: a new worker, detached, with every signal blocked (the loop takes them
 * from its signalfd; a worker must never run a handler). */
static int start_worker(ProcGuard *g) {
        pthread_attr_t attr;
        sigset_t all, old;
        pthread_t t;
        int r;

        r = pthread_attr_init(&attr);
        if (r != 0)
                return -r;
        (void) pthread_attr_setstacksize(&attr, WORKER_STACK);
        (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        r = pthread_create(&t, &attr, worker, g);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
        if (r != 0)
                return -r;
        g->n_threads++;
        return 0;
}

int proc_guard_new(const tune_ctx *ctx, ProcGuard **ret) {
        ProcGuard *g;
        int r;

        g = tune_alloc0(1, sizeof *g);
        if (!g)
                return -ENOMEM;
        r = tune_ctx_new(tune_ctx_root(ctx), &g->ctx);
        if (r < 0) {
                free(g);
                return r;
        }
        pthread_mutex_init(&g->lock, NULL);
        pthread_cond_init(&g->work, NULL);
        g->queue_tail = &g->queue;
        g->note = "counted as unreadable (a rule that needs it does not match), not read again for 1 s, "
                  "then 30 s after another timeout";
        *ret = g;
        return 0;
}

ProcGuard *proc_guard_free(ProcGuard *g) {
        bool now;

        if (!g)
                return NULL;
        pthread_mutex_lock(&g->lock);
        g->closing = true;
        pthread_cond_broadcast(&g->work);
        now = g->n_threads == 0;
        pthread_mutex_unlock(&g->lock);
        /* Otherwise the last worker to return destroys it (worker()). */
        if (now)
                guard_destroy(g);
        return NULL;
}

void proc_guard_set_note(ProcGuard *g, const char *note) {
        g->note = note;
}

void proc_guard_counts(ProcGuard *g, unsigned *ret_threads, unsigned *ret_stuck) {
        pthread_mutex_lock(&g->lock);
        *ret_threads = g->n_threads;
        *ret_stuck = g->n_stuck;
        pthread_mutex_unlock(&g->lock);
}

/* Whose process pid is: its real uid, as the rules match it, from status (which takes no
 * mmap_lock). Not the owner of /proc/PID: a process that makes itself non-dumpable shows
 * as root's there, and would spend root's share of workers. (uid_t) -1 when it cannot be
 * told (gone). Read only when a share is asked about: while any worker is written off,
 * or at a timeout. */
static uid_t uid_of(ProcGuard *g, pid_t pid) {
        tune_proc_status st;

        return tune_proc_read_status(g->ctx, pid, &st) >= 0 ? st.ruid : (uid_t) -1;
}

static Unreadable *unreadable_of(ProcGuard *g, pid_t pid) {
        for (unsigned i = 0; i < g->n_unreadable; i++)
                if (g->unreadable[i].pid == pid)
                        return &g->unreadable[i];
        return NULL;
}

/* Whether pid is backed off now: the same process (start time), its time not over. */
static bool backed_off(ProcGuard *g, pid_t pid) {
        Unreadable *u = unreadable_of(g, pid);
        tune_proc_stat st;

        if (!u)
                return false;
        /* stat takes no mmap_lock: it stays fast when the process holds its map. */
        if (tune_proc_read_stat(g->ctx, pid, &st) < 0 || st.start_time != u->start_time) {
                *u = g->unreadable[--g->n_unreadable];
                return false;
        }
        /* Its time over, it is kept: a second timeout backs off for long. */
        return now_usec() < u->until;
}

static void back_off(ProcGuard *g, pid_t pid, unsigned timeout_ms, const char *what, const char *note) {
        Unreadable *u = unreadable_of(g, pid);
        tune_proc_stat st;

        if (tune_proc_read_stat(g->ctx, pid, &st) < 0)
                return; /* gone */
        if (!u) {
                if (g->n_unreadable < ELEMENTSOF(g->unreadable))
                        u = &g->unreadable[g->n_unreadable++];
                else {
                        /* Full: forget the one whose time is over first. */
                        u = &g->unreadable[0];
                        for (unsigned i = 1; i < g->n_unreadable; i++)
                                if (g->unreadable[i].until < u->until)
                                        u = &g->unreadable[i];
                }
        }
        unsigned strikes = u->pid == pid && u->start_time == st.start_time ? u->strikes + 1 : 1;
        /* A first timeout may be a busy host (a burst of process starts) or a process in the
         * middle of its exec or of mapping its threads' stacks: tried again soon. A second
         * is a held map: for long. */
        *u = (Unreadable) { .pid = pid, .start_time = st.start_time, .strikes = strikes,
                            .until = now_usec() + (strikes == 1 ? PROC_GUARD_FIRST_BACKOFF_USEC : PROC_GUARD_BACKOFF_USEC) };
        if (strikes > 2)
                return;
        /* Twice per process at most: then it is backed off, and tried again after. */
        log_warning("pid %d: %s took over %u ms (its memory map is held, maybe by a FUSE mount it serves): %s.",
                    pid, what, timeout_ms, note ?: g->note);
}

/* Under no lock: a job that was never run goes back to nobody. */
static long not_run(void (*free_job)(void *job), void *job, long r) {
        if (free_job)
                free_job(job);
        return r;
}

long proc_guard_run(ProcGuard *g, pid_t pid, unsigned timeout_ms, const char *what, const char *note,
                    proc_guard_fn fn, void (*free_job)(void *job), void *job, bool *ret_done) {
        struct timespec deadline;
        char name[64];
        StuckUid *s;
        Task *t;
        uid_t uid;
        bool uid_known;
        long r;

        /* Our copy: `what` may live in the job, which a written-off worker frees. */
        tune_copy_string(name, sizeof name, what);
        what = name;
        *ret_done = false;
        if (backed_off(g, pid))
                return not_run(free_job, job, -ETIMEDOUT);
        t = tune_alloc0(1, sizeof *t);
        if (!t)
                return not_run(free_job, job, -ENOMEM);
        *t = (Task) { .fn = fn, .free_job = free_job, .job = job };
        sem_init(&t->finished, 0, 0);

        pthread_mutex_lock(&g->lock);
        /* The usual case, no worker written off, needs no uid. */
        uid_known = g->n_stuck > 0;
        uid = uid_known ? uid_of(g, pid) : (uid_t) -1;
        s = uid_known ? stuck_of(g, uid) : NULL;
        if (s && s->n >= PROC_GUARD_STUCK_PER_UID) {
                unsigned n = s->n;
                pthread_mutex_unlock(&g->lock);
                task_free(t);
                log_debug("pid %d: %u reads of uid %u's processes are stuck, not reading %s.", pid, n,
                          (unsigned) uid, what);
                return not_run(free_job, job, -EBUSY);
        }
        if (g->n_threads - g->n_busy <= g->n_queued) {
                r = g->n_threads < PROC_GUARD_WORKERS ? start_worker(g) : -EBUSY;
                if (r < 0) {
                        pthread_mutex_unlock(&g->lock);
                        task_free(t);
                        log_debug_errno((int) r, "pid %d: no worker to read %s: %m", pid, what);
                        return not_run(free_job, job, r);
                }
        }
        *g->queue_tail = t;
        g->queue_tail = &t->next;
        g->n_queued++;
        pthread_mutex_unlock(&g->lock);
        /* After the unlock: the worker it wakes takes the lock at once rather than waking
         * into our hold of it (a wake-up and a wait more per hand-off). A worker that has
         * not gone to sleep yet sees the queue before it would. */
        pthread_cond_signal(&g->work);

        /* The deadline is on the monotonic clock: a clock set back must not stretch it. */
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
        }
        int w;
        do
                w = sem_clockwait(&t->finished, CLOCK_MONOTONIC, &deadline);
        while (w < 0 && errno == EINTR);
        if (w < 0) {
                pthread_mutex_lock(&g->lock);
                if (!t->done) {
                        /* Written off: the worker frees the task and the job when fn
                         * returns. A task still queued counts too: a worker is on its way
                         * to it. */
                        t->abandoned = true;
                        t->uid = uid_known ? uid : uid_of(g, pid);
                        stuck_add(g, t->uid);
                        pthread_mutex_unlock(&g->lock);
                        back_off(g, pid, timeout_ms, what, note);
                        return -ETIMEDOUT;
                }
                /* Done between the deadline and the lock: taken as in time. */
                pthread_mutex_unlock(&g->lock);
        }
        r = t->r;
        task_free(t);
        *ret_done = true;
        return r;
}

/* ---- the slow reader of libtune (tune_read_slow()) ---- */

/* One file, or two of one process (an exec's command line and environment: one hand-off,
 * not two), read on one worker one after the other under one deadline. */
typedef struct ReadJob {
        unsigned n;
        struct {
                char path[64];
                size_t max;
                char *text;
                size_t len;
                bool truncated;
                int r;
        } files[2];
        char what[160]; /* "reading PATH[ and PATH]" */
} ReadJob;

static void read_job_free(void *userdata) {
        ReadJob *j = userdata;

        for (unsigned i = 0; i < j->n; i++)
                free(j->files[i].text);
        free(j);
}

static long read_job_run(void *userdata, const tune_ctx *ctx) {
        ReadJob *j = userdata;

        for (unsigned i = 0; i < j->n; i++) {
                typeof(j->files[0]) *f = &j->files[i];
                f->r = tune_read_prefix(ctx, f->path, f->max, &f->text, &f->len, &f->truncated);
                if (f->r < 0)
                        f->text = NULL;
        }
        return 0;
}

/* Reads files[0..n) (n: 1 or 2) of pid on a worker: each file's result in its r, its text
 * (the caller's to free) only where r is 0. */
static void read_files(ProcGuard *g, pid_t pid, tune_slow_file *files, unsigned n) {
        ReadJob *j;
        bool done;
        long r;

        for (unsigned i = 0; i < n; i++)
                files[i].text = NULL;
        j = tune_alloc0(1, sizeof *j);
        if (!j)
                r = -ENOMEM;
        else {
                j->n = n;
                r = 0;
                for (unsigned i = 0; i < n && r >= 0; i++) {
                        if (strlen(files[i].path) >= sizeof j->files[i].path)
                                r = -ENAMETOOLONG;
                        else {
                                strcpy(j->files[i].path, files[i].path);
                                j->files[i].max = files[i].max;
                        }
                }
                if (r < 0)
                        free(j);
        }
        if (r < 0) {
                for (unsigned i = 0; i < n; i++)
                        files[i].r = (int) r;
                return;
        }
        tune_concat(j->what, sizeof j->what, "reading ", files[0].path, n > 1 ? " and " : "", n > 1 ? files[1].path : "",
                    NULL);
        r = proc_guard_run(g, pid, PROC_GUARD_READ_TIMEOUT_MS, j->what, NULL, read_job_run, read_job_free, j, &done);
        if (!done) {
                for (unsigned i = 0; i < n; i++)
                        files[i].r = (int) r; /* j is the guard's */
                return;
        }
        for (unsigned i = 0; i < n; i++)
                if ((files[i].r = j->files[i].r) >= 0) {
                        files[i].text = TAKE_PTR(j->files[i].text);
                        files[i].len = j->files[i].len;
                        files[i].truncated = j->files[i].truncated;
                }
        read_job_free(j);
}

static int slow_read(void *userdata, const tune_ctx *ctx, pid_t pid, const char *path, size_t max, char **ret,
                     size_t *ret_len, bool *ret_truncated) {
        tune_slow_file file = { .path = path, .max = max };

        (void) ctx; /* the workers read through the guard's own */
        read_files(userdata, pid, &file, 1);
        if (file.r < 0)
                return file.r;
        *ret = file.text;
        if (ret_len)
                *ret_len = file.len;
        if (ret_truncated)
                *ret_truncated = file.truncated;
        return 0;
}

static void slow_read_pair(void *userdata, const tune_ctx *ctx, pid_t pid, tune_slow_file files[static 2]) {
        (void) ctx; /* the workers read through the guard's own */
        read_files(userdata, pid, files, 2);
}

void proc_guard_install(ProcGuard *g, tune_ctx *ctx) {
        tune_ctx_set_slow_reader(ctx, slow_read, g);
        tune_ctx_set_slow_pair_reader(ctx, slow_read_pair);
}

tune_memmove_backend *proc_guard_memmove_slot(ProcGuard *g) {
        return &g->memmove;
}
