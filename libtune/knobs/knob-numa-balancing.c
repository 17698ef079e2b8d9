/* SPDX-License-Identifier: GPL-2.0-only */
/* kernel.numa_balancing (0 off, 1 on; newer kernels also 2 for memory tiering), only when
 * the policy asks. */
#include <errno.h>
#include <stdio.h>

#include "npu-tuned/knob.h"

#define NUMA_BALANCING "/proc/sys/kernel/numa_balancing"

static int numa_balancing_plan(const tune_ctx *ctx, const tune_knob_plan_input *in, tune_knob_plan *plan) {
        char value[16];

        if (in->host->numa_balancing < 0)
                return 0;
        snprintf(value, sizeof value, "%d", in->host->numa_balancing);
        return tune_knob_plan_file(ctx, plan, &tune_knob_numa_balancing, "sysctl/kernel.numa_balancing", NUMA_BALANCING,
                                   TUNE_KNOB_PLAIN, value, NULL);
}

static int numa_balancing_path_of(const char *id, char *buf, size_t size) {
        static const char *const ids[] = { "sysctl/kernel.numa_balancing" };
        static const char *const paths[] = { NUMA_BALANCING };
        return tune_knob_path_from_table(id, ids, paths, ELEMENTSOF(ids), buf, size);
}

const tune_knob_backend tune_knob_numa_balancing = {
        .name = "numa-balancing",
        .kind = TUNE_KNOB_KIND_NUMA_BALANCING,
        .plan = numa_balancing_plan,
        .read = tune_knob_file_read,
        .write = tune_knob_file_write,
        .path_of = numa_balancing_path_of,
};
