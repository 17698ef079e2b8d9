/* SPDX-License-Identifier: GPL-2.0-only */
/* How long host knob apply and restore take as the number of IRQs grows: a fake tree with
 * 64 CPUs on 2 nodes, THP, and N movable IRQs, planned, applied (journal with fsync, then
 * N writes, then the journal again) and restored, in $TMPDIR (or /tmp).
 *
 * Usage: bench-knob-apply [N...]   (default: 100 1000 4000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/knobs/fake-tree.h"
#include "npu-tuned/knob.h"

static double now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static void machine(const char *root, unsigned n_irqs) {
        char rel[128];

        fake_write(root, "sys/devices/system/cpu/online", "0-63\n", 0644);
        fake_write(root, "sys/devices/system/cpu/present", "0-63\n", 0644);
        fake_write(root, "sys/devices/system/node/online", "0-1\n", 0644);
        fake_write(root, "sys/devices/system/node/node0/cpulist", "0-31\n", 0644);
        fake_write(root, "sys/devices/system/node/node1/cpulist", "32-63\n", 0644);
        fake_write(root, "proc/meminfo", "MemTotal: 1048576 kB\nMemFree: 524288 kB\n", 0644);
        fake_write(root, "sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n", 0644);
        fake_write(root, "proc/irq/default_smp_affinity", "ffffffff,ffffffff\n", 0644);
        for (unsigned i = 0; i < n_irqs; i++) {
                snprintf(rel, sizeof rel, "proc/irq/%u/smp_affinity", i);
                fake_write(root, rel, "ffffffff,ffffffff\n", 0644);
        }
}

static int run(unsigned n_irqs) {
        char *root = fake_root_new("bench-knobs");
        char state[4200];
        tune_ctx *ctx = NULL;
        tune_topology *topo = NULL;
        tune_cpuset hk = {}, inference = {};
        tune_policy_host host = { .khugepaged_defrag = -1, .numa_balancing = -1 };
        tune_knob_plan plan = {};
        tune_journal *j = NULL;
        double t0, t_plan, t_apply, t_restore;
        long journal_bytes = 0;
        FILE *f;

        snprintf(state, sizeof state, "%s/state", root);
        machine(root, n_irqs);
        if (tune_ctx_new(root, &ctx) < 0 || tune_topology_load(ctx, &topo) < 0)
                return 1;
        host.thp_enabled = (char *) "never";
        host.irq_manage = true;
        host.irq_keep_off_inference_cpus = true;
        host.irq_housekeeping_cpus_per_node = 2;
        tune_knob_housekeeping_cpus(topo, 2, &hk);
        tune_cpuset_add_range(&inference, 2, 31); /* as if node 0 held the accelerators */

        tune_knob_plan_input in = { .host = &host, .topology = topo, .inference_cpus = &inference, .housekeeping_cpus = &hk };
        t0 = now_ms();
        if (tune_knobs_plan(ctx, &in, &plan) < 0)
                return 1;
        t_plan = now_ms() - t0;
        t0 = now_ms();
        if (tune_knobs_apply(ctx, &plan, state, NULL, NULL, &j) < 0 || !j)
                return 1;
        t_apply = now_ms() - t0;
        snprintf(state + strlen(state), sizeof state - strlen(state), "/%s", TUNE_JOURNAL_FILE);
        f = fopen(state, "r");
        if (f) {
                fseek(f, 0, SEEK_END);
                journal_bytes = ftell(f);
                fclose(f);
        }
        *strrchr(state, '/') = 0;
        unsigned owned = j->n;
        t0 = now_ms();
        if (tune_knobs_restore(ctx, j, state, NULL) < 0)
                return 1;
        t_restore = now_ms() - t0;
        printf("%6u IRQs: %5u knobs owned, plan %8.2f ms, apply %8.2f ms (journal %7ld bytes, written twice "
               "with fsync), restore %8.2f ms\n",
               n_irqs, owned, t_plan, t_apply, journal_bytes, t_restore);
        tune_journal_free(j);
        tune_knob_plan_done(&plan);
        tune_cpuset_done(&hk);
        tune_cpuset_done(&inference);
        tune_topology_free(topo);
        tune_ctx_free(ctx);
        fake_rm(root);
        return 0;
}

int main(int argc, char *argv[]) {
        static const unsigned defaults[] = { 100, 1000, 4000 };

        if (argc > 1) {
                for (int i = 1; i < argc; i++)
                        if (run((unsigned) strtoul(argv[i], NULL, 10)) != 0)
                                return 1;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(defaults); i++)
                if (run(defaults[i]) != 0)
                        return 1;
        return 0;
}
