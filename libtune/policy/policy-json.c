/* SPDX-License-Identifier: GPL-2.0-only */
/* The effective policy as JSON in the schema's own form (--print-policy): every key with
 * its effective value, defaults included, knobs left alone as null. Loading the output
 * gives the same policy back (the tests and the fuzzer check that). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"

typedef struct out {
        int r;
} out;

static void put(out *o, json_object *obj, const char *key, json_object *v) {
        if (o->r < 0) {
                json_object_put(v);
                return;
        }
        if (!v || json_object_object_add(obj, key, v) < 0) {
                json_object_put(v);
                o->r = -ENOMEM;
        }
}

/* A null member (json-c stores NULL). */
static void put_null(out *o, json_object *obj, const char *key) {
        if (o->r >= 0 && json_object_object_add(obj, key, NULL) < 0)
                o->r = -ENOMEM;
}

static void put_string(out *o, json_object *obj, const char *key, const char *s) {
        if (s)
                put(o, obj, key, json_object_new_string(s));
        else
                put_null(o, obj, key);
}

static void put_switch(out *o, json_object *obj, const char *key, int v) {
        if (v < 0)
                put_null(o, obj, key);
        else
                put(o, obj, key, json_object_new_int(v));
}

static void put_set(out *o, json_object *obj, const char *key, const tune_cpuset *s) {
        _cleanup_free_ char *text = NULL;
        if (tune_cpuset_is_empty(s))
                return;
        if (tune_cpuset_format_list(s, &text) < 0) {
                o->r = -ENOMEM;
                return;
        }
        put(o, obj, key, json_object_new_string(text));
}

static json_object *new_object(out *o) {
        json_object *x = json_object_new_object();
        if (!x)
                o->r = -ENOMEM;
        return x;
}

static json_object *new_array(out *o) {
        json_object *x = json_object_new_array();
        if (!x)
                o->r = -ENOMEM;
        return x;
}

static void add_to(out *o, json_object *array, json_object *v) {
        if (o->r < 0 || !v || json_object_array_add(array, v) < 0) {
                json_object_put(v);
                if (o->r >= 0)
                        o->r = -ENOMEM;
        }
}

static json_object *rule_json(out *o, const tune_policy_rule *r) {
        json_object *j = new_object(o), *m, *sub;

        if (!j)
                return NULL;
        put_string(o, j, "name", r->name);
        put(o, j, "priority", json_object_new_int(r->priority));

        m = new_object(o);
        if (r->match_comm)
                put_string(o, m, "comm", r->match_comm);
        if (r->match_exe)
                put_string(o, m, "exe", r->match_exe);
        if (r->match_cmdline_src)
                put_string(o, m, "cmdline", r->match_cmdline_src);
        if (r->match_uids) {
                json_object *u = new_array(o);
                for (unsigned i = 0; i < r->n_match_uids; i++)
                        add_to(o, u, json_object_new_int64(r->match_uids[i]));
                put(o, m, "user", u);
        }
        if (r->match_cgroup)
                put_string(o, m, "cgroup", r->match_cgroup);
        put(o, j, "match", m);

        if (r->accel_mode == TUNE_ACCEL_EXPLICIT) {
                json_object *a = new_array(o);
                for (unsigned i = 0; i < r->n_accels; i++) {
                        char ref[TUNE_ACCEL_KIND_MAX + 16];
                        snprintf(ref, sizeof ref, "%s:%d", r->accels[i].kind, r->accels[i].index);
                        add_to(o, a, json_object_new_string(ref));
                }
                put(o, j, "accelerators", a);
        } else
                put_string(o, j, "accelerators", r->accel_mode == TUNE_ACCEL_AUTO ? "auto" : "none");

        if (r->rank_source != TUNE_RANK_NONE) {
                sub = new_object(o);
                put_string(o, sub, "from", r->rank_source == TUNE_RANK_CMDLINE ? "cmdline" :
                                           r->rank_source == TUNE_RANK_COMM    ? "comm" :
                                                                                 "env");
                if (r->rank_source == TUNE_RANK_ENV)
                        put_string(o, sub, "env", r->rank_env);
                else
                        put_string(o, sub, "regex", r->rank_regex_src);
                put(o, j, "rank", sub);
        }

        sub = new_object(o);
        if (r->control.main_thread || (r->control.name_globs && r->control.name_globs[0])) {
                json_object *c = new_object(o), *names = new_array(o);
                for (size_t i = 0; r->control.name_globs && r->control.name_globs[i]; i++)
                        add_to(o, names, json_object_new_string(r->control.name_globs[i]));
                put(o, c, "names", names);
                put(o, c, "main_thread", json_object_new_boolean(r->control.main_thread));
                put(o, c, "cpus", json_object_new_int64(r->control.cpus));
                put(o, sub, "control", c);
        }
        {
                json_object *c = new_object(o);
                put(o, c, "cpus", json_object_new_int64(r->compute.cpus));
                put(o, sub, "compute", c);
        }
        put(o, j, "threads", sub);

        sub = new_object(o);
        put(o, sub, "migrate", json_object_new_boolean(r->memory_migrate));
        put(o, sub, "settle_delay_ms", json_object_new_int64(r->memory_settle_delay_ms));
        put(o, sub, "min_free_mib", json_object_new_int64((int64_t) (r->memory_min_free_kib / 1024)));
        put(o, sub, "rate_mib_s", json_object_new_int64(r->memory_rate_mib_s));
        put(o, sub, "shared", json_object_new_boolean(r->memory_shared));
        put(o, j, "memory", sub);

        put_string(o, j, "claims", r->claims_any ? "any" : "verified");
        put(o, j, "restore_on_stop", json_object_new_boolean(r->restore_on_stop));
        put(o, j, "reassert_affinity", json_object_new_boolean(r->reassert_affinity));
        put_string(o, j, "binding", tune_binding_to_string(r->binding));
        put(o, j, "binding_watch_ms", json_object_new_int64(r->binding_watch_ms));

        sub = new_object(o);
        put_string(o, sub, "action", r->unattributed == TUNE_UNATTRIBUTED_PLACE ? "place" : "leave");
        if (r->unattributed == TUNE_UNATTRIBUTED_PLACE) {
                put_set(o, sub, "cpus", &r->unattributed_cpus);
                put_set(o, sub, "nodes", &r->unattributed_nodes);
        }
        put(o, j, "unattributed", sub);
        return j;
}

static json_object *policy_json(out *o, const tune_policy *p) {
        json_object *root = new_object(o), *sub, *x;

        if (!root)
                return NULL;
        put(o, root, "version", json_object_new_int(TUNE_POLICY_VERSION));
        {
                /* Where it came from, in the one free-text key the schema has. */
                size_t len = 64;
                for (unsigned i = 0; i < p->n_files; i++)
                        len += strlen(p->files[i]) + 2;
                _cleanup_free_ char *c = malloc(len);
                if (!c)
                        o->r = -ENOMEM;
                else {
                        strcpy(c, p->embedded ? "effective policy: the embedded default" : "effective policy merged from: ");
                        for (unsigned i = 0; !p->embedded && i < p->n_files; i++) {
                                if (i)
                                        strcat(c, ", ");
                                strcat(c, p->files[i]);
                        }
                        put_string(o, root, "comment", c);
                }
        }

        sub = new_object(o);
        put(o, sub, "dry_run", json_object_new_boolean(p->options.dry_run));
        put(o, sub, "reconcile_interval_ms", json_object_new_int64(p->options.reconcile_interval_ms));
        put(o, sub, "max_managed_processes", json_object_new_int64(p->options.max_managed_processes));
        put(o, sub, "proc_connector_rcvbuf_kib", json_object_new_int64(p->options.proc_connector_rcvbuf_kib));
        put_string(o, sub, "metrics_textfile", p->options.metrics_textfile);
        put(o, root, "options", sub);

        sub = new_object(o);
        x = new_object(o);
        put_string(o, x, "governor", p->host.governor);
        put_string(o, x, "cpus", p->host.governor_scope == TUNE_GOVERNOR_ALL_CPUS ? "all" : "inference");
        put(o, sub, "cpufreq", x);
        x = new_object(o);
        put_string(o, x, "enabled", p->host.thp_enabled);
        put_string(o, x, "defrag", p->host.thp_defrag);
        put_switch(o, x, "khugepaged_defrag", p->host.khugepaged_defrag);
        put(o, sub, "thp", x);
        x = new_object(o);
        put(o, x, "manage", json_object_new_boolean(p->host.irq_manage));
        put(o, x, "housekeeping_cpus_per_node", json_object_new_int64(p->host.irq_housekeeping_cpus_per_node));
        put(o, x, "keep_off_inference_cpus", json_object_new_boolean(p->host.irq_keep_off_inference_cpus));
        put(o, x, "steer_accelerator_irqs", json_object_new_boolean(p->host.irq_steer_accelerator_irqs));
        put(o, sub, "irq", x);
        x = new_object(o);
        put_string(o, x, "policy", p->host.aspm_policy);
        put_string(o, x, "accelerator_link", p->host.aspm_accelerator_link == TUNE_ASPM_LINK_L1_ONLY ? "l1_only" :
                                             p->host.aspm_accelerator_link == TUNE_ASPM_LINK_OFF     ? "off" :
                                                                                                       "unchanged");
        put(o, sub, "pcie_aspm", x);
        put_switch(o, sub, "numa_balancing", p->host.numa_balancing);
        put(o, sub, "reassert", json_object_new_boolean(p->host.reassert));
        put(o, root, "host", sub);

        sub = new_object(o);
        x = new_array(o);
        for (unsigned i = 0; i < p->n_kinds; i++) {
                const tune_policy_kind *k = &p->kinds[i];
                json_object *kj = new_object(o);
                char id[16];
                if (k->kind.device == TUNE_PCI_ANY_DEVICE)
                        snprintf(id, sizeof id, "%04x:*", k->kind.vendor & 0xffff);
                else
                        snprintf(id, sizeof id, "%04x:%04x", k->kind.vendor & 0xffff, k->kind.device & 0xffff);
                put_string(o, kj, "name", k->kind.name);
                put_string(o, kj, "pci_id", id);
                put_string(o, kj, "device_node", k->kind.device_pattern);
                put_string(o, kj, "visible_devices_env", k->visible_env);
                put_string(o, kj, "visible_ids", k->visible_ids == TUNE_VISIBLE_IDS_LOGICAL ? "logical" : "physical");
                add_to(o, x, kj);
        }
        put(o, sub, "kinds", x);
        x = new_array(o);
        for (unsigned i = 0; i < p->n_overrides; i++) {
                json_object *oj = new_object(o);
                put_string(o, oj, "pci", p->overrides[i].pci);
                put(o, oj, "node", json_object_new_int(p->overrides[i].node));
                add_to(o, x, oj);
        }
        put(o, sub, "numa_node_overrides", x);
        put(o, root, "accelerators", sub);

        x = new_array(o);
        for (unsigned i = 0; i < p->n_rules; i++)
                add_to(o, x, rule_json(o, &p->rules[i]));
        put(o, root, "processes", x);
        return root;
}

int tune_policy_to_json(const tune_policy *p, char **ret) {
        out o = {};
        json_object *root;
        char *s;

        if (!p || !ret)
                return -EINVAL;
        root = policy_json(&o, p);
        if (o.r < 0 || !root) {
                json_object_put(root);
                return o.r < 0 ? o.r : -ENOMEM;
        }
        s = strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(root);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}
