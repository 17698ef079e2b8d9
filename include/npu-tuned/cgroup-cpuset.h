/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The cpuset a process's cgroup gives it (cgroup v2 `cpuset.{cpus,mems}.effective`, or the
 * v1 cpuset hierarchy's `cpuset.effective_{cpus,mems}`), and which container or Kubernetes
 * pod that cgroup is. Container runtimes and the kubelet (CPU and Memory Manager, NRI
 * resource policies) own these files: npu-tuned only reads them, never writes one.
 *
 * Everything here comes from /proc and cgroupfs below the context's root. /proc/PID/cgroup
 * of another user's process is attacker-controlled text: it is read bounded, a path with
 * ".." or one too long is refused, and the walk up to an ancestor that has the files is
 * bounded by the path's depth. */

#include <stdbool.h>
#include <sys/types.h>

#include "npu-tuned/context.h"
#include "npu-tuned/cpuset.h"

#define TUNE_CGROUP_PATH_MAX 512

typedef struct tune_cgroup_cpuset {
        int version;     /* 2 or 1: the hierarchy the cpuset came from; 0: none found */
        char *path;      /* the process's cgroup in that hierarchy ("/kubepods.slice/..."); NULL when version 0 */
        tune_cpuset cpus; /* effective CPUs; empty when version 0 */
        tune_cpuset mems; /* effective memory nodes; empty when version 0 */
} tune_cgroup_cpuset;

void tune_cgroup_cpuset_done(tune_cgroup_cpuset *c);

/* Where the hierarchies are mounted (proc/self/mounts): cgroup2 and the v1 cpuset one.
 * Reading mounts costs most of a lookup (~50 us of ~100 us here), and they rarely change:
 * a caller reading many processes reads them once. */
typedef struct tune_cgroup_mounts {
        char *v2_dir;        /* NULL: no cgroup2 */
        char *v1_cpuset_dir; /* NULL: no v1 cpuset hierarchy */
} tune_cgroup_mounts;

void tune_cgroup_mounts_done(tune_cgroup_mounts *m);
int tune_cgroup_mounts_read(const tune_ctx *ctx, tune_cgroup_mounts *ret);
/* tune_cgroup_cpuset_read() with mounts already read. */
int tune_cgroup_cpuset_read_at(const tune_ctx *ctx, const tune_cgroup_mounts *m, pid_t pid, tune_cgroup_cpuset *ret);

/* pid 0: this process (proc/self). -ENOENT when no hierarchy with a cpuset controller is
 * mounted or the process is in none (then the online CPUs and all nodes apply);
 * -ESRCH/-ENOENT when the process is gone; -EBADMSG on nonsense. */
int tune_cgroup_cpuset_read(const tune_ctx *ctx, pid_t pid, tune_cgroup_cpuset *ret);

/* ---- pure parsers (for the reader and the tests) ---- */

/* /proc/PID/cgroup: the v2 path ("0::/x") and the v1 cpuset hierarchy's path ("3:cpuset:/x",
 * also "3:cpu,cpuset:/x"). Either may come back NULL. */
int tune_cgroup_parse_membership(const char *text, char **ret_v2, char **ret_v1_cpuset);
/* /proc/self/mounts: where cgroup2 is mounted and where the v1 hierarchy with the cpuset
 * controller is. Either may come back NULL. */
int tune_cgroup_parse_mounts(const char *text, char **ret_v2_dir, char **ret_v1_cpuset_dir);

/* ---- containers and pods ---- */

typedef struct tune_container_id {
        char runtime[16];  /* "containerd", "cri-o", "docker", "podman"; "" when not a container */
        char id[65];       /* the container id (64 hex digits as the runtimes print it) */
        char pod_uid[37];  /* a Kubernetes pod's UID (dashes restored); "" when not in a pod */
        char qos[12];      /* "guaranteed", "burstable", "besteffort"; "" when unknown */
} tune_container_id;

/* Recognise a Kubernetes pod (systemd driver: kubepods.slice/kubepods-burstable.slice/
 * kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope; cgroupfs driver:
 * /kubepods/burstable/pod<uid>/<id>) and container scopes of containerd, CRI-O, Docker
 * and Podman (docker-<id>.scope, /docker/<id>, crio-<id>.scope, libpod-<id>.scope).
 * Returns true when the path is a container's or a pod's. Only hex ids and UUID-shaped
 * pod UIDs are taken, so the result is safe to print. */
bool tune_container_identify(const char *cgroup_path, tune_container_id *ret);
/* "pod 1c6e...-... container containerd://4f1c2a9b3d7e" (id cut to 12 digits), "" when
 * not a container. */
void tune_container_format(const tune_container_id *c, char *buf, size_t size);
