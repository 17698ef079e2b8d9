/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Hand-built topologies and accelerators for pure plan tests and benches (no sysfs tree). */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/topology.h"

#define GIB_KIB (UINT64_C(1024) * 1024)

/* assert() that also runs in a release build (-Db_ndebug=true, as the packages build and
 * test): these calls have effects the tests need. */
#define fake_must(x) \
        do { \
                if (!(x)) { \
                        fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #x); \
                        abort(); \
                } \
        } while (0)

/* n_nodes nodes of cpus_per_node CPUs each (node i: CPUs i*cpus_per_node ...), every CPU
 * online and usable. distances: n_nodes * n_nodes row-major, or NULL (unknown). free_kib:
 * per node, or NULL (all equal to total_kib). */
static inline tune_topology *fake_topology_new(unsigned n_nodes, unsigned cpus_per_node, const int *distances,
                                               const uint64_t *free_kib, uint64_t total_kib) {
        tune_topology *t = calloc(1, sizeof *t);
        fake_must(t);
        t->nodes = calloc(n_nodes, sizeof(tune_node));
        t->cpus = calloc(n_nodes * cpus_per_node, sizeof(tune_cpu));
        fake_must(t->nodes && t->cpus);
        t->n_nodes = n_nodes;
        t->n_cpus = n_nodes * cpus_per_node;
        t->numa_from_sysfs = true;
        for (unsigned i = 0; i < n_nodes; i++) {
                tune_node *n = &t->nodes[i];
                n->id = (int) i;
                fake_must(tune_cpuset_add_range(&n->cpus, i * cpus_per_node, (i + 1) * cpus_per_node - 1) == 0);
                n->mem_total_kib = total_kib;
                n->mem_free_kib = free_kib ? free_kib[i] : total_kib;
                if (distances) {
                        n->distances = calloc(n_nodes, sizeof(int));
                        fake_must(n->distances);
                        memcpy(n->distances, distances + i * n_nodes, n_nodes * sizeof(int));
                }
        }
        for (unsigned c = 0; c < t->n_cpus; c++)
                t->cpus[c] = (tune_cpu) { .id = (int) c, .online = true, .package = (int) (c / cpus_per_node / 4),
                                          .core = (int) c, .node = (int) (c / cpus_per_node) };
        fake_must(tune_cpuset_add_range(&t->online, 0, t->n_cpus - 1) == 0);
        fake_must(tune_cpuset_add_range(&t->usable, 0, t->n_cpus - 1) == 0);
        return t;
}

/* Atlas 800I A2 as in the reference deployment: 2 sockets x 4 NUMA nodes x 24 cores (node i: CPUs
 * 24i..24i+23), 32 GiB per node. Distances in the shape of a Kunpeng 920 SLIT: 10 local,
 * 12 to the other die of the pair, 20 to the other pair of the same socket, 28 + 2 per die
 * step across sockets (so node 0's nearest remote-socket node is 4, and node 2's is 6).
 * MemFree: the reference deployment's numactl -H showed node 0 3.2 GB, node 2 2.8 GB and node 4 28 GB;
 * they moved to NUMA4/6, which the rule "nearest node by distance with the minimum free"
 * only yields if the rest of socket 0 was short too, so nodes 1 and 3 get 4.0 and 5.0 GiB
 * here (the reference deployment did not report them); nodes 5-7 have ~20 GiB. */
static inline tune_topology *fake_atlas_800i_a2(void) {
        int d[64];
        const uint64_t free_kib[8] = {
                32 * GIB_KIB / 10, 4 * GIB_KIB, 28 * GIB_KIB / 10, 5 * GIB_KIB,
                28 * GIB_KIB, 20 * GIB_KIB, 20 * GIB_KIB, 20 * GIB_KIB,
        };

        for (int i = 0; i < 8; i++)
                for (int j = 0; j < 8; j++) {
                        int v;
                        if (i == j)
                                v = 10;
                        else if (i / 4 != j / 4)
                                v = 28 + 2 * abs(i % 4 - j % 4);
                        else if (i / 2 == j / 2)
                                v = 12;
                        else
                                v = 20;
                        d[i * 8 + j] = v;
                }
        return fake_topology_new(8, 24, d, free_kib, 32 * GIB_KIB);
}

/* An accelerator as tune_accels_discover() would report it (local_cpus left empty: the
 * plan does not read them). */
static inline tune_accel fake_accel(const char *kind, int index, const char *pci, int node) {
        tune_accel a = { .index = index, .numa_node = node, .vendor = 0x19e5, .device = 0xd802 };
        snprintf(a.kind, sizeof a.kind, "%s", kind);
        snprintf(a.pci, sizeof a.pci, "%s", pci);
        return a;
}

/* The Atlas 800I A2's four NPUs: 910B (19e5:d802) on nodes 0, 0, 2, 2. */
static inline void fake_atlas_npus(tune_accel npus[static 4]) {
        npus[0] = fake_accel("ascend", 0, "0000:c1:00.0", 0);
        npus[1] = fake_accel("ascend", 1, "0000:c2:00.0", 0);
        npus[2] = fake_accel("ascend", 2, "0000:81:00.0", 2);
        npus[3] = fake_accel("ascend", 3, "0000:82:00.0", 2);
}
