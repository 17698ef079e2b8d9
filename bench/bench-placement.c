/* SPDX-License-Identifier: GPL-2.0-only */
/* Placement costs, printed as numbers (not a test):
 *   plan:   tune_plan_compute() for N processes on the Atlas 800I A2 topology (hand-built), and
 *           tune_placer_set() of one more process into a placer holding N;
 *   burst:  N processes arriving one by one into an empty placer on the same topology, each
 *           with its own accelerator's node (8 nodes), with the placer's incremental
 *           re-plan and with tune_plan_params.replan_all (every process re-planned on
 *           each change): the time and the plans made, for a rule whose processes fit on
 *           their node (control 1 + compute 1) and one whose processes take a fair share
 *           (control 2 + the rest: short beyond a few per node, so all are coupled); at 256
 *           and 512 arrivals every node is full and every process short;
 *   apply:  tune_affinity_apply() on a live child process with T threads, when every
 *           thread must move (flip between two CPU sets) and when none must (a re-check:
 *           two walks of /proc/PID/task and a sched_getaffinity per thread).
 * Medians (and p99) over repeated runs. Needs 2 usable CPUs for the apply part.
 *
 * Usage: bench-placement [runs]   (default 200) */
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tests/fake-topology.h"
#include "npu-tuned/affinity.h"
#include "npu-tuned/plan.h"

static double now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static void report(const char *what, double *v, unsigned n) {
        qsort(v, n, sizeof(double), cmp_double);
        printf("%-58s median %9.1f us   p99 %9.1f us   (%u runs)\n", what, v[n / 2], v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1], n);
}

static char glob_ctl[] = "ctl-*", glob_work[] = "work-*";
static char *ctl_globs[] = { glob_ctl, NULL }, *work_globs[] = { glob_work, NULL };

static void bench_plan(unsigned runs) {
        tune_topology *t = fake_atlas_800i_a2();
        tune_plan_params params = { .housekeeping_cpus_per_node = 2 };
        tune_policy_rule rule = {
                .control = { .name_globs = ctl_globs, .main_thread = true, .cpus = 2 },
                .compute = { .name_globs = work_globs },
                .memory_migrate = true,
                .memory_min_free_kib = 8 * GIB_KIB,
        };
        tune_accel npus[8];
        const unsigned sizes[] = { 4, 64, 512 };
        double *v = calloc(runs, sizeof(double));

        for (int i = 0; i < 8; i++)
                npus[i] = fake_accel("ascend", i, "0000:00:00.0", i);
        for (unsigned s = 0; s < ELEMENTSOF(sizes); s++) {
                unsigned n = sizes[s];
                tune_plan_request *reqs = calloc(n, sizeof *reqs);
                const tune_accel **ptrs = calloc(n, sizeof *ptrs);
                tune_plan *out = calloc(n, sizeof *out);
                char what[96];

                for (unsigned k = 0; k < n; k++) {
                        ptrs[k] = &npus[k % 8];
                        reqs[k] = (tune_plan_request) { .key = k, .rule = &rule, .accels = &ptrs[k], .n_accels = 1 };
                }
                for (unsigned r = 0; r < runs; r++) {
                        double t0 = now_us();
                        int rr = tune_plan_compute(t, &params, reqs, n, out);
                        if (rr < 0) {
                                fprintf(stderr, "tune_plan: %s\n", strerror(-rr));
                                abort();
                        }
                        v[r] = now_us() - t0;
                        for (unsigned k = 0; k < n; k++)
                                tune_plan_done(&out[k]);
                }
                snprintf(what, sizeof what, "plan: tune_plan_compute() of %u processes (8 nodes x 24 CPUs)", n);
                report(what, v, runs);

                /* One more process into a placer that holds n. */
                tune_placer *p;
                if (tune_placer_new(t, &params, &p) < 0)
                        abort();
                for (unsigned k = 0; k < n; k++) {
                        int rr = tune_placer_set(p, k, &rule, &ptrs[k], 1, NULL);
                        if (rr < 0) {
                                fprintf(stderr, "tune_placer_set(%u): %s\n", k, strerror(-rr));
                                abort();
                        }
                }
                for (unsigned r = 0; r < runs; r++) {
                        tune_keys changed = {};
                        double t0 = now_us();
                        if (tune_placer_set(p, 100000, &rule, &ptrs[r % n], 1, &changed) < 0 ||
                            tune_placer_remove(p, 100000, NULL) < 0)
                                abort();
                        v[r] = now_us() - t0;
                        tune_keys_done(&changed);
                }
                snprintf(what, sizeof what, "plan: placer set + remove of one more next to %u", n);
                report(what, v, runs);
                tune_placer_free(p);
                free(reqs);
                free(ptrs);
                free(out);
        }
        free(v);
        tune_topology_free(t);
}

/* N arrivals, each re-planned as the placer does. */
static void bench_burst_one(const tune_topology *t, const tune_policy_rule *rule, const char *name, unsigned n, bool all) {
        tune_plan_params params = { .housekeeping_cpus_per_node = 2, .no_reasons = true, .replan_all = all };
        const tune_accel **ptrs = calloc(n, sizeof *ptrs);
        tune_accel npus[8];
        tune_placer *p;
        double t0;

        for (int i = 0; i < 8; i++)
                npus[i] = fake_accel("ascend", i, "0000:00:00.0", i);
        if (!ptrs || tune_placer_new(t, &params, &p) < 0)
                abort();
        t0 = now_us();
        for (unsigned k = 0; k < n; k++) {
                tune_keys changed = {};
                ptrs[k] = &npus[k % 8];
                if (tune_placer_set(p, k, rule, &ptrs[k], 1, &changed) < 0)
                        abort();
                tune_keys_done(&changed);
        }
        printf("burst: %4u arrivals, rule %-22s %-12s %10.1f ms  %9llu plans made (%.1f per arrival)\n", n, name,
               all ? "re-plan all" : "incremental", (now_us() - t0) / 1000.0, (unsigned long long) tune_placer_plans_made(p),
               (double) tune_placer_plans_made(p) / n);
        tune_placer_free(p);
        free(ptrs);
}

static void bench_burst(void) {
        tune_topology *t = fake_atlas_800i_a2();
        tune_policy_rule fits = {
                .control = { .name_globs = ctl_globs, .main_thread = true, .cpus = 1 },
                .compute = { .name_globs = work_globs, .cpus = 1 },
        };
        tune_policy_rule share = {
                .control = { .name_globs = ctl_globs, .main_thread = true, .cpus = 2 },
                .compute = { .name_globs = work_globs },
        };
        const unsigned sizes[] = { 64, 256, 512 };

        for (unsigned s = 0; s < ELEMENTSOF(sizes); s++)
                for (int all = 1; all >= 0; all--) {
                        bench_burst_one(t, &fits, "control 1 + compute 1", sizes[s], all);
                        bench_burst_one(t, &share, "control 2 + the rest", sizes[s], all);
                }
        tune_topology_free(t);
}

static void *idle(void *arg) {
        prctl(PR_SET_NAME, (unsigned long) arg, 0, 0, 0);
        for (;;)
                pause();
        return NULL;
}

/* A child with n_threads threads besides its main one; returns its pid. */
static pid_t spawn_child(unsigned n_threads) {
        int p[2];
        pid_t pid;
        char c;

        if (pipe(p) < 0)
                abort();
        pid = fork();
        if (pid < 0)
                abort();
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                for (unsigned i = 0; i < n_threads; i++) {
                        pthread_t th;
                        if (pthread_create(&th, NULL, idle, (void *) (i % 2 ? "work-x" : "ctl-x")) != 0)
                                _exit(1);
                }
                usleep(100000); /* names set */
                if (write(p[1], "r", 1) != 1)
                        _exit(1);
                for (;;)
                        pause();
        }
        close(p[1]);
        if (read(p[0], &c, 1) != 1)
                abort();
        close(p[0]);
        return pid;
}

typedef struct flip {
        tune_cpuset a, b;
        bool use_b;
} flip;

static int choose_flip(pid_t pid, pid_t tid, tune_thread_name *name, void *userdata, const tune_cpuset **ret) {
        flip *f = userdata;
        *ret = f->use_b ? &f->b : &f->a;
        return 0;
}

static void bench_apply(unsigned runs) {
        cpu_set_t mine;
        int cpus[2], n = 0;
        tune_ctx *ctx;
        double *v = calloc(runs, sizeof(double));
        const unsigned sizes[] = { 5, 64, 256 };

        if (sched_getaffinity(0, sizeof mine, &mine) < 0)
                abort();
        for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
                if (CPU_ISSET(c, &mine))
                        cpus[n++] = c;
        if (n < 2) {
                printf("apply: skipped, fewer than 2 usable CPUs\n");
                free(v);
                return;
        }
        if (tune_ctx_new("/", &ctx) < 0)
                abort();
        for (unsigned s = 0; s < ELEMENTSOF(sizes); s++) {
                unsigned threads = sizes[s] - 1;
                pid_t pid = spawn_child(threads);
                flip f = {};
                tune_affinity_originals j = {};
                char what[96];

                tune_cpuset_add(&f.a, (unsigned) cpus[0]);
                tune_cpuset_add(&f.b, (unsigned) cpus[1]);
                for (unsigned r = 0; r < runs; r++) {
                        tune_affinity_stats st = {};
                        f.use_b = !f.use_b;
                        double t0 = now_us();
                        if (tune_affinity_apply(ctx, NULL, pid, choose_flip, &f, &j, &st) < 0 || st.set != sizes[s])
                                abort();
                        v[r] = now_us() - t0;
                }
                snprintf(what, sizeof what, "apply: %u threads, every one moves", sizes[s]);
                report(what, v, runs);
                for (unsigned r = 0; r < runs; r++) {
                        tune_affinity_stats st = {};
                        double t0 = now_us();
                        if (tune_affinity_apply(ctx, NULL, pid, choose_flip, &f, &j, &st) < 0 || st.unchanged != sizes[s])
                                abort();
                        v[r] = now_us() - t0;
                }
                snprintf(what, sizeof what, "apply: %u threads, none moves (re-check)", sizes[s]);
                report(what, v, runs);
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                tune_affinity_originals_done(&j);
                tune_cpuset_done(&f.a);
                tune_cpuset_done(&f.b);
        }
        tune_ctx_free(ctx);
        free(v);
}

int main(int argc, char **argv) {
        unsigned runs = argc > 1 ? (unsigned) atoi(argv[1]) : 200;

        if (runs < 1 || runs > 100000) {
                fprintf(stderr, "usage: %s [runs]\n", argv[0]);
                return 2;
        }
        bench_plan(runs);
        bench_burst();
        bench_apply(runs);
        return 0;
}
