/* SPDX-License-Identifier: GPL-2.0-only */
/* Checks that need the whole policy (rules against each other, references to kinds) and
 * checks against one host (CPUs, nodes, accelerators that exist there). The second kind is
 * separate because a policy is often checked on another machine than the one it runs on:
 * the daemon treats its findings as errors, --check-policy as warnings. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"

static int add(tune_policy_errors *e, bool warning, const char *path, const char *fmt, ...) _printf_(4, 5);
static int add(tune_policy_errors *e, bool warning, const char *path, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return policy_error_add(e, NULL, path, 0, 0, warning, "%s", msg);
}

static const char *name_of(const tune_policy_rule *r) {
        return r->name ? r->name : "(unnamed)";
}

static bool same_string(const char *a, const char *b) {
        return (!a && !b) || (a && b && streq(a, b));
}

static int cmp_uid(const void *a, const void *b) {
        uid_t x = *(const uid_t *) a, y = *(const uid_t *) b;
        return x < y ? -1 : x > y;
}

static bool same_uids(const tune_policy_rule *a, const tune_policy_rule *b) {
        uid_t x[64], y[64];

        if (a->n_match_uids != b->n_match_uids)
                return false;
        if (a->n_match_uids == 0)
                return true;
        if (a->n_match_uids > 64)
                return false;
        memcpy(x, a->match_uids, a->n_match_uids * sizeof *x);
        memcpy(y, b->match_uids, b->n_match_uids * sizeof *y);
        qsort(x, a->n_match_uids, sizeof *x, cmp_uid);
        qsort(y, b->n_match_uids, sizeof *y, cmp_uid);
        return memcmp(x, y, a->n_match_uids * sizeof *x) == 0;
}

static bool same_match(const tune_policy_rule *a, const tune_policy_rule *b) {
        return same_string(a->match_comm, b->match_comm) && same_string(a->match_exe, b->match_exe) &&
               same_string(a->match_cmdline_src, b->match_cmdline_src) && same_string(a->match_cgroup, b->match_cgroup) &&
               (a->match_uids == NULL) == (b->match_uids == NULL) && same_uids(a, b);
}

static int format_set(const tune_cpuset *s, char **ret) {
        return tune_cpuset_format_list(s, ret);
}

static bool kind_declared(const tune_policy *p, const char *kind) {
        if (policy_kind_is_builtin(kind))
                return true;
        for (unsigned i = 0; i < p->n_kinds; i++)
                if (streq(p->kinds[i].kind.name, kind))
                        return true;
        return false;
}

int policy_check_consistency(const tune_policy *p, tune_policy_errors *errors) {
        char path[128];
        int r;

        /* Kinds: one PCI id belongs to one kind (the first would always win). */
        for (unsigned i = 0; i < p->n_kinds; i++)
                for (unsigned j = 0; j < i; j++) {
                        const tune_accel_kind *a = &p->kinds[j].kind, *b = &p->kinds[i].kind;
                        if (a->vendor != b->vendor ||
                            (a->device != b->device && a->device != TUNE_PCI_ANY_DEVICE && b->device != TUNE_PCI_ANY_DEVICE))
                                continue;
                        snprintf(path, sizeof path, "accelerators.kinds[%u].pci_id", p->kinds[i].merged_index);
                        r = add(errors, false, path, "overlaps the PCI id of kind \"%s\": a device can only be of one kind",
                                a->name);
                        if (r < 0)
                                return r;
                }

        for (unsigned i = 0; i < p->n_rules; i++) {
                const tune_policy_rule *x = &p->rules[i];

                /* Explicit accelerators name a kind that exists. */
                for (unsigned k = 0; k < x->n_accels; k++)
                        if (!kind_declared(p, x->accels[k].kind)) {
                                snprintf(path, sizeof path, "processes[%u].accelerators[%u]", x->merged_index, k);
                                r = add(errors, false, path,
                                        "unknown accelerator kind \"%s\": the built-in kinds are ascend, nvidia, amd and "
                                        "accel; declare others in accelerators.kinds",
                                        x->accels[k].kind);
                                if (r < 0)
                                        return r;
                        }

                /* Role sizes fit an explicit CPU list. */
                if (x->unattributed == TUNE_UNATTRIBUTED_PLACE && !tune_cpuset_is_empty(&x->unattributed_cpus)) {
                        unsigned have = tune_cpuset_count(&x->unattributed_cpus);
                        unsigned need = x->control.cpus + (x->compute.cpus ? x->compute.cpus : 1);
                        if (need > have) {
                                snprintf(path, sizeof path, "processes[%u].threads", x->merged_index);
                                r = add(errors, false, path,
                                        "control (%u) and compute (%u) CPUs do not fit in unattributed.cpus (%u CPUs)",
                                        x->control.cpus, x->compute.cpus ? x->compute.cpus : 1, have);
                                if (r < 0)
                                        return r;
                        }
                }

                for (unsigned j = 0; j < i; j++) {
                        const tune_policy_rule *y = &p->rules[j];

                        /* Rules are sorted: y wins over x whenever both match. */
                        if (same_match(x, y) && !(x->name && y->name && streq(x->name, y->name))) {
                                snprintf(path, sizeof path, "processes[%u].match", x->merged_index);
                                r = add(errors, false, path,
                                        "never applies: rule \"%s\" has the same match criteria and wins (priority %d %s %d)",
                                        name_of(y), y->priority, y->priority > x->priority ? ">" : "=", x->priority);
                                if (r < 0)
                                        return r;
                        }

                        /* Two rules claiming the same CPUs. */
                        if (x->unattributed == TUNE_UNATTRIBUTED_PLACE && y->unattributed == TUNE_UNATTRIBUTED_PLACE &&
                            tune_cpuset_overlaps(&x->unattributed_cpus, &y->unattributed_cpus)) {
                                _cleanup_free_ char *both = NULL;
                                tune_cpuset common = {};
                                r = tune_cpuset_copy(&common, &x->unattributed_cpus);
                                if (r >= 0) {
                                        tune_cpuset_and(&common, &y->unattributed_cpus);
                                        r = format_set(&common, &both);
                                }
                                tune_cpuset_done(&common);
                                if (r < 0)
                                        return r;
                                /* Report it on the rule that comes later in the files. */
                                const tune_policy_rule *later = x->merged_index > y->merged_index ? x : y,
                                                       *earlier = later == x ? y : x;
                                snprintf(path, sizeof path, "processes[%u].unattributed.cpus", later->merged_index);
                                r = add(errors, false, path, "CPUs %s are also claimed by rule \"%s\"", both, name_of(earlier));
                                if (r < 0)
                                        return r;
                        }
                }
        }
        return 0;
}

/* --- against a host ---------------------------------------------------------------- */

static int nodes_list(const tune_topology *t, char **ret) {
        tune_cpuset s = {};
        int r = 0;
        for (unsigned i = 0; r >= 0 && i < t->n_nodes; i++)
                r = tune_cpuset_add(&s, (unsigned) t->nodes[i].id);
        if (r >= 0)
                r = format_set(&s, ret);
        tune_cpuset_done(&s);
        return r;
}

static int kind_indexes(const tune_accels *a, const char *kind, char **ret) {
        tune_cpuset s = {};
        int r = 0;
        for (unsigned i = 0; r >= 0 && i < a->n; i++)
                if (streq(a->items[i].kind, kind) && a->items[i].index >= 0)
                        r = tune_cpuset_add(&s, (unsigned) a->items[i].index);
        if (r >= 0)
                r = format_set(&s, ret);
        tune_cpuset_done(&s);
        return r;
}

static int check_host(const tune_policy *p, const tune_topology *t, const tune_accels *a, bool w, tune_policy_errors *e) {
        _cleanup_free_ char *nodes = NULL, *online = NULL;
        unsigned largest = 0;
        int largest_id = -1;
        char path[128];
        int r;

        r = nodes_list(t, &nodes);
        if (r >= 0)
                r = format_set(&t->online, &online);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < t->n_nodes; i++) {
                unsigned n = tune_cpuset_count(&t->nodes[i].cpus);
                if (n > largest) {
                        largest = n;
                        largest_id = t->nodes[i].id;
                }
        }

        for (unsigned i = 0; i < p->n_overrides; i++) {
                const tune_policy_node_override *ov = &p->overrides[i];
                bool found = false;
                for (unsigned k = 0; k < a->n; k++)
                        found = found || streq(a->items[k].pci, ov->pci);
                if (!found) {
                        /* A warning even for the daemon: one drop-in serves a fleet, and an
                         * override for a device this host lacks overrides nothing. */
                        snprintf(path, sizeof path, "accelerators.numa_node_overrides[%u].pci", ov->merged_index);
                        r = add(e, true, path, "no accelerator at %s on this host: the override does nothing here",
                                ov->pci);
                        if (r < 0)
                                return r;
                }
                if (!tune_topology_node(t, ov->node)) {
                        snprintf(path, sizeof path, "accelerators.numa_node_overrides[%u].node", ov->merged_index);
                        r = add(e, w, path, "NUMA node %d does not exist on this host (nodes: %s)", ov->node, nodes);
                        if (r < 0)
                                return r;
                }
        }

        /* The planner keeps housekeeping CPUs on every node whether or not IRQs are managed
         * (libtune/placement/plan.c): count them as it does. */
        for (unsigned i = 0; i < t->n_nodes; i++) {
                unsigned n = tune_cpuset_count(&t->nodes[i].cpus);
                if (n == 0 || p->host.irq_housekeeping_cpus_per_node < n)
                        continue;
                /* Capacity, not existence: a warning even for the daemon. */
                r = add(e, true, "host.irq.housekeeping_cpus_per_node",
                        "%u housekeeping CPUs leave no CPU for inference work on NUMA node %d (%u CPUs)",
                        p->host.irq_housekeeping_cpus_per_node, t->nodes[i].id, n);
                if (r < 0)
                        return r;
                break;
        }

        for (unsigned i = 0; i < p->n_rules; i++) {
                const tune_policy_rule *x = &p->rules[i];

                for (unsigned k = 0; k < x->n_accels; k++) {
                        const tune_accel_ref *ref = &x->accels[k];
                        _cleanup_free_ char *have = NULL;
                        if (tune_accels_find(a, ref->kind, ref->index))
                                continue;
                        r = kind_indexes(a, ref->kind, &have);
                        if (r < 0)
                                return r;
                        snprintf(path, sizeof path, "processes[%u].accelerators[%u]", x->merged_index, k);
                        if (have[0])
                                r = add(e, w, path, "no accelerator %s:%d on this host (%s: %s)", ref->kind, ref->index, ref->kind, have);
                        else
                                r = add(e, w, path, "no accelerator %s:%d on this host (it has no %s accelerators)", ref->kind,
                                        ref->index, ref->kind);
                        if (r < 0)
                                return r;
                }

                if (!tune_cpuset_is_empty(&x->unattributed_cpus) && !tune_cpuset_is_subset(&x->unattributed_cpus, &t->online)) {
                        _cleanup_free_ char *missing = NULL;
                        tune_cpuset m = {};
                        r = tune_cpuset_copy(&m, &x->unattributed_cpus);
                        if (r >= 0) {
                                tune_cpuset_andnot(&m, &t->online);
                                r = format_set(&m, &missing);
                        }
                        tune_cpuset_done(&m);
                        if (r < 0)
                                return r;
                        snprintf(path, sizeof path, "processes[%u].unattributed.cpus", x->merged_index);
                        r = add(e, w, path, "CPUs %s are not online on this host (online: %s)", missing, online);
                        if (r < 0)
                                return r;
                }
                if (!tune_cpuset_is_empty(&x->unattributed_nodes)) {
                        tune_cpuset m = {};
                        _cleanup_free_ char *missing = NULL;
                        r = 0;
                        TUNE_CPUSET_FOREACH(node, &x->unattributed_nodes)
                                if (r >= 0 && !tune_topology_node(t, node))
                                        r = tune_cpuset_add(&m, (unsigned) node);
                        if (r >= 0 && !tune_cpuset_is_empty(&m))
                                r = format_set(&m, &missing);
                        tune_cpuset_done(&m);
                        if (r < 0)
                                return r;
                        if (missing) {
                                snprintf(path, sizeof path, "processes[%u].unattributed.nodes", x->merged_index);
                                r = add(e, w, path, "NUMA nodes %s do not exist on this host (nodes: %s)", missing, nodes);
                                if (r < 0)
                                        return r;
                        }
                }

                /* Accelerator work is placed on one node's CPUs: the roles should fit one.
                 * Capacity, not existence: a warning even for the daemon (the embedded
                 * default must run on a 1-CPU host); placement then shares CPUs. */
                if (x->accel_mode != TUNE_ACCEL_NONE && x->control.cpus + x->compute.cpus > 0 && largest_id >= 0) {
                        unsigned hk = p->host.irq_housekeeping_cpus_per_node;
                        unsigned need = x->control.cpus + (x->compute.cpus ? x->compute.cpus : 1);
                        unsigned avail = largest > hk ? largest - hk : 0;
                        if (need > avail) {
                                char compute[32];
                                if (x->compute.cpus)
                                        snprintf(compute, sizeof compute, "%u", x->compute.cpus);
                                else
                                        snprintf(compute, sizeof compute, "the rest, at least 1");
                                snprintf(path, sizeof path, "processes[%u].threads", x->merged_index);
                                r = add(e, true, path,
                                        "control (%u) and compute (%s) CPUs do not fit in one NUMA node of this host (the "
                                        "largest, node %d, has %u CPUs, %u of them housekeeping: "
                                        "host.irq.housekeeping_cpus_per_node, 1 unless set); the daemon gives such a "
                                        "process the %u CPU(s) there are%s",
                                        x->control.cpus, compute, largest_id, largest, hk, avail,
                                        avail <= 1 ? ", and on one CPU its roles share it" : ", control first");
                                if (r < 0)
                                        return r;
                        }
                }
        }
        return 0;
}

int tune_policy_validate_host(const tune_policy *p, const tune_topology *t, const tune_accels *a, bool as_warnings,
                              tune_policy_errors *errors) {
        tune_policy_errors local = {};
        tune_accels none = {};
        int r;

        if (!p || !t || !errors)
                return -EINVAL;
        r = check_host(p, t, a ? a : &none, as_warnings, &local);
        if (r >= 0)
                r = policy_attribute_errors(p->sources, &local);
        unsigned n_errors = tune_policy_errors_count(&local);
        if (r >= 0)
                r = policy_errors_move(errors, &local);
        tune_policy_errors_done(&local);
        if (r < 0)
                return r;
        return n_errors > 0 ? -EINVAL : 0;
}
