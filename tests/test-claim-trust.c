/* SPDX-License-Identifier: GPL-2.0-only */
/* Claim verification (include/npu-tuned/claim-trust.h): the credentials as /proc shows
 * them, the kernel's permission check on a device node, and which claims verify, against
 * real character device nodes in a fake root (made with mknod: needs root). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "npu-tuned/claim-trust.h"

static const char status_nobody[] =
        "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nPid:\t4242\nPPid:\t1\n"
        "Uid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nFDSize:\t64\nGroups:\t65534 \n";
static const char status_service[] =
        "Name:\tpython3\nUid:\t1001\t1001\t1001\t1001\nGid:\t1001\t1001\t1001\t1001\nGroups:\t27 1001 1005 \n";

static void test_parse(void **state) {
        tune_creds c;
        (void) state;

        assert_int_equal(tune_parse_creds(status_nobody, &c), 0);
        assert_int_equal(c.ruid, 65534);
        assert_int_equal(c.fsuid, 65534);
        assert_int_equal(c.fsgid, 65534);
        assert_int_equal(c.n_groups, 1);
        assert_int_equal(tune_parse_creds(status_service, &c), 0);
        assert_int_equal(c.n_groups, 3);
        assert_int_equal(c.groups[2], 1005);
        /* A process cannot write these lines (they are the kernel's), but a cut file can
         * happen: refused, never half-read. */
        assert_int_equal(tune_parse_creds("Uid:\t1\t1\t1\nGid:\t1\t1\t1\t1\n", &c), -EBADMSG);
        assert_int_equal(tune_parse_creds("Name:\tx\n", &c), -EBADMSG);
        assert_int_equal(tune_parse_creds("Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t1 x\n", &c), -EBADMSG);
        /* Ids up to 2^32 - 2 (-1 is no id); the digits are read by hand. */
        assert_int_equal(tune_parse_creds("Uid:\t4294967294\t1\t1\t7\nGid:\t1\t1\t1\t1\n", &c), 0);
        assert_int_equal(c.ruid, 4294967294u);
        assert_int_equal(c.fsuid, 7);
        assert_int_equal(tune_parse_creds("Uid:\t4294967295\t1\t1\t1\nGid:\t1\t1\t1\t1\n", &c), -EBADMSG);
        assert_int_equal(tune_parse_creds("Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t99999999999999999999999\n", &c), -EBADMSG);
        assert_int_equal(tune_parse_creds("Uid:\t1\t1\t1\t1x\nGid:\t1\t1\t1\t1\n", &c), -EBADMSG);
}

static void test_may_open(void **state) {
        tune_creds nobody, service;
        struct stat st = { .st_uid = 0, .st_gid = 1005, .st_mode = S_IFCHR | 0660 };
        (void) state;

        assert_int_equal(tune_parse_creds(status_nobody, &nobody), 0);
        assert_int_equal(tune_parse_creds(status_service, &service), 0);
        assert_false(tune_creds_may_open(&nobody, &st, R_OK | W_OK));
        assert_true(tune_creds_may_open(&service, &st, R_OK | W_OK)); /* in group 1005 */
        st.st_mode = S_IFCHR | 0666;
        assert_true(tune_creds_may_open(&nobody, &st, R_OK | W_OK));
        st.st_mode = S_IFCHR | 0604;
        assert_false(tune_creds_may_open(&nobody, &st, R_OK | W_OK)); /* read-only for others */
        st = (struct stat) { .st_uid = 65534, .st_gid = 0, .st_mode = S_IFCHR | 0066 };
        assert_false(tune_creds_may_open(&nobody, &st, R_OK)); /* owner bits decide for the owner */
}

static char root[] = "/tmp/test-claim-trust-XXXXXX";

static void make_node(const char *name, mode_t mode, gid_t gid) {
        char path[256];
        snprintf(path, sizeof path, "%s/dev/%s", root, name);
        assert_int_equal(mknod(path, S_IFCHR | mode, makedev(1, 3)), 0);
        assert_int_equal(chown(path, 0, gid), 0);
        assert_int_equal(chmod(path, mode), 0);
}

static void test_verify(void **state) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        tune_accel npu0 = { .kind = "ascend", .index = 0, .dev_path = "/dev/davinci0" };
        tune_accel gpu0 = { .kind = "nvidia", .index = 0, .dev_path = "/dev/nvidia0" };
        tune_accel gone = { .kind = "ascend", .index = 7, .dev_path = "/dev/davinci7" };
        const tune_accel *one[] = { &npu0 }, *gpu[] = { &gpu0 }, *both[] = { &npu0, &gone };
        uid_t vllm = 1001;
        tune_policy_rule rule = { .name = (char *) "vllm-worker" };
        tune_attribution env = { .source = TUNE_ATTRIBUTION_ENV }, fds = { .source = TUNE_ATTRIBUTION_DEVICE_FILES },
                         driver = { .source = TUNE_ATTRIBUTION_DRIVER, .variable = "dcmi" };
        tune_creds nobody, service, rootc = {};
        tune_claim c;
        (void) state;

        assert_int_equal(tune_parse_creds(status_nobody, &nobody), 0);
        assert_int_equal(tune_parse_creds(status_service, &service), 0);
        assert_int_equal(tune_ctx_new(root, &ctx), 0);

        /* The attack: nobody names a program like a worker, with ASCEND_RT_VISIBLE_DEVICES=0. */
        tune_claim_input in = { .rule = &rule, .attribution = &env, .accels = one, .n_accels = 1, .creds = &nobody };
        assert_int_equal(tune_claim_verify(ctx, &in, &c), 0);
        assert_int_equal(c.tier, TUNE_CLAIM_UNVERIFIED);
        assert_int_equal(c.uid, 65534);
        assert_string_equal(c.why, "uid 65534 may not open /dev/davinci0 (mode 0660, owner 0, group 1005)");
        /* The real server: a service account in the device's group. */
        in.creds = &service;
        assert_int_equal(tune_claim_verify(ctx, &in, &c), 0);
        assert_int_equal(c.tier, TUNE_CLAIM_VERIFIED);
        assert_string_equal(c.why, "may open /dev/davinci0");
        /* Root (vLLM in a container as root). */
        in.creds = &rootc;
        assert_int_equal(tune_claim_verify(ctx, &in, &c), 0);
        assert_int_equal(c.tier, TUNE_CLAIM_VOUCHED);
        assert_string_equal(c.why, "runs as root");
        /* Every accelerator must be openable: one without a node does not verify. */
        in.creds = &service;
        in.accels = both;
        in.n_accels = 2;
        assert_int_equal(tune_claim_verify(ctx, &in, &c), 0);
        assert_int_equal(c.tier, TUNE_CLAIM_UNVERIFIED);
        assert_string_equal(c.why, "/dev/davinci7 is not a device node here");
        /* A device anyone may open (NVIDIA's default 0666): verified, and so the per-user
         * shares of the plan are what protects another user's pool. */
        in.creds = &nobody;
        in.accels = gpu;
        in.n_accels = 1;
        assert_int_equal(tune_claim_verify(ctx, &in, &c), 0);
        assert_int_equal(c.tier, TUNE_CLAIM_VERIFIED);
        /* Holding the device open verifies (a remapped container root, say). */
        in.accels = one;
        in.attribution = &fds;
        assert_int_equal(tune_claim_verify(ctx, &in, &c), 0);
        assert_int_equal(c.tier, TUNE_CLAIM_VERIFIED);
        assert_string_equal(c.why, "holds its accelerators' device files open");
        /* So does the driver listing it on them (it had to open the device to use it). */
        in.attribution = &driver;
        assert_int_equal(tune_claim_verify(ctx, &in, &c), 0);
        assert_int_equal(c.tier, TUNE_CLAIM_VERIFIED);
        assert_string_equal(c.why, "the driver lists it on its accelerators");
        in.attribution = &env;
        /* The rule names its user: the author vouches (the matcher saw the uid). */
        rule.match_uids = &vllm;
        rule.n_match_uids = 1;
        assert_int_equal(tune_claim_verify(ctx, &in, &c), 0);
        assert_int_equal(c.tier, TUNE_CLAIM_VOUCHED);
        rule.match_uids = NULL;
        rule.n_match_uids = 0;
        /* "claims": "any" believes anyone (--check-policy warns about it). */
        rule.claims_any = true;
        assert_int_equal(tune_claim_verify(ctx, &in, &c), 0);
        assert_int_equal(c.tier, TUNE_CLAIM_VERIFIED);
        rule.claims_any = false;
        /* No accelerator at all: nothing to check against. */
        in.n_accels = 0;
        assert_int_equal(tune_claim_verify(ctx, &in, &c), 0);
        assert_int_equal(c.tier, TUNE_CLAIM_UNVERIFIED);
}

static int setup(void **state) {
        char path[256];
        (void) state;

        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: needs root (mknod of device nodes)\n");
                exit(77);
        }
        if (!mkdtemp(root))
                return -1;
        snprintf(path, sizeof path, "%s/dev", root);
        if (mkdir(path, 0755) < 0)
                return -1;
        make_node("davinci0", 0660, 1005); /* the Ascend driver's: root:HwHiAiUser 0660 */
        make_node("nvidia0", 0666, 0);
        return 0;
}

static int teardown(void **state) {
        char cmd[128];
        (void) state;
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_may_open),
                cmocka_unit_test(test_verify),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
