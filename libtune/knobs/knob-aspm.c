/* SPDX-License-Identifier: GPL-2.0-only */
/* PCIe ASPM: the global policy (/sys/module/pcie_aspm/parameters/policy, bracketed; the
 * kernel refuses writes with EPERM when the firmware keeps ASPM control) and, per
 * accelerator link (kernel 5.5+), link/{l0s,l1,l1_1,l1_2}_aspm. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
                return tune_knob_plan_note(plan, "aspm", TUNE_KNOB_NOTE_PLAIN, -ENOENT,
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

/* "0000:c1:00.0": domain:bus:device.function in lower-case hex, as sysfs names them. */
static bool is_pci_address(const char *s, size_t len) {
        static const char shape[] = "xxxx:xx:xx.x";

        if (len != sizeof shape - 1)
                return false;
        for (size_t i = 0; i < len; i++)
                if (shape[i] == 'x' ? !strchr("0123456789abcdef", s[i]) || !s[i] : s[i] != shape[i])
                        return false;
        return true;
}

/* "aspm/policy", or "aspm/<pci address>/<link file>" for a file the plan writes. */
static int aspm_path_of(const char *id, char *buf, size_t size) {
        static const char *const link_files[] = { "l0s_aspm", "l1_aspm", "l1_1_aspm", "l1_2_aspm" };
        const char *pci, *slash;

        if (streq(id, "aspm/policy"))
                return tune_path(buf, size, ASPM_POLICY);
        if (!startswith_lit(id, "aspm/"))
                return -EINVAL;
        pci = id + strlen("aspm/");
        slash = strchr(pci, '/');
        if (!slash || !is_pci_address(pci, (size_t) (slash - pci)))
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(link_files); i++)
                if (streq(slash + 1, link_files[i]))
                        return tune_path(buf, size, "/sys/bus/pci/devices/%.*s/link/%s", (int) (slash - pci), pci,
                                         link_files[i]);
        return -EINVAL;
}

const tune_knob_backend tune_knob_aspm = {
        .name = "aspm",
        .kind = TUNE_KNOB_KIND_ASPM,
        .plan = aspm_plan,
        .read = tune_knob_file_read,
        .write = tune_knob_file_write,
        .path_of = aspm_path_of,
};
