/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* NUMA nodes and CPUs, read from sysfs below the context's root. */

#include <stdbool.h>
#include <stdint.h>

#include "npu-tuned/context.h"
#include "npu-tuned/cpuset.h"

typedef struct tune_node {
        int id;                 /* kernel node number; may be sparse */
        tune_cpuset cpus;       /* the node's CPUs as the kernel lists them */
        uint64_t mem_total_kib; /* 0 for a memory-less node */
        uint64_t mem_free_kib;
        int *distances;         /* n_nodes entries, in the order of tune_topology.nodes; NULL if unknown */
        /* The memory of an accelerator exposed as a CPU-less node (NVIDIA GPUs on POWER9
         * and Grace, per /proc/driver/nvidia/gpus/BDF/numa_status). Never a target for a
         * process's host memory. */
        bool accelerator_memory;
} tune_node;

typedef struct tune_cpu {
        int id;
        bool online;
        int package; /* -1 when unknown (offline CPUs often have no topology) */
        int core;
        int node;    /* -1 when in no node */
} tune_cpu;

typedef struct tune_topology {
        tune_node *nodes; /* sorted by id */
        unsigned n_nodes;
        tune_cpu *cpus; /* possible CPUs that have a sysfs directory, sorted by id */
        unsigned n_cpus;
        tune_cpuset online;
        /* online CPUs this process may use: minus its cgroup cpuset and its own affinity
         * (from proc/self/status below the root). */
        tune_cpuset usable;
        /* node ids this process may put memory on: every node minus its cgroup's
         * cpuset.mems(.effective) and its Mems_allowed_list. Empty: not computed
         * (hand-built topologies), every node then. */
        tune_cpuset mems_usable;
        int cgroup_version;   /* the hierarchy usable/mems_usable came from: 2, 1, 0 (none) */
        bool numa_from_sysfs; /* false: kernel without NUMA sysfs, one synthetic node 0 */
        /* Firmware nonsense: some CPU is listed in two nodes (hwloc discards such NUMA
         * information). The planner deals each CPU once: nodes with the same CPUs share one
         * pool (libtune/plan.c). */
        bool nodes_overlap;
} tune_topology;

int tune_topology_load(const tune_ctx *ctx, tune_topology **ret);
tune_topology *tune_topology_free(tune_topology *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(tune_topology *, tune_topology_free);

const tune_node *tune_topology_node(const tune_topology *t, int id) _pure_;
const tune_cpu *tune_topology_cpu(const tune_topology *t, int id) _pure_;
/* Node distance from -> to; -1 when unknown. */
int tune_topology_distance(const tune_topology *t, int from, int to) _pure_;
/* Re-read MemFree of every node (memory placement decisions want fresh numbers). */
int tune_topology_refresh_memory(const tune_ctx *ctx, tune_topology *t);
