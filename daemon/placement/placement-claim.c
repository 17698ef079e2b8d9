/* SPDX-License-Identifier: GPL-2.0-only */
/* A managed process into the placer: its claim, verified (libtune/claim-trust.c), and its
 * cgroup cpuset. Shared by the daemon's placement (every re-plan) and --explain, so both
 * plan a process the same way. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "npu-tuned/claim-trust.h"
#include "placement.h"

/* The attributed accelerators of mp that exist in all (at most max), for the planner. */
static unsigned resolve_accels(const tune_accels *all, const managed_process *mp, const tune_accel **ret,
                               unsigned max) {
        unsigned n = 0;

        for (unsigned i = 0; i < mp->attribution.n_accels && n < max; i++) {
                const tune_accel *a = tune_accels_find(all, mp->attribution.accels[i].kind, mp->attribution.accels[i].index);
                if (a)
                        ret[n++] = a;
        }
        return n;
}

/* (Re)plan mp in placer under key with its rule, its accelerators (those of all) and its
 * claim, verified from its credentials below ctx (docs/trust.md). */
static int set_claim(tune_placer *placer, const tune_ctx *ctx, const tune_accels *all, const managed_process *mp,
                     uint64_t key, tune_keys *ret_changed) {
        const tune_accel *accels[64];
        const tune_creds *creds = NULL;
        tune_creds read;
        tune_claim claim;
        unsigned n;
        int r;

        n = resolve_accels(all, mp, accels, ELEMENTSOF(accels));
        /* The status the match has just read, if this follows a match: not read twice. */
        if (mp->status) {
                r = mp->status->creds_r;
                creds = &mp->status->creds;
        } else {
                r = tune_proc_read_creds(ctx, mp->pid, &read);
                creds = &read;
        }
        if (r < 0) {
                /* Gone, or unreadable: nothing vouches for it. */
                claim = (tune_claim) { .uid = mp->uid, .tier = TUNE_CLAIM_UNVERIFIED };
                snprintf(claim.why, sizeof claim.why, "its credentials could not be read (%s)", strerror(-r));
        } else {
                tune_claim_input in = {
                        .rule = mp->rule,
                        .attribution = &mp->attribution,
                        .accels = accels,
                        .n_accels = n,
                        .creds = creds,
                };
                r = tune_claim_verify(ctx, &in, &claim);
                if (r < 0)
                        return r;
        }
        return tune_placer_set_claim(placer, key, mp->rule, accels, n, &claim, ret_changed);
}

int placement_plan_process(tune_placer *placer, const tune_ctx *ctx, const tune_accels *all, const managed_process *mp,
                           const process_cpuset *cpuset, tune_keys *ret_changed) {
        uint64_t key = placement_key(mp->pid, mp->start_time);
        tune_keys more = {};
        int r;

        r = set_claim(placer, ctx, all, mp, key, ret_changed);
        if (r < 0)
                return r;
        r = tune_placer_set_cpuset(placer, key, process_cpuset_for_plan(cpuset), ret_changed ? &more : NULL);
        /* Both steps can move others (a claim takes CPUs, a narrower cpuset gives some
         * back): their keys once each, mp's own not among them. */
        for (unsigned i = 0; r >= 0 && i < more.n; i++)
                if (more.keys[i] != key && !tune_keys_contain(ret_changed, more.keys[i]))
                        r = tune_keys_add(ret_changed, more.keys[i]);
        tune_keys_done(&more);
        return r < 0 ? r : 0;
}
