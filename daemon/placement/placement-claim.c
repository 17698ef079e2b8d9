/* SPDX-License-Identifier: GPL-2.0-only */
/* A managed process's claim, verified (libtune/claim-trust.c), into the placer: shared by
 * the daemon's placement and --explain, so both plan a process the same way. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "npu-tuned/claim-trust.h"
#include "placement.h"

int placement_set_process(tune_placer *placer, const tune_ctx *ctx, const tune_accels *all, const managed_process *mp,
                          uint64_t key, tune_keys *ret_changed) {
        const tune_accel *accels[64];
        tune_creds creds;
        tune_claim claim;
        unsigned n;
        int r;

        n = placement_resolve_accels(all, mp, accels, ELEMENTSOF(accels));
        /* The status the match has just read, if this follows a match: not read twice. */
        r = mp->status ? tune_parse_creds(mp->status, &creds) : tune_proc_read_creds(ctx, mp->pid, &creds);
        if (r < 0) {
                /* Gone, or unreadable: nothing vouches for it. */
                claim = (tune_claim) { .uid = mp->uid, .unverified = true };
                snprintf(claim.why, sizeof claim.why, "its credentials could not be read (%s)", strerror(-r));
        } else {
                tune_claim_input in = {
                        .rule = mp->rule,
                        .attribution = &mp->attribution,
                        .accels = accels,
                        .n_accels = n,
                        .creds = &creds,
                };
                r = tune_claim_verify(ctx, &in, &claim);
                if (r < 0)
                        return r;
        }
        return tune_placer_set_claim(placer, key, mp->rule, accels, n, &claim, ret_changed);
}
