/* SPDX-License-Identifier: GPL-2.0-only */
/* npu-tuned --print-topology [--json]: what libtune sees, for humans and for tests. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/context.h"
#include "npu-tuned/topology.h"
#include "npu-tuned/policy.h"
#include "policy-cli.h"
#include "print-topology.h"

static json_object *json_cpulist(const tune_cpuset *s) {
        _cleanup_free_ char *list = NULL;
        if (tune_cpuset_format_list(s, &list) < 0)
                return NULL;
        return json_object_new_string(list);
}

static json_object *topology_to_json(const tune_topology *t, const tune_accels *a) {
        json_object *o = json_object_new_object(), *nodes = json_object_new_array(), *accels = json_object_new_array();

        for (unsigned i = 0; i < t->n_nodes; i++) {
                const tune_node *n = &t->nodes[i];
                json_object *jn = json_object_new_object(), *d;

                json_object_object_add(jn, "id", json_object_new_int(n->id));
                json_object_object_add(jn, "cpus", json_cpulist(&n->cpus));
                json_object_object_add(jn, "mem_total_kib", json_object_new_int64((int64_t) n->mem_total_kib));
                json_object_object_add(jn, "mem_free_kib", json_object_new_int64((int64_t) n->mem_free_kib));
                if (n->distances) {
                        d = json_object_new_array();
                        for (unsigned k = 0; k < t->n_nodes; k++)
                                json_object_array_add(d, json_object_new_int(n->distances[k]));
                } else
                        d = NULL;
                json_object_object_add(jn, "distances", d);
                if (n->accelerator_memory)
                        json_object_object_add(jn, "accelerator_memory", json_object_new_boolean(true));
                json_object_array_add(nodes, jn);
        }
        for (unsigned i = 0; i < a->n; i++) {
                const tune_accel *x = &a->items[i];
                json_object *ja = json_object_new_object();
                char hex[16];

                json_object_object_add(ja, "kind", json_object_new_string(x->kind));
                json_object_object_add(ja, "index", json_object_new_int(x->index));
                json_object_object_add(ja, "index_source", json_object_new_string(tune_index_source_to_string(x->index_source)));
                json_object_object_add(ja, "pci", json_object_new_string(x->pci));
                snprintf(hex, sizeof hex, "0x%04x", x->vendor);
                json_object_object_add(ja, "vendor", json_object_new_string(hex));
                snprintf(hex, sizeof hex, "0x%04x", x->device);
                json_object_object_add(ja, "device", json_object_new_string(hex));
                json_object_object_add(ja, "numa_node", x->numa_node >= 0 ? json_object_new_int(x->numa_node) : NULL);
                if (x->numa_node_overridden)
                        json_object_object_add(ja, "numa_node_source", json_object_new_string("policy"));
                json_object_object_add(ja, "local_cpus", json_cpulist(&x->local_cpus));
                json_object_object_add(ja, "device_node", x->dev_path[0] ? json_object_new_string(x->dev_path) : NULL);
                if (x->uuid[0])
                        json_object_object_add(ja, "uuid", json_object_new_string(x->uuid));
                json_object_array_add(accels, ja);
        }
        json_object_object_add(o, "nodes", nodes);
        json_object_object_add(o, "cpus_online", json_cpulist(&t->online));
        json_object_object_add(o, "cpus_usable", json_cpulist(&t->usable));
        json_object_object_add(o, "accelerators", accels);
        return o;
}

static void print_table(const tune_topology *t, const tune_accels *a) {
        _cleanup_free_ char *online = NULL, *usable = NULL;

        (void) tune_cpuset_format_list(&t->online, &online);
        (void) tune_cpuset_format_list(&t->usable, &usable);
        printf("CPUs online: %s   usable: %s\n\n", online ? online : "?", usable ? usable : "?");
        printf("%-5s %-24s %12s %12s  %s\n", "NODE", "CPUS", "MEM(MiB)", "FREE(MiB)", "DISTANCES");
        for (unsigned i = 0; i < t->n_nodes; i++) {
                const tune_node *n = &t->nodes[i];
                _cleanup_free_ char *cpus = NULL;

                (void) tune_cpuset_format_list(&n->cpus, &cpus);
                printf("%-5d %-24s %12llu %12llu ", n->id, cpus && *cpus ? cpus : "-",
                       (unsigned long long) (n->mem_total_kib / 1024), (unsigned long long) (n->mem_free_kib / 1024));
                for (unsigned k = 0; n->distances && k < t->n_nodes; k++)
                        printf(" %d", n->distances[k]);
                printf("\n");
        }
        printf("\n");
        if (t->nodes_overlap)
                printf("Warning: the firmware lists some CPUs in more than one node; the node split is not trusted.\n\n");
        for (unsigned i = 0; i < t->n_nodes; i++)
                if (t->nodes[i].accelerator_memory)
                        printf("Node %d is an accelerator's own memory, never used for host memory.\n", t->nodes[i].id);
        if (a->n == 0) {
                printf("No accelerators found.\n");
                return;
        }
        printf("%-8s %-5s %-13s %-11s %-5s %-24s %s\n", "KIND", "INDEX", "PCI", "ID", "NODE", "LOCAL CPUS", "DEVICE");
        for (unsigned i = 0; i < a->n; i++) {
                const tune_accel *x = &a->items[i];
                _cleanup_free_ char *cpus = NULL;
                char node[16], id[16];

                (void) tune_cpuset_format_list(&x->local_cpus, &cpus);
                if (x->numa_node >= 0)
                        snprintf(node, sizeof node, "%d%s", x->numa_node, x->numa_node_overridden ? "*" : "");
                else
                        snprintf(node, sizeof node, "?");
                snprintf(id, sizeof id, "%04x:%04x", x->vendor, x->device);
                printf("%-8s %-5d %-13s %-11s %-5s %-24s %s\n", x->kind, x->index, x->pci, id, node,
                       cpus && *cpus ? cpus : "-", x->dev_path[0] ? x->dev_path : "-");
        }
}

int run_print_topology(const daemon_options *o) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_topology_freep) tune_topology *t = NULL;
        tune_accels a = {};
        int r;

        r = tune_ctx_new(o->root, &ctx);
        if (r < 0) {
                fprintf(stderr, "npu-tuned: cannot open root %s: %s\n", o->root, strerror(-r));
                return 1;
        }
        r = tune_topology_load(ctx, &t);
        if (r < 0) {
                fprintf(stderr, "npu-tuned: %s is not a Linux sysfs/procfs tree (reading CPUs and NUMA nodes: %s)\n",
                        o->root, strerror(-r));
                return 1;
        }
        /* The policy's accelerator kinds and NUMA overrides, as the daemon sees them; the
         * topology is still worth printing when the policy is broken (it says so). */
        tune_policy_load_params params;
        tune_policy_errors errors = {};
        _cleanup_(tune_policy_freep) tune_policy *p = NULL;
        policy_params_for_daemon(o, &params);
        r = tune_policy_prepare(ctx, &params, t, &p, &a, &errors);
        if (r < 0) {
                if (r == -EINVAL)
                        fprintf(stderr, "npu-tuned: the policy has errors (npu-tuned --check-policy shows them); "
                                        "showing the built-in accelerator kinds only\n");
                tune_policy_errors_done(&errors);
                r = tune_accels_discover(ctx, NULL, 0, &a);
                if (r < 0) {
                        fprintf(stderr, "npu-tuned: discovering accelerators below %s: %s\n", o->root, strerror(-r));
                        return 1;
                }
        }
        tune_policy_errors_done(&errors);
        if (o->json) {
                json_object *j = topology_to_json(t, &a);
                puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
                json_object_put(j);
        } else
                print_table(t, &a);
        tune_accels_done(&a);
        return 0;
}
