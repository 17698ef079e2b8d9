/* SPDX-License-Identifier: GPL-2.0-only */
/* Transparent hugepages: enabled and defrag (bracketed choices: "always [madvise] never")
 * and khugepaged/defrag (0 or 1). */
#include <errno.h>
#include <stdio.h>

#include "npu-tuned/knob.h"

#define THP_DIR "/sys/kernel/mm/transparent_hugepage"

static int thp_plan(const tune_ctx *ctx, const tune_knob_plan_input *in, tune_knob_plan *plan) {
        const tune_policy_host *h = in->host;
        char khugepaged[16];
        int r;

        if (!h->thp_enabled && !h->thp_defrag && h->khugepaged_defrag < 0)
                return 0;
        if (!tune_exists(ctx, THP_DIR))
                return tune_knob_plan_note(plan, "thp", TUNE_KNOB_NOTE_PLAIN, -ENOENT,
                                           "kernel without transparent hugepages (no " THP_DIR "): THP left alone");
        if (h->thp_enabled) {
                r = tune_knob_plan_file(ctx, plan, &tune_knob_thp, "thp/enabled", THP_DIR "/enabled",
                                        TUNE_KNOB_SELECTED, h->thp_enabled, NULL);
                if (r < 0)
                        return r;
        }
        if (h->thp_defrag) {
                r = tune_knob_plan_file(ctx, plan, &tune_knob_thp, "thp/defrag", THP_DIR "/defrag", TUNE_KNOB_SELECTED,
                                        h->thp_defrag, NULL);
                if (r < 0)
                        return r;
        }
        if (h->khugepaged_defrag >= 0) {
                snprintf(khugepaged, sizeof khugepaged, "%d", h->khugepaged_defrag ? 1 : 0);
                r = tune_knob_plan_file(ctx, plan, &tune_knob_thp, "thp/khugepaged/defrag", THP_DIR "/khugepaged/defrag",
                                        TUNE_KNOB_PLAIN, khugepaged, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int thp_path_of(const char *id, char *buf, size_t size) {
        static const char *const ids[] = { "thp/enabled", "thp/defrag", "thp/khugepaged/defrag" };
        static const char *const paths[] = { THP_DIR "/enabled", THP_DIR "/defrag", THP_DIR "/khugepaged/defrag" };
        return tune_knob_path_from_table(id, ids, paths, ELEMENTSOF(ids), buf, size);
}

const tune_knob_backend tune_knob_thp = {
        .name = "thp",
        .kind = TUNE_KNOB_KIND_THP,
        .plan = thp_plan,
        .read = tune_knob_file_read,
        .write = tune_knob_file_write,
        .path_of = thp_path_of,
};
