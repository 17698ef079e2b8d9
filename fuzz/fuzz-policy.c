/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target for the policy parser, merger and validators.
 *
 * The input is one or more policy documents separated by a line "%%%%" (merged like files
 * in name order). Whatever the input: no crash, no leak, no undefined behaviour; a policy is
 * returned exactly when there is no error; every problem formats; a returned policy passes
 * the host checks without crashing and prints as JSON that loads back to the same JSON. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/policy.h"
#include "policy-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DOCS_MAX 4

static int fake_users(const char *name, uid_t *ret, void *userdata) {
        (void) userdata;
        if (streq(name, "root") || streq(name, "vllm")) {
                *ret = name[0] == 'r' ? 0 : 1500;
                return 0;
        }
        return -ESRCH;
}

/* Nodes 0-1 with CPUs 0-3 and 4-7, two Ascend devices (one without a node). */
static tune_topology topology;
static tune_accels accels;

static void host_init(void) {
        static tune_node nodes[2];
        static tune_accel items[2];

        if (topology.n_nodes)
                return;
        for (unsigned i = 0; i < 2; i++) {
                nodes[i].id = (int) i;
                if (tune_cpuset_add_range(&nodes[i].cpus, 4 * i, 4 * i + 3) < 0)
                        abort();
                snprintf(items[i].kind, sizeof items[i].kind, "ascend");
                items[i].index = (int) i;
                snprintf(items[i].pci, sizeof items[i].pci, "0000:%02x:00.0", 0xc1 + i);
                items[i].numa_node = i == 0 ? 0 : -1;
        }
        topology.nodes = nodes;
        topology.n_nodes = 2;
        if (tune_cpuset_add_range(&topology.online, 0, 7) < 0 || tune_cpuset_add_range(&topology.usable, 0, 7) < 0)
                abort();
        accels.items = items;
        accels.n = 2;
}

static void check_errors(const tune_policy_errors *e) {
        for (unsigned i = 0; i < e->n; i++) {
                char *line = NULL;
                if (tune_policy_error_format(&e->items[i], &line) < 0)
                        abort();
                if (!e->items[i].message || !e->items[i].key_path)
                        abort();
                free(line);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char sep[] = "\n%%%%\n";
        const char *texts[DOCS_MAX], *names[DOCS_MAX] = { "10-a.json", "20-b.json", "30-c.json", "40-d.json" };
        size_t lens[DOCS_MAX];
        unsigned n = 0;
        const char *p = (const char *) data, *end = p + size;
        tune_policy_load_params params = { .resolve_user = fake_users, .host_warnings = size & 1 };
        tune_policy *pol = NULL;
        tune_policy_errors errors = {};
        int r;

        host_init();
        while (n < DOCS_MAX) {
                const char *s = n + 1 < DOCS_MAX ? memmem(p, (size_t) (end - p), sep, sizeof sep - 1) : NULL;
                texts[n] = p;
                lens[n] = s ? (size_t) (s - p) : (size_t) (end - p);
                n++;
                if (!s)
                        break;
                p = s + sizeof sep - 1;
        }

        r = policy_parse_texts(names, texts, lens, n, &params, &pol, &errors);
        check_errors(&errors);
        if ((r == 0) != (pol != NULL) || (r == 0 && tune_policy_errors_count(&errors) > 0) ||
            (r == -EINVAL && tune_policy_errors_count(&errors) == 0))
                abort();
        tune_policy_errors_done(&errors);
        if (r < 0) {
                if (r != -EINVAL && r != -ENOMEM)
                        abort();
                return 0;
        }

        /* Against a host, both ways. */
        (void) tune_policy_validate_host(pol, &topology, &accels, size & 2, &errors);
        check_errors(&errors);
        tune_policy_errors_done(&errors);
        tune_accel_kind *kinds = NULL;
        unsigned n_kinds;
        if (tune_policy_accel_kinds(pol, &kinds, &n_kinds) < 0)
                abort();
        free(kinds);

        /* Printed, loaded back, printed again: the same. Not for a policy loaded with
         * host_warnings: the users unknown here are left out of it (it is for checking, not
         * for use or printing). */
        if (params.host_warnings) {
                tune_policy_free(pol);
                return 0;
        }
        char *json = NULL, *json2 = NULL;
        tune_policy *again = NULL;
        if (tune_policy_to_json(pol, &json) < 0)
                abort();
        r = tune_policy_parse_buffer(json, strlen(json), "printed.json", &params, &again, &errors);
        if (r < 0) {
                check_errors(&errors);
                for (unsigned i = 0; i < errors.n; i++) {
                        char *line = NULL;
                        (void) tune_policy_error_format(&errors.items[i], &line);
                        fprintf(stderr, "printed policy does not load back: %s\n", line);
                        free(line);
                }
                fprintf(stderr, "%s\n", json);
                abort();
        }
        tune_policy_errors_done(&errors);
        again->n_files = pol->n_files; /* only the comment may differ: it lists the files */
        char **files = again->files;
        again->files = pol->files;
        if (tune_policy_to_json(again, &json2) < 0)
                abort();
        again->files = files;
        again->n_files = 1;
        if (!streq(json, json2)) {
                fprintf(stderr, "round trip differs:\n%s\n---\n%s\n", json, json2);
                abort();
        }
        free(json);
        free(json2);
        tune_policy_free(again);
        tune_policy_free(pol);
        return 0;
}
