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

/* Node ids as a JSON array of numbers (a list of nodes is short, and tools want ints). */
static json_object *json_nodelist(const tune_cpuset *s) {
        json_object *a = json_object_new_array();
        TUNE_CPUSET_FOREACH(n, s)
                json_object_array_add(a, json_object_new_int(n));
        return a;
}

json_object *topology_to_json(const tune_topology *t, const tune_accels *a) {
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
        json_object_object_add(o, "mems_usable", json_nodelist(&t->mems_usable));
        json_object_object_add(o, "nodes_overlap", json_object_new_boolean(t->nodes_overlap));
        if (t->cgroup_version)
                json_object_object_add(o, "cgroup_version", json_object_new_int(t->cgroup_version));
        return o;
}

static const char *jstr(json_object *o, const char *key) {
        json_object *v;
        const char *s;
        if (!json_object_object_get_ex(o, key, &v) || !v || !(s = json_object_get_string(v)))
                return "";
        return s;
}

static long long jint(json_object *o, const char *key, long long unset) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) && v ? json_object_get_int64(v) : unset;
}

static const char *or_dash(const char *s) {
        return *s ? s : "-";
}

void topology_print_table(json_object *j, FILE *f) {
        json_object *nodes = NULL, *accels = NULL, *v;
        size_t n_nodes, n_accels;

        (void) json_object_object_get_ex(j, "nodes", &nodes);
        (void) json_object_object_get_ex(j, "accelerators", &accels);
        n_nodes = nodes ? json_object_array_length(nodes) : 0;
        n_accels = accels ? json_object_array_length(accels) : 0;
        fprintf(f, "CPUs online: %s   usable: %s\n", or_dash(jstr(j, "cpus_online")), or_dash(jstr(j, "cpus_usable")));
        fprintf(f, "Memory nodes usable:");
        if (json_object_object_get_ex(j, "mems_usable", &v) && v && json_object_array_length(v) > 0)
                for (size_t i = 0; i < json_object_array_length(v); i++)
                        fprintf(f, "%s%d", i ? "," : " ", json_object_get_int(json_object_array_get_idx(v, i)));
        else
                fprintf(f, " -");
        if (jint(j, "cgroup_version", 0) > 0)
                fprintf(f, "   (cgroup v%lld cpuset)", jint(j, "cgroup_version", 0));
        fprintf(f, "\n\n");
        fprintf(f, "%-5s %-24s %12s %12s  %s\n", "NODE", "CPUS", "MEM(MiB)", "FREE(MiB)", "DISTANCES");
        for (size_t i = 0; i < n_nodes; i++) {
                json_object *n = json_object_array_get_idx(nodes, i), *d = NULL;
                fprintf(f, "%-5lld %-24s %12lld %12lld ", jint(n, "id", -1), or_dash(jstr(n, "cpus")),
                        jint(n, "mem_total_kib", 0) / 1024, jint(n, "mem_free_kib", 0) / 1024);
                if (json_object_object_get_ex(n, "distances", &d) && d)
                        for (size_t k = 0; k < json_object_array_length(d); k++)
                                fprintf(f, " %d", json_object_get_int(json_object_array_get_idx(d, k)));
                fprintf(f, "\n");
        }
        fprintf(f, "\n");
        if (json_object_object_get_ex(j, "nodes_overlap", &v) && json_object_get_boolean(v))
                fprintf(f, "Warning: the firmware lists some CPUs in more than one node (nodes_overlap); the node split is\n"
                           "not trusted: placement deals each CPU once, one pool per distinct CPU set.\n\n");
        for (size_t i = 0; i < n_nodes; i++) {
                json_object *n = json_object_array_get_idx(nodes, i);
                if (json_object_object_get_ex(n, "accelerator_memory", &v) && json_object_get_boolean(v))
                        fprintf(f, "Node %lld is an accelerator's own memory, never used for host memory.\n", jint(n, "id", -1));
        }
        if (n_accels == 0) {
                fprintf(f, "No accelerators found.\n");
                return;
        }
        fprintf(f, "%-8s %-5s %-13s %-11s %-5s %-24s %s\n", "KIND", "INDEX", "PCI", "ID", "NODE", "LOCAL CPUS", "DEVICE");
        for (size_t i = 0; i < n_accels; i++) {
                json_object *x = json_object_array_get_idx(accels, i);
                long long node = jint(x, "numa_node", -1);
                char nodes_text[24], id[24];
                const char *vendor = jstr(x, "vendor"), *device = jstr(x, "device");

                if (node >= 0)
                        snprintf(nodes_text, sizeof nodes_text, "%lld%s", node, *jstr(x, "numa_node_source") ? "*" : "");
                else
                        snprintf(nodes_text, sizeof nodes_text, "?");
                /* "0x19e5" -> "19e5" */
                snprintf(id, sizeof id, "%s:%s", strncmp(vendor, "0x", 2) == 0 ? vendor + 2 : vendor,
                         strncmp(device, "0x", 2) == 0 ? device + 2 : device);
                fprintf(f, "%-8s %-5lld %-13s %-11s %-5s %-24s %s\n", jstr(x, "kind"), jint(x, "index", -1), jstr(x, "pci"),
                        id, nodes_text, or_dash(jstr(x, "local_cpus")), or_dash(jstr(x, "device_node")));
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
        json_object *j = topology_to_json(t, &a);
        if (!j) {
                fprintf(stderr, "npu-tuned: out of memory\n");
                tune_accels_done(&a);
                return 1;
        }
        if (o->json)
                puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
        else
                topology_print_table(j, stdout);
        json_object_put(j);
        tune_accels_done(&a);
        return 0;
}
