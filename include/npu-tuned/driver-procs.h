/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Which host processes use which accelerator, as a vendor driver's management library
 * tells (NVML, Ascend DCMI), read from the lines npu-tuned-driver-query prints. Pure: the
 * caller runs the query and checks every pid against the live process before it trusts
 * an entry (libtune/process/driver-procs.c).
 *
 * The lines, each at most TUNE_DRIVER_LINE_MAX bytes with its newline:
 *     via nvml                  the library the lines below come from ("nvml", "dcmi")
 *     4242 0000:3b:00.0         a pid (decimal, 1..TUNE_DRIVER_PID_MAX) and the PCI
 *                               address of a device it uses, as sysfs writes it
 * Anything else is counted as rejected and skipped; past TUNE_DRIVER_LINES_MAX lines or
 * TUNE_DRIVER_OUTPUT_MAX bytes the rest is ignored (truncated). */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "npu-tuned/accel.h"

#define TUNE_DRIVER_OUTPUT_MAX (64 * 1024)
#define TUNE_DRIVER_LINES_MAX 1024
#define TUNE_DRIVER_LINE_MAX 64
#define TUNE_DRIVER_PID_MAX 4194304 /* the kernel's PID_MAX_LIMIT */
#define TUNE_DRIVER_SOURCE_MAX 8

typedef struct tune_driver_proc {
        pid_t pid;
        char pci[13];       /* "0000:3b:00.0" */
        unsigned source;    /* index into tune_driver_procs.sources */
} tune_driver_proc;

typedef struct tune_driver_procs {
        char sources[4][TUNE_DRIVER_SOURCE_MAX]; /* "nvml", "dcmi" */
        unsigned n_sources;
        tune_driver_proc *items; /* in the order given, without duplicates */
        size_t n;
        unsigned n_rejected;     /* lines that were not one of the two forms */
        bool truncated;          /* more lines or bytes than the bounds */
} tune_driver_procs;

/* Parse the query's output (len bytes, need not be NUL-terminated). Returns 0 (also when
 * lines were rejected) or -ENOMEM, -EINVAL. */
int tune_driver_procs_parse(const char *buf, size_t len, tune_driver_procs *ret);
void tune_driver_procs_done(tune_driver_procs *d);

/* The accelerators the driver says pid uses: indexes into accels->items, in accels order,
 * into ret[] (room for accels->n); *ret_source: the library that said so (the first
 * entry's), NULL when none. */
unsigned tune_driver_procs_lookup(const tune_driver_procs *d, pid_t pid, const tune_accels *accels, unsigned *ret,
                                  const char **ret_source);
