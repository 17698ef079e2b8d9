/* SPDX-License-Identifier: GPL-2.0-only */
/* Rate-limited migration on a fake address space (fake /proc tree + fake move_pages), and
 * the kernel backend's plumbing live on this machine (one node: nothing can really move
 * here; the 4-node VM scenario tests/vm/scenarios/placement.sh proves real moves). */
#include <errno.h>
#include <fcntl.h>
#include <linux/mempolicy.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake-proc.h"
#include "npu-tuned/memmove.h"

/* ---- a fake address space ---- */

typedef struct fake_page {
        uint64_t addr;
        int node;     /* >= 0, or -ENOENT (absent) / -EFAULT (zero page) */
        bool pinned;
        uint64_t pagemap; /* what /proc/PID/pagemap shows (TUNE_PAGEMAP_*) */
} fake_page;

typedef struct fake_mm {
        char root[64];
        fake_page pages[4096];
        unsigned n;
        bool gone;
        unsigned abort_after;   /* > 0: a move call stops after this many pages, like the kernel */
        bool busy_but_moved;    /* pages at odd addresses report -EBUSY but move (THP subpages) */
        bool never_report;      /* every move call stops before its first page */
        unsigned long max_moved_per_step, moved_this_step;
        unsigned long old_mask[TUNE_MEMMOVE_NODEMASK_BITS / (8 * sizeof(unsigned long))];
        unsigned long new_mask[TUNE_MEMMOVE_NODEMASK_BITS / (8 * sizeof(unsigned long))];
} fake_mm;

static fake_page *fake_lookup(fake_mm *mm, uint64_t addr) {
        for (unsigned i = 0; i < mm->n; i++)
                if (mm->pages[i].addr == addr)
                        return &mm->pages[i];
        return NULL;
}

static long fake_move_pages(void *userdata, pid_t pid, unsigned long count, void **pages, const int *nodes,
                            int *status, int flags) {
        fake_mm *mm = userdata;

        if (mm->gone)
                return -ESRCH;
        assert_int_equal(pid, 300);
        assert_true(flags == 0 || flags == MPOL_MF_MOVE);
        for (unsigned long i = 0; i < count; i++) {
                fake_page *p = fake_lookup(mm, (uint64_t) (uintptr_t) pages[i]);
                if (nodes && (mm->never_report || (mm->abort_after > 0 && i >= mm->abort_after))) {
                        /* Like do_pages_move(): the rest is neither tried nor given a status. */
                        return (long) (count - i);
                }
                if (!p) {
                        status[i] = -ENOENT;
                        continue;
                }
                if (!nodes || p->node < 0) {
                        status[i] = p->node;
                        continue;
                }
                mm->moved_this_step++;
                if (p->pinned) {
                        status[i] = -EBUSY;
                        continue;
                }
                bool odd = (p->addr / 4096) % 2 == 1;
                p->node = nodes[i];
                status[i] = mm->busy_but_moved && odd ? -EBUSY : nodes[i];
        }
        return 0;
}

static int fake_page_flags(void *userdata, pid_t pid, uint64_t start, unsigned long count, uint64_t *ret) {
        fake_mm *mm = userdata;

        assert_int_equal(pid, 300);
        for (unsigned long i = 0; i < count; i++) {
                const fake_page *p = fake_lookup(mm, start + i * 4096);
                ret[i] = p ? p->pagemap : 0;
        }
        return 0;
}

static long fake_migrate_pages(void *userdata, pid_t pid, const unsigned long *old_nodes, const unsigned long *new_nodes) {
        fake_mm *mm = userdata;
        memcpy(mm->old_mask, old_nodes, sizeof mm->old_mask);
        memcpy(mm->new_mask, new_nodes, sizeof mm->new_mask);
        return 7;
}

/* A VMA of n pages of page_kib at start; node_of(i) says where page i is. */
static void fake_vma(fake_mm *mm, uint64_t start, unsigned n, unsigned page_kib, int (*node_of)(unsigned), bool (*pinned)(unsigned)) {
        for (unsigned i = 0; i < n; i++) {
                assert_true(mm->n < ELEMENTSOF(mm->pages));
                mm->pages[mm->n++] = (fake_page) {
                        .addr = start + (uint64_t) i * page_kib * 1024,
                        .node = node_of(i),
                        .pinned = pinned && pinned(i),
                };
        }
}

static int a_node(unsigned i) { return i < 600 ? 0 : i < 900 ? 3 : -ENOENT; }
static int b_node(unsigned i) { (void) i; return 0; }
static int c_node(unsigned i) { (void) i; return 3; }
static int e_node(unsigned i) { return i < 5 ? -EFAULT : 1; }
static bool e_pinned(unsigned i) { return i >= 5 && i < 15; }

static void write_file(const char *dir, const char *name, const char *text) {
        fake_proc_put(dir, name, text, strlen(text));
}

static void fake_mm_init(fake_mm *mm, tune_memmove_backend *b) {
        char dir[128];

        memset(mm, 0, sizeof *mm);
        snprintf(mm->root, sizeof mm->root, "/tmp/test-memmove-XXXXXX");
        assert_non_null(mkdtemp(mm->root));
        snprintf(dir, sizeof dir, "%s/proc", mm->root);
        assert_int_equal(mkdir(dir, 0755), 0);
        snprintf(dir, sizeof dir, "%s/proc/300", mm->root);
        assert_int_equal(mkdir(dir, 0755), 0);
        /* A: 1000 pages, 600 on node 0, 300 on node 3 (the target), 100 never touched.
         * B: two 2 MiB hugetlb pages on node 0.   C: 100 pages already on node 3.
         * D: in numa_maps, gone from maps (unmapped between the reads).
         * E: 50 pages on node 1: 5 zero pages (numa_maps does not count them), 10 pinned. */
        fake_vma(mm, 0x10000000, 1000, 4, a_node, NULL);
        fake_vma(mm, 0x20000000, 2, 2048, b_node, NULL);
        fake_vma(mm, 0x30000000, 100, 4, c_node, NULL);
        fake_vma(mm, 0x50000000, 50, 4, e_node, e_pinned);
        write_file(dir, "numa_maps",
                   "10000000 default anon=900 dirty=900 N0=600 N3=300 kernelpagesize_kB=4\n"
                   "20000000 default file=/dev/hugepages/x huge dirty=2 N0=2 kernelpagesize_kB=2048\n"
                   "30000000 default anon=100 dirty=100 N3=100 kernelpagesize_kB=4\n"
                   "40000000 default anon=10 dirty=10 N0=10 kernelpagesize_kB=4\n"
                   "50000000 prefer (many):0-1 anon=45 dirty=45 N1=45 kernelpagesize_kB=4\n");
        write_file(dir, "maps",
                   "10000000-103e8000 rw-p 00000000 00:00 0 \n"
                   "20000000-20400000 rw-s 00000000 00:10 77    /dev/hugepages/x\n"
                   "30000000-30064000 rw-p 00000000 00:00 0 \n"
                   "50000000-50032000 rw-p 00000000 00:00 0 \n"
                   "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n");
        *b = (tune_memmove_backend) { .move_pages = fake_move_pages, .migrate_pages = fake_migrate_pages, .userdata = mm };
}

static void fake_mm_done(fake_mm *mm) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", mm->root);
        assert_int_equal(system(cmd), 0);
}

static void assert_all_moved(fake_mm *mm) {
        for (unsigned i = 0; i < mm->n; i++) {
                const fake_page *p = &mm->pages[i];
                if (p->node < 0)
                        continue;
                if (p->pinned)
                        assert_int_equal(p->node, 1);
                else
                        assert_int_equal(p->node, 3);
        }
}

static void assert_final_stats(const tune_memmove_stats *s) {
        assert_int_equal(s->vmas, 3);
        assert_int_equal(s->vmas_skipped, 1);
        assert_int_equal(s->planned_kib, 600 * 4 + 2 * 2048 + 45 * 4);
        assert_int_equal(s->moved, 600 + 2 + 35);
        assert_int_equal(s->moved_kib, 600 * 4 + 2 * 2048 + 35 * 4);
        assert_int_equal(s->on_target, 300);
        assert_int_equal(s->absent, 100 + 5); /* never touched + the zero pages */
        assert_int_equal(s->busy, 10);
        assert_int_equal(s->unmovable + s->denied + s->target_full + s->failed + s->other, 0);
        assert_int_equal(tune_memmove_stats_not_moved(s), 10);
        assert_int_equal(s->scanned, 1000 + 2 + 50);
}

/* 400 KiB per step (100 small pages): every step stays within it (a 2 MiB page, bigger
 * than the whole budget, moves alone), and the result is as if moved in one go. */
static void test_rate_limited(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_memmove_freep) tune_memmove *m = NULL;
        _cleanup_cpuset_ tune_cpuset target = {};
        tune_memmove_backend b;
        tune_memmove_params params = { .backend = &b, .batch_pages = 64 };
        unsigned steps = 0;
        fake_mm *mm = calloc(1, sizeof *mm);
        int r;
        (void) state;

        assert_non_null(mm);
        fake_mm_init(mm, &b);
        assert_int_equal(tune_ctx_new(mm->root, &ctx), 0);
        assert_int_equal(tune_cpuset_add(&target, 3), 0);
        assert_int_equal(tune_memmove_new(ctx, 300, &target, &params, &m), 0);
        do {
                mm->moved_this_step = 0;
                r = tune_memmove_step(m, 400);
                assert_true(r >= 0);
                if (mm->moved_this_step > mm->max_moved_per_step)
                        mm->max_moved_per_step = mm->moved_this_step;
                steps++;
                assert_true(steps < 100);
        } while (r == 1);
        if (mm->max_moved_per_step > 100)
                fprintf(stderr, "max moved per step %lu\n", mm->max_moved_per_step);
        assert_true(mm->max_moved_per_step <= 100);
        /* 600 small pages / 100 + 2 huge + E (35 + 10 pinned attempts) = 6 + 2 + 1. */
        assert_int_equal(steps, 9);
        assert_final_stats(tune_memmove_get_stats(m));
        assert_all_moved(mm);
        /* Done is done. */
        assert_int_equal(tune_memmove_step(m, 400), 0);
        fake_mm_done(mm);
        free(mm);
}

/* The kernel's ways of under-reporting: a batch cut short with later statuses unwritten,
 * and pages reported busy that moved anyway. The counts still come out right. */
static void test_kernel_quirks(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_memmove_freep) tune_memmove *m = NULL;
        _cleanup_cpuset_ tune_cpuset target = {};
        tune_memmove_backend b;
        tune_memmove_params params = { .backend = &b, .batch_pages = 256 };
        fake_mm *mm = calloc(1, sizeof *mm);
        (void) state;

        assert_non_null(mm);
        fake_mm_init(mm, &b);
        mm->abort_after = 100;
        mm->busy_but_moved = true;
        assert_int_equal(tune_ctx_new(mm->root, &ctx), 0);
        assert_int_equal(tune_cpuset_add(&target, 3), 0);
        assert_int_equal(tune_memmove_new(ctx, 300, &target, &params, &m), 0);
        assert_int_equal(tune_memmove_step(m, 0), 0);
        assert_final_stats(tune_memmove_get_stats(m));
        assert_all_moved(mm);

        /* A kernel that cuts every batch before the first page: all failed, no endless retry. */
        m = tune_memmove_free(m);
        ctx = tune_ctx_free(ctx);
        fake_mm_done(mm);
        fake_mm_init(mm, &b);
        mm->never_report = true;
        assert_int_equal(tune_ctx_new(mm->root, &ctx), 0);
        assert_int_equal(tune_memmove_new(ctx, 300, &target, &params, &m), 0);
        assert_int_equal(tune_memmove_step(m, 0), 0);
        const tune_memmove_stats *st = tune_memmove_get_stats(m);
        assert_int_equal(st->moved, 0);
        assert_int_equal(st->failed, 600 + 2 + 45);
        assert_int_equal(st->on_target, 300);
        assert_int_equal(st->absent, 105);
        assert_int_equal(tune_memmove_stats_not_moved(st), 647);
        fake_mm_done(mm);
        free(mm);
}

static void test_unlimited_and_errors(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_memmove_freep) tune_memmove *m = NULL;
        _cleanup_cpuset_ tune_cpuset target = {}, from = {}, empty = {};
        tune_memmove_backend b;
        tune_memmove_params params = { .backend = &b };
        fake_mm *mm = calloc(1, sizeof *mm);
        (void) state;

        assert_non_null(mm);
        fake_mm_init(mm, &b);
        assert_int_equal(tune_ctx_new(mm->root, &ctx), 0);
        assert_int_equal(tune_cpuset_add(&target, 3), 0);
        assert_int_equal(tune_memmove_new(ctx, 300, &target, &params, &m), 0);
        assert_int_equal(tune_memmove_step(m, 0), 0);
        assert_final_stats(tune_memmove_get_stats(m));
        m = tune_memmove_free(m);

        /* The process exits mid-session. */
        assert_int_equal(tune_memmove_new(ctx, 300, &target, &params, &m), 0);
        mm->gone = true;
        assert_int_equal(tune_memmove_step(m, 0), -ESRCH);
        m = tune_memmove_free(m);

        assert_int_equal(tune_memmove_new(ctx, 301, &target, &params, &m), -ESRCH);
        assert_int_equal(tune_memmove_new(ctx, 300, &empty, &params, &m), -EINVAL);
        assert_int_equal(tune_memmove_new(ctx, 300, &target, NULL, &m), -EOPNOTSUPP);

        /* migrate_pages in one go: nodes 0-3 but the target -> the target, and of those only
         * the ones numa_maps shows pages on (0 and 1; node 2 holds none: the kernel would
         * walk the whole address space for it). */
        assert_int_equal(tune_cpuset_parse_list(&from, "0-3"), 0);
        assert_int_equal(tune_memmove_migrate_all(ctx, 300, &from, &target, &b), 7);
        assert_int_equal(mm->old_mask[0], 0x3);
        assert_int_equal(mm->new_mask[0], 0x8);
        /* numa_maps unreadable: every node given but the target. */
        {
                char path[512];
                snprintf(path, sizeof path, "%s/proc/300/numa_maps", mm->root);
                char aside[512];
                snprintf(aside, sizeof aside, "%s/numa_maps.aside", mm->root);
                assert_int_equal(rename(path, aside), 0);
                assert_int_equal(mkdir(path, 0755), 0); /* a read fails: EISDIR */
                assert_int_equal(tune_memmove_migrate_all(ctx, 300, &from, &target, &b), 7);
                assert_int_equal(mm->old_mask[0], 0x7);
                assert_int_equal(rmdir(path), 0);
                assert_int_equal(rename(aside, path), 0);
        }
        assert_int_equal(tune_memmove_migrate_all(ctx, 300, &target, &target, &b), 0); /* nothing to do */
        assert_int_equal(tune_memmove_migrate_all(ctx, 300, &from, &target, NULL), -EOPNOTSUPP);
        fake_mm_done(mm);
        free(mm);
}

/* Live: the kernel backend's plumbing on a child process, on this one-node machine. */
static void test_kernel_backend_live(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_memmove_freep) tune_memmove *m = NULL;
        _cleanup_cpuset_ tune_cpuset node0 = {};
        const size_t size = 16u << 20;
        int pfd[2], st;
        uintptr_t addr;
        pid_t pid;
        char *buf;
        (void) state;

        assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (buf == MAP_FAILED)
                        _exit(1);
                memset(buf, 1, size / 2); /* the second half stays untouched */
                addr = (uintptr_t) buf;
                if (write(pfd[1], &addr, sizeof addr) != sizeof addr)
                        _exit(1);
                for (;;)
                        pause();
        }
        close(pfd[1]);
        assert_int_equal(read(pfd[0], &addr, sizeof addr), sizeof addr);
        close(pfd[0]);

        assert_int_equal(tune_ctx_new("/", &ctx), 0);
        /* Query: touched pages report node 0 (the only one), untouched ones -ENOENT/-EFAULT. */
        void *pages[2] = { (void *) addr, (void *) (addr + size - 4096) };
        int status[2] = { -1, -1 }, nodes[2] = { 0, 0 };
        assert_int_equal(tune_memmove_backend_kernel.move_pages(NULL, pid, 2, pages, NULL, status, 0), 0);
        assert_int_equal(status[0], 0);
        assert_true(status[1] == -ENOENT || status[1] == -EFAULT);
        /* pagemap: the touched page is there and the child's alone, the untouched one is not. */
        uint64_t flags[2] = { 0, TUNE_PAGEMAP_PRESENT };
        assert_int_equal(tune_memmove_backend_kernel.page_flags(NULL, pid, addr, 1, &flags[0]), 0);
        assert_int_equal(tune_memmove_backend_kernel.page_flags(NULL, pid, addr + size - 4096, 1, &flags[1]), 0);
        assert_true(flags[0] & TUNE_PAGEMAP_PRESENT);
        assert_true(flags[0] & TUNE_PAGEMAP_EXCLUSIVE);
        assert_false(flags[1] & TUNE_PAGEMAP_PRESENT);
        /* Move to the node it is on: fine, status is the node. */
        assert_true(tune_memmove_backend_kernel.move_pages(NULL, pid, 1, pages, nodes, status, MPOL_MF_MOVE) >= 0);
        assert_int_equal(status[0], 0);
        /* migrate_pages with our mask width: accepted (a wrong maxnode would be -EINVAL). */
        unsigned long mask[TUNE_MEMMOVE_NODEMASK_BITS / (8 * sizeof(unsigned long))] = { 1 };
        assert_int_equal(tune_memmove_backend_kernel.migrate_pages(NULL, pid, mask, mask), 0);
        /* A session to node 0 finds nothing off target: done at once. */
        assert_int_equal(tune_cpuset_add(&node0, 0), 0);
        assert_int_equal(tune_memmove_new(ctx, pid, &node0, NULL, &m), 0);
        assert_int_equal(tune_memmove_get_stats(m)->planned_kib, 0);
        assert_int_equal(tune_memmove_step(m, 1024), 0);

        kill(pid, SIGKILL);
        assert_int_equal(waitpid(pid, &st, 0), pid);
        /* Gone. */
        assert_int_equal(tune_memmove_backend_kernel.move_pages(NULL, pid, 1, pages, NULL, status, 0), -ESRCH);
        assert_int_equal(tune_memmove_backend_kernel.page_flags(NULL, pid, addr, 1, flags), -ESRCH);
        m = tune_memmove_free(m);
        assert_int_equal(tune_memmove_new(ctx, pid, &node0, NULL, &m), -ESRCH);
}

/* Automatic NUMA balancing unmaps pages (PROT_NONE) for hinting faults, and on Linux 6.1
 * move_pages(2) reports such a page absent (-ENOENT; -EFAULT for a huge page) and cannot
 * move it (tests/vm/scenarios/placement.sh forces that on a real kernel). pagemap shows it
 * present: the session counts it as hinted, not absent. The zero page is present too but
 * not exclusively mapped, and stays absent. Without the pagemap hook, all are absent. */
static int h_node(unsigned i) { return i < 10 ? -ENOENT : i < 30 ? -EFAULT : i < 35 ? -ENOENT : 0; }

static void test_hinted_pages(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_memmove_freep) tune_memmove *m = NULL;
        _cleanup_cpuset_ tune_cpuset target = {};
        tune_memmove_backend b;
        tune_memmove_params params = { .backend = &b, .batch_pages = 16 };
        fake_mm *mm = calloc(1, sizeof *mm);
        char dir[128];
        (void) state;

        assert_non_null(mm);
        fake_mm_init(mm, &b);
        mm->n = 0;
        /* 10 hinted small pages, 10 hinted huge-page parts, 10 zero pages, 5 never touched,
         * 5 movable. */
        fake_vma(mm, 0x60000000, 40, 4, h_node, NULL);
        for (unsigned i = 0; i < 20; i++)
                mm->pages[i].pagemap = TUNE_PAGEMAP_PRESENT | TUNE_PAGEMAP_EXCLUSIVE;
        for (unsigned i = 20; i < 30; i++)
                mm->pages[i].pagemap = TUNE_PAGEMAP_PRESENT;
        snprintf(dir, sizeof dir, "%s/proc/300", mm->root);
        write_file(dir, "numa_maps", "60000000 default anon=25 dirty=25 N0=25 kernelpagesize_kB=4\n");
        write_file(dir, "maps", "60000000-60028000 rw-p 00000000 00:00 0 \n");
        assert_int_equal(tune_ctx_new(mm->root, &ctx), 0);
        assert_int_equal(tune_cpuset_add(&target, 3), 0);

        b.page_flags = fake_page_flags;
        assert_int_equal(tune_memmove_new(ctx, 300, &target, &params, &m), 0);
        assert_int_equal(tune_memmove_step(m, 0), 0);
        const tune_memmove_stats *st = tune_memmove_get_stats(m);
        assert_int_equal(st->hinted, 20);
        assert_int_equal(st->absent, 15);
        assert_int_equal(st->moved, 5);
        assert_int_equal(tune_memmove_stats_not_moved(st), 0);
        for (unsigned i = 0; i < 40; i++)
                assert_int_equal(mm->pages[i].node, i < 35 ? h_node(i) : 3);

        /* A backend that cannot read pagemap: what the session said before. */
        m = tune_memmove_free(m);
        b.page_flags = NULL;
        for (unsigned i = 35; i < 40; i++)
                mm->pages[i].node = 0;
        assert_int_equal(tune_memmove_new(ctx, 300, &target, &params, &m), 0);
        assert_int_equal(tune_memmove_step(m, 0), 0);
        st = tune_memmove_get_stats(m);
        assert_int_equal(st->hinted, 0);
        assert_int_equal(st->absent, 35);
        assert_int_equal(st->moved, 5);
        fake_mm_done(mm);
        free(mm);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rate_limited),
                cmocka_unit_test(test_kernel_quirks),
                cmocka_unit_test(test_hinted_pages),
                cmocka_unit_test(test_unlimited_and_errors),
                cmocka_unit_test(test_kernel_backend_live),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
