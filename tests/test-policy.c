/* SPDX-License-Identifier: GPL-2.0-only */
/* The policy parser and validator: each class of problem gives the exact message, with the
 * file, the key path and the line and column; valid policies give the values they say. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/policy.h"
#include "policy-assert.h"

/* Users known to the tests, whatever the machine's /etc/passwd says. */
static int fake_users(const char *name, uid_t *ret, void *userdata) {
        (void) userdata;
        if (streq(name, "root")) {
                *ret = 0;
                return 0;
        }
        if (streq(name, "vllm")) {
                *ret = 1500;
                return 0;
        }
        return -ESRCH;
}

static const tune_policy_load_params test_params = { .resolve_user = fake_users };

/* Parses json as "t.json" and returns every problem, one formatted line each. */
static char *problems_with(const char *json, const tune_policy_load_params *params, int *ret_r) {
        tune_policy *p = NULL;
        tune_policy_errors errors = {};
        char *all = strdup("");
        int r;

        r = tune_policy_parse_buffer(json, strlen(json), "t.json", params, &p, &errors);
        if (ret_r)
                *ret_r = r;
        /* Never a policy with errors, never an error without a policy refused. */
        if (tune_policy_errors_count(&errors) > 0) {
                assert_int_equal(r, -EINVAL);
                assert_null(p);
        } else {
                assert_int_equal(r, 0);
                assert_non_null(p);
        }
        for (unsigned i = 0; i < errors.n; i++) {
                char *line, *joined;
                assert_int_equal(tune_policy_error_format(&errors.items[i], &line), 0);
                assert_true(asprintf(&joined, "%s%s%s", all, i ? "\n" : "", line) >= 0);
                free(all);
                free(line);
                all = joined;
        }
        tune_policy_errors_done(&errors);
        tune_policy_free(p);
        return all;
}

static char *problems(const char *json) {
        return problems_with(json, &test_params, NULL);
}

#define assert_problems(json, expected)                       \
        do {                                                  \
                char *_got = problems(json);                  \
                assert_string_equal(_got, expected);          \
                free(_got);                                   \
        } while (0)

/* A complete rule to build test policies from. */
#define RULE(name, extra)                                                                   \
        "{ \"name\": \"" name "\", \"match\": { \"exe\": \"/usr/bin/" name "\" }" extra " }"

static tune_policy *parse_ok(const char *json) {
        tune_policy *p = NULL;
        tune_policy_errors errors = {};
        int r = tune_policy_parse_buffer(json, strlen(json), "t.json", &test_params, &p, &errors);
        for (unsigned i = 0; i < errors.n; i++) {
                char *line;
                assert_int_equal(tune_policy_error_format(&errors.items[i], &line), 0);
                fprintf(stderr, "unexpected: %s\n", line);
                free(line);
        }
        assert_int_equal(r, 0);
        assert_int_equal(tune_policy_errors_count(&errors), 0);
        tune_policy_errors_done(&errors);
        return p;
}

static void test_minimal_and_defaults(void **state) {
        tune_policy *p;
        (void) state;

        p = parse_ok("{ \"version\": 1 }");
        assert_int_equal(p->version, 1);
        assert_int_equal(p->n_rules, 0);
        assert_false(p->options.dry_run);
        assert_int_equal(p->options.reconcile_interval_ms, 10000);
        assert_int_equal(p->options.max_managed_processes, 4096);
        assert_int_equal(p->options.proc_connector_rcvbuf_kib, 4096);
        assert_null(p->options.metrics_textfile);
        /* Leave the host alone unless told otherwise. */
        assert_host_untouched(&p->host);
        assert_false(p->host.reassert);
        assert_int_equal(p->n_files, 1);
        assert_string_equal(p->files[0], "t.json");
        tune_policy_free(p);

        p = parse_ok("{ \"version\": 1, \"processes\": [ " RULE("w", "") " ] }");
        assert_int_equal(p->n_rules, 1);
        tune_policy_rule *r = &p->rules[0];
        assert_string_equal(r->name, "w");
        assert_string_equal(r->file, "t.json");
        assert_string_equal(r->key_path, "processes[0]");
        assert_int_equal(r->priority, 0);
        assert_string_equal(r->match_exe, "/usr/bin/w");
        assert_int_equal(r->accel_mode, TUNE_ACCEL_AUTO);
        assert_int_equal(r->rank_source, TUNE_RANK_NONE);
        assert_null(r->control.name_globs);
        assert_false(r->control.main_thread);
        assert_int_equal(r->control.cpus, 0);
        assert_int_equal(r->compute.cpus, 0);
        assert_false(r->memory_migrate);
        assert_int_equal(r->memory_settle_delay_ms, 30000);
        assert_int_equal(r->memory_min_free_kib, 0);
        assert_true(r->restore_on_stop);
        assert_false(r->reassert_affinity);
        assert_int_equal(r->unattributed, TUNE_UNATTRIBUTED_LEAVE);
        tune_policy_free(p);
}

static void test_every_key(void **state) {
        tune_policy *p;
        (void) state;

        p = parse_ok("{ \"version\": 1, \"comment\": \"all of it\",\n"
                     "  \"options\": { \"dry_run\": true, \"reconcile_interval_ms\": 5000, \"max_managed_processes\": 64,\n"
                     "               \"proc_connector_rcvbuf_kib\": 8192, \"metrics_textfile\": \"/run/prom/npu-tuned.prom\" },\n"
                     "  \"host\": { \"cpufreq\": { \"governor\": \"performance\", \"cpus\": \"inference\" },\n"
                     "            \"thp\": { \"enabled\": \"never\", \"defrag\": \"defer+madvise\", \"khugepaged_defrag\": false },\n"
                     "            \"irq\": { \"housekeeping_cpus_per_node\": 2, \"keep_off_inference_cpus\": true,\n"
                     "                     \"steer_accelerator_irqs\": true },\n"
                     "            \"pcie_aspm\": { \"policy\": \"performance\", \"accelerator_link\": \"l1_only\" },\n"
                     "            \"numa_balancing\": 0, \"reassert\": true },\n"
                     "  \"accelerators\": {\n"
                     "    \"kinds\": [ { \"name\": \"edu\", \"pci_id\": \"1234:11E8\", \"device_node\": \"/dev/edu%N\",\n"
                     "                 \"visible_devices_env\": \"EDU_VISIBLE_DEVICES\", \"visible_ids\": \"physical\" } ],\n"
                     "    \"numa_node_overrides\": [ { \"pci\": \"C1:00.0\", \"node\": 4 } ] },\n"
                     "  \"processes\": [\n"
                     "    { \"name\": \"low\", \"priority\": -5, \"match\": { \"cgroup\": \"/system.slice/x.service\" },\n"
                     "      \"accelerators\": \"none\",\n"
                     "      \"unattributed\": { \"action\": \"place\", \"cpus\": \"96-119\", \"nodes\": \"4,6\" } },\n"
                     "    { \"name\": \"worker\", \"priority\": 10,\n"
                     "      \"match\": { \"comm\": \"VLLM::Worker*\", \"exe\": \"*/python3*\", \"cmdline\": \"::Worker_TP[0-9]+\",\n"
                     "                 \"user\": [ \"vllm\", 0 ], \"cgroup\": \"/\" },\n"
                     "      \"accelerators\": [ \"edu:1\", \"ascend:0\" ],\n"
                     "      \"rank\": { \"from\": \"cmdline\", \"regex\": \"_TP([0-9]+)\" },\n"
                     "      \"threads\": { \"control\": { \"names\": [ \"acl_thread\", \"release_*\" ], \"main_thread\": true, \"cpus\": 3 },\n"
                     "                   \"compute\": { \"cpus\": 9 } },\n"
                     "      \"memory\": { \"migrate\": true, \"settle_delay_ms\": 1000, \"min_free_mib\": 8192, \"rate_mib_s\": 512 },\n"
                     "      \"restore_on_stop\": false, \"reassert_affinity\": true },\n"
                     "    { \"name\": \"env-ranked\", \"match\": { \"exe\": \"/opt/x\" }, \"rank\": { \"from\": \"env\", \"env\": \"RANK\" } },\n"
                     "    { \"name\": \"off\", \"enabled\": false }\n"
                     "  ] }");
        assert_true(p->options.dry_run);
        assert_int_equal(p->options.reconcile_interval_ms, 5000);
        assert_int_equal(p->options.max_managed_processes, 64);
        assert_int_equal(p->options.proc_connector_rcvbuf_kib, 8192);
        assert_string_equal(p->options.metrics_textfile, "/run/prom/npu-tuned.prom");
        assert_string_equal(p->host.governor, "performance");
        assert_int_equal(p->host.governor_scope, TUNE_GOVERNOR_INFERENCE_CPUS);
        assert_string_equal(p->host.thp_enabled, "never");
        assert_string_equal(p->host.thp_defrag, "defer+madvise");
        assert_int_equal(p->host.khugepaged_defrag, 0);
        assert_true(p->host.irq_manage); /* the section is there */
        assert_int_equal(p->host.irq_housekeeping_cpus_per_node, 2);
        assert_string_equal(p->host.aspm_policy, "performance");
        assert_int_equal(p->host.aspm_accelerator_link, TUNE_ASPM_LINK_L1_ONLY);
        assert_int_equal(p->host.numa_balancing, 0);
        assert_true(p->host.reassert);
        assert_int_equal(p->n_kinds, 1);
        assert_string_equal(p->kinds[0].kind.name, "edu");
        assert_int_equal(p->kinds[0].kind.vendor, 0x1234);
        assert_int_equal(p->kinds[0].kind.device, 0x11e8);
        assert_string_equal(p->kinds[0].kind.device_pattern, "/dev/edu%N");
        assert_string_equal(p->kinds[0].visible_env, "EDU_VISIBLE_DEVICES");
        assert_int_equal(p->kinds[0].visible_ids, TUNE_VISIBLE_IDS_PHYSICAL);
        assert_int_equal(p->n_overrides, 1);
        assert_string_equal(p->overrides[0].pci, "0000:c1:00.0");
        assert_int_equal(p->overrides[0].node, 4);

        /* Sorted by priority; the disabled rule is gone. */
        assert_int_equal(p->n_rules, 3);
        assert_string_equal(p->rules[0].name, "worker");
        assert_string_equal(p->rules[1].name, "env-ranked");
        assert_string_equal(p->rules[2].name, "low");
        tune_policy_rule *w = &p->rules[0];
        assert_string_equal(w->key_path, "processes[1]");
        assert_string_equal(w->match_comm, "VLLM::Worker*");
        assert_string_equal(w->match_exe, "*/python3*");
        assert_true(w->has_match_cmdline);
        assert_int_equal(regexec(&w->match_cmdline, "VLLM::Worker_TP3 ", 0, NULL, 0), 0);
        assert_int_equal(w->n_match_uids, 2);
        assert_int_equal(w->match_uids[0], 1500);
        assert_int_equal(w->match_uids[1], 0);
        assert_string_equal(w->match_cgroup, "/");
        assert_int_equal(w->accel_mode, TUNE_ACCEL_EXPLICIT);
        assert_int_equal(w->n_accels, 2);
        assert_string_equal(w->accels[0].kind, "edu");
        assert_int_equal(w->accels[0].index, 1);
        assert_int_equal(w->rank_source, TUNE_RANK_CMDLINE);
        regmatch_t m[2];
        assert_int_equal(regexec(&w->rank_regex, "VLLM::Worker_DP1_TP7", 2, m, 0), 0);
        assert_int_equal(m[1].rm_so, 19);
        assert_string_equal(w->control.name_globs[0], "acl_thread");
        assert_string_equal(w->control.name_globs[1], "release_*");
        assert_null(w->control.name_globs[2]);
        assert_true(w->control.main_thread);
        assert_int_equal(w->control.cpus, 3);
        assert_int_equal(w->compute.cpus, 9);
        assert_true(w->memory_migrate);
        assert_int_equal(w->memory_settle_delay_ms, 1000);
        assert_int_equal(w->memory_min_free_kib, 8192 * 1024);
        assert_int_equal(w->memory_rate_mib_s, 512);
        assert_false(w->restore_on_stop);
        assert_true(w->reassert_affinity);
        assert_int_equal(p->rules[1].rank_source, TUNE_RANK_ENV);
        assert_string_equal(p->rules[1].rank_env, "RANK");
        tune_policy_rule *low = &p->rules[2];
        assert_int_equal(low->priority, -5);
        assert_int_equal(low->accel_mode, TUNE_ACCEL_NONE);
        assert_int_equal(low->unattributed, TUNE_UNATTRIBUTED_PLACE);
        assert_int_equal(tune_cpuset_count(&low->unattributed_cpus), 24);
        assert_true(tune_cpuset_has(&low->unattributed_nodes, 6));

        /* The printed policy loads back to the same printed policy. */
        char *json, *json2;
        assert_int_equal(tune_policy_to_json(p, &json), 0);
        tune_policy *q = parse_ok(json);
        assert_int_equal(tune_policy_to_json(q, &json2), 0);
        assert_string_equal(json, json2);
        free(json);
        free(json2);
        tune_policy_free(q);
        tune_policy_free(p);
}

static void test_syntax(void **state) {
        (void) state;
        assert_problems("{\n  \"version\": 1,\n  \"host\": {\n    \"thp\": { \"enabled\": \"never\" }\n",
                        "t.json: JSON syntax error: unexpected end of file (an unclosed '{', '[' or string?) (line 5, column 1)");
        assert_problems("{\n  \"version\": 1,\n  \"host\": { },\n}\n",
                        "t.json: JSON syntax error: unexpected character (line 4, column 1)");
        assert_problems("{ \"version\": 1, /* no comments */ }",
                        "t.json: JSON syntax error: quoted object property name expected (line 1, column 17)");
        assert_problems("{ \"version\": 1 } trailing", "t.json: JSON syntax error: unexpected character (line 1, column 18)");
        assert_problems("{ \"version\": 1, 'host': {} }",
                        "t.json: keys and strings take double quotes in JSON, not single quotes (line 1, column 17)");
        assert_problems("{ \"version\": 1, \"comment\": \"\xff\" }", "t.json: not valid UTF-8 (line 1, column 29)");
        assert_problems("", "t.json: has no JSON in it (an empty file in /etc/npu-tuned/policies.d masks the shipped file "
                            "of the same name; elsewhere it is a mistake)");
        assert_problems("[ 1 ]", "t.json: the top level must be a JSON object ({ \"version\": 1, ... }), not an array (line 1, column 1)");

        /* An embedded NUL byte. */
        tune_policy *p = NULL;
        tune_policy_errors errors = {};
        char *line;
        assert_int_equal(tune_policy_parse_buffer("{\n \"version\": 1\0}", 17, "t.json", NULL, &p, &errors), -EINVAL);
        assert_int_equal(errors.n, 1);
        assert_int_equal(tune_policy_error_format(&errors.items[0], &line), 0);
        assert_string_equal(line, "t.json: contains a NUL byte: not a text file (line 2, column 14)");
        free(line);
        tune_policy_errors_done(&errors);
}

static char *nested(unsigned levels) {
        /* levels of nesting in total, the top-level object included */
        size_t n = levels - 1;
        char *s = malloc(64 + 2 * n);
        strcpy(s, "{ \"version\": 1, \"comment\": ");
        size_t k = strlen(s);
        for (size_t i = 0; i < n; i++)
                s[k++] = '[';
        for (size_t i = 0; i < n; i++)
                s[k++] = ']';
        strcpy(s + k, " }");
        return s;
}

static void test_depth_and_size(void **state) {
        char *s, *got;
        (void) state;

        /* 32 levels parse (and then fail the schema); 33 are refused by the tokenizer. */
        s = nested(32);
        got = problems(s);
        assert_string_equal(got, "t.json: comment: expected a string, got an array (line 1, column 17)");
        free(got);
        free(s);
        s = nested(33);
        got = problems(s);
        assert_string_equal(got, "t.json: nesting deeper than 32 levels (line 1, column 59)");
        free(got);
        free(s);

        /* Over 1 MiB. */
        size_t big = TUNE_POLICY_FILE_MAX + 1;
        s = malloc(big + 1);
        memset(s, ' ', big);
        memcpy(s, "{ \"version\": 1 }", 16);
        s[big] = 0;
        got = problems(s);
        assert_string_equal(got, "t.json: is 1048577 bytes; policy files are limited to 1 MiB");
        free(got);
        /* Exactly 1 MiB is fine. */
        s[big - 1] = 0;
        got = problems(s);
        assert_string_equal(got, "");
        free(got);
        free(s);
}

static void test_version(void **state) {
        (void) state;
        assert_problems("{ }", "t.json: missing \"version\": every policy file starts with \"version\": 1 (line 1, column 1)");
        assert_problems("{ \"version\": 2 }", "t.json: version: unsupported version 2: this npu-tuned reads version 1 (line 1, column 3)");
        assert_problems("{ \"version\": \"1\" }", "t.json: version: expected the number 1, got a string (line 1, column 3)");
}

static void test_unknown_keys(void **state) {
        (void) state;
        assert_problems("{ \"version\": 1,\n  \"host\": {\n    \"thp\": { \"enable\": \"never\" } } }",
                        "t.json: host.thp.enable: unknown key (did you mean \"enabled\"?) (line 3, column 14)");
        assert_problems("{ \"version\": 1, \"hosts\": {} }", "t.json: hosts: unknown key (did you mean \"host\"?) (line 1, column 17)");
        assert_problems("{ \"version\": 1, \"options\": { \"verbose\": true } }",
                        "t.json: options.verbose: unknown key; known keys here: dry_run, reconcile_interval_ms, "
                        "max_managed_processes, proc_connector_rcvbuf_kib, metrics_textfile (line 1, column 30)");
        /* The textfile collector reads only *.prom files, and the daemon (root) writes
         * only to an absolute path. */
        assert_problems("{ \"version\": 1, \"options\": { \"metrics_textfile\": \"npu-tuned.prom\" } }",
                        "t.json: options.metrics_textfile: not an absolute path to a file named *.prom, e.g. "
                        "\"/var/lib/prometheus/node-exporter/npu-tuned.prom\" (line 1, column 30)");
        assert_problems("{ \"version\": 1, \"options\": { \"metrics_textfile\": \"/var/lib/x/../y.prom\" } }",
                        "t.json: options.metrics_textfile: not an absolute path to a file named *.prom, e.g. "
                        "\"/var/lib/prometheus/node-exporter/npu-tuned.prom\" (line 1, column 30)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"thread\": {}") " ] }",
                        "t.json: processes[0].thread: unknown key (did you mean \"threads\"?) (line 1, column 81)");
        /* A key with control characters is printed escaped. */
        assert_problems("{ \"version\": 1, \"a\\u001bb\": 1 }",
                        "t.json: \"a\\x1bb\": unknown key; known keys here: version, options, host, accelerators, processes "
                        "(line 1, column 1)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"threads\": { \"compute\": { \"names\": \"x\", \"cpus\": 2 } }") " ] }",
                        "t.json: processes[0].threads.compute.names: compute takes every thread that is not control; it "
                        "has no \"names\" (put them in control, or leave them out) (line 1, column 107)");
        assert_problems("{ \"version\": 1, \"comment\": 5 }", "t.json: comment: expected a string, got a number (line 1, column 17)");
        assert_problems("{ \"version\": 1, \"host\": { \"thp\": {}, \"thp\": { \"enabled\": \"never\" } } }",
                        "t.json: host.thp: key \"thp\" given twice (first on line 1): only the last one would count (line 1, column 38)");
}

static void test_types_and_ranges(void **state) {
        (void) state;
        assert_problems("{ \"version\": 1, \"options\": { \"dry_run\": \"yes\" } }",
                        "t.json: options.dry_run: expected true or false, got a string (line 1, column 30)");
        assert_problems("{ \"version\": 1, \"options\": { \"reconcile_interval_ms\": 50 } }",
                        "t.json: options.reconcile_interval_ms: must be between 100 and 3600000, got 50 (line 1, column 30)");
        assert_problems("{ \"version\": 1, \"options\": { \"reconcile_interval_ms\": 99999999999999999999 } }",
                        "t.json: options.reconcile_interval_ms: must be between 100 and 3600000, got 18446744073709551615 (line 1, column 30)");
        assert_problems("{ \"version\": 1, \"options\": { \"reconcile_interval_ms\": 1.5 } }",
                        "t.json: options.reconcile_interval_ms: expected a whole number, got a number with a fraction or "
                        "exponent (line 1, column 30)");
        assert_problems("{ \"version\": 1, \"options\": { \"reconcile_interval_ms\": \"10s\" } }",
                        "t.json: options.reconcile_interval_ms: expected a number of milliseconds, got the string \"10s\" "
                        "(write it without quotes) (line 1, column 30)");
        assert_problems("{ \"version\": 1, \"host\": { \"thp\": { \"enabled\": \"nevr\" } } }",
                        "t.json: host.thp.enabled: must be one of \"always\", \"madvise\", \"never\", got \"nevr\" (line 1, column 36)");
        assert_problems("{ \"version\": 1, \"host\": { \"numa_balancing\": 2 } }",
                        "t.json: host.numa_balancing: must be 0 or 1 (or false or true), got 2 (line 1, column 27)");
        assert_problems("{ \"version\": 1, \"host\": { \"irq\": { \"housekeeping_cpus_per_node\": 0 } } }",
                        "t.json: host.irq.housekeeping_cpus_per_node: must be at least 1 when steer_accelerator_irqs is "
                        "true (accelerator IRQs go to the housekeeping CPUs of their node) (line 1, column 36)");
        assert_problems("{ \"version\": 1, \"processes\": {} }",
                        "t.json: processes: expected an array ([ ... ]), got an object (line 1, column 17)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"threads\": { \"control\": { \"main_thread\": true, \"cpus\": \"2\" } }") " ] }",
                        "t.json: processes[0].threads.control.cpus: expected a number of CPUs, got the string \"2\" (write "
                        "it without quotes) (line 1, column 128)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"priority\": 5000") " ] }",
                        "t.json: processes[0].priority: must be between -1000 and 1000, got 5000 (line 1, column 81)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"unattributed\": { \"action\": \"place\", \"cpus\": \"3-1\" }") " ] }",
                        "t.json: processes[0].unattributed.cpus: expected a CPU list like \"0-3,8\", got \"3-1\" (line 1, column 118)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"unattributed\": { \"action\": \"place\", \"cpus\": \"9000\" }") " ] }",
                        "t.json: processes[0].unattributed.cpus: CPU numbers stop at 8191 (line 1, column 118)");
        assert_problems("{ \"version\": 1, \"accelerators\": { \"kinds\": [ { \"name\": \"edu\", \"pci_id\": \"0x1234\" } ] } }",
                        "t.json: accelerators.kinds[0].pci_id: expected a PCI vendor:device id as lspci -nn prints it, "
                        "like \"19e5:d802\" or \"19e5:*\" (line 1, column 63)");
        assert_problems("{ \"version\": 1, \"accelerators\": { \"numa_node_overrides\": [ { \"pci\": \"c1:00.0\" } ] } }",
                        "t.json: accelerators.numa_node_overrides[0]: missing \"node\": the NUMA node the device is attached "
                        "to (line 1, column 60)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"accelerators\": [ \"ascend0\" ]") " ] }",
                        "t.json: processes[0].accelerators[0]: expected \"KIND:INDEX\" like \"ascend:0\" (index 0-1023), got "
                        "\"ascend0\" (line 1, column 99)");
}

static void test_patterns(void **state) {
        (void) state;
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"cmdline\": \"([0-9]\" } } ] }",
                        "t.json: processes[0].match.cmdline: not a valid POSIX extended regular expression: it has a '(' "
                        "without ')' (line 1, column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"cmdline\": \"[[:foo:]]\" } } ] }",
                        "t.json: processes[0].match.cmdline: not a valid POSIX extended regular expression: Invalid "
                        "character class name (line 1, column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"cmdline\": \"((a{1,100}){1,100}){1,100}\" } } ] }",
                        "t.json: processes[0].match.cmdline: regular expression too complex (expands to about 1030301 "
                        "states; the limit is 10000) (line 1, column 58)");
        /* Found by fuzzing: both make glibc's regcomp() take minutes. */
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"cmdline\": \"x( |$)+\" } } ] }",
                        "t.json: processes[0].match.cmdline: regular expression refused: it repeats an anchor (^, $ or "
                        "\\b) or a group with one (regcomp() can take minutes over that); match it once instead (line 1, "
                        "column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"cmdline\": \"(a|b)++\" } } ] }",
                        "t.json: processes[0].match.cmdline: regular expression refused: it has two repetition operators "
                        "in a row (like \"a+*\"; undefined in POSIX) (line 1, column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"cmdline\": \"a{1000}\" } } ] }",
                        "t.json: processes[0].match.cmdline: not a valid POSIX extended regular expression: it repeats "
                        "more than 255 times (line 1, column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"exe\": \"/usr/bin/vllm[\" } } ] }",
                        "t.json: processes[0].match.exe: not a valid glob: it has an unterminated '[' (write \\\\[ for a "
                        "literal bracket) (line 1, column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"exe\": \"/x\\\\\" } } ] }",
                        "t.json: processes[0].match.exe: not a valid glob: it ends in a lone backslash (line 1, column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"exe\": \"/x[[:digits:]]\" } } ] }",
                        "t.json: processes[0].match.exe: not a valid glob: it has an unknown character class (known: "
                        "[:alnum:], [:alpha:], [:digit:], [:lower:], [:upper:], [:space:], ...) (line 1, column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"rank\": { \"from\": \"cmdline\", \"regex\": \"_TP[0-9]+\" }") " ] }",
                        "t.json: processes[0].rank.regex: needs a capture group around the rank's digits, like "
                        "\"_TP([0-9]+)\" (line 1, column 110)");
}

static void test_never_matches(void **state) {
        (void) state;
        /* comm is cut to 15 bytes: "VLLM::EngineCore" can never be a comm. */
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"comm\": \"VLLM::EngineCore\", \"exe\": \"/x\" } } ] }",
                        "t.json: processes[0].match.comm: can never match: a comm is at most 15 bytes and this glob "
                        "needs 16 (the kernel cuts names to 15 bytes: match the start, e.g. with a trailing '*', or match "
                        "the title with cmdline) (line 1, column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"threads\": { \"control\": { \"names\": [ \"ok\", \"a_very_long_thread_name\" ], \"cpus\": 1 } }") " ] }",
                        "t.json: processes[0].threads.control.names[1]: can never match: a comm is at most 15 bytes and "
                        "this glob needs 23 (the kernel cuts names to 15 bytes: match the start, e.g. with a trailing "
                        "'*', or match the title with cmdline) (line 1, column 124)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"exe\": \"python3\" } } ] }",
                        "t.json: processes[0].match.exe: can never match: executable paths are absolute (the resolved "
                        "/proc/PID/exe); start the glob with '/' or '*' (line 1, column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"exe\": \"/usr/bin/../bin/x\" } } ] }",
                        "t.json: processes[0].match.exe: can never match: the executable path is resolved (no \"//\", "
                        "\"/./\" or \"/../\" in it) (line 1, column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"cgroup\": \"system.slice/\" } } ] }",
                        "t.json: processes[0].match.cgroup: can never match: cgroup paths start with '/', like "
                        "\"/system.slice/vllm.service\" (line 1, column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"user\": [] } } ] }",
                        "t.json: processes[0].match.user: can never match: the list of users is empty (line 1, column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\" } ] }",
                        "t.json: processes[0]: missing \"match\": a rule needs at least one of comm, exe, cmdline, user, "
                        "cgroup (line 1, column 32)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": {} } ] }",
                        "t.json: processes[0].match: is empty: a rule needs at least one of comm, exe, cmdline, user, "
                        "cgroup (line 1, column 47)");
        /* Same criteria: the lower priority never applies. */
        assert_problems("{ \"version\": 1, \"processes\": [\n"
                        "  { \"name\": \"a\", \"priority\": 1, \"match\": { \"exe\": \"/x\", \"user\": [ 1, 0 ] } },\n"
                        "  { \"name\": \"b\", \"priority\": 5, \"match\": { \"user\": [ 0, 1 ], \"exe\": \"/x\" } } ] }",
                        "t.json: processes[0].match: never applies: rule \"b\" has the same match criteria and wins "
                        "(priority 5 > 1) (line 2, column 33)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("a", "") ", " RULE("b", "") ", " RULE("a", "") " ] }",
                        "t.json: processes[2].name: rule \"a\" is already defined by processes[0] (in one file, names are "
                        "unique) (line 1, column 136)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"accelerators\": \"none\"") " ] }",
                        "t.json: processes[0].accelerators: is \"none\" but unattributed.action is \"leave\": this rule would "
                        "never place anything (give \"unattributed\": {\"action\": \"place\", \"cpus\": ...}) (line 1, column 81)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"threads\": { \"control\": { \"cpus\": 2 } }") " ] }",
                        "t.json: processes[0].threads.control: has no members: give \"names\" (globs on thread names) or "
                        "\"main_thread\": true (line 1, column 94)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"threads\": { \"control\": { \"main_thread\": true } }") " ] }",
                        "t.json: processes[0].threads.control: missing \"cpus\": how many CPUs the control threads get, "
                        "e.g. \"cpus\": 2 (line 1, column 94)");
}

static void test_conflicts(void **state) {
        (void) state;
        /* Two rules claiming the same CPUs: reported on the later one, naming the other. */
        assert_problems("{ \"version\": 1, \"processes\": [\n"
                        "  { \"name\": \"a\", \"match\": { \"exe\": \"/a\" }, \"accelerators\": \"none\",\n"
                        "    \"unattributed\": { \"action\": \"place\", \"cpus\": \"96-103\" } },\n"
                        "  { \"name\": \"b\", \"match\": { \"exe\": \"/b\" }, \"accelerators\": \"none\", \"priority\": 3,\n"
                        "    \"unattributed\": { \"action\": \"place\", \"cpus\": \"100-119\" } } ] }",
                        "t.json: processes[1].unattributed.cpus: CPUs 100-103 are also claimed by rule \"a\" (line 5, column 42)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"accelerators\": [ \"tpu:0\" ]") " ] }",
                        "t.json: processes[0].accelerators[0]: unknown accelerator kind \"tpu\": the built-in kinds are "
                        "ascend, nvidia, amd and accel; declare others in accelerators.kinds (line 1, column 99)");
        assert_problems("{ \"version\": 1, \"accelerators\": { \"kinds\": [\n"
                        "  { \"name\": \"a\", \"pci_id\": \"1234:*\" }, { \"name\": \"b\", \"pci_id\": \"1234:11e8\" } ] } }",
                        "t.json: accelerators.kinds[1].pci_id: overlaps the PCI id of kind \"a\": a device can only be of "
                        "one kind (line 2, column 55)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"exe\": \"/a\" }, \"accelerators\": \"none\",\n"
                        "  \"threads\": { \"control\": { \"main_thread\": true, \"cpus\": 4 } },\n"
                        "  \"unattributed\": { \"action\": \"place\", \"cpus\": \"0-3\" } } ] }",
                        "t.json: processes[0].threads: control (4) and compute (1) CPUs do not fit in unattributed.cpus "
                        "(4 CPUs) (line 2, column 3)");
        assert_problems("{ \"version\": 1, \"processes\": [ " RULE("w", ", \"unattributed\": { \"action\": \"leave\", \"cpus\": \"1\" }") " ] }",
                        "t.json: processes[0].unattributed.cpus: has no effect: \"action\" is \"leave\" (write \"action\": "
                        "\"place\" to use it) (line 1, column 118)");
}

static void test_users(void **state) {
        tune_policy_load_params lenient = { .resolve_user = fake_users, .host_warnings = true };
        char *got;
        int r;
        (void) state;

        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"user\": [ \"vllm\", \"nobody2\" ] } } ] }",
                        "t.json: processes[0].match.user[1]: unknown user \"nobody2\" (line 1, column 76)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"user\": \"x:y\" } } ] }",
                        "t.json: processes[0].match.user: \"x:y\" is not a user name (line 1, column 58)");
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"user\": -1 } } ] }",
                        "t.json: processes[0].match.user: must be between 0 and 4294967294, got -1 (line 1, column 58)");
        /* --check-policy: an unknown user is a warning (the policy may be for another host). */
        got = problems_with("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"user\": \"nobody2\", \"exe\": \"/x\" } } ] }",
                            &lenient, &r);
        assert_int_equal(r, 0);
        assert_string_equal(got, "t.json: processes[0].match.user: warning: unknown user \"nobody2\" on this host (line 1, column 58)");
        free(got);
        /* comm alone: a warning, anyone can name a process "vllm". */
        got = problems_with("{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"match\": { \"comm\": \"vllm\" } } ] }", &test_params, &r);
        assert_int_equal(r, 0);
        assert_string_equal(got, "t.json: processes[0].match: warning: matches on comm only: any user can name a process "
                                 "that way; add exe, cmdline, user or cgroup (line 1, column 47)");
        free(got);
}

static void test_nul_in_string(void **state) {
        (void) state;
        assert_problems("{ \"version\": 1, \"processes\": [ { \"name\": \"w\\u0000x\", \"match\": { \"exe\": \"/x\" } } ] }",
                        "t.json: processes[0].name: contains a NUL character (\\u0000) (line 1, column 34)");
}

static void test_too_many(void **state) {
        char *json = malloc(200 * 16 + 64), *got;
        size_t n;
        (void) state;

        /* 150 unknown keys: the first 100 and a last line saying so. */
        n = (size_t) sprintf(json, "{ \"version\": 1");
        for (unsigned i = 0; i < 150; i++)
                n += (size_t) sprintf(json + n, ", \"k%u\": 0", i);
        strcpy(json + n, " }");
        got = problems(json);
        unsigned lines = 1;
        for (char *c = got; *c; c++)
                lines += *c == '\n';
        assert_int_equal(lines, 101);
        assert_non_null(strstr(got, "t.json: k99: unknown key"));
        assert_null(strstr(got, "k100"));
        assert_non_null(strstr(got, "\nt.json: too many problems: only the first 100 are shown"));
        free(got);
        free(json);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_minimal_and_defaults),
                cmocka_unit_test(test_every_key),
                cmocka_unit_test(test_syntax),
                cmocka_unit_test(test_depth_and_size),
                cmocka_unit_test(test_version),
                cmocka_unit_test(test_unknown_keys),
                cmocka_unit_test(test_types_and_ranges),
                cmocka_unit_test(test_patterns),
                cmocka_unit_test(test_never_matches),
                cmocka_unit_test(test_conflicts),
                cmocka_unit_test(test_users),
                cmocka_unit_test(test_nul_in_string),
                cmocka_unit_test(test_too_many),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
