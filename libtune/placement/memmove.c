/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdint.h>
#include <linux/mempolicy.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <numa.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "npu-tuned/lines.h"
#include "npu-tuned/memmove.h"
#include "npu-tuned/numa-maps.h"

#define BATCH_DEFAULT 1024u
#define BATCH_MAX 65536u
/* /proc/PID/maps lines: a path up to PATH_MAX (escaped) plus the fixed fields. */
#define MAPS_LINE_MAX (4 * 4096 + 256)
#define MAPS_FILE_MAX (256u * 1024u * 1024u)
/* A step queries at most this many times its move budget in pages, so a step over sparse
 * VMAs (reserved but untouched) stays short. */
#define SCAN_FACTOR 16
#define NODEMASK_WORDS (TUNE_MEMMOVE_NODEMASK_BITS / (8 * sizeof(unsigned long)))

/* ---- the kernel backend: libnuma, which always acts on the live system ---- */

static long kernel_migrate_pages(void *userdata, pid_t pid, const unsigned long *old_nodes, const unsigned long *new_nodes) {
        /* libnuma's bitmasks over our fixed-width masks (no copy: same word layout). */
        struct bitmask from = { .size = TUNE_MEMMOVE_NODEMASK_BITS, .maskp = (unsigned long *) old_nodes };
        struct bitmask to = { .size = TUNE_MEMMOVE_NODEMASK_BITS, .maskp = (unsigned long *) new_nodes };
        long r = numa_migrate_pages((int) pid, &from, &to);
        return r < 0 ? negative_errno() : r;
}

static long kernel_move_pages(void *userdata, pid_t pid, unsigned long count, void **pages, const int *nodes,
                              int *status, int flags) {
        long r = numa_move_pages((int) pid, count, pages, nodes, status, flags);
        return r < 0 ? negative_errno() : r;
}

/* PAGEMAP_SCAN (Linux 6.7, include/uapi/linux/fs.h), declared here for older headers. */
#ifndef PAGEMAP_SCAN
struct page_region {
        uint64_t start, end, categories;
};
struct pm_scan_arg {
        uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
                category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#endif

/* /proc/PID/pagemap, or -ESRCH when the process is gone. */
static int open_pagemap(pid_t pid) {
        char path[64];
        int fd;

        snprintf(path, sizeof path, "/proc/%d/pagemap", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : negative_errno();
        return fd;
}

static int kernel_present(void *userdata, pid_t pid, uint64_t start, uint64_t end, uint64_t *ret_start,
                          uint64_t *ret_end) {
        _cleanup_close_ int fd = -EBADF;
        struct page_region region = {};
        struct pm_scan_arg arg = {
                .size = sizeof arg,
                .start = start,
                .end = end,
                .vec = (uintptr_t) &region,
                .vec_len = 1,
                .category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
                .return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
        };
        long n;

        fd = open_pagemap(pid);
        if (fd < 0)
                return fd;
        n = ioctl(fd, PAGEMAP_SCAN, &arg);
        if (n < 0)
                return errno == ENOTTY || errno == EINVAL ? -EOPNOTSUPP : negative_errno();
        if (n == 0)
                return 0;
        *ret_start = region.start;
        *ret_end = region.end;
        return 1;
}

static int kernel_page_flags(void *userdata, pid_t pid, uint64_t start, unsigned long count, uint64_t *ret) {
        _cleanup_close_ int fd = -EBADF;
        const long page = sysconf(_SC_PAGESIZE);
        const size_t size = count * sizeof(uint64_t);
        ssize_t n;

        fd = open_pagemap(pid);
        if (fd < 0)
                return fd;
        n = pread(fd, ret, size, (off_t) (start / (uint64_t) page * sizeof(uint64_t)));
        if (n < 0)
                return negative_errno();
        /* Past the end of the address space (cannot happen inside a VMA): not present. */
        memset((char *) ret + n, 0, size - (size_t) n);
        return 0;
}

const tune_memmove_backend tune_memmove_backend_kernel = {
        .migrate_pages = kernel_migrate_pages,
        .move_pages = kernel_move_pages,
        .present = kernel_present,
        .page_flags = kernel_page_flags,
};

static int pick_backend(const tune_ctx *ctx, const tune_memmove_backend **b) {
        if (*b)
                return 0;
        if (!tune_ctx_is_live(ctx))
                return -EOPNOTSUPP;
        *b = &tune_memmove_backend_kernel;
        return 0;
}

uint64_t tune_memmove_stats_not_moved(const tune_memmove_stats *s) {
        return s->busy + s->unmovable + s->denied + s->target_full + s->failed + s->other;
}

/* ---- planning ---- */

typedef struct work_vma {
        uint64_t start, end;  /* end 0: not found in maps */
        unsigned page_kib;
        uint64_t off_pages;   /* pages off target when planned */
} work_vma;

struct tune_memmove {
        pid_t pid;
        const tune_memmove_backend *backend;
        tune_cpuset target;
        int target_node;
        int flags;
        unsigned batch;
        work_vma *vmas;
        unsigned n_vmas, cap_vmas;
        unsigned cur;         /* VMA being worked on */
        uint64_t addr;        /* next page in it */
        uint64_t present_end; /* the present range addr is in ends here (0: look it up) */
        bool no_present;      /* the backend cannot tell present pages: query them all */
        bool move_file;
        unsigned base_page_kib; /* pagemap's granularity */
        void **pages, **move_pages;
        int *status, *nodes, *move_status, *orig;
        uint64_t *page_flags; /* pagemap entries of the batch's pages, read when asked */
        tune_memmove_stats stats;
};

tune_memmove *tune_memmove_free(tune_memmove *m) {
        if (!m)
                return NULL;
        tune_cpuset_done(&m->target);
        free(m->vmas);
        free(m->pages);
        free(m->move_pages);
        free(m->status);
        free(m->nodes);
        free(m->move_status);
        free(m->orig);
        free(m->page_flags);
        free(m);
        return NULL;
}

static int collect_vma(const tune_numa_vma *v, void *userdata) {
        tune_memmove *m = userdata;
        uint64_t off = 0;

        for (int node = 0; node <= v->max_node; node++)
                if (v->node_pages[node] > 0 && !tune_cpuset_has(&m->target, (unsigned) node))
                        off += v->node_pages[node];
        if (off == 0)
                return 0;
        if (v->file && !v->huge && !m->move_file) {
                /* Page cache and shared memory: not this process's alone. */
                m->stats.vmas_file++;
                return 0;
        }
        if (m->n_vmas == m->cap_vmas) {
                unsigned cap = m->cap_vmas ? m->cap_vmas * 2 : 64;
                work_vma *a = realloc(m->vmas, cap * sizeof(work_vma));
                if (!a)
                        return -ENOMEM;
                m->vmas = a;
                m->cap_vmas = cap;
        }
        m->vmas[m->n_vmas++] = (work_vma) { .start = v->start, .page_kib = v->page_kib, .off_pages = off };
        m->stats.planned_kib += off * v->page_kib;
        return 0;
}

static int parse_hex(const char *s, size_t len, uint64_t *ret) {
        uint64_t v = 0;

        if (len == 0 || len > 16)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                unsigned d = c >= '0' && c <= '9' ? (unsigned) (c - '0') :
                             c >= 'a' && c <= 'f' ? (unsigned) (c - 'a' + 10) : 16;
                if (d > 15)
                        return -EINVAL;
                v = v << 4 | d;
        }
        *ret = v;
        return 0;
}

static int cmp_vma(const void *a, const void *b) {
        uint64_t x = ((const work_vma *) a)->start, y = ((const work_vma *) b)->start;
        return x < y ? -1 : x > y;
}

/* "start-end perms offset dev inode path": the end of a VMA we plan to work on. */
static int maps_line(const char *line, size_t len, void *userdata) {
        tune_memmove *m = userdata;
        const char *dash = memchr(line, '-', len), *sp;
        uint64_t start, end;
        unsigned lo = 0, hi = m->n_vmas;

        if (!dash)
                return 0;
        sp = memchr(dash, ' ', len - (size_t) (dash - line));
        if (!sp || parse_hex(line, (size_t) (dash - line), &start) < 0 ||
            parse_hex(dash + 1, (size_t) (sp - dash - 1), &end) < 0 || end <= start)
                return 0;
        while (lo < hi) {
                unsigned mid = (lo + hi) / 2;
                if (m->vmas[mid].start == start) {
                        m->vmas[mid].end = end;
                        break;
                }
                if (m->vmas[mid].start < start)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return 0;
}

int tune_memmove_new(const tune_ctx *ctx, pid_t pid, const tune_cpuset *target_nodes,
                     const tune_memmove_params *params, tune_memmove **ret) {
        _cleanup_(tune_memmove_freep) tune_memmove *m = NULL;
        const tune_memmove_params defaults = {};
        unsigned keep = 0;
        char path[64];
        int r;

        if (pid <= 0 || !target_nodes || tune_cpuset_is_empty(target_nodes) || !ret)
                return -EINVAL;
        if (!params)
                params = &defaults;
        m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->pid = pid;
        m->backend = params->backend;
        r = pick_backend(ctx, &m->backend);
        if (r < 0)
                return r;
        r = tune_cpuset_copy(&m->target, target_nodes);
        if (r < 0)
                return r;
        m->target_node = tune_cpuset_next(target_nodes, 0);
        if (m->target_node >= TUNE_MEMMOVE_NODEMASK_BITS)
                return -ERANGE;
        m->flags = params->move_shared ? MPOL_MF_MOVE_ALL : MPOL_MF_MOVE;
        m->move_file = params->move_file;
        m->no_present = !m->backend->present;
        m->batch = params->batch_pages ? params->batch_pages : BATCH_DEFAULT;
        if (m->batch > BATCH_MAX)
                m->batch = BATCH_MAX;
        m->pages = calloc(m->batch, sizeof(void *));
        m->move_pages = calloc(m->batch, sizeof(void *));
        m->status = calloc(m->batch, sizeof(int));
        m->nodes = calloc(m->batch, sizeof(int));
        m->move_status = calloc(m->batch, sizeof(int));
        m->orig = calloc(m->batch, sizeof(int));
        m->page_flags = calloc(m->batch, sizeof(uint64_t));
        if (!m->pages || !m->move_pages || !m->status || !m->nodes || !m->move_status || !m->orig ||
            !m->page_flags)
                return -ENOMEM;
        m->base_page_kib = (unsigned) (sysconf(_SC_PAGESIZE) / 1024);

        r = tune_numa_maps_foreach(ctx, pid, collect_vma, m, NULL);
        if (r < 0)
                return r;
        if (m->n_vmas > 1)
                qsort(m->vmas, m->n_vmas, sizeof(work_vma), cmp_vma);
        r = tune_path(path, sizeof path, "/proc/%d/maps", (int) pid);
        if (r < 0)
                return r;
        r = tune_foreach_line_slow(ctx, pid, path, MAPS_LINE_MAX, MAPS_FILE_MAX, maps_line, m, NULL);
        if (r == -ENOENT)
                return -ESRCH;
        if (r < 0)
                return r;
        /* VMAs gone (or changed) between the two reads are skipped. */
        for (unsigned i = 0; i < m->n_vmas; i++) {
                if (m->vmas[i].end == 0) {
                        m->stats.vmas_skipped++;
                        m->stats.planned_kib -= m->vmas[i].off_pages * m->vmas[i].page_kib;
                        continue;
                }
                m->vmas[keep++] = m->vmas[i];
        }
        m->n_vmas = keep;
        m->stats.vmas = keep;
        m->addr = keep > 0 ? m->vmas[0].start : 0;
        *ret = TAKE_PTR(m);
        return 0;
}

const tune_memmove_stats *tune_memmove_get_stats(const tune_memmove *m) {
        return &m->stats;
}

static void count_query_status(tune_memmove_stats *s, int st) {
        switch (st) {
        case -ENOENT:
                s->absent++;
                break;
        case -EFAULT:
                s->unmovable++;
                break;
        case -EACCES:
                s->denied++;
                break;
        case -EBUSY:
                s->busy++;
                break;
        case -EAGAIN:
                s->failed++;
                break;
        default:
                s->other++;
        }
}

static void count_move_status(tune_memmove *m, int st, unsigned page_kib) {
        tune_memmove_stats *s = &m->stats;

        if (st >= 0) {
                if (st == m->target_node) {
                        s->moved++;
                        s->moved_kib += page_kib;
                } else
                        s->other++;
                return;
        }
        switch (st) {
        case -ENOMEM:
                s->target_full++;
                break;
        case -ENOENT:
                s->absent++; /* went away between query and move */
                break;
        default:
                count_query_status(s, st);
        }
}

/* move_pages(2) stops at the first batch of pages that fails to migrate and returns how
 * many were not migrated; the statuses of the pages after it are NOT written. So every
 * status starts as this sentinel, pages still carrying it are tried again, and pages that
 * failed are queried once more: a subpage of a transparent huge page that moved with its
 * head can report a failure although it is on the target now. */
#define STATUS_UNSET INT32_MIN
#define MOVE_ATTEMPTS 4

static void add_failed(tune_memmove *m, unsigned *n_failed, void *page, int st) {
        /* m->pages and m->orig are free once the batch's query is done. */
        m->pages[*n_failed] = page;
        m->orig[*n_failed] = st;
        (*n_failed)++;
}

static int move_batch(tune_memmove *m, unsigned n, unsigned page_kib) {
        unsigned n_failed = 0;
        long r;

        for (unsigned attempt = 0; n > 0; attempt++) {
                bool last = attempt + 1 >= MOVE_ATTEMPTS;
                unsigned n_retry = 0, n_reported = 0;

                for (unsigned i = 0; i < n; i++) {
                        m->nodes[i] = m->target_node;
                        m->move_status[i] = STATUS_UNSET;
                }
                r = m->backend->move_pages(m->backend->userdata, m->pid, n, m->move_pages, m->nodes,
                                           m->move_status, m->flags);
                m->stats.calls++;
                if (r < 0)
                        return r == -ENOENT ? -ESRCH : (int) r;
                for (unsigned i = 0; i < n; i++) {
                        int st = m->move_status[i];

                        if (st == STATUS_UNSET) {
                                if (last)
                                        add_failed(m, &n_failed, m->move_pages[i], -EAGAIN);
                                else
                                        m->move_pages[n_retry++] = m->move_pages[i];
                                continue;
                        }
                        n_reported++;
                        if (st >= 0 || st == -ENOENT || st == -ENOMEM)
                                count_move_status(m, st, page_kib);
                        else
                                add_failed(m, &n_failed, m->move_pages[i], st);
                }
                if (n_retry > 0 && n_reported == 0) {
                        /* The kernel wrote no status at all: trying again will not help. */
                        for (unsigned i = 0; i < n_retry; i++)
                                add_failed(m, &n_failed, m->move_pages[i], -EAGAIN);
                        n_retry = 0;
                }
                n = n_retry;
        }
        if (n_failed == 0)
                return 0;
        r = m->backend->move_pages(m->backend->userdata, m->pid, n_failed, m->pages, NULL, m->status, 0);
        m->stats.calls++;
        if (r < 0)
                return r == -ENOENT ? -ESRCH : (int) r;
        for (unsigned i = 0; i < n_failed; i++) {
                int now = m->status[i];
                count_move_status(m, now >= 0 && tune_cpuset_has(&m->target, (unsigned) now) ? m->target_node : m->orig[i],
                                  page_kib);
        }
        return 0;
}

/* The pagemap entries of the batch's pages into m->page_flags; all zero (not present) when
 * the backend cannot read them or the VMA's pages are not base pages (hugetlb: never
 * unmapped for hinting faults). */
static int query_page_flags(tune_memmove *m, const work_vma *v, uint64_t count) {
        if (m->backend->page_flags && v->page_kib == m->base_page_kib) {
                int r = m->backend->page_flags(m->backend->userdata, m->pid, m->addr, (unsigned long) count,
                                               m->page_flags);
                if (r >= 0 || r == -ESRCH)
                        return r;
        }
        memset(m->page_flags, 0, count * sizeof(uint64_t));
        return 0;
}

int tune_memmove_step(tune_memmove *m, uint64_t max_kib) {
        /* moved_kib: KiB we asked the kernel to move in this step (the cost the budget
         * bounds, whether or not every page could move). */
        uint64_t moved_kib = 0, scanned = 0, scan_limit = UINT64_MAX;

        if (max_kib > 0)
                scan_limit = (max_kib / 4 > 0 ? max_kib / 4 : 1) * SCAN_FACTOR;
        while (m->cur < m->n_vmas) {
                const work_vma *v = &m->vmas[m->cur];
                const uint64_t page_bytes = (uint64_t) v->page_kib * 1024;
                uint64_t limit = v->end, left;
                uint64_t count = m->batch, consumed, budget_pages = UINT64_MAX;
                unsigned n_move = 0;
                long r;

                if (!m->no_present && m->addr < v->end) {
                        /* Only present pages are worth a query: jump over the holes. */
                        if (m->addr >= m->present_end) {
                                uint64_t s = 0, e = 0;
                                int p = m->backend->present(m->backend->userdata, m->pid, m->addr, v->end, &s, &e);
                                if (p == -EOPNOTSUPP)
                                        m->no_present = true;
                                else if (p < 0)
                                        return p;
                                else if (p == 0 || s >= v->end)
                                        m->addr = v->end;
                                else {
                                        s -= s % page_bytes;
                                        if (s > m->addr)
                                                m->addr = s;
                                        m->present_end = e > m->addr ? e : m->addr + page_bytes;
                                }
                        }
                        if (!m->no_present && m->present_end < limit)
                                limit = m->present_end;
                }
                left = m->addr < limit ? (limit - m->addr + page_bytes - 1) / page_bytes : 0;
                if (left == 0) {
                        if (m->addr < v->end && !m->no_present)
                                continue; /* the next present range of this VMA */
                        if (++m->cur < m->n_vmas)
                                m->addr = m->vmas[m->cur].start;
                        m->present_end = 0;
                        continue;
                }
                if (max_kib > 0) {
                        if (moved_kib >= max_kib || scanned >= scan_limit)
                                return 1;
                        budget_pages = (max_kib - moved_kib) / v->page_kib;
                        /* A page bigger than the whole budget still moves, alone. */
                        if (budget_pages == 0)
                                budget_pages = moved_kib == 0 ? 1 : 0;
                        if (budget_pages == 0)
                                return 1;
                }
                if (count > left)
                        count = left;
                for (uint64_t i = 0; i < count; i++)
                        m->pages[i] = (void *) (uintptr_t) (m->addr + i * page_bytes);

                /* Where is each page now? */
                r = m->backend->move_pages(m->backend->userdata, m->pid, count, m->pages, NULL, m->status, 0);
                m->stats.calls++;
                if (r < 0)
                        return r == -ENOENT ? -ESRCH : (int) r;
                /* Take off-target pages up to the budget; the batch ends before the first
                 * one that does not fit, and the next step starts there. */
                bool flags_read = false;
                for (consumed = 0; consumed < count; consumed++) {
                        int st = m->status[consumed];

                        if (st >= 0 && tune_cpuset_has(&m->target, (unsigned) st))
                                m->stats.on_target++;
                        else if (st >= 0) {
                                if (n_move >= budget_pages)
                                        break;
                                m->move_pages[n_move++] = m->pages[consumed];
                        } else if (st == -EFAULT || st == -ENOENT) {
                                /* No page of its own there: never touched (no page table:
                                 * -EFAULT), not present (-ENOENT), or the zero page. Or a
                                 * page that is there but unmapped for a NUMA hinting fault,
                                 * which move_pages(2) cannot see on some kernels: pagemap
                                 * tells them apart (the zero page is present but not
                                 * exclusively mapped, and queries as -EFAULT). */
                                if (!flags_read) {
                                        r = query_page_flags(m, v, count);
                                        if (r < 0)
                                                return r;
                                        flags_read = true;
                                }
                                uint64_t pf = m->page_flags[consumed];
                                if ((pf & TUNE_PAGEMAP_PRESENT) && (st == -ENOENT || (pf & TUNE_PAGEMAP_EXCLUSIVE)))
                                        m->stats.hinted++;
                                else
                                        m->stats.absent++;
                        } else
                                count_query_status(&m->stats, st);
                }
                m->stats.scanned += consumed;
                scanned += consumed;
                if (n_move > 0) {
                        r = move_batch(m, n_move, v->page_kib);
                        if (r < 0)
                                return r;
                        moved_kib += (uint64_t) n_move * v->page_kib;
                }
                m->addr += consumed * page_bytes;
        }
        return 0;
}

static int nodemask_from(const tune_cpuset *s, unsigned long mask[static NODEMASK_WORDS]) {
        memset(mask, 0, NODEMASK_WORDS * sizeof(unsigned long));
        TUNE_CPUSET_FOREACH(n, s) {
                if (n >= TUNE_MEMMOVE_NODEMASK_BITS)
                        return -ERANGE;
                mask[(unsigned) n / (8 * sizeof(unsigned long))] |= 1UL << ((unsigned) n % (8 * sizeof(unsigned long)));
        }
        return 0;
}

/* Narrow the source nodes to those that hold pages of the process. The kernel walks the
 * whole address space once per source node (do_migrate_pages() calls migrate_to_node()
 * for each), so every empty source node is a page-table walk for nothing: with 1 GiB in
 * the 4-node guest, sources {0,1,2} took 2.8x migratepages' time for {0}. numa_maps
 * costs one walk. When it cannot be read, every node given stays (-ESRCH: gone). */
static int keep_nodes_with_pages(const tune_ctx *ctx, pid_t pid, tune_cpuset *from) {
        _cleanup_cpuset_ tune_cpuset held = {};
        tune_numa_usage u = {};
        int r;

        r = tune_numa_maps_read(ctx, pid, &u);
        if (r == -ESRCH)
                return r;
        if (r < 0)
                return 0;
        for (unsigned i = 0; r >= 0 && i < u.n_nodes; i++)
                if (u.node_kib[i] > 0)
                        r = tune_cpuset_add(&held, i);
        tune_numa_usage_done(&u);
        if (r < 0)
                return r;
        tune_cpuset_and(from, &held);
        return 0;
}

long tune_memmove_migrate_all(const tune_ctx *ctx, pid_t pid, const tune_cpuset *from_nodes,
                              const tune_cpuset *target_nodes, const tune_memmove_backend *backend) {
        _cleanup_cpuset_ tune_cpuset from = {}, to = {};
        unsigned long old_mask[NODEMASK_WORDS], new_mask[NODEMASK_WORDS];
        int target, r;

        if (pid <= 0 || !from_nodes || !target_nodes)
                return -EINVAL;
        target = tune_cpuset_next(target_nodes, 0);
        if (target < 0)
                return -EINVAL;
        r = pick_backend(ctx, &backend);
        if (r < 0)
                return r;
        r = tune_cpuset_copy(&from, from_nodes);
        if (r < 0)
                return r;
        tune_cpuset_andnot(&from, target_nodes);
        r = keep_nodes_with_pages(ctx, pid, &from);
        if (r < 0)
                return r;
        if (tune_cpuset_is_empty(&from))
                return 0;
        r = tune_cpuset_add(&to, (unsigned) target);
        if (r < 0)
                return r;
        r = nodemask_from(&from, old_mask);
        if (r < 0)
                return r;
        r = nodemask_from(&to, new_mask);
        if (r < 0)
                return r;
        return backend->migrate_pages(backend->userdata, pid, old_mask, new_mask);
}
