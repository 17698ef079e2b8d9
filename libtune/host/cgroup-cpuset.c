/* SPDX-License-Identifier: GPL-2.0-only */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/cgroup-cpuset.h"
#include "npu-tuned/proc.h"

/* /proc/self/mounts on a host with many container overlays is long; the cgroup lines
 * come early, and a cut file only loses mounts we do not look for. */
#define MOUNTS_MAX (256u * 1024u)

void tune_cgroup_cpuset_done(tune_cgroup_cpuset *c) {
        if (!c)
                return;
        free(c->path);
        tune_cpuset_done(&c->cpus);
        tune_cpuset_done(&c->mems);
        *c = (tune_cgroup_cpuset) {};
}

/* A cgroup path we are willing to put below a mount point: absolute, no "..", bounded. */
static bool cgroup_path_ok(const char *s, size_t len) {
        if (len == 0 || len >= TUNE_CGROUP_PATH_MAX || s[0] != '/')
                return false;
        for (size_t i = 0; i < len; i++)
                if (s[i] == 0 || s[i] == '\n')
                        return false;
        for (size_t i = 0; i + 1 < len; i++)
                if (s[i] == '.' && s[i + 1] == '.' && (i == 0 || s[i - 1] == '/') && (i + 2 == len || s[i + 2] == '/'))
                        return false;
        return true;
}

static bool list_has(const char *list, size_t len, const char *word) {
        size_t wl = strlen(word);
        const char *p = list, *end = list + len;

        while (p < end) {
                const char *comma = memchr(p, ',', (size_t) (end - p));
                size_t l = comma ? (size_t) (comma - p) : (size_t) (end - p);
                if (l == wl && memcmp(p, word, wl) == 0)
                        return true;
                p += l + 1;
        }
        return false;
}

int tune_cgroup_parse_membership(const char *text, char **ret_v2, char **ret_v1_cpuset) {
        _cleanup_free_ char *v2 = NULL, *v1 = NULL;

        if (!text || !ret_v2 || !ret_v1_cpuset)
                return -EINVAL;
        for (const char *line = text; line && *line;) {
                const char *eol = strchr(line, '\n');
                size_t len = eol ? (size_t) (eol - line) : strlen(line);
                const char *c1 = memchr(line, ':', len), *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t) (c1 + 1 - line)) : NULL;

                if (c2) {
                        const char *ctrl = c1 + 1, *path = c2 + 1;
                        size_t ctrl_len = (size_t) (c2 - ctrl), path_len = len - (size_t) (path - line);
                        char **slot = NULL;

                        if (ctrl_len == 0 && c1 - line == 1 && line[0] == '0')
                                slot = &v2;
                        else if (list_has(ctrl, ctrl_len, "cpuset"))
                                slot = &v1;
                        if (slot && !*slot) {
                                if (!cgroup_path_ok(path, path_len))
                                        return -EBADMSG;
                                *slot = strndup(path, path_len);
                                if (!*slot)
                                        return -ENOMEM;
                        }
                }
                line = eol ? eol + 1 : NULL;
        }
        *ret_v2 = TAKE_PTR(v2);
        *ret_v1_cpuset = TAKE_PTR(v1);
        return 0;
}

int tune_cgroup_parse_mounts(const char *text, char **ret_v2_dir, char **ret_v1_cpuset_dir) {
        _cleanup_free_ char *v2 = NULL, *v1 = NULL;

        if (!text || !ret_v2_dir || !ret_v1_cpuset_dir)
                return -EINVAL;
        for (const char *line = text; line && *line;) {
                const char *eol = strchr(line, '\n');
                size_t len = eol ? (size_t) (eol - line) : strlen(line);
                char dev[64], dir[256], type[32], opts[512];
                char copy[1024];

                if (len < sizeof copy) {
                        memcpy(copy, line, len);
                        copy[len] = 0;
                        if (sscanf(copy, "%63s %255s %31s %511s", dev, dir, type, opts) == 4 && dir[0] == '/' &&
                            !strstr(dir, "..")) {
                                char **slot = streq(type, "cgroup2") ? &v2 :
                                              streq(type, "cgroup") && list_has(opts, strlen(opts), "cpuset") ? &v1 : NULL;
                                if (slot && !*slot && !(*slot = strdup(dir)))
                                        return -ENOMEM;
                        }
                }
                line = eol ? eol + 1 : NULL;
        }
        *ret_v2_dir = TAKE_PTR(v2);
        *ret_v1_cpuset_dir = TAKE_PTR(v1);
        return 0;
}

static int read_list(const tune_ctx *ctx, const char *path, tune_cpuset *ret) {
        /* Read twice at every placement: on the stack while it fits (a list of 4 k
         * characters is some hundreds of CPUs cut up), the heap beyond. */
        char buf[4096];
        _cleanup_free_ char *s = NULL;
        const char *text = buf;
        int r = tune_read_string_into(ctx, path, buf, sizeof buf);
        if (r == -EFBIG) {
                r = tune_read_string(ctx, path, &s);
                text = s;
        }
        if (r < 0)
                return r;
        return tune_cpuset_parse_list(ret, text);
}

/* The cpuset files of cgroup `rel` below mount `mnt`, walking up to the nearest ancestor
 * that has them (in v2 a cgroup without the cpuset controller enabled has no files and
 * its tasks use the nearest ancestor's). -ENOENT when no level has them. */
static int read_hierarchy(const tune_ctx *ctx, const char *mnt, const char *rel, const char *cpus_file,
                          const char *mems_file, tune_cgroup_cpuset *ret) {
        _cleanup_free_ char *dir = strdup(rel);
        char path[TUNE_CGROUP_PATH_MAX + 320];
        int r;

        if (!dir)
                return -ENOMEM;
        for (;;) {
                const char *sub = streq(dir, "/") ? "" : dir;

                r = tune_path(path, sizeof path, "%s%s/%s", mnt, sub, cpus_file);
                if (r < 0)
                        return r;
                r = read_list(ctx, path, &ret->cpus);
                if (r >= 0) {
                        r = tune_path(path, sizeof path, "%s%s/%s", mnt, sub, mems_file);
                        if (r >= 0)
                                r = read_list(ctx, path, &ret->mems);
                        /* A kernel too old for the mems file still restricts CPUs. */
                        if (r == -ENOENT)
                                r = 0;
                        return r;
                }
                if (r != -ENOENT)
                        return r;
                char *slash = strrchr(dir, '/');
                if (!slash)
                        return -ENOENT;
                if (slash == dir) {
                        if (!dir[1])
                                return -ENOENT;
                        dir[1] = 0;
                } else
                        *slash = 0;
        }
}

void tune_cgroup_mounts_done(tune_cgroup_mounts *m) {
        if (!m)
                return;
        free(m->v2_dir);
        free(m->v1_cpuset_dir);
        *m = (tune_cgroup_mounts) {};
}

int tune_cgroup_mounts_read(const tune_ctx *ctx, tune_cgroup_mounts *ret) {
        _cleanup_free_ char *mounts = NULL;
        tune_cgroup_mounts m = {};
        int r;

        if (tune_read_prefix(ctx, "/proc/self/mounts", MOUNTS_MAX, &mounts, NULL, NULL) < 0 &&
            tune_read_prefix(ctx, "/proc/mounts", MOUNTS_MAX, &mounts, NULL, NULL) < 0)
                return -ENOENT;
        r = tune_cgroup_parse_mounts(mounts, &m.v2_dir, &m.v1_cpuset_dir);
        if (r < 0)
                return r;
        tune_cgroup_mounts_done(ret);
        *ret = m;
        return 0;
}

int tune_cgroup_cpuset_read_at(const tune_ctx *ctx, const tune_cgroup_mounts *m, pid_t pid, tune_cgroup_cpuset *ret) {
        _cleanup_free_ char *v2 = NULL, *v1 = NULL, *legacy = NULL;
        tune_cgroup_cpuset c = {};
        char path[64], text[TUNE_CGROUP_MAX + 1]; /* read at every match: on the stack */
        size_t len;
        int r;

        if (pid < 0 || !m || !ret)
                return -EINVAL;
        r = pid == 0 ? tune_path(path, sizeof path, "/proc/self/cgroup") : tune_proc_path(path, sizeof path, pid, 0, "cgroup");
        if (r < 0)
                return r;
        r = tune_read_prefix_into(ctx, path, text, sizeof text, &len, NULL);
        if (r >= 0) {
                if (memchr(text, 0, len))
                        return -EBADMSG;
                r = tune_cgroup_parse_membership(text, &v2, &v1);
                if (r < 0)
                        return r;
        } else if (r == -ENOENT && pid == 0) {
                /* Old kernels (and some captures) only have the cpuset controller's own file. */
                if (tune_read_string(ctx, "/proc/self/cpuset", &legacy) < 0 || !cgroup_path_ok(legacy, strlen(legacy)))
                        return -ENOENT;
                v2 = m->v2_dir ? strdup(legacy) : NULL;
                v1 = m->v1_cpuset_dir ? strdup(legacy) : NULL;
        } else
                return r == -ENOENT ? -ESRCH : r;

        /* A controller is bound to one hierarchy at a time: with a v1 cpuset mount (a
         * hybrid host), the v2 one has no cpuset files to look for (a failed open per
         * lookup, on every match and reconcile tick). */
        r = -ENOENT;
        if (v2 && m->v2_dir && !m->v1_cpuset_dir) {
                r = read_hierarchy(ctx, m->v2_dir, v2, "cpuset.cpus.effective", "cpuset.mems.effective", &c);
                if (r >= 0) {
                        c.version = 2;
                        c.path = TAKE_PTR(v2);
                }
        }
        if (r == -ENOENT && v1 && m->v1_cpuset_dir) {
                tune_cgroup_cpuset_done(&c);
                r = read_hierarchy(ctx, m->v1_cpuset_dir, v1, "cpuset.effective_cpus", "cpuset.effective_mems", &c);
                /* Kernels before 4.4 have no effective_* files in v1: the configured
                 * sets are what applies there. */
                if (r == -ENOENT)
                        r = read_hierarchy(ctx, m->v1_cpuset_dir, v1, "cpuset.cpus", "cpuset.mems", &c);
                if (r >= 0) {
                        c.version = 1;
                        c.path = TAKE_PTR(v1);
                }
        }
        if (r < 0) {
                tune_cgroup_cpuset_done(&c);
                return r;
        }
        tune_cgroup_cpuset_done(ret);
        *ret = c;
        return 0;
}

int tune_cgroup_cpuset_read(const tune_ctx *ctx, pid_t pid, tune_cgroup_cpuset *ret) {
        _cleanup_(tune_cgroup_mounts_done) tune_cgroup_mounts m = {};
        int r = tune_cgroup_mounts_read(ctx, &m);
        if (r < 0)
                return r;
        return tune_cgroup_cpuset_read_at(ctx, &m, pid, ret);
}

/* ---- containers and pods ---- */

static bool all_hex(const char *s, size_t len) {
        for (size_t i = 0; i < len; i++)
                if (!isxdigit((unsigned char) s[i]))
                        return false;
        return true;
}

/* A container id: 12 to 64 hex digits. */
static bool take_id(const char *s, size_t len, tune_container_id *c, const char *runtime) {
        if (len < 12 || len > 64 || !all_hex(s, len))
                return false;
        memcpy(c->id, s, len);
        c->id[len] = 0;
        snprintf(c->runtime, sizeof c->runtime, "%s", runtime);
        return true;
}

/* A pod UID, with dashes (cgroupfs driver) or underscores (systemd driver). */
static bool take_pod(const char *s, size_t len, tune_container_id *c) {
        if (len != 36)
                return false;
        for (size_t i = 0; i < len; i++) {
                bool sep = i == 8 || i == 13 || i == 18 || i == 23;
                if (sep ? (s[i] != '-' && s[i] != '_') : !isxdigit((unsigned char) s[i]))
                        return false;
        }
        for (size_t i = 0; i < len; i++)
                c->pod_uid[i] = s[i] == '_' ? '-' : s[i];
        c->pod_uid[len] = 0;
        return true;
}

static bool ends_with(const char *s, size_t len, const char *suffix, size_t *ret_len) {
        size_t sl = strlen(suffix);
        if (len < sl || memcmp(s + len - sl, suffix, sl) != 0)
                return false;
        *ret_len = len - sl;
        return true;
}

static void take_qos(const char *s, size_t len, tune_container_id *c) {
        static const char *const qos[] = { "burstable", "besteffort", "guaranteed" };
        for (size_t i = 0; i < ELEMENTSOF(qos); i++)
                if (len == strlen(qos[i]) && memcmp(s, qos[i], len) == 0)
                        snprintf(c->qos, sizeof c->qos, "%s", qos[i]);
}

static void identify_component(const char *s, size_t len, bool in_kubepods, bool after_docker, tune_container_id *c) {
        static const struct {
                const char *prefix;
                const char *runtime;
        } scopes[] = {
                { "cri-containerd-", "containerd" },
                { "crio-", "cri-o" },
                { "docker-", "docker" },
                { "libpod-", "podman" },
        };
        size_t base;

        if (ends_with(s, len, ".scope", &base)) {
                for (size_t i = 0; i < ELEMENTSOF(scopes); i++) {
                        size_t pl = strlen(scopes[i].prefix);
                        if (base > pl && memcmp(s, scopes[i].prefix, pl) == 0 &&
                            take_id(s + pl, base - pl, c, scopes[i].runtime))
                                return;
                }
                return;
        }
        if (ends_with(s, len, ".slice", &base)) {
                /* kubepods-burstable-pod<uid>.slice, kubepods-pod<uid>.slice (guaranteed),
                 * kubepods-besteffort.slice */
                if (base < 8 || memcmp(s, "kubepods", 8) != 0)
                        return;
                const char *p = s + 8, *end = s + base;
                while (p < end && *p == '-') {
                        const char *dash = memchr(p + 1, '-', (size_t) (end - p - 1));
                        const char *word = p + 1, *wend = dash ? dash : end;
                        if ((size_t) (wend - word) > 3 && memcmp(word, "pod", 3) == 0) {
                                (void) take_pod(word + 3, (size_t) (end - word - 3), c);
                                if (!c->qos[0])
                                        snprintf(c->qos, sizeof c->qos, "guaranteed");
                                return;
                        }
                        take_qos(word, (size_t) (wend - word), c);
                        p = wend;
                }
                return;
        }
        if (!in_kubepods && !after_docker)
                return;
        if (in_kubepods && len > 3 && memcmp(s, "pod", 3) == 0 && take_pod(s + 3, len - 3, c)) {
                if (!c->qos[0])
                        snprintf(c->qos, sizeof c->qos, "guaranteed");
                return;
        }
        if (in_kubepods)
                take_qos(s, len, c);
        /* cgroupfs drivers: /kubepods/<qos>/pod<uid>/<id>, /docker/<id> */
        if (!c->id[0])
                (void) take_id(s, len, c, after_docker ? "docker" : "cri");
}

bool tune_container_identify(const char *cgroup_path, tune_container_id *ret) {
        tune_container_id c = {};
        bool in_kubepods = false, after_docker = false;

        if (!cgroup_path || !ret)
                return false;
        for (const char *p = cgroup_path; *p;) {
                const char *slash = strchr(p, '/');
                size_t len = slash ? (size_t) (slash - p) : strlen(p);

                if (len > 0) {
                        const char *colon = memchr(p, ':', len);
                        /* containerd with the systemd driver and a cgroupfs-style parent:
                         * "kubepods-burstable-pod<uid>.slice:cri-containerd:<id>" */
                        if (colon) {
                                const char *c2 = memchr(colon + 1, ':', len - (size_t) (colon + 1 - p));
                                identify_component(p, (size_t) (colon - p), in_kubepods, false, &c);
                                if (c2 && (size_t) (c2 - colon - 1) == strlen("cri-containerd") &&
                                    memcmp(colon + 1, "cri-containerd", (size_t) (c2 - colon - 1)) == 0)
                                        (void) take_id(c2 + 1, len - (size_t) (c2 + 1 - p), &c, "containerd");
                        } else
                                identify_component(p, len, in_kubepods, after_docker, &c);
                        if ((len == 8 && memcmp(p, "kubepods", 8) == 0) || (len > 8 && memcmp(p, "kubepods", 8) == 0 &&
                                                                          (p[8] == '.' || p[8] == '-')))
                                in_kubepods = true;
                        after_docker = len == 6 && memcmp(p, "docker", 6) == 0;
                }
                p += len;
                while (*p == '/')
                        p++;
        }
        *ret = c;
        return c.runtime[0] || c.pod_uid[0];
}

void tune_container_format(const tune_container_id *c, char *buf, size_t size) {
        if (!c->runtime[0] && !c->pod_uid[0]) {
                if (size > 0)
                        buf[0] = 0;
                return;
        }
        snprintf(buf, size, "%s%s%s%s%s%s%.12s", c->pod_uid[0] ? "pod " : "", c->pod_uid, c->pod_uid[0] && c->id[0] ? " " : "",
                 c->id[0] ? "container " : "", c->runtime, c->id[0] ? "://" : "", c->id);
}
