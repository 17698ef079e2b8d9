/* SPDX-License-Identifier: GPL-2.0-only */
/* Who binds: the engines' own switches (libtune/engine-binding.c) as their documentation
 * and source spell them, and the policy's "binding" / "binding_watch_ms" keys. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "npu-tuned/engine-binding.h"
#include "npu-tuned/policy.h"

static tune_engine_binds detect_env(const char *environ_block, size_t len, const char *cmdline, const char *kind,
                                    char *why, size_t size) {
        tune_env_capture e = {};
        unsigned n = 0;
        while (tune_engine_binding_env_names[n])
                n++;
        assert_int_equal(tune_env_capture_parse(environ_block, len, false, tune_engine_binding_env_names, n, &e), 0);
        tune_engine_binds r = tune_engine_binding_detect(cmdline, &e, kind, why, size);
        tune_env_capture_done(&e);
        return r;
}
#define DETECT(env, cmdline, kind) detect_env(env, sizeof(env), cmdline, kind, why, sizeof why)

static void test_switches(void **state) {
        char why[192];
        (void) state;

        assert_int_equal(DETECT("PATH=/bin\0SGLANG_NUMA_BIND_V2=1", "sglang::scheduler_TP0", NULL), TUNE_ENGINE_BINDS_YES);
        assert_string_equal(why, "SGLANG_NUMA_BIND_V2=1 in its environment");
        assert_int_equal(DETECT("SGLANG_NUMA_BIND_V2=0", "sglang::scheduler_TP0", NULL), TUNE_ENGINE_BINDS_NO);
        /* SGLang's default is on. */
        assert_int_equal(DETECT("PATH=/bin", "sglang::scheduler_TP0", NULL), TUNE_ENGINE_BINDS_YES);
        assert_int_equal(DETECT("CPU_AFFINITY_CONF=1,npu0:0-23", "python3 x.py", NULL), TUNE_ENGINE_BINDS_YES);
        assert_int_equal(DETECT("CPU_AFFINITY_CONF=0", "python3 x.py", NULL), TUNE_ENGINE_BINDS_NO);
        assert_int_equal(DETECT("TLLM_NUMA_BIND=1", "trtllm-serve", NULL), TUNE_ENGINE_BINDS_YES);
        assert_int_equal(DETECT("X=1", "vllm serve m --numa-bind", NULL), TUNE_ENGINE_BINDS_YES);
        assert_int_equal(DETECT("X=1", "vllm serve m --numa-bind-nodes 0,1", NULL), TUNE_ENGINE_BINDS_YES);
        assert_int_equal(DETECT("X=1", "torchrun --numa-binding=node x.py", NULL), TUNE_ENGINE_BINDS_YES);
        assert_int_equal(DETECT("X=1", "vllm serve m --no-numa-bind-here", NULL), TUNE_ENGINE_BINDS_UNKNOWN);
        /* vllm-ascend: on by default for its workers, off by its additional config. */
        assert_int_equal(DETECT("X=1", "VLLM::Worker_TP0", "ascend"), TUNE_ENGINE_BINDS_YES);
        assert_int_equal(DETECT("X=1", "VLLM::Worker_TP0", "nvidia"), TUNE_ENGINE_BINDS_UNKNOWN);
        assert_int_equal(DETECT("X=1", "vllm serve m --additional-config {\"enable_cpu_binding\": false}", "ascend"),
                         TUNE_ENGINE_BINDS_NO);
        assert_int_equal(DETECT("X=1", "python3 threads-target", NULL), TUNE_ENGINE_BINDS_UNKNOWN);
        /* A hostile value comes back printable. */
        assert_int_equal(DETECT("SGLANG_NUMA_BIND_V2=1\nFAKE LOG LINE", "x", NULL), TUNE_ENGINE_BINDS_YES);
        assert_null(strchr(why, '\n'));
}

static void test_observed(void **state) {
        tune_cpuset start = {}, masks[2] = {};
        (void) state;

        assert_int_equal(tune_cpuset_parse_list(&start, "0-7"), 0);
        assert_int_equal(tune_cpuset_parse_list(&masks[0], "0-7"), 0);
        assert_int_equal(tune_cpuset_parse_list(&masks[1], "0-7"), 0);
        assert_false(tune_engine_binding_observed(masks, 2, &start));
        assert_int_equal(tune_cpuset_parse_list(&masks[1], "3"), 0);
        assert_true(tune_engine_binding_observed(masks, 2, &start));
        tune_cpuset_done(&start);
        tune_cpuset_done(&masks[0]);
        tune_cpuset_done(&masks[1]);
}

static void test_policy_keys(void **state) {
        _cleanup_(tune_policy_freep) tune_policy *p = NULL;
        tune_policy_errors errors = {};
        (void) state;

        assert_int_equal(tune_policy_parse_string(
                                 "{ \"version\": 1, \"processes\": ["
                                 " { \"name\": \"a\", \"match\": { \"exe\": \"/a\" }, \"binding\": \"auto\", \"binding_watch_ms\": 500 },"
                                 " { \"name\": \"e\", \"match\": { \"exe\": \"/e\" }, \"binding\": \"engine\" },"
                                 " { \"name\": \"d\", \"match\": { \"exe\": \"/d\" } } ] }",
                                 "t.json", &p, &errors),
                         0);
        for (unsigned i = 0; i < p->n_rules; i++) {
                const tune_policy_rule *r = &p->rules[i];
                if (streq(r->name, "a")) {
                        assert_int_equal(r->binding, TUNE_BINDING_AUTO);
                        assert_int_equal(r->binding_watch_ms, 500);
                } else if (streq(r->name, "e"))
                        assert_int_equal(r->binding, TUNE_BINDING_ENGINE);
                else {
                        assert_int_equal(r->binding, TUNE_BINDING_DAEMON);
                        assert_int_equal(r->binding_watch_ms, 2000);
                }
        }
        tune_policy_errors_done(&errors);
        assert_int_equal(tune_policy_parse_string("{ \"version\": 1, \"processes\": ["
                                                  " { \"name\": \"a\", \"match\": { \"exe\": \"/a\" }, \"binding\": \"both\" } ] }",
                                                  "t.json", &p, &errors),
                         -EINVAL);
        assert_int_equal(errors.n, 1);
        assert_string_equal(errors.items[0].key_path, "processes[0].binding");
        assert_non_null(strstr(errors.items[0].message, "\"daemon\", \"engine\", \"auto\""));
        tune_policy_errors_done(&errors);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_switches),
                cmocka_unit_test(test_observed),
                cmocka_unit_test(test_policy_keys),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
