/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Whether a process's claim on an accelerator is believable (docs/trust.md).
 *
 * Anyone can name a program like an inference worker and set ASCEND_RT_VISIBLE_DEVICES=0:
 * the name and the environment are the process's own words. A claim is verified when
 * something the process cannot make up backs it, in this order:
 *   1. it runs as root (euid or fsuid 0): root could pin itself anyway;
 *   2. its rule names who may claim (match.user or match.cgroup): the policy's author
 *      vouched for that user or cgroup (cgroups are made by root or delegated by it);
 *   3. it holds the accelerator's device files open (attribution from open devices), or
 *      the driver lists it among the device's processes (attribution from the driver);
 *   4. its credentials (fsuid, fsgid, supplementary groups, from /proc/PID/status) may
 *      open every one of its accelerators' device nodes for reading and writing, as the
 *      kernel would decide by the nodes' owner, group and mode;
 *   5. its rule says "claims": "any" (the author believes every match).
 * Any other claim is unverified: the plan gives it only CPUs no verified claim wants
 * (include/npu-tuned/plan.h). Every claim, verified or not, is its real uid's, and CPUs
 * are shared between uids before they are shared between one uid's processes. */

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/attribution.h"
#include "npu-tuned/context.h"
#include "npu-tuned/plan.h"
#include "npu-tuned/policy.h"
#include "npu-tuned/proc.h"

/* Whether c may open a file of st's owner and mode with the access in want (R_OK|W_OK),
 * by the classic permission bits (root always may). */
bool tune_creds_may_open(const tune_creds *c, const struct stat *st, int want) _pure_;

typedef struct tune_claim_input {
        const tune_policy_rule *rule;
        const tune_attribution *attribution;
        const tune_accel *const *accels; /* the attributed accelerators */
        unsigned n_accels;
        const tune_creds *creds;
} tune_claim_input;

/* Decide *ret (uid, verified or not, and why) for the claim; the device nodes are looked
 * at below the context's root. Never fails for want of a node: a node that cannot be
 * looked at does not verify. Returns 0 or -EINVAL. */
int tune_claim_verify(const tune_ctx *ctx, const tune_claim_input *in, tune_claim *ret);
