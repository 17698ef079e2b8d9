/* SPDX-License-Identifier: GPL-2.0-only */
/* The cgroup cpuset reader (libtune/cgroup-cpuset.c) on fake trees shaped like the kernel's
 * cgroup v2 and v1 hierarchies, and the recognition of Kubernetes pods and container
 * scopes from cgroup paths as kubelet, containerd, CRI-O, Docker and Podman write them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "knobs/fake-tree.h"
#include "npu-tuned/cgroup-cpuset.h"

static char *make_root(void) {
        char *root = strdup("/tmp/npu-cgroup-XXXXXX");
        assert_non_null(root);
        assert_non_null(mkdtemp(root));
        return root;
}

static void remove_root(char *root) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
        free(root);
}

static void assert_set(const tune_cpuset *s, const char *want) {
        _cleanup_free_ char *got = NULL;
        assert_int_equal(tune_cpuset_format_list(s, &got), 0);
        assert_string_equal(got, want);
}

#define POD "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1c6e2f0a_8d4b_4e2a_9f31_0a1b2c3d4e5f.slice"
#define CID "4f1c2a9b3d7e5f60718293a4b5c6d7e8f9012345678901234567890abcdef012"

/* cgroup v2 (systemd driver): the container's scope has the files; a worker in a child
 * cgroup without the cpuset controller enabled uses the scope's. */
static void test_v2(void **state) {
        char *root = make_root();
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        tune_cgroup_cpuset c = {};
        (void) state;

        fake_write(root, "proc/self/mounts", "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n", 0644);
        fake_write(root, "proc/self/cgroup", "0::/system.slice/npu-tuned.service\n", 0644);
        fake_write(root, "proc/42/cgroup", "0::/" POD "/cri-containerd-" CID ".scope/worker\n", 0644);
        fake_write(root, "sys/fs/cgroup/cpuset.cpus.effective", "0-7\n", 0644);
        fake_write(root, "sys/fs/cgroup/cpuset.mems.effective", "0-1\n", 0644);
        fake_write(root, "sys/fs/cgroup/" POD "/cri-containerd-" CID ".scope/cpuset.cpus.effective", "2-3,6\n", 0644);
        fake_write(root, "sys/fs/cgroup/" POD "/cri-containerd-" CID ".scope/cpuset.mems.effective", "1\n", 0644);
        fake_write(root, "sys/fs/cgroup/" POD "/cri-containerd-" CID ".scope/worker/cgroup.procs", "42\n", 0644);
        assert_int_equal(tune_ctx_new(root, &ctx), 0);

        assert_int_equal(tune_cgroup_cpuset_read(ctx, 42, &c), 0);
        assert_int_equal(c.version, 2);
        assert_set(&c.cpus, "2-3,6");
        assert_set(&c.mems, "1");
        assert_string_equal(c.path, "/" POD "/cri-containerd-" CID ".scope/worker");
        /* The daemon itself: its service has no files, the root's apply. */
        assert_int_equal(tune_cgroup_cpuset_read(ctx, 0, &c), 0);
        assert_set(&c.cpus, "0-7");
        assert_set(&c.mems, "0-1");
        /* Gone. */
        assert_int_equal(tune_cgroup_cpuset_read(ctx, 43, &c), -ESRCH);
        tune_cgroup_cpuset_done(&c);
        remove_root(root);
}

/* cgroup v1 (this build machine's layout): the cpuset hierarchy's effective_* files; the
 * cgroup2 beside it is not looked at, since the controller is bound to v1 (a kernel
 * gives v2 no cpuset files then; planted here, they are not read). */
static void test_v1(void **state) {
        char *root = make_root();
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        tune_cgroup_cpuset c = {};
        (void) state;

        fake_write(root, "proc/self/mounts",
                   "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,relatime,cpu,cpuacct 0 0\n"
                   "cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n"
                   "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n", 0644);
        fake_write(root, "proc/7/cgroup", "4:memory:/x\n3:cpuset:/docker/" CID "\n0::/\n", 0644);
        fake_write(root, "sys/fs/cgroup/unified/cgroup.procs", "1\n", 0644);
        fake_write(root, "sys/fs/cgroup/unified/cpuset.cpus.effective", "0-1\n", 0644);
        fake_write(root, "sys/fs/cgroup/cpuset/docker/" CID "/cpuset.effective_cpus", "1\n", 0644);
        fake_write(root, "sys/fs/cgroup/cpuset/docker/" CID "/cpuset.effective_mems", "0\n", 0644);
        assert_int_equal(tune_ctx_new(root, &ctx), 0);
        assert_int_equal(tune_cgroup_cpuset_read(ctx, 7, &c), 0);
        assert_int_equal(c.version, 1);
        assert_set(&c.cpus, "1");
        assert_set(&c.mems, "0");
        assert_string_equal(c.path, "/docker/" CID);
        tune_cgroup_cpuset_done(&c);
        remove_root(root);
}

/* Hostile /proc/PID/cgroup text: "..", nonsense, NULs. */
static void test_hostile(void **state) {
        char *v2 = NULL, *v1 = NULL;
        (void) state;

        assert_int_equal(tune_cgroup_parse_membership("0::/a/../../etc\n", &v2, &v1), -EBADMSG);
        assert_int_equal(tune_cgroup_parse_membership("0::relative\n", &v2, &v1), -EBADMSG);
        assert_int_equal(tune_cgroup_parse_membership("garbage\n\n::\n", &v2, &v1), 0);
        assert_null(v2);
        assert_null(v1);
        assert_int_equal(tune_cgroup_parse_membership("5:cpu,cpuset:/a..b\n0::/c\n", &v2, &v1), 0);
        assert_string_equal(v1, "/a..b");
        assert_string_equal(v2, "/c");
        free(v1);
        free(v2);
}

static void test_identify(void **state) {
        tune_container_id c;
        char buf[160];
        (void) state;

        assert_true(tune_container_identify("/" POD "/cri-containerd-" CID ".scope", &c));
        assert_string_equal(c.runtime, "containerd");
        assert_string_equal(c.id, CID);
        assert_string_equal(c.pod_uid, "1c6e2f0a-8d4b-4e2a-9f31-0a1b2c3d4e5f");
        assert_string_equal(c.qos, "burstable");
        tune_container_format(&c, buf, sizeof buf);
        assert_string_equal(buf, "pod 1c6e2f0a-8d4b-4e2a-9f31-0a1b2c3d4e5f container containerd://4f1c2a9b3d7e");

        /* Guaranteed pods sit directly below kubepods.slice; CRI-O scopes. */
        assert_true(tune_container_identify("/kubepods.slice/kubepods-pod1c6e2f0a_8d4b_4e2a_9f31_0a1b2c3d4e5f.slice/crio-" CID ".scope", &c));
        assert_string_equal(c.runtime, "cri-o");
        assert_string_equal(c.qos, "guaranteed");
        /* cgroupfs driver. */
        assert_true(tune_container_identify("/kubepods/besteffort/pod1c6e2f0a-8d4b-4e2a-9f31-0a1b2c3d4e5f/" CID, &c));
        assert_string_equal(c.pod_uid, "1c6e2f0a-8d4b-4e2a-9f31-0a1b2c3d4e5f");
        assert_string_equal(c.qos, "besteffort");
        assert_string_equal(c.id, CID);
        /* containerd's "slice:prefix:id" form. */
        assert_true(tune_container_identify("/kubepods-burstable-pod1c6e2f0a_8d4b_4e2a_9f31_0a1b2c3d4e5f.slice:cri-containerd:" CID, &c));
        assert_string_equal(c.runtime, "containerd");
        assert_string_equal(c.id, CID);
        /* Docker and Podman without Kubernetes. */
        assert_true(tune_container_identify("/system.slice/docker-" CID ".scope", &c));
        assert_string_equal(c.runtime, "docker");
        assert_string_equal(c.pod_uid, "");
        assert_true(tune_container_identify("/docker/" CID, &c));
        assert_string_equal(c.runtime, "docker");
        assert_true(tune_container_identify("/machine.slice/libpod-" CID ".scope/container", &c));
        assert_string_equal(c.runtime, "podman");
        /* Not containers; a name that only looks like one is not trusted. */
        assert_false(tune_container_identify("/system.slice/npu-tuned.service", &c));
        assert_false(tune_container_identify("/user.slice/docker-not-hex.scope", &c));
        assert_false(tune_container_identify("/", &c));
        tune_container_format(&c, buf, sizeof buf);
        assert_string_equal(buf, "");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_v2),
                cmocka_unit_test(test_v1),
                cmocka_unit_test(test_hostile),
                cmocka_unit_test(test_identify),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
