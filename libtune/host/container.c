/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/container.h"

int tune_ns_link_parse(const char *link, const char *type, unsigned long long *ret_inode) {
        size_t tl = strlen(type);
        unsigned long long v = 0;
        const char *p;

        if (strncmp(link, type, tl) != 0 || link[tl] != ':' || link[tl + 1] != '[')
                return -EINVAL;
        p = link + tl + 2;
        if (*p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                if (v > (~0ULL - 9) / 10)
                        return -EINVAL;
                v = v * 10 + (unsigned) (*p - '0');
        }
        if (p[0] != ']' || p[1] != 0)
                return -EINVAL;
        *ret_inode = v;
        return 0;
}

void tune_container_engine(const char *container_env, bool containerenv_file, const char *kubernetes_env,
                           char *buf, size_t size) {
        const char *name = "";

        if (container_env && *container_env) {
                /* Anyone who starts us sets it: only a short printable word goes into the log. */
                size_t n = strlen(container_env);
                bool printable = n < size;
                for (size_t i = 0; printable && i < n; i++)
                        printable = container_env[i] > ' ' && container_env[i] < 0x7f;
                name = printable ? container_env : "unnamed";
        } else if (containerenv_file)
                name = "podman";
        else if (kubernetes_env && *kubernetes_env)
                name = "kubernetes";
        snprintf(buf, size, "%s", name);
}

/* The inode of the namespace link /proc/PID/ns/TYPE. */
static int ns_inode(const tune_ctx *ctx, const char *pid, const char *type, unsigned long long *ret) {
        _cleanup_free_ char *link = NULL;
        char path[64];
        int r;

        r = tune_path(path, sizeof path, "/proc/%s/ns/%s", pid, type);
        if (r < 0)
                return r;
        r = tune_readlink(ctx, path, &link);
        if (r < 0)
                return r;
        return tune_ns_link_parse(link, type, ret);
}

void tune_container_detect(const tune_ctx *ctx, const char *container_env, const char *kubernetes_env,
                           tune_container *ret) {
        unsigned long long self, init;

        *ret = (tune_container) { .host_pid_ns = -1, .host_net_ns = -1 };
        tune_container_engine(container_env, tune_exists(ctx, "/run/.containerenv"), kubernetes_env, ret->engine,
                              sizeof ret->engine);
        if (ns_inode(ctx, "self", "pid", &self) >= 0)
                ret->host_pid_ns = self == TUNE_PID_NS_INIT_INODE;
        /* PID 1's links need ptrace access to it (root with CAP_SYS_PTRACE, which the daemon has). */
        if (ns_inode(ctx, "self", "net", &self) >= 0 && ns_inode(ctx, "1", "net", &init) >= 0)
                ret->host_net_ns = self == init;
}
