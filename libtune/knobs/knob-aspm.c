/* SPDX-License-Identifier: GPL-2.0-only */
/* PCIe ASPM: the global policy (/sys/module/pcie_aspm/parameters/policy, bracketed; the
 * kernel refuses writes with EPERM when the firmware keeps ASPM control) and, per
 * accelerator link (kernel 5.5+), link/{l0s,l1,l1_1,l1_2}_aspm. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "npu-tuned/knob.h"

#define ASPM_POLICY "/sys/module/pcie_aspm/parameters/policy"

typedef struct link_setting {
        const char *file;
        const char *value;
} link_setting;

/* L1 only: L1 on, L0s off, sub-states as they are. */
static const link_setting l1_only[] = { { "l0s_aspm", "0" }, { "l1_aspm", "1" } };
/* Off: sub-states first, so that each write is what the kernel then shows (turning L1 off
 * also turns its sub-states off); restore runs the other way. */
static const link_setting off[] = { { "l1_2_aspm", "0" }, { "l1_1_aspm", "0" }, { "l1_aspm", "0" }, { "l0s_aspm", "0" } };

static int plan_link(const tune_ctx *ctx, const tune_accel *a, tune_aspm_link mode, tune_knob_plan *plan) {
        const link_setting *settings = mode == TUNE_ASPM_LINK_OFF ? off : l1_only;
        size_t n = mode == TUNE_ASPM_LINK_OFF ? ELEMENTSOF(off) : ELEMENTSOF(l1_only);
        char dir[128], path[160], id[96];
        int r;

        r = tune_path(dir, sizeof dir, "/sys/bus/pci/devices/%s/link", a->pci);
        if (r < 0)
                return r;
        if (!tune_exists(ctx, dir))
                return tune_knob_plan_note(plan, "aspm", -ENOENT,
                                           "%s (%s %d): no %s (kernel before 5.5, or a link without ASPM): its link ASPM "
                                           "left alone",
                                           a->pci, a->kind, a->index, dir);
        for (size_t i = 0; i < n; i++) {
                tune_knob_item *it;
                r = tune_path(path, sizeof path, "%s/%s", dir, settings[i].file);
                if (r < 0)
                        return r;
                r = tune_path(id, sizeof id, "aspm/%s/%s", a->pci, settings[i].file);
                if (r < 0)
                        return r;
                r = tune_knob_plan_file(ctx, plan, &tune_knob_aspm, id, path, TUNE_KNOB_PLAIN, settings[i].value, &it);
                if (r < 0)
                        return r;
                if (asprintf(&it->label, "%s %d", a->kind, a->index) < 0)
                        return -ENOMEM;
                if (it->skip == -ENOENT)
                        (void) tune_knob_item_skip(it, -ENOENT, "%s does not exist (the link lacks this state)", path);
        }
        return 0;
}

static int aspm_plan(const tune_ctx *ctx, const tune_knob_plan_input *in, tune_knob_plan *plan) {
        const tune_policy_host *h = in->host;
        int r;

        if (h->aspm_policy) {
                tune_knob_item *it;
                r = tune_knob_plan_file(ctx, plan, &tune_knob_aspm, "aspm/policy", ASPM_POLICY, TUNE_KNOB_SELECTED,
                                        h->aspm_policy, &it);
                if (r < 0)
                        return r;
                if (it->skip == -ENOENT)
                        (void) tune_knob_item_skip(it, -ENOENT,
                                                   "%s does not exist (kernel without CONFIG_PCIEASPM): ASPM policy left alone",
                                                   ASPM_POLICY);
        }
        if (h->aspm_accelerator_link == TUNE_ASPM_LINK_UNCHANGED || !in->accels)
                return 0;
        for (unsigned i = 0; i < in->accels->n; i++) {
                r = plan_link(ctx, &in->accels->items[i], h->aspm_accelerator_link, plan);
                if (r < 0)
                        return r;
        }
        return 0;
}

const tune_knob_backend tune_knob_aspm = {
        .name = "aspm",
        .plan = aspm_plan,
        .read = tune_knob_file_read,
        .write = tune_knob_file_write,
};
