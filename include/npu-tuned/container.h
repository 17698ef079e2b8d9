/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Whether npu-tuned runs in a container, and with which of the host's namespaces: a
 * DaemonSet pod or a `podman run --pid=host --network=host` places the host's processes
 * like the service does, a container with its own PID namespace sees only its own.
 *
 * A container is what its engine marks as one: the `container` environment variable
 * (podman, systemd-nspawn, LXC; the systemd convention), podman's /run/.containerenv, or
 * the KUBERNETES_SERVICE_HOST variable the kubelet gives every pod. /.dockerenv is not
 * used: some VM images carry it on the host itself. The namespaces come from the
 * /proc/PID/ns links below the context's root: the initial PID namespace has a fixed inode
 * (the kernel's PROC_PID_INIT_INO); the network namespace is compared with PID 1's, which
 * in the host's PID namespace is the host's init. */

#include <stdbool.h>

#include "npu-tuned/context.h"

#define TUNE_PID_NS_INIT_INODE 0xEFFFFFFCULL

typedef struct tune_container {
        char engine[32]; /* "podman", "kubernetes", ... ; "" when nothing marks a container */
        int host_pid_ns; /* 1: the initial PID namespace; 0: another one; -1: unknown */
        int host_net_ns; /* 1: PID 1's network namespace; 0: another one; -1: unknown */
} tune_container;

/* "pid:[4026531836]" of TYPE "pid" -> 4026531836; -EINVAL for anything else. */
int tune_ns_link_parse(const char *link, const char *type, unsigned long long *ret_inode);

/* The engine's name from its marks (NULL: the variable is not set): a `container` value
 * of printable characters (bounded), else "podman" for /run/.containerenv, else
 * "kubernetes"; "" when none. Pure. */
void tune_container_engine(const char *container_env, bool containerenv_file, const char *kubernetes_env,
                           char *buf, size_t size);

/* Reads the marks and the namespace links below ctx's root; the two variables are the
 * caller's (getenv), so that tests can give them. Never fails: what cannot be read is -1. */
void tune_container_detect(const tune_ctx *ctx, const char *container_env, const char *kubernetes_env,
                           tune_container *ret);
