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

/* The value after "Key:" at the start of a line, or NULL. */
static const char *field(const char *text, const char *key) {
        size_t klen = strlen(key);

        for (const char *line = text; line && *line;) {
                if (strncmp(line, key, klen) == 0 && line[klen] == ':')
                        return line + klen + 1;
                line = strchr(line, '\n');
                if (line)
                        line++;
        }
        return NULL;
}

/* Up to n whitespace-separated ids of one line. Returns how many, or -EBADMSG. */
static int parse_ids(const char *p, unsigned long *ids, unsigned n, bool *ret_truncated) {
        unsigned got = 0;

        *ret_truncated = false;
        for (;;) {
                char *end;
                unsigned long v;

                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == '\n' || *p == 0)
                        return (int) got;
                if (*p < '0' || *p > '9')
                        return -EBADMSG;
                errno = 0;
                v = strtoul(p, &end, 10);
                if (errno || v > UINT32_MAX - 1 || (*end != ' ' && *end != '\t' && *end != '\n' && *end != 0))
                        return -EBADMSG;
                if (got < n)
                        ids[got++] = v;
                else
                        *ret_truncated = true;
                p = end;
        }
}

int tune_parse_creds(const char *text, tune_creds *ret) {
        unsigned long uids[4], gids[4], groups[TUNE_CREDS_GROUPS_MAX];
        const char *u, *g, *gr;
        bool truncated;
        int nu, ng, ngr = 0;

        if (!text || !ret)
                return -EINVAL;
        u = field(text, "Uid");
        g = field(text, "Gid");
        gr = field(text, "Groups");
        if (!u || !g)
                return -EBADMSG;
        nu = parse_ids(u, uids, 4, &truncated);
        ng = parse_ids(g, gids, 4, &truncated);
        if (nu != 4 || ng != 4)
                return -EBADMSG;
        *ret = (tune_creds) { .ruid = (uid_t) uids[0], .euid = (uid_t) uids[1], .fsuid = (uid_t) uids[3],
                              .fsgid = (gid_t) gids[3] };
        if (gr) {
                ngr = parse_ids(gr, groups, TUNE_CREDS_GROUPS_MAX, &ret->groups_truncated);
                if (ngr < 0)
                        return ngr;
        }
        for (int i = 0; i < ngr; i++)
                ret->groups[i] = (gid_t) groups[i];
        ret->n_groups = (unsigned) ngr;
        return 0;
}

int tune_proc_read_creds(const tune_ctx *ctx, pid_t pid, tune_creds *ret) {
        _cleanup_free_ char *text = NULL;
        char path[64];
        int r;

        r = tune_path(path, sizeof path, "/proc/%d/status", (int) pid);
        if (r < 0)
                return r;
        /* Bounded: status is a few KiB; Groups can be long, and what is cut is not used. */
        r = tune_read_prefix(ctx, path, 16384, &text, NULL, NULL);
        if (r < 0)
                return r;
        return tune_parse_creds(text, ret);
}

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

static int verified(tune_claim *c, const char *why) {
        c->unverified = false;
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
                return verified(ret, "runs as root");
        if (rule->match_uids || rule->match_cgroup)
                return verified(ret, rule->match_uids ? "its rule names its user" : "its rule names its cgroup");
        if (in->attribution && in->attribution->source == TUNE_ATTRIBUTION_DEVICE_FILES && in->n_accels > 0)
                return verified(ret, "holds its accelerators' device files open");

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
                return verified(ret, why);
        }
        if (rule->claims_any)
                return verified(ret, "its rule believes any match (\"claims\": \"any\")");
        if (!why[0])
                snprintf(why, sizeof why, "no accelerator to check its access against, and its rule names no user or cgroup");
        ret->unverified = true;
        snprintf(ret->why, sizeof ret->why, "%s", why);
        return 0;
}
