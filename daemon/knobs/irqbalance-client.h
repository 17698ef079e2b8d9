/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Cooperation with a running irqbalance over its control socket (protocol:
 * include/npu-tuned/irqbalance.h): it is told to leave npu-tuned's IRQs and the inference
 * CPUs alone, and given its own settings back on stop. When that fails the caller falls
 * back to the warning with IRQBALANCE_BANNED_CPULIST. */

#include <sys/types.h>

#include "npu-tuned/context.h"
#include "npu-tuned/cpuset.h"

typedef struct Irqbalance Irqbalance;

/* Find irqbalance (below the live root), read its settings, and add irqs (n) to its banned
 * IRQs and cpus to its banned CPUs. -ESRCH: none runs; other errors: it could not be told
 * (logged by the caller). *ret keeps what to undo. */
int irqbalance_cooperate(const tune_ctx *ctx, const unsigned *irqs, unsigned n, const tune_cpuset *cpus, Irqbalance **ret);
/* Give irqbalance its own settings back (if it is still the same process) and free. */
Irqbalance *irqbalance_release(Irqbalance *b);
pid_t irqbalance_pid(const Irqbalance *b);
