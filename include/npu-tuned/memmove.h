/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Moving a process's memory to its memory node(s), rate-limited.
 *
 * Migration stalls the threads that touch the pages being moved, so a 10 GiB process must
 * not be moved in one go while it serves. A tune_memmove session plans the work once
 * (the VMAs that have pages off the target nodes, from /proc/PID/numa_maps joined with
 * /proc/PID/maps for their ends) and then moves at most N KiB per tune_memmove_step()
 * call, with move_pages(2) in batches: first a query (where is each page?), then a move
 * of only the pages not on a target node. So the budget counts pages really moved, and
 * every page gets a status: moved, already there, absent (never touched, zero page),
 * hinted (there, but unmapped by automatic NUMA balancing: move_pages cannot see it),
 * busy (pinned for DMA: -EBUSY), unmovable (special mapping: -EFAULT), denied (shared
 * without MPOL_MF_MOVE_ALL: -EACCES), target full (-ENOMEM), failed. Pages that cannot move are
 * counted and reported, never an error. move_pages(2) stops a batch at the first page
 * group that fails to migrate and leaves the later statuses unwritten: those pages are
 * tried again, and pages reported as failed are queried once more (a subpage of a
 * transparent huge page that moved with its head can report -EBUSY).
 *
 * The daemon drives a session from an sd-event timer: every T ms,
 * tune_memmove_step(m, rate_kib_per_s * T / 1000) until it returns 0. When the policy sets
 * no rate limit, tune_memmove_migrate_all() does it in one migrate_pages(2) call.
 *
 * Pages not on any node of the target set go to its first node (for a process spanning
 * nodes, the memory node of its first accelerator).
 *
 * The kernel is reached through a small backend; with the kernel backend the context must
 * be live (-EOPNOTSUPP otherwise). migrate_pages/move_pages take a pid: hold a pidfd on
 * the process while a session runs and check it after each step (pid reuse). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "npu-tuned/context.h"
#include "npu-tuned/cpuset.h"

/* Node masks given to the kernel have this many bits (the kernel's MAX_NUMNODES limit). */
#define TUNE_MEMMOVE_NODEMASK_BITS 1024

typedef struct tune_memmove_backend {
        /* migrate_pages(2): pages not moved (>= 0) or -errno. Masks are
         * TUNE_MEMMOVE_NODEMASK_BITS wide. */
        long (*migrate_pages)(void *userdata, pid_t pid, const unsigned long *old_nodes, const unsigned long *new_nodes);
        /* move_pages(2): >= 0 or -errno; status[i] per page. nodes NULL: query only. */
        long (*move_pages)(void *userdata, pid_t pid, unsigned long count, void **pages, const int *nodes,
                           int *status, int flags);
        /* The first range of present pages in [start, end): 1 with *ret_start and *ret_end, 0
         * when there is none, -EOPNOTSUPP when the kernel cannot tell (before 6.7: no
         * PAGEMAP_SCAN) or NULL: every page of a VMA is queried. This is what makes a
         * sparse mapping (1 TiB reserved, a few pages touched) cost a few calls instead of
         * a query per page. */
        int (*present)(void *userdata, pid_t pid, uint64_t start, uint64_t end, uint64_t *ret_start,
                       uint64_t *ret_end);
        /* pagemap(5) entries of count base pages from start (TUNE_PAGEMAP_*): 0 or -errno;
         * NULL: never asked (every page the query reports absent counts as absent). Asked
         * only for a batch in which the query reports pages absent (-ENOENT, -EFAULT), to
         * tell those that are there (hinted, below) from those that are not. */
        int (*page_flags)(void *userdata, pid_t pid, uint64_t start, unsigned long count, uint64_t *ret);
        void *userdata;
} tune_memmove_backend;

extern const tune_memmove_backend tune_memmove_backend_kernel;

/* pagemap(5) bits. */
#define TUNE_PAGEMAP_PRESENT (UINT64_C(1) << 63)
#define TUNE_PAGEMAP_EXCLUSIVE (UINT64_C(1) << 56)

typedef struct tune_memmove_params {
        const tune_memmove_backend *backend; /* NULL: the kernel */
        bool move_shared;     /* MPOL_MF_MOVE_ALL: pages other processes map too (CAP_SYS_NICE);
                               * the reference deployment's 1.1 GB of shared memory needed it. Default
                               * MPOL_MF_MOVE: only the process's own pages, so a process
                               * that maps another's files or memory cannot drag them */
        bool move_file;       /* file-backed mappings too (page cache, shmem); default: skipped,
                               * except hugetlbfs (anonymous huge pages show as files) */
        unsigned batch_pages; /* pages per move_pages() call; 0: 1024 */
} tune_memmove_params;

typedef struct tune_memmove_stats {
        uint64_t planned_kib;   /* off-target KiB numa_maps showed when the session began */
        unsigned vmas;          /* VMAs with off-target pages */
        unsigned vmas_skipped;  /* gone from /proc/PID/maps by the time we looked */
        unsigned vmas_file;     /* file-backed, left alone (no move_file) */
        uint64_t scanned;       /* pages queried */
        uint64_t on_target;     /* already on a target node */
        uint64_t moved;
        uint64_t moved_kib;
        uint64_t absent;        /* no page of its own there: never touched, swapped out, the zero
                                 * page (-ENOENT, or -EFAULT when queried) */
        uint64_t hinted;        /* there (pagemap: present), yet move_pages(2) reports it absent and
                                 * cannot move it: automatic NUMA balancing has unmapped it for a
                                 * hinting fault (PROT_NONE; seen on Linux 6.1: -ENOENT, -EFAULT
                                 * for a huge page). The kernel itself moves it toward the node
                                 * of the CPU that next touches it */
        uint64_t busy;          /* -EBUSY: pinned (DMA) or under I/O */
        uint64_t unmovable;     /* -EFAULT when moved: special or device mapping */
        uint64_t denied;        /* -EACCES: mapped by other processes, no MOVE_ALL */
        uint64_t target_full;   /* -ENOMEM: the target node ran out */
        uint64_t failed;        /* migration failed; the kernel cut the batch short (tried
                                 * MOVE_ATTEMPTS times) */
        uint64_t other;         /* any other per-page status */
        unsigned calls;         /* move_pages() calls */
} tune_memmove_stats;

/* Pages that should have moved and did not. */
uint64_t tune_memmove_stats_not_moved(const tune_memmove_stats *s) _pure_;

typedef struct tune_memmove tune_memmove;

/* Plan a session: target_nodes must be non-empty. -ESRCH when the process is gone. */
int tune_memmove_new(const tune_ctx *ctx, pid_t pid, const tune_cpuset *target_nodes,
                     const tune_memmove_params *params, tune_memmove **ret);
tune_memmove *tune_memmove_free(tune_memmove *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(tune_memmove *, tune_memmove_free);

/* Move at most max_kib KiB (0: no limit). Returns 1 when work remains, 0 when done, -ESRCH
 * when the process is gone, another -errno when the kernel refused the call (-EPERM: no
 * CAP_SYS_NICE for another user's process). */
int tune_memmove_step(tune_memmove *m, uint64_t max_kib);
const tune_memmove_stats *tune_memmove_get_stats(const tune_memmove *m) _pure_;

/* Unlimited: one migrate_pages(2) from every node of from_nodes not in target_nodes that
 * holds pages of the process (numa_maps; all of them when it cannot be read) to the first
 * target node. Returns the pages not moved (>= 0) or -errno. */
long tune_memmove_migrate_all(const tune_ctx *ctx, pid_t pid, const tune_cpuset *from_nodes,
                              const tune_cpuset *target_nodes, const tune_memmove_backend *backend);
