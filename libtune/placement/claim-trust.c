/* SPDX-License-Identifier: GPL-2.0-only */
/* Verifying a process's claim on its accelerators (see include/npu-tuned/claim-trust.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npu-tuned/claim-trust.h"

static bool in_groups(const tune_creds *c, gid_t gid) {
        if (c->fsgid == gid)
                return true;
        for (unsigned i = 0; i < c->n_groups; i++)
                if (c->groups[i] == gid)
                        return true;
        return false;
}

bool tune_creds_may_open(const tune_creds *c, const struct stat *st, int want) {
        mode_t bits;

        if (c->fsuid == 0)
                return true;
        if (st->st_uid == c->fsuid)
                bits = (st->st_mode >> 6) & 7;
        else if (in_groups(c, st->st_gid))
                bits = (st->st_mode >> 3) & 7;
        else
                bits = st->st_mode & 7;
        return (!(want & R_OK) || (bits & 4)) && (!(want & W_OK) || (bits & 2));
}

static int verified(tune_claim *c, tune_claim_tier tier, const char *why) {
        c->tier = tier;
        snprintf(c->why, sizeof c->why, "%s", why);
        return 0;
}

int tune_claim_verify(const tune_ctx *ctx, const tune_claim_input *in, tune_claim *ret) {
        const tune_policy_rule *rule;
        const tune_creds *cr;
        char why[sizeof ret->why] = "";
        unsigned may = 0;

        if (!in || !in->rule || !in->creds || !ret || (in->n_accels > 0 && !in->accels))
                return -EINVAL;
        rule = in->rule;
        cr = in->creds;
        *ret = (tune_claim) { .uid = cr->ruid };

        if (cr->euid == 0 || cr->fsuid == 0)
                return verified(ret, TUNE_CLAIM_VOUCHED, "runs as root");
        if (rule->match_uids || rule->match_cgroup)
                return verified(ret, TUNE_CLAIM_VOUCHED, rule->match_uids ? "its rule names its user" : "its rule names its cgroup");
        if (in->attribution && in->attribution->source == TUNE_ATTRIBUTION_DEVICE_FILES && in->n_accels > 0)
                return verified(ret, TUNE_CLAIM_VERIFIED, "holds its accelerators' device files open");
        if (in->attribution && in->attribution->source == TUNE_ATTRIBUTION_DRIVER && in->n_accels > 0)
                return verified(ret, TUNE_CLAIM_VERIFIED, "the driver lists it on its accelerators");

        for (unsigned i = 0; i < in->n_accels; i++) {
                const tune_accel *a = in->accels[i];
                _cleanup_close_ int fd = -EBADF;
                struct stat st;

                if (!a->dev_path[0]) {
                        snprintf(why, sizeof why, "%s %d has no device node to check its access against", a->kind,
                                 a->index);
                        break;
                }
                /* O_PATH: the node itself, not a driver's open(). */
                fd = tune_open(ctx, a->dev_path, O_PATH | O_NOFOLLOW, 0);
                if (fd < 0 || fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode)) {
                        snprintf(why, sizeof why, "%s is not a device node here", a->dev_path);
                        break;
                }
                if (!tune_creds_may_open(cr, &st, R_OK | W_OK)) {
                        snprintf(why, sizeof why, "uid %u may not open %s (mode %04o, owner %u, group %u)",
                                 (unsigned) cr->fsuid, a->dev_path, (unsigned) (st.st_mode & 07777),
                                 (unsigned) st.st_uid, (unsigned) st.st_gid);
                        break;
                }
                may++;
        }
        if (in->n_accels > 0 && may == in->n_accels) {
                snprintf(why, sizeof why, "may open %s%s", in->accels[0]->dev_path, in->n_accels > 1 ? " and the others" : "");
                return verified(ret, TUNE_CLAIM_VERIFIED, why);
        }
        if (rule->claims_any)
                return verified(ret, TUNE_CLAIM_VERIFIED, "its rule believes any match (\"claims\": \"any\")");
        if (!why[0])
                snprintf(why, sizeof why, "no accelerator to check its access against, and its rule names no user or cgroup");
        ret->tier = TUNE_CLAIM_UNVERIFIED;
        snprintf(ret->why, sizeof ret->why, "%s", why);
        return 0;
}
