/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Accelerator discovery: device -> PCI function -> NUMA node -> local CPUs. */

#include <stdbool.h>
#include <stdint.h>

#include "npu-tuned/context.h"
#include "npu-tuned/cpuset.h"
#include "npu-tuned/topology.h"

#define TUNE_ACCEL_KIND_MAX 32
#define TUNE_PCI_ANY_DEVICE 0xffffffffu

/* How the index (N of /dev/davinciN, /dev/nvidiaN, ...) was decided. */
typedef enum tune_index_source {
        TUNE_INDEX_PCI_ORDER,   /* the order of PCI addresses within the kind */
        TUNE_INDEX_ASCEND_DEV_ID, /* /sys/bus/pci/drivers/devdrv_device_driver/<BDF>/dev_id */
        TUNE_INDEX_NVIDIA_MINOR,  /* /proc/driver/nvidia/gpus/<BDF>/information */
        TUNE_INDEX_DRM_RENDER,    /* /sys/bus/pci/devices/<BDF>/drm/renderD<128+N> */
        TUNE_INDEX_ACCEL_CLASS,   /* /sys/class/accel/accelN */
} tune_index_source;

const char *tune_index_source_to_string(tune_index_source s) _pure_;

/* An accelerator kind beyond the built-in ones, by PCI id (fed by the policy). */
typedef struct tune_accel_kind {
        char name[TUNE_ACCEL_KIND_MAX];
        uint32_t vendor;
        uint32_t device;            /* TUNE_PCI_ANY_DEVICE for every device of the vendor */
        const char *device_pattern; /* printf-free pattern with one "%N" for the index, e.g.
                                     * "/dev/edu%N"; NULL: none */
} tune_accel_kind;

typedef struct tune_accel {
        char kind[TUNE_ACCEL_KIND_MAX]; /* "ascend", "nvidia", "amd", "accel" or a policy kind */
        int index;
        tune_index_source index_source;
        char pci[13];
        uint32_t vendor, device, class_;
        int numa_node;                  /* -1: unknown (firmware reported none) */
        bool numa_node_overridden;      /* set by tune_accels_override_node() */
        tune_cpuset local_cpus;
        char dev_path[64];              /* "/dev/davinci0"; "" when unknown */
        char uuid[64];                  /* NVIDIA "GPU-..." when the driver says */
} tune_accel;

typedef struct tune_accels {
        tune_accel *items; /* sorted by kind, then index */
        unsigned n;
} tune_accels;

int tune_accels_discover(const tune_ctx *ctx, const tune_accel_kind *extra, unsigned n_extra, tune_accels *ret);
void tune_accels_done(tune_accels *a);
/* Policy override for a device whose firmware reports no node (or a wrong one). The local
 * CPUs become the node's CPUs. -ENODEV if no accelerator has that PCI address, -ENXIO if
 * the node does not exist. */
int tune_accels_override_node(tune_accels *a, const tune_topology *t, const char *pci, int node);
const tune_accel *tune_accels_find(const tune_accels *a, const char *kind, int index) _pure_;

/* Every PCI function's locality, for comparisons with hwloc (tests) and for IRQ steering. */
typedef struct tune_pci_locality {
        char pci[13];
        uint32_t vendor, device, class_;
        int numa_node;
        tune_cpuset local_cpus;
} tune_pci_locality;
int tune_pci_read_locality(const tune_ctx *ctx, const char *pci, tune_pci_locality *ret);
void tune_pci_locality_done(tune_pci_locality *l);
