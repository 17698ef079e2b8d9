/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npu-tuned/affinity.h"
#include "npu-tuned/parse.h"
#include "npu-tuned/proc.h"

/* ---- the kernel backend ---- */

static int kernel_get(void *userdata, pid_t tid, tune_cpuset *ret) {
        unsigned long words[TUNE_CPU_MAX / (8 * sizeof(unsigned long))];
        long n;
        int r = 0;

        /* The system call, not glibc's wrapper: it says how many bytes the kernel filled
         * (its own mask size), so only those are walked and nothing is cleared. */
        n = syscall(SYS_sched_getaffinity, tid, sizeof words, words);
        if (n < 0)
                return negative_errno();
        tune_cpuset_clear(ret);
        /* An array of unsigned long, CPU n in bit n % BITS of word n / BITS (cpu_set_t's),
         * taken a word at a time: a CPU at a time cost a call per CPU, hundreds for a
         * thread that may run anywhere on a big host. The set is sized once, by adding
         * its highest CPU. */
        enum { BITS = 8 * sizeof(unsigned long) };
        size_t last = 0;
        for (size_t i = 0; i < (size_t) n / sizeof(unsigned long); i++)
                if (words[i])
                        last = i + 1;
        if (last == 0)
                return 0;
        r = tune_cpuset_add(ret, (unsigned) ((last - 1) * BITS + (BITS - 1) - (unsigned) __builtin_clzl(words[last - 1])));
        if (r < 0)
                return r;
        uint64_t *set = tune_cpuset_words_mut(ret);
        for (size_t i = 0; i < last; i++)
                set[i * BITS / 64] |= (uint64_t) words[i] << (i * BITS % 64);
        return 0;
}

static int kernel_set(void *userdata, pid_t tid, const tune_cpuset *cpus) {
        /* The set's words as the kernel's array of unsigned long (cpu_set_t's layout), on
         * the stack: a pin per thread of every placed process, no CPU_ALLOC and no walk
         * over its CPUs. A mask shorter than the kernel's is zero-extended by it. */
        enum { BITS = 8 * sizeof(unsigned long), PER_WORD = 64 / BITS };
        unsigned long words[TUNE_CPU_MAX / BITS];
        const uint64_t *set = tune_cpuset_words(cpus);
        size_t n = 0;

        for (unsigned i = 0; i < cpus->n_words && i < TUNE_CPU_MAX / 64; i++)
                for (unsigned k = 0; k < PER_WORD; k++) {
                        words[i * PER_WORD + k] = (unsigned long) (set[i] >> (k * BITS % 64));
                        if (words[i * PER_WORD + k])
                                n = i * PER_WORD + k + 1;
                }
        if (n == 0)
                return -EINVAL; /* an empty mask: never */
        if (sched_setaffinity(tid, n * sizeof(unsigned long), (cpu_set_t *) words) < 0)
                return negative_errno();
        return 0;
}

const tune_affinity_backend tune_affinity_backend_kernel = {
        .get = kernel_get,
        .set = kernel_set,
};

static int pick_backend(const tune_ctx *ctx, const tune_affinity_backend **backend) {
        if (*backend)
                return 0;
        /* Fake trees hold fake pids: never act on the host's real threads. */
        if (!tune_ctx_is_live(ctx))
                return -EOPNOTSUPP;
        *backend = &tune_affinity_backend_kernel;
        return 0;
}

/* ---- the originals ---- */

static void entry_done(tune_affinity_entry *e) {
        tune_cpuset_done(&e->original);
        tune_cpuset_done(&e->applied);
}

void tune_affinity_originals_done(tune_affinity_originals *j) {
        if (!j)
                return;
        for (unsigned i = 0; i < j->n; i++)
                entry_done(&j->entries[i]);
        free(j->entries);
        j->entries = NULL;
        j->n = 0;
        j->cap = 0;
        j->pid = 0;
        for (unsigned i = 0; i < j->n_sets; i++)
                tune_cpuset_done(&j->sets[i]);
        j->n_sets = 0;
}

/* Index of tid, or of where it would go. */
static unsigned originals_lower_bound(const tune_affinity_originals *j, pid_t tid) {
        unsigned lo = 0, hi = j->n;
        while (lo < hi) {
                unsigned mid = (lo + hi) / 2;
                if (j->entries[mid].tid < tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

const tune_affinity_entry *tune_affinity_originals_find(const tune_affinity_originals *j, pid_t tid) {
        unsigned i = originals_lower_bound(j, tid);
        return i < j->n && j->entries[i].tid == tid ? &j->entries[i] : NULL;
}

void tune_affinity_originals_forget(tune_affinity_originals *j, pid_t tid) {
        unsigned i = originals_lower_bound(j, tid);
        if (i >= j->n || j->entries[i].tid != tid)
                return;
        entry_done(&j->entries[i]);
        memmove(&j->entries[i], &j->entries[i + 1], (j->n - i - 1) * sizeof(tune_affinity_entry));
        j->n--;
}

const tune_cpuset *tune_affinity_originals_process_original(const tune_affinity_originals *j) {
        const tune_affinity_entry *e = tune_affinity_originals_find(j, j->pid);
        if (e)
                return &e->original;
        return j->n > 0 ? &j->entries[0].original : NULL;
}

bool tune_affinity_originals_cover(const tune_affinity_originals *j, const tune_cpuset *s) {
        if (tune_cpuset_is_empty(s))
                return false;
        for (unsigned i = 0; i < j->n_sets; i++)
                if (tune_cpuset_is_subset(s, &j->sets[i]))
                        return true;
        for (unsigned i = 0; i < j->n; i++)
                if (tune_cpuset_is_subset(s, &j->entries[i].applied))
                        return true;
        return false;
}

/* A mask we applied to some thread (a new thread inherits its creator's). */
static bool originals_is_applied_mask(const tune_affinity_originals *j, const tune_cpuset *s) {
        for (unsigned i = 0; i < j->n; i++)
                if (tune_cpuset_equal(&j->entries[i].applied, s))
                        return true;
        return false;
}

static int originals_insert(tune_affinity_originals *j, pid_t tid, const tune_cpuset *current, tune_affinity_entry **ret) {
        unsigned i = originals_lower_bound(j, tid);
        const tune_cpuset *original = current;
        tune_affinity_entry e = { .tid = tid }, *a;
        int r;

        /* A thread born after we placed its creator carries our mask, not an original. */
        if (j->n > 0 && originals_is_applied_mask(j, current))
                original = tune_affinity_originals_process_original(j);
        r = tune_cpuset_copy(&e.original, original);
        if (r < 0)
                return r;
        if (j->n >= j->cap) {
                /* Room for a few threads at a time: a new process's threads come one by
                 * one, each with its insert. */
                unsigned cap = j->n < 4 ? 8 : j->n * 2;
                a = reallocarray(j->entries, cap, sizeof(tune_affinity_entry));
                if (!a) {
                        entry_done(&e);
                        return -ENOMEM;
                }
                j->entries = a;
                j->cap = cap;
        }
        memmove(&j->entries[i + 1], &j->entries[i], (j->n - i) * sizeof(tune_affinity_entry));
        j->entries[i] = e;
        j->n++;
        *ret = &j->entries[i];
        return 0;
}

/* ---- walking threads ---- */

/* The thread ids of pid, sorted. -ESRCH when the process is gone (its task directory
 * is, or it went while being read). */
static int list_tasks(const tune_ctx *ctx, pid_t pid, pid_t **ret, unsigned *ret_n) {
        size_t n = 0;
        int r = tune_proc_list_tasks(ctx, pid, ret, &n);

        if (r == -ENOENT || r == -ESRCH)
                return -ESRCH;
        if (r < 0)
                return r;
        if (n > UINT_MAX) {
                free(*ret);
                *ret = NULL;
                return -E2BIG;
        }
        *ret_n = (unsigned) n;
        return 0;
}

struct tune_thread_name {
        const tune_ctx *ctx;
        int dirfd; /* /proc/PID/task/TID */
        int state; /* 0: not read, 1: read, < 0: unreadable */
        char comm[64];
};

const char *tune_thread_name_get(tune_thread_name *n) {
        size_t len;

        if (!n)
                return NULL;
        if (n->state == 0) {
                n->state = tune_read_virtual_at(n->ctx, n->dirfd, "comm", n->comm, sizeof n->comm, &len);
                if (n->state == 0) {
                        if (len > 0 && n->comm[len - 1] == '\n')
                                n->comm[len - 1] = 0;
                        n->state = 1;
                }
        }
        return n->state > 0 ? n->comm : NULL;
}

/* Field 22 of /proc/PID/stat; the comm in field 2 may hold spaces and parentheses, so
 * count from the last ')'. */
static int read_start_time(const tune_ctx *ctx, pid_t pid, uint64_t *ret) {
        _cleanup_free_ char *text = NULL;
        char path[64];
        const char *p;
        int r;

        if (pid <= 0)
                return -ESRCH; /* no /proc/PID of it, as for a process gone */
        r = tune_proc_path(path, sizeof path, pid, 0, "stat");
        if (r < 0)
                return r;
        r = tune_read_file(ctx, path, 4096, &text, NULL);
        if (r == -ENOENT || r == -ESRCH)
                return -ESRCH;
        if (r < 0)
                return r;
        p = strrchr(text, ')');
        if (!p)
                return -EBADMSG;
        p++;
        /* After ')': field 3 (state) ... field 22. */
        for (int field = 3; field < 22; field++) {
                p = strchr(p + 1, ' ');
                if (!p)
                        return -EBADMSG;
        }
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p + 1, &end, 10);
        if (errno || end == p + 1 || (*end != ' ' && *end != '\n' && *end != 0))
                return -EBADMSG;
        *ret = v;
        return 0;
}

/* Whether the thread that /proc/PID/task/TID named when dirfd was opened has exited. The
 * directory's inode holds that thread's struct pid, not its number: a lookup in it fails
 * once the thread is gone, even if a new thread has its tid by then. */
static bool thread_gone(int dirfd) {
        struct stat st;
        return fstatat(dirfd, "stat", &st, AT_SYMLINK_NOFOLLOW) < 0;
}

/* The same for the main thread, told by the process's pidfd: its tid is the process's pid,
 * which no other task can have while the process lives (a main thread that left before the
 * others stays a zombie that holds it). A poll that fails cannot tell: gone, so that the
 * set is undone rather than left on a stranger. */
static bool process_gone(int pidfd) {
        return tune_pidfd_exited(pidfd) != 0;
}

/* /proc/PID/task/TID, held open from the look at a thread to the check after its set: it
 * pins the thread we look at (thread_gone()), where a tid alone could name its successor.
 * -ESRCH when tid is not (or no longer) a thread of pid. */
static int open_thread_dir(const tune_ctx *ctx, pid_t pid, pid_t tid) {
        char path[64];
        int r, fd;

        r = tune_proc_path(path, sizeof path, pid, tid, NULL);
        if (r < 0)
                return r;
        fd = tune_open(ctx, path, O_RDONLY | O_DIRECTORY, 0);
        return fd == -ENOENT ? -ESRCH : fd;
}

/* Thread tid of pid, its directory open at dirfd (open_thread_dir()), or for the main
 * thread with its name known, dirfd -1 and the process's pidfd; comm: its name if known
 * already, else NULL. */
static int handle_thread(const tune_ctx *ctx, const tune_affinity_backend *b, pid_t pid, pid_t tid, int dirfd,
                         int pidfd, const char *comm, tune_affinity_choose_fn choose, void *userdata,
                         tune_affinity_originals *j, tune_affinity_stats *st) {
        _cleanup_cpuset_ tune_cpuset current = {};
        const tune_cpuset *target = NULL;
        tune_affinity_entry *e;
        bool fresh = false;
        int r;

        st->seen++;
        tune_thread_name name = { .ctx = ctx, .dirfd = dirfd };
        if (comm) {
                tune_copy_string(name.comm, sizeof name.comm, comm);
                name.state = 1;
        }
        r = choose(pid, tid, &name, userdata, &target);
        if (r < 0)
                return r;
        if (!target) {
                st->skipped++;
                return 0;
        }
        if (tune_cpuset_is_empty(target)) {
                st->failed++;
                return -EINVAL;
        }
        r = b->get(b->userdata, tid, &current);
        if (r == -ESRCH) {
                st->vanished++;
                return 0;
        }
        if (r < 0) {
                st->failed++;
                return r;
        }
        e = (tune_affinity_entry *) tune_affinity_originals_find(j, tid);
        if (!e) {
                /* Journal before writing. */
                r = originals_insert(j, tid, &current, &e);
                if (r < 0)
                        return r;
                fresh = true;
        }
        if (tune_cpuset_equal(&current, target)) {
                st->unchanged++;
                return tune_cpuset_copy(&e->applied, target);
        }
        r = b->set(b->userdata, tid, target);
        if (r == -ESRCH) {
                if (fresh)
                        tune_affinity_originals_forget(j, tid);
                st->vanished++;
                return 0;
        }
        if (r < 0) {
                if (fresh)
                        tune_affinity_originals_forget(j, tid);
                st->failed++;
                return r;
        }
        /* If the thread we looked at exited between the look and the set, its tid may have
         * gone to a new thread (of this or another process) that must not keep our CPUs.
         * Undo (the mask read before the set is the best guess of what it had; ESRCH when
         * nothing holds the tid now) and forget it. */
        if (dirfd >= 0 ? thread_gone(dirfd) : process_gone(pidfd)) {
                (void) b->set(b->userdata, tid, &current);
                if (fresh)
                        tune_affinity_originals_forget(j, tid);
                st->vanished++;
                st->undone++;
                return 0;
        }
        st->set++;
        return tune_cpuset_copy(&e->applied, target);
}

/* handle_thread() for a thread found in a listing (or the main thread): one that is gone
 * by now is counted, not an error. */
static int walk_thread(const tune_ctx *ctx, const tune_affinity_backend *b, pid_t pid, pid_t tid, int pidfd,
                       const char *comm, tune_affinity_choose_fn choose, void *userdata, tune_affinity_originals *j,
                       tune_affinity_stats *st) {
        _cleanup_close_ int dirfd = -EBADF;

        /* The main thread by the pidfd: no directory to open before its pin (the first one
         * of a new process) nor to check after it. */
        if (tid == pid && pidfd >= 0 && comm)
                return handle_thread(ctx, b, pid, tid, -EBADF, pidfd, comm, choose, userdata, j, st);
        dirfd = open_thread_dir(ctx, pid, tid);

        if (dirfd == -ESRCH) {
                st->seen++;
                st->vanished++;
                return 0;
        }
        if (dirfd < 0) {
                st->seen++;
                st->failed++;
                return dirfd;
        }
        return handle_thread(ctx, b, pid, tid, dirfd, -EBADF, comm, choose, userdata, j, st);
}

static bool sorted_has(const pid_t *a, unsigned n, pid_t x) {
        unsigned lo = 0, hi = n;
        while (lo < hi) {
                unsigned mid = (lo + hi) / 2;
                if (a[mid] == x)
                        return true;
                if (a[mid] < x)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return false;
}

/* The process of the originals is still the one they were taken from. */
static int originals_check_identity(const tune_ctx *ctx, const tune_affinity_originals *j) {
        uint64_t now;
        int r;

        if (j->start_time == 0)
                return 0;
        r = read_start_time(ctx, j->pid, &now);
        if (r < 0)
                return r;
        return now == j->start_time ? 0 : -ESRCH;
}

static int originals_claim(tune_affinity_originals *j, pid_t pid) {
        if (pid <= 0)
                return -EINVAL;
        if (j->pid != 0 && j->pid != pid)
                return -EINVAL;
        j->pid = pid;
        return 0;
}

/* What every apply does first: the originals are pid's, a backend is picked, and the
 * counts go to *dummy when the caller wants none. */
static int apply_prepare(const tune_ctx *ctx, const tune_affinity_backend **backend, pid_t pid,
                         tune_affinity_originals *originals, tune_affinity_stats **stats,
                         tune_affinity_stats *dummy) {
        int r = originals_claim(originals, pid);
        if (r < 0)
                return r;
        r = pick_backend(ctx, backend);
        if (r < 0)
                return r;
        if (!*stats)
                *stats = dummy;
        return 0;
}

int tune_affinity_apply(const tune_ctx *ctx, const tune_affinity_backend *backend, pid_t pid,
                        tune_affinity_choose_fn choose, void *userdata,
                        tune_affinity_originals *originals, tune_affinity_stats *stats) {
        _cleanup_free_ pid_t *done = NULL;
        tune_affinity_stats dummy = {};
        unsigned n_done = 0;
        int first_error = 0, r;

        if (!choose || !originals)
                return -EINVAL;
        r = apply_prepare(ctx, &backend, pid, originals, &stats, &dummy);
        if (r < 0)
                return r;
        /* The main thread first, before any listing: it is the one a new process's first
         * pin should not wait for, and threads it starts from then on inherit its set. */
        done = malloc(sizeof *done);
        if (!done)
                return -ENOMEM;
        done[n_done++] = pid;
        r = walk_thread(ctx, backend, pid, pid, -EBADF, NULL, choose, userdata, originals, stats);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                first_error = r;

        for (unsigned round = 0;; round++) {
                _cleanup_free_ pid_t *tids = NULL;
                unsigned n = 0, n_new = 0;
                pid_t *merged;

                if (round >= TUNE_AFFINITY_ROUNDS_MAX)
                        return -EAGAIN;
                r = list_tasks(ctx, pid, &tids, &n);
                if (r < 0)
                        return r;
                stats->rounds++;
                for (unsigned i = 0; i < n; i++) {
                        if (sorted_has(done, n_done, tids[i]))
                                continue;
                        n_new++;
                        r = walk_thread(ctx, backend, pid, tids[i], -EBADF, NULL, choose, userdata, originals, stats);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0 && first_error == 0)
                                first_error = r;
                }
                if (n_new == 0)
                        break;
                /* done := done U tids (both sorted). */
                merged = malloc((n_done + n) * sizeof(pid_t));
                if (!merged)
                        return -ENOMEM;
                unsigned a = 0, b = 0, m = 0;
                while (a < n_done || b < n) {
                        if (b >= n || (a < n_done && done[a] < tids[b]))
                                merged[m++] = done[a++];
                        else if (a >= n_done || tids[b] < done[a])
                                merged[m++] = tids[b++];
                        else {
                                merged[m++] = done[a++];
                                b++;
                        }
                }
                free(done);
                done = merged;
                n_done = m;
        }
        return first_error;
}

int tune_affinity_apply_known(const tune_ctx *ctx, const tune_affinity_backend *backend, pid_t pid, int pidfd,
                              const tune_affinity_known *threads, size_t n_threads, tune_affinity_choose_fn choose,
                              void *userdata, tune_affinity_originals *originals, tune_affinity_stats *stats) {
        tune_affinity_stats dummy = {};
        const char *main_comm = NULL;
        int first_error = 0, r;

        if (!choose || !originals || (n_threads > 0 && !threads))
                return -EINVAL;
        r = apply_prepare(ctx, &backend, pid, originals, &stats, &dummy);
        if (r < 0)
                return r;
        stats->rounds++;
        /* The main thread first, as tune_affinity_apply() does: gone, the process is. */
        for (size_t i = 0; i < n_threads; i++)
                if (threads[i].tid == pid) {
                        main_comm = threads[i].comm;
                        break;
                }
        unsigned vanished = stats->vanished;
        r = walk_thread(ctx, backend, pid, pid, pidfd, main_comm && *main_comm ? main_comm : NULL, choose, userdata,
                        originals, stats);
        if (r == -ENOMEM)
                return r;
        if (stats->vanished != vanished)
                return -ESRCH;
        if (r < 0)
                first_error = r;
        for (size_t i = 0; i < n_threads; i++) {
                const tune_affinity_known *t = &threads[i];
                if (t->tid == pid)
                        continue;
                r = walk_thread(ctx, backend, pid, t->tid, -EBADF, t->comm && *t->comm ? t->comm : NULL, choose,
                                userdata, originals, stats);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 && first_error == 0)
                        first_error = r;
        }
        return first_error;
}

int tune_affinity_apply_thread(const tune_ctx *ctx, const tune_affinity_backend *backend, pid_t pid, pid_t tid,
                               const char *comm, tune_affinity_choose_fn choose, void *userdata,
                               tune_affinity_originals *originals, tune_affinity_stats *stats) {
        tune_affinity_stats dummy = {};
        int r;

        if (!choose || !originals || tid <= 0)
                return -EINVAL;
        r = apply_prepare(ctx, &backend, pid, originals, &stats, &dummy);
        if (r < 0)
                return r;
        /* tid must be a thread of pid (a FORK event's child may already be gone and its
         * tid reused by an unrelated process): handle_thread() looks it up below
         * /proc/PID/task. */
        _cleanup_close_ int dirfd = open_thread_dir(ctx, pid, tid);
        if (dirfd < 0)
                return dirfd;
        return handle_thread(ctx, backend, pid, tid, dirfd, -EBADF, comm, choose, userdata, originals, stats);
}

int tune_affinity_check(const tune_ctx *ctx, const tune_affinity_backend *backend,
                        const tune_affinity_originals *originals, unsigned *ret_drifted, pid_t *ret_first_tid) {
        unsigned drifted = 0;
        pid_t first = 0;
        int r;

        r = pick_backend(ctx, &backend);
        if (r < 0)
                return r;
        r = originals_check_identity(ctx, originals);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < originals->n; i++) {
                const tune_affinity_entry *e = &originals->entries[i];
                _cleanup_cpuset_ tune_cpuset current = {};

                r = backend->get(backend->userdata, e->tid, &current);
                if (r == -ESRCH)
                        continue;
                if (r < 0)
                        return r;
                /* Narrowing inside our set (OpenMP binding each thread to one CPU of the
                 * pool, a cgroup cpuset) is not drift. */
                if (!tune_cpuset_is_subset(&current, &e->applied) || tune_cpuset_is_empty(&current)) {
                        if (drifted++ == 0)
                                first = e->tid;
                }
        }
        *ret_drifted = drifted;
        if (ret_first_tid)
                *ret_first_tid = first;
        return 0;
}

/* A restore's get or set of one thread: true if it failed. A thread gone by now counts as
 * vanished, not as an error; any other failure is counted and the first one kept, and the
 * restore goes on with the other threads. */
static bool restore_failed(int r, tune_affinity_stats *stats, int *first_error) {
        if (r == -ESRCH) {
                stats->vanished++;
                return true;
        }
        if (r < 0) {
                stats->failed++;
                if (*first_error == 0)
                        *first_error = r;
                return true;
        }
        return false;
}

int tune_affinity_restore(const tune_ctx *ctx, const tune_affinity_backend *backend,
                          const tune_affinity_originals *originals, tune_affinity_stats *stats) {
        _cleanup_free_ pid_t *tids = NULL;
        tune_affinity_stats dummy = {};
        const tune_cpuset *process_original;
        unsigned n = 0;
        int first_error = 0, r;

        if (originals->pid == 0 || originals->n == 0)
                return 0;
        r = pick_backend(ctx, &backend);
        if (r < 0)
                return r;
        if (!stats)
                stats = &dummy;
        r = originals_check_identity(ctx, originals);
        if (r < 0)
                return r;
        process_original = tune_affinity_originals_process_original(originals);
        r = list_tasks(ctx, originals->pid, &tids, &n);
        if (r < 0)
                return r;
        stats->rounds++;
        for (unsigned i = 0; i < n; i++) {
                const tune_affinity_entry *e = tune_affinity_originals_find(originals, tids[i]);
                _cleanup_cpuset_ tune_cpuset current = {};
                const tune_cpuset *target;

                stats->seen++;
                r = backend->get(backend->userdata, tids[i], &current);
                if (restore_failed(r, stats, &first_error))
                        continue;
                if (e && !tune_cpuset_is_empty(&current) && tune_cpuset_is_subset(&current, &e->applied))
                        target = &e->original;
                else if (!e && tune_affinity_originals_cover(originals, &current))
                        target = process_original;
                else {
                        /* It (or someone) re-bound it after us: theirs to keep. */
                        stats->skipped++;
                        continue;
                }
                if (tune_cpuset_equal(&current, target)) {
                        stats->unchanged++;
                        continue;
                }
                r = backend->set(backend->userdata, tids[i], target);
                if (restore_failed(r, stats, &first_error))
                        continue;
                stats->set++;
        }
        return first_error;
}
