/* SPDX-License-Identifier: GPL-2.0-only */
/* A sparse mapping costs its present pages, not its size (docs/trust.md).
 *
 * A child reserves 1 TiB (MAP_NORESERVE) and touches 3 pages of it, and maps a file it
 * touches too. A memory session from its node to a node this machine lacks (so that every
 * touched page is "off target" even on one node) queries pages with the real kernel
 * (move_pages with no nodes, PAGEMAP_SCAN for the present ranges) and "moves" them with a
 * stand-in (a real move to a missing node would fail). It must take milliseconds of CPU
 * (< 100 ms asserted), query only present pages, move the touched anonymous pages and
 * leave the file mapping alone.
 * Before (every page of a VMA queried): ~21 s of CPU per TiB; the test stops such a run
 * after 2 s and reports what it would have cost. Needs Linux 6.7 (PAGEMAP_SCAN): exit 77
 * otherwise, saying so. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "npu-tuned/context.h"
#include "npu-tuned/memmove.h"

#define TIB (1ULL << 40)
#define MISSING_NODE 63

static unsigned long moved_pages;

static long query_real_move_fake(void *userdata, pid_t pid, unsigned long count, void **pages, const int *nodes,
                                 int *status, int flags) {
        if (!nodes)
                return tune_memmove_backend_kernel.move_pages(NULL, pid, count, pages, NULL, status, flags);
        for (unsigned long i = 0; i < count; i++)
                status[i] = nodes[i];
        moved_pages += count;
        return 0;
}

static double cpu_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_memmove_freep) tune_memmove *m = NULL;
        _cleanup_cpuset_ tune_cpuset target = {};
        tune_memmove_backend backend = { .move_pages = query_real_move_fake,
                                         .present = tune_memmove_backend_kernel.present };
        tune_memmove_params params = { .backend = &backend };
        char file[] = "/tmp/memmove-sparse-XXXXXX";
        int pfd[2], fails = 0, r = 1, st;
        uint64_t start_probe, end_probe;
        double t0, ms;
        pid_t pid;

        /* --without-scan: the fallback (every page queried), to measure what it costs. */
        if (argc > 1 && streq(argv[1], "--without-scan"))
                backend.present = NULL;
        if (pipe2(pfd, O_CLOEXEC) < 0)
                return 1;
        int ffd = mkstemp(file);
        if (ffd < 0 || ftruncate(ffd, 1 << 20) < 0)
                return 1;
        unlink(file);
        pid = fork();
        if (pid == 0) {
                char *big, *f;
                prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                big = mmap(NULL, TIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
                f = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, ffd, 0);
                if (big == MAP_FAILED || f == MAP_FAILED)
                        _exit(1);
                big[0] = big[TIB / 2] = big[TIB - 1] = 1;
                memset(f, 1, 1 << 20);
                (void) !write(pfd[1], "r", 1);
                for (;;)
                        pause();
        }
        close(pfd[1]);
        close(ffd);
        char c;
        if (read(pfd[0], &c, 1) != 1) {
                printf("SKIP: the child could not reserve 1 TiB (overcommit policy?)\n");
                return 77;
        }
        if (tune_ctx_new("/", &ctx) < 0 || tune_cpuset_add(&target, MISSING_NODE) < 0)
                goto out;
        if (tune_memmove_backend_kernel.present(NULL, pid, 0, UINT64_MAX & ~4095ULL, &start_probe, &end_probe) ==
            -EOPNOTSUPP) {
                printf("SKIP: this kernel has no PAGEMAP_SCAN (Linux 6.7)\n");
                r = 77;
                goto out;
        }

        t0 = cpu_ms();
        if (tune_memmove_new(ctx, pid, &target, &params, &m) < 0) {
                printf("FAIL: tune_memmove_new\n");
                goto out;
        }
        for (;;) {
                int s = tune_memmove_step(m, 64 * 1024);
                if (s < 0) {
                        printf("FAIL: tune_memmove_step: %s\n", strerror(-s));
                        goto out;
                }
                if (s == 0)
                        break;
                if (cpu_ms() - t0 > 2000) {
                        const tune_memmove_stats *x = tune_memmove_get_stats(m);
                        printf("FAIL: stopped after 2 s of CPU: %llu pages queried of %llu (1 TiB would cost %.0f s)\n",
                               (unsigned long long) x->scanned, (unsigned long long) (TIB / 4096),
                               2.0 * (TIB / 4096) / (double) (x->scanned ? x->scanned : 1));
                        goto out;
                }
        }
        ms = cpu_ms() - t0;
        const tune_memmove_stats *x = tune_memmove_get_stats(m);
        printf("%s 1 TiB mapping with 3 touched pages: %.2f ms of CPU, %llu pages queried, %u move_pages calls\n",
               ms < 100 ? "ok  " : "FAIL", ms, (unsigned long long) x->scanned, x->calls);
        fails += ms >= 100;
        printf("%s queried only present pages (%llu, limit 1000)\n", x->scanned < 1000 ? "ok  " : "FAIL",
               (unsigned long long) x->scanned);
        fails += x->scanned >= 1000;
        /* The 3 of the big mapping and the child's other own pages (stack, data). */
        printf("%s moved the touched anonymous pages (moved %llu, at least 3)\n", x->moved >= 3 ? "ok  " : "FAIL",
               (unsigned long long) x->moved);
        fails += x->moved < 3;
        printf("%s the shared file mapping is left alone (%u file VMA(s) skipped)\n",
               x->vmas_file >= 1 ? "ok  " : "FAIL", x->vmas_file);
        fails += x->vmas_file < 1;
        r = fails ? 1 : 0;
out:
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return r;
}
