/* SPDX-License-Identifier: GPL-2.0-only */
/* The kernel memory backend with each call on a proc guard worker (proc-guard.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proc-guard.h"

/* A job owns copies of what the call reads and writes: a written-off worker may write its
 * status array long after the session that asked has been freed. */

typedef struct MemJob {
        pid_t pid;
        enum { MEM_MIGRATE, MEM_MOVE, MEM_PRESENT, MEM_FLAGS } op;
        unsigned long old_nodes[TUNE_MEMMOVE_NODEMASK_BITS / (8 * sizeof(unsigned long))];
        unsigned long new_nodes[TUNE_MEMMOVE_NODEMASK_BITS / (8 * sizeof(unsigned long))];
        unsigned long count;
        void **pages;
        int *nodes, *status;
        int flags;
        uint64_t start, end, ret_start, ret_end;
        uint64_t *page_flags;
} MemJob;

static void mem_job_free(void *userdata) {
        MemJob *j = userdata;

        free(j->pages);
        free(j->nodes);
        free(j->status);
        free(j->page_flags);
        free(j);
}

static long mem_job_run(void *userdata, const tune_ctx *ctx) {
        const tune_memmove_backend *k = &tune_memmove_backend_kernel;
        MemJob *j = userdata;

        (void) ctx;
        switch (j->op) {
        case MEM_MIGRATE:
                return k->migrate_pages(k->userdata, j->pid, j->old_nodes, j->new_nodes);
        case MEM_MOVE:
                return k->move_pages(k->userdata, j->pid, j->count, j->pages, j->nodes, j->status, j->flags);
        case MEM_PRESENT:
                return k->present(k->userdata, j->pid, j->start, j->end, &j->ret_start, &j->ret_end);
        case MEM_FLAGS:
                return k->page_flags(k->userdata, j->pid, j->start, j->count, j->page_flags);
        }
        return -EINVAL;
}

static MemJob *mem_job_new(pid_t pid, int op) {
        MemJob *j = calloc(1, sizeof *j);

        if (j) {
                j->pid = pid;
                j->op = op;
        }
        return j;
}

static long mem_run(ProcGuard *g, MemJob *j, const char *what, bool *ret_done) {
        return proc_guard_run(g, j->pid, PROC_GUARD_MEMMOVE_TIMEOUT_MS, what,
                              "its memory stays where it is for now, and it is not read again for 30 s", mem_job_run,
                              mem_job_free, j, ret_done);
}

static long guarded_migrate_pages(void *userdata, pid_t pid, const unsigned long *old_nodes,
                                  const unsigned long *new_nodes) {
        MemJob *j = mem_job_new(pid, MEM_MIGRATE);
        bool done;
        long r;

        if (!j)
                return -ENOMEM;
        memcpy(j->old_nodes, old_nodes, sizeof j->old_nodes);
        memcpy(j->new_nodes, new_nodes, sizeof j->new_nodes);
        r = mem_run(userdata, j, "migrate_pages(2)", &done);
        if (done)
                mem_job_free(j);
        return r;
}

static long guarded_move_pages(void *userdata, pid_t pid, unsigned long count, void **pages, const int *nodes,
                               int *status, int flags) {
        MemJob *j = mem_job_new(pid, MEM_MOVE);
        bool done;
        long r;

        if (!j)
                return -ENOMEM;
        j->count = count;
        j->flags = flags;
        j->pages = calloc(count ? count : 1, sizeof *j->pages);
        j->status = calloc(count ? count : 1, sizeof *j->status);
        j->nodes = nodes ? calloc(count ? count : 1, sizeof *j->nodes) : NULL;
        if (!j->pages || !j->status || (nodes && !j->nodes)) {
                mem_job_free(j);
                return -ENOMEM;
        }
        memcpy(j->pages, pages, count * sizeof *pages);
        if (nodes)
                memcpy(j->nodes, nodes, count * sizeof *nodes);
        r = mem_run(userdata, j, "move_pages(2)", &done);
        if (!done)
                return r;
        memcpy(status, j->status, count * sizeof *status);
        mem_job_free(j);
        return r;
}

static int guarded_present(void *userdata, pid_t pid, uint64_t start, uint64_t end, uint64_t *ret_start,
                           uint64_t *ret_end) {
        MemJob *j = mem_job_new(pid, MEM_PRESENT);
        bool done;
        long r;

        if (!j)
                return -ENOMEM;
        j->start = start;
        j->end = end;
        r = mem_run(userdata, j, "pagemap (PAGEMAP_SCAN)", &done);
        if (!done)
                return (int) r;
        *ret_start = j->ret_start;
        *ret_end = j->ret_end;
        mem_job_free(j);
        return (int) r;
}

static int guarded_page_flags(void *userdata, pid_t pid, uint64_t start, unsigned long count, uint64_t *ret) {
        MemJob *j = mem_job_new(pid, MEM_FLAGS);
        bool done;
        long r;

        if (!j)
                return -ENOMEM;
        j->start = start;
        j->count = count;
        j->page_flags = calloc(count ? count : 1, sizeof *j->page_flags);
        if (!j->page_flags) {
                mem_job_free(j);
                return -ENOMEM;
        }
        r = mem_run(userdata, j, "pagemap", &done);
        if (!done)
                return (int) r;
        memcpy(ret, j->page_flags, count * sizeof *ret);
        mem_job_free(j);
        return (int) r;
}

const tune_memmove_backend *proc_guard_memmove_backend(ProcGuard *g) {
        tune_memmove_backend *b = proc_guard_memmove_slot(g);

        *b = (tune_memmove_backend) {
                .migrate_pages = guarded_migrate_pages,
                .move_pages = guarded_move_pages,
                .present = guarded_present,
                .page_flags = guarded_page_flags,
                .userdata = g,
        };
        return b;
}
