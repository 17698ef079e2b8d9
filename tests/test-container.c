/* SPDX-License-Identifier: GPL-2.0-only */
/* Container detection (libtune/host/container.c): the namespace link parser, the engine's
 * marks, and the detection on fake trees shaped like a DaemonSet pod (host PID and network
 * namespaces), a pod with its own PID namespace, a host service and a pod without
 * hostNetwork. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "knobs/fake-tree.h"
#include "npu-tuned/container.h"

#define INIT_PID "pid:[4026531836]"

static void test_ns_link_parse(void **state) {
        unsigned long long ino = 0;
        (void) state;

        assert_int_equal(tune_ns_link_parse(INIT_PID, "pid", &ino), 0);
        assert_true(ino == TUNE_PID_NS_INIT_INODE);
        assert_int_equal(tune_ns_link_parse("net:[4026531840]", "net", &ino), 0);
        assert_true(ino == 4026531840ULL);
        assert_int_equal(tune_ns_link_parse(INIT_PID, "net", &ino), -EINVAL);
        assert_int_equal(tune_ns_link_parse("pid:[]", "pid", &ino), -EINVAL);
        assert_int_equal(tune_ns_link_parse("pid:[12", "pid", &ino), -EINVAL);
        assert_int_equal(tune_ns_link_parse("pid:[12]x", "pid", &ino), -EINVAL);
        assert_int_equal(tune_ns_link_parse("pid:[-1]", "pid", &ino), -EINVAL);
        assert_int_equal(tune_ns_link_parse("pid:[99999999999999999999999]", "pid", &ino), -EINVAL);
        assert_int_equal(tune_ns_link_parse("pidx:[1]", "pid", &ino), -EINVAL);
}

static void test_engine(void **state) {
        char buf[32];
        (void) state;

        tune_container_engine("podman", true, "10.96.0.1", buf, sizeof buf);
        assert_string_equal(buf, "podman");
        tune_container_engine(NULL, true, NULL, buf, sizeof buf);
        assert_string_equal(buf, "podman");
        tune_container_engine(NULL, false, "10.96.0.1", buf, sizeof buf);
        assert_string_equal(buf, "kubernetes");
        tune_container_engine("", false, "", buf, sizeof buf);
        assert_string_equal(buf, "");
        tune_container_engine(NULL, false, NULL, buf, sizeof buf);
        assert_string_equal(buf, "");
        /* Whoever starts the daemon sets the variable: nothing unprintable or long is logged. */
        tune_container_engine("evil\n\033[2J", false, NULL, buf, sizeof buf);
        assert_string_equal(buf, "unnamed");
        tune_container_engine("0123456789012345678901234567890123456789", false, NULL, buf, sizeof buf);
        assert_string_equal(buf, "unnamed");
}

static char *make_root(const char *self_pid, const char *self_net, const char *init_net, bool containerenv) {
        char *root = strdup("/tmp/npu-container-XXXXXX"), path[512];

        assert_non_null(root);
        assert_non_null(mkdtemp(root));
        fake_write(root, "proc/self/ns/.keep", "", 0644);
        fake_write(root, "proc/1/ns/.keep", "", 0644);
        snprintf(path, sizeof path, "%s/proc/self/ns/pid", root);
        assert_int_equal(symlink(self_pid, path), 0);
        snprintf(path, sizeof path, "%s/proc/self/ns/net", root);
        assert_int_equal(symlink(self_net, path), 0);
        if (init_net) {
                snprintf(path, sizeof path, "%s/proc/1/ns/net", root);
                assert_int_equal(symlink(init_net, path), 0);
        }
        if (containerenv)
                fake_write(root, "run/.containerenv", "engine=\"podman-4.3.1\"\n", 0644);
        return root;
}

static void detect(const char *self_pid, const char *self_net, const char *init_net, bool containerenv,
                   const char *container_env, const char *k8s_env, tune_container *c) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        char *root = make_root(self_pid, self_net, init_net, containerenv), cmd[300];

        assert_int_equal(tune_ctx_new(root, &ctx), 0);
        tune_container_detect(ctx, container_env, k8s_env, c);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
        free(root);
}

static void test_detect(void **state) {
        tune_container c;
        (void) state;

        /* A DaemonSet pod: hostPID, hostNetwork, no engine file (containerd), the kubelet's variable. */
        detect(INIT_PID, "net:[4026531840]", "net:[4026531840]", false, NULL, "10.96.0.1", &c);
        assert_string_equal(c.engine, "kubernetes");
        assert_int_equal(c.host_pid_ns, 1);
        assert_int_equal(c.host_net_ns, 1);
        /* podman run --pid=host without --network=host. */
        detect(INIT_PID, "net:[4026532500]", "net:[4026531840]", true, "podman", NULL, &c);
        assert_string_equal(c.engine, "podman");
        assert_int_equal(c.host_pid_ns, 1);
        assert_int_equal(c.host_net_ns, 0);
        /* A pod with its own PID namespace. */
        detect("pid:[4026532600]", "net:[4026532601]", "net:[4026532601]", true, NULL, NULL, &c);
        assert_string_equal(c.engine, "podman");
        assert_int_equal(c.host_pid_ns, 0);
        /* The host's service: no mark; PID 1's link unreadable leaves the network unknown. */
        detect(INIT_PID, "net:[4026531840]", NULL, false, NULL, NULL, &c);
        assert_string_equal(c.engine, "");
        assert_int_equal(c.host_pid_ns, 1);
        assert_int_equal(c.host_net_ns, -1);
        /* Garbage in the links: unknown, not a guess. */
        detect("pid:[x]", "mnt:[1]", "net:[1]", false, "docker", NULL, &c);
        assert_string_equal(c.engine, "docker");
        assert_int_equal(c.host_pid_ns, -1);
        assert_int_equal(c.host_net_ns, -1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ns_link_parse),
                cmocka_unit_test(test_engine),
                cmocka_unit_test(test_detect),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
