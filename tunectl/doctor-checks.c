/* SPDX-License-Identifier: GPL-2.0-only */
/* The checks: pure functions of the facts (doctor.h). Each says what it read and where,
 * and, when something is to be done, the policy key or the command that does it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "npu-tuned/macro.h"

/* A near node with "little" free memory, and one with "plenty" beside it: the reference
 * deployment's NUMA0 had 3.2 GB free while NUMA4 had 28 GB. */
#define LOW_FREE_MIB 8192u
#define PLENTY_FACTOR 4u
#define MAX_U64(a, b) ((a) > (b) ? (a) : (b))

const char *doctor_status_to_string(doctor_status s) {
        return s == DOCTOR_FAIL ? "fail" : s == DOCTOR_WARN ? "warn" : "ok";
}

void doctor_add(doctor_report *r, const char *id, doctor_status s, const char *fix, const char *fmt, ...) {
        doctor_result *items = realloc(r->items, (r->n + 1) * sizeof *items);
        _cleanup_free_ char *raw = NULL;
        va_list ap;
        int k;

        if (!items)
                abort();
        r->items = items;
        doctor_result *res = &r->items[r->n++];
        *res = (doctor_result){ .status = s };
        snprintf(res->id, sizeof res->id, "%s", id);
        va_start(ap, fmt);
        k = vasprintf(&raw, fmt, ap);
        va_end(ap);
        /* Evidence may quote a process's comm or command line: escaped, one line. */
        if (k < 0 || tune_escape_utf8(raw, false, &res->evidence) < 0 || (fix && !(res->fix = strdup(fix))))
                abort();
}

void doctor_report_done(doctor_report *r) {
        for (unsigned i = 0; i < r->n; i++) {
                free(r->items[i].evidence);
                free(r->items[i].fix);
        }
        free(r->items);
        *r = (doctor_report){};
}

doctor_status doctor_report_worst(const doctor_report *r) {
        doctor_status worst = DOCTOR_OK;
        for (unsigned i = 0; i < r->n; i++)
                if (r->items[i].status > worst)
                        worst = r->items[i].status;
        return worst;
}

/* A list of items into buf, "a, b, c" and "..." once it is full. */
typedef struct list {
        char buf[512];
        size_t len;
        unsigned n;
} list;

static void list_add(list *l, const char *fmt, ...) _printf_(2, 3);
static void list_add(list *l, const char *fmt, ...) {
        va_list ap;
        int k;

        if (l->n++ > 0 && l->len < sizeof l->buf)
                l->len += (size_t) snprintf(l->buf + l->len, sizeof l->buf - l->len, "; ");
        if (l->len >= sizeof l->buf - 4) {
                memcpy(l->buf + sizeof l->buf - 4, "...", 4);
                return;
        }
        va_start(ap, fmt);
        k = vsnprintf(l->buf + l->len, sizeof l->buf - l->len, fmt, ap);
        va_end(ap);
        if (k > 0)
                l->len += (size_t) k;
        if (l->len >= sizeof l->buf)
                memcpy(l->buf + sizeof l->buf - 4, "...", 4);
}

static void check_policy(const doctor_facts *f, doctor_report *r) {
        if (!f->policy)
                doctor_add(r, "policy", DOCTOR_FAIL, "npu-tuned --check-policy (lists every problem with its file and line)",
                           "the policy does not load: %s (%u error(s))", f->policy_problem ? f->policy_problem : "?",
                           f->policy_errors);
        else if (f->policy->embedded)
                doctor_add(r, "policy", DOCTOR_OK, NULL,
                           "no policy file: the built-in default (pins known servers, changes no host knob)");
        else
                doctor_add(r, "policy", DOCTOR_OK, NULL, "valid: %u file(s), the last %s, %u rule(s)", f->policy->n_files,
                           f->policy->files[f->policy->n_files - 1], f->policy->n_rules);
}

/* The accelerator with a known node on the nearest PCI bus: where one without a node most
 * likely sits (boards put a node's devices on neighbouring root buses). */
static const tune_accel *nearest_known(const tune_accels *a, const tune_accel *x) {
        const tune_accel *best = NULL;
        long best_d = 0;
        unsigned xb = (unsigned) strtoul(x->pci + 5, NULL, 16);

        for (unsigned i = 0; i < a->n; i++) {
                const tune_accel *o = &a->items[i];
                if (o == x || o->numa_node < 0 || strncmp(o->pci, x->pci, 4) != 0)
                        continue;
                long d = labs((long) strtoul(o->pci + 5, NULL, 16) - (long) xb);
                if (!best || d < best_d) {
                        best = o;
                        best_d = d;
                }
        }
        return best;
}

static void check_accelerators(const doctor_facts *f, doctor_report *r) {
        list ok = {}, bad = {};
        char fix[512] = "";

        if (f->accels.n == 0) {
                doctor_add(r, "accelerator-numa", DOCTOR_WARN,
                           "\"accelerators\": { \"kinds\": [ { \"name\": \"...\", \"pci_id\": \"VENDOR:DEVICE\" } ] } "
                           "when the device is a kind npu-tuned does not know",
                           "no accelerator found below %s/sys/bus/pci/devices (Ascend, NVIDIA, AMD, the accel class)",
                           streq(f->root, "/") ? "" : f->root);
                return;
        }
        for (unsigned i = 0; i < f->accels.n; i++) {
                const tune_accel *a = &f->accels.items[i];
                unsigned nodes = 0;

                for (unsigned n = 0; n < f->topology->n_nodes; n++)
                        nodes += tune_cpuset_overlaps(&a->local_cpus, &f->topology->nodes[n].cpus);
                if (a->numa_node < 0) {
                        const tune_accel *near = nearest_known(&f->accels, a);
                        list_add(&bad, "%s:%d %s reports numa_node -1 (/sys/bus/pci/devices/%s/numa_node), its local CPUs "
                                       "span %u node(s)", a->kind, a->index, a->pci, a->pci, nodes);
                        if (!*fix)
                                snprintf(fix, sizeof fix,
                                         "\"accelerators\": { \"numa_node_overrides\": [ { \"pci\": \"%s\", \"node\": %d } ] }"
                                         " (node %d: that of %s, the nearest bus with a known node; check the board's manual)",
                                         a->pci, near ? near->numa_node : 0, near ? near->numa_node : 0,
                                         near ? near->pci : "no other accelerator");
                } else if (nodes > 1 && !a->numa_node_overridden) {
                        list_add(&bad, "%s:%d %s is on node %d but its local CPUs span %u nodes (overlapping nodes)", a->kind,
                                 a->index, a->pci, a->numa_node, nodes);
                        if (!*fix)
                                snprintf(fix, sizeof fix,
                                         "\"accelerators\": { \"numa_node_overrides\": [ { \"pci\": \"%s\", \"node\": %d } ] }",
                                         a->pci, a->numa_node);
                } else
                        list_add(&ok, "%s:%d node %d%s", a->kind, a->index, a->numa_node,
                                 a->numa_node_overridden ? " (policy override)" : "");
        }
        if (bad.n)
                doctor_add(r, "accelerator-numa", DOCTOR_FAIL, fix, "%s", bad.buf);
        else
                doctor_add(r, "accelerator-numa", DOCTOR_OK, NULL, "%u accelerator(s), each on one node: %s", ok.n, ok.buf);
}

static bool node_has_accel(const doctor_facts *f, int node) {
        for (unsigned i = 0; i < f->accels.n; i++)
                if (f->accels.items[i].numa_node == node)
                        return true;
        return false;
}

/* The node the planner takes for memory with min_free_mib: the accelerator's own when it
 * has that much free, else the nearest that has (libtune/placement/plan.c). */
static const tune_node *memory_home(const tune_topology *t, const tune_node *own, uint64_t min_free_mib) {
        const tune_node *best = NULL;
        int best_d = 0;

        if (own->mem_free_kib / 1024 >= min_free_mib)
                return own;
        for (unsigned i = 0; i < t->n_nodes; i++) {
                const tune_node *n = &t->nodes[i];
                int d = tune_topology_distance(t, own->id, n->id);
                if (n == own || n->accelerator_memory || n->mem_free_kib / 1024 < min_free_mib)
                        continue;
                if (d < 0)
                        d = 255;
                if (!best || d < best_d) {
                        best = n;
                        best_d = d;
                }
        }
        return best;
}

static const tune_policy_rule *migrating_rule(const tune_policy *p) {
        for (unsigned i = 0; p && i < p->n_rules; i++)
                if (p->rules[i].memory_migrate)
                        return &p->rules[i];
        return NULL;
}

static const char *accelerator_rule_name(const tune_policy *p) {
        for (unsigned i = 0; p && i < p->n_rules; i++)
                if (p->rules[i].accel_mode != TUNE_ACCEL_NONE)
                        return p->rules[i].name;
        return "vllm-worker";
}

static void check_memory(const doctor_facts *f, doctor_report *r) {
        const tune_policy_rule *rule = migrating_rule(f->policy);
        list low = {}, fine = {};
        char fix[512] = "";
        uint64_t want = 0;

        for (unsigned i = 0; i < f->topology->n_nodes; i++) {
                const tune_node *n = &f->topology->nodes[i];
                uint64_t free_mib = n->mem_free_kib / 1024, max_other = 0;

                if (!node_has_accel(f, n->id))
                        continue;
                for (unsigned k = 0; k < f->topology->n_nodes; k++)
                        if (k != i && !f->topology->nodes[k].accelerator_memory)
                                max_other = MAX_U64(max_other, f->topology->nodes[k].mem_free_kib / 1024);
                if (free_mib >= LOW_FREE_MIB || max_other < PLENTY_FACTOR * MAX_U64(free_mib, 1)) {
                        list_add(&fine, "node %d %llu MiB free", n->id, (unsigned long long) free_mib);
                        continue;
                }
                /* The smallest round minimum that this node fails: its processes' memory
                 * then goes to the nearest node that has it. */
                uint64_t min_mib = (free_mib / 1024 + 1) * 1024;
                if (rule && rule->memory_min_free_kib / 1024 > free_mib) {
                        const tune_node *home = memory_home(f->topology, n, rule->memory_min_free_kib / 1024);
                        list_add(&fine, "node %d %llu MiB free: rule \"%s\" (min_free_mib %llu) puts its memory on node %d",
                                 n->id, (unsigned long long) free_mib, rule->name,
                                 (unsigned long long) (rule->memory_min_free_kib / 1024), home ? home->id : n->id);
                        continue;
                }
                const tune_node *home = memory_home(f->topology, n, min_mib);
                list_add(&low, "node %d (accelerators) has %llu MiB free, node %d has %llu MiB (distance %d)", n->id,
                         (unsigned long long) free_mib, home ? home->id : -1,
                         (unsigned long long) (home ? home->mem_free_kib / 1024 : 0),
                         home ? tune_topology_distance(f->topology, n->id, home->id) : -1);
                want = MAX_U64(want, min_mib);
        }
        if (low.n) {
                snprintf(fix, sizeof fix,
                         "\"processes\": [ { \"name\": \"%s\", \"memory\": { \"migrate\": true, \"min_free_mib\": %llu } } ] "
                         "(memory then goes to the nearest node with that much free; the CPUs stay)",
                         rule ? rule->name : accelerator_rule_name(f->policy), (unsigned long long) want);
                doctor_add(r, "memory", DOCTOR_WARN, fix, "%s (/sys/devices/system/node/node*/meminfo)", low.buf);
        } else if (fine.n)
                doctor_add(r, "memory", DOCTOR_OK, NULL, "%s", fine.buf);
        else
                doctor_add(r, "memory", DOCTOR_OK, NULL, "no node with accelerators");
}

static void check_thp(const doctor_facts *f, doctor_report *r) {
        list bad = {};

        if (!f->thp_enabled) {
                doctor_add(r, "thp", DOCTOR_OK, NULL, "no transparent huge pages (/sys/kernel/mm/transparent_hugepage absent)");
                return;
        }
        /* "always" faults huge pages in everywhere, and direct compaction stalls the
         * faulting thread (the reference deployment turned both off). */
        if (streq(f->thp_enabled, "always"))
                list_add(&bad, "enabled [always]: huge pages faulted in for every mapping");
        if (f->thp_defrag && streq(f->thp_defrag, "always"))
                list_add(&bad, "defrag [always]: a fault waits for direct compaction");
        if (f->khugepaged_defrag == 1)
                list_add(&bad, "khugepaged/defrag 1: khugepaged compacts memory in the background");
        if (bad.n)
                doctor_add(r, "thp", DOCTOR_WARN,
                           "\"host\": { \"thp\": { \"enabled\": \"never\", \"defrag\": \"madvise\", \"khugepaged_defrag\": 0 } }",
                           "%s (/sys/kernel/mm/transparent_hugepage)", bad.buf);
        else
                doctor_add(r, "thp", DOCTOR_OK, NULL, "enabled [%s], defrag [%s], khugepaged/defrag %ld", f->thp_enabled,
                           f->thp_defrag ? f->thp_defrag : "?", f->khugepaged_defrag);
}

static void check_governor(const doctor_facts *f, doctor_report *r) {
        _cleanup_cpuset_ tune_cpuset slow = {}, capped = {}, below = {};
        _cleanup_free_ char *slow_list = NULL, *capped_list = NULL, *below_list = NULL;
        const doctor_cpufreq *first_slow = NULL, *first_capped = NULL, *first_below = NULL;
        char fix[512] = "";

        if (f->n_cpufreq == 0) {
                doctor_add(r, "cpufreq", DOCTOR_OK, NULL,
                           f->accels.n ? "no cpufreq policy for the CPUs near accelerators: the firmware sets their frequency"
                                       : "no accelerator: no CPUs near one to look at");
                return;
        }
        for (unsigned i = 0; i < f->n_cpufreq; i++) {
                const doctor_cpufreq *q = &f->cpufreq[i];
                if (!streq(q->governor, "performance")) {
                        (void) tune_cpuset_add(&slow, (unsigned) q->cpu);
                        first_slow = first_slow ?: q;
                }
                if (q->max_khz > 0 && q->hw_max_khz > 0 && q->max_khz < q->hw_max_khz) {
                        (void) tune_cpuset_add(&capped, (unsigned) q->cpu);
                        first_capped = first_capped ?: q;
                } else if (streq(q->governor, "performance") && q->cur_khz > 0 && q->hw_max_khz > 0 &&
                           q->cur_khz * 10 < q->hw_max_khz * 9) {
                        (void) tune_cpuset_add(&below, (unsigned) q->cpu);
                        first_below = first_below ?: q;
                }
        }
        (void) tune_cpuset_format_list(&slow, &slow_list);
        (void) tune_cpuset_format_list(&capped, &capped_list);
        (void) tune_cpuset_format_list(&below, &below_list);
        if (first_slow)
                doctor_add(r, "cpufreq", DOCTOR_WARN, "\"host\": { \"cpufreq\": { \"governor\": \"performance\", \"cpus\": \"inference\" } }",
                           "CPUs %s near accelerators run governor %s (/sys/devices/system/cpu/cpufreq/policy%d/scaling_governor)",
                           slow_list ? slow_list : "?", *first_slow->governor ? first_slow->governor : "?", first_slow->cpu);
        else if (first_capped) {
                snprintf(fix, sizeof fix, "cpupower -c %s frequency-set -u %ldkHz (and look for a power cap in the BMC)",
                         capped_list ? capped_list : "all", first_capped->hw_max_khz);
                doctor_add(r, "cpufreq", DOCTOR_WARN, fix,
                           "CPUs %s near accelerators are capped at %ld kHz of %ld (scaling_max_freq of cpu%d)",
                           capped_list ? capped_list : "?", first_capped->max_khz, first_capped->hw_max_khz, first_capped->cpu);
        } else if (first_below)
                doctor_add(r, "cpufreq", DOCTOR_WARN,
                           "cpupower -c all frequency-info; a power or thermal cap (BMC, firmware) holds them down",
                           "CPUs %s near accelerators run at %ld kHz of %ld under governor performance (scaling_cur_freq of cpu%d)",
                           below_list ? below_list : "?", first_below->cur_khz, first_below->hw_max_khz, first_below->cpu);
        else
                doctor_add(r, "cpufreq", DOCTOR_OK, NULL, "the %u CPUs near accelerators run governor performance at up to %ld kHz",
                           f->n_cpufreq, f->cpufreq[0].hw_max_khz);
}

static void check_numa_balancing(const doctor_facts *f, doctor_report *r) {
        if (f->numa_balancing > 0 && f->topology->n_nodes > 1)
                doctor_add(r, "numa-balancing", DOCTOR_WARN, "\"host\": { \"numa_balancing\": 0 }",
                           "kernel.numa_balancing is %ld (/proc/sys/kernel/numa_balancing): the kernel pulls pages toward "
                           "the CPUs that touch them and unmaps pages for hinting faults",
                           f->numa_balancing);
        else
                doctor_add(r, "numa-balancing", DOCTOR_OK, NULL, "kernel.numa_balancing is %ld on %u node(s)",
                           f->numa_balancing, f->topology->n_nodes);
}

static void check_smt(const doctor_facts *f, doctor_report *r) {
        const tune_topology *t = f->topology;

        for (unsigned i = 0; i < t->n_cpus; i++) {
                const tune_cpu *a = &t->cpus[i];
                if (!a->online || a->package < 0 || !tune_cpuset_has(&f->inference, (unsigned) a->id))
                        continue;
                for (unsigned k = i + 1; k < t->n_cpus; k++) {
                        const tune_cpu *b = &t->cpus[k];
                        if (b->online && b->package == a->package && b->core == a->core && b->node == a->node &&
                            tune_cpuset_has(&f->inference, (unsigned) b->id)) {
                                doctor_add(r, "smt", DOCTOR_WARN,
                                           "echo off > /sys/devices/system/cpu/smt/control (or nosmt on the kernel command "
                                           "line): a control thread then has a core to itself",
                                           "CPUs %d and %d are threads of one core (package %d core %d), both in node %d's "
                                           "inference CPUs (/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list)",
                                           a->id, b->id, a->package, a->core, a->node, a->id);
                                return;
                        }
                }
        }
        doctor_add(r, "smt", DOCTOR_OK, NULL, "no two inference CPUs share a core");
}

static void check_aspm(const doctor_facts *f, doctor_report *r) {
        list l0s = {}, links = {};

        for (unsigned i = 0; i < f->n_links; i++) {
                const doctor_link *l = &f->links[i];
                const tune_accel *a = &f->accels.items[l->accel];
                if (l->l0s < 0 && l->l1 < 0)
                        continue;
                list_add(&links, "%s L0s %d L1 %d", a->pci, l->l0s, l->l1);
                if (l->l0s > 0)
                        list_add(&l0s, "%s", a->pci);
        }
        if (l0s.n)
                doctor_add(r, "aspm", DOCTOR_WARN, "\"host\": { \"pcie_aspm\": { \"accelerator_link\": \"l1_only\" } }",
                           "L0s is on for the links of %s (/sys/bus/pci/devices/BDF/link/l0s_aspm); policy [%s]", l0s.buf,
                           f->aspm_policy ? f->aspm_policy : "?");
        else if (f->aspm_policy && (streq(f->aspm_policy, "powersave") || streq(f->aspm_policy, "powersupersave")))
                doctor_add(r, "aspm", DOCTOR_WARN, "\"host\": { \"pcie_aspm\": { \"policy\": \"performance\" } }",
                           "PCIe ASPM policy [%s] (/sys/module/pcie_aspm/parameters/policy)", f->aspm_policy);
        else
                doctor_add(r, "aspm", DOCTOR_OK, NULL, "policy [%s]; %s", f->aspm_policy ? f->aspm_policy : "none",
                           links.n ? links.buf : "no accelerator link with ASPM controls");
}

static void check_irqs(const doctor_facts *f, doctor_report *r) {
        _cleanup_cpuset_ tune_cpuset on_inference = {}, unmovable = {}, unmovable_accel = {};
        _cleanup_free_ char *irqs = NULL, *cpus = NULL, *fixed = NULL;
        unsigned n_accel = 0;

        for (unsigned i = 0; i < f->irq_plan.n; i++) {
                const tune_knob_item *it = &f->irq_plan.items[i];
                _cleanup_cpuset_ tune_cpuset mask = {};
                if (it->irq < 0)
                        continue;
                /* Managed: the kernel places the vector with its queue's CPUs. */
                if (it->skip < 0 && it->skip_reason && strstr(it->skip_reason, "managed")) {
                        (void) tune_cpuset_add(it->accel >= 0 ? &unmovable_accel : &unmovable, (unsigned) it->irq);
                        continue;
                }
                if (it->accel < 0)
                        continue;
                n_accel++;
                if (it->current && tune_cpuset_parse_mask(&mask, it->current) >= 0 && tune_cpuset_overlaps(&mask, &f->inference))
                        (void) tune_cpuset_add(&on_inference, (unsigned) it->irq);
        }
        (void) tune_cpuset_format_list(&f->inference, &cpus);
        if (!tune_cpuset_is_empty(&on_inference)) {
                (void) tune_cpuset_format_list(&on_inference, &irqs);
                doctor_add(r, "irq-affinity", DOCTOR_WARN,
                           "\"host\": { \"irq\": { \"manage\": true, \"steer_accelerator_irqs\": true, \"keep_off_inference_cpus\": true } }",
                           "%u of %u accelerator IRQ(s) may run on inference CPUs %s: IRQ %s (/proc/irq/N/smp_affinity)",
                           tune_cpuset_count(&on_inference), n_accel, cpus ? cpus : "?", irqs ? irqs : "?");
        } else
                doctor_add(r, "irq-affinity", DOCTOR_OK, NULL, "%u accelerator IRQ(s), none on inference CPUs %s", n_accel,
                           cpus ? cpus : "");
        if (!tune_cpuset_is_empty(&unmovable_accel)) {
                (void) tune_cpuset_format_list(&unmovable_accel, &fixed);
                doctor_add(r, "irq-unmovable", DOCTOR_WARN,
                           "isolcpus=managed_irq,<inference CPUs> on the kernel command line keeps managed IRQs off them",
                           "accelerator IRQ %s: the kernel places them itself (managed: /proc/irq/N/smp_affinity read-only)",
                           fixed ? fixed : "?");
        } else if (!tune_cpuset_is_empty(&unmovable)) {
                (void) tune_cpuset_format_list(&unmovable, &fixed);
                doctor_add(r, "irq-unmovable", DOCTOR_OK, NULL,
                           "IRQ %s cannot be moved (managed or per-CPU), none of them an accelerator's", fixed ? fixed : "?");
        } else
                doctor_add(r, "irq-unmovable", DOCTOR_OK, NULL, "every IRQ's affinity can be set");
}

static void check_tuners(const doctor_facts *f, doctor_report *r) {
        _cleanup_free_ char *cpus = NULL;
        char fix[512];
        unsigned found = 0;

        (void) tune_cpuset_format_list(&f->inference, &cpus);
        if (f->irqbalance) {
                found++;
                if (f->irqbalance_socket)
                        doctor_add(r, "irqbalance", DOCTOR_OK, NULL,
                                   "irqbalance (pid %d) takes bans over its socket /run/irqbalance/irqbalance%d.sock: "
                                   "npu-tuned bans the inference CPUs there while it manages IRQs",
                                   (int) f->irqbalance, (int) f->irqbalance);
                else {
                        snprintf(fix, sizeof fix,
                                 "IRQBALANCE_BANNED_CPULIST=%s in /etc/default/irqbalance, then systemctl restart irqbalance",
                                 cpus && *cpus ? cpus : "<inference CPUs>");
                        doctor_add(r, "irqbalance", DOCTOR_WARN, fix,
                                   "irqbalance (pid %d) runs without a control socket (/run/irqbalance/irqbalance%d.sock): "
                                   "it moves IRQs back onto inference CPUs",
                                   (int) f->irqbalance, (int) f->irqbalance);
                }
        }
        if (f->tuned) {
                found++;
                if (f->tuned_scheduler != 0)
                        doctor_add(r, "tuned", DOCTOR_WARN,
                                   "a tuned profile without a [scheduler] section (or \"enabled=false\" in it), or "
                                   "systemctl disable --now tuned: two binders must not move one thread",
                                   "tuned (pid %d) runs profile %s%s (/etc/tuned/active_profile)", (int) f->tuned,
                                   f->tuned_profile ? f->tuned_profile : "?",
                                   f->tuned_scheduler > 0 ? ", which has the scheduler plugin" : ", its plugins unknown");
                else
                        doctor_add(r, "tuned", DOCTOR_OK, NULL, "tuned (pid %d) runs profile %s without the scheduler plugin",
                                   (int) f->tuned, f->tuned_profile);
        }
        if (f->numad) {
                found++;
                doctor_add(r, "numad", DOCTOR_WARN, "systemctl disable --now numad",
                           "numad (pid %d) runs: it moves processes and their memory between nodes by itself", (int) f->numad);
        }
        if (!found)
                doctor_add(r, "tuners", DOCTOR_OK, NULL, "no irqbalance, tuned or numad running");
}

static void check_binders(const doctor_facts *f, doctor_report *r) {
        list clash = {}, fine = {};
        const char *rule = NULL;
        char fix[512];

        for (unsigned i = 0; i < f->n_procs; i++) {
                const doctor_proc *p = &f->procs[i];
                if (!p->inference || p->binds != TUNE_ENGINE_BINDS_YES)
                        continue;
                if (p->rule && p->rule->binding == TUNE_BINDING_DAEMON) {
                        list_add(&clash, "pid %d (%s) binds itself (%s) and rule \"%s\" pins it too", (int) p->pid, p->comm,
                                 p->binds_why, p->rule->name);
                        rule = rule ?: p->rule->name;
                } else
                        list_add(&fine, "pid %d (%s) binds itself (%s)%s", (int) p->pid, p->comm, p->binds_why,
                                 p->rule ? ", its rule leaves it to" : "");
        }
        if (clash.n) {
                snprintf(fix, sizeof fix,
                         "\"processes\": [ { \"name\": \"%s\", \"binding\": \"engine\" } ] (or turn the engine's binding off "
                         "and let npu-tuned pin)",
                         rule);
                doctor_add(r, "engine-binding", DOCTOR_WARN, fix, "%s", clash.buf);
        } else
                doctor_add(r, "engine-binding", DOCTOR_OK, NULL, "%s",
                           fine.n ? fine.buf : "no running server binds its own threads");
}

static void check_unmatched(const doctor_facts *f, doctor_report *r) {
        list l = {};
        const char *word = NULL;
        char fix[512];

        if (!f->policy)
                return;
        for (unsigned i = 0; i < f->n_procs; i++) {
                const doctor_proc *p = &f->procs[i];
                bool managed = false;
                if (!p->inference)
                        continue;
                for (unsigned k = 0; k < f->n_managed; k++)
                        managed = managed || f->managed[k].pid == p->pid;
                if (p->rule || managed)
                        continue;
                list_add(&l, "pid %d (%s): %.80s", (int) p->pid, p->comm, p->cmdline);
                word = word ?: p->comm;
        }
        if (l.n) {
                snprintf(fix, sizeof fix,
                         "\"processes\": [ { \"name\": \"my-server\", \"match\": { \"cmdline\": \"<a word of its command "
                         "line>\" } } ] (npu-tunectl explain PID says why no rule matches)");
                doctor_add(r, "unmatched", DOCTOR_WARN, fix, "%u process(es) look like inference servers and match no rule: %s%s",
                           l.n, l.buf, f->procs_truncated ? " (more not looked at)" : "");
        } else
                doctor_add(r, "unmatched", DOCTOR_OK, NULL, "every process that looks like an inference server matches a rule");
}

static void check_kmsg(const doctor_facts *f, doctor_report *r) {
        if (f->kmsg_r < 0)
                doctor_add(r, "kernel-log", DOCTOR_OK, NULL, "the kernel log (/dev/kmsg) cannot be read: %s",
                           strerror(-f->kmsg_r));
        else if (f->kmsg_mce + f->kmsg_nmi + f->kmsg_aer > 0)
                doctor_add(r, "kernel-log", DOCTOR_WARN,
                           "journalctl -k -g 'mce|Hardware Error|NMI|AER' (and ras-mc-ctl --errors): the part these name",
                           "%u machine-check, %u NMI, %u AER line(s) in /dev/kmsg; the last: %.200s", f->kmsg_mce,
                           f->kmsg_nmi, f->kmsg_aer, f->kmsg_last ? f->kmsg_last : "");
        else
                doctor_add(r, "kernel-log", DOCTOR_OK, NULL, "no machine-check, NMI or AER line in /dev/kmsg");
}

static void check_journal(const doctor_facts *f, doctor_report *r) {
        char fix[512];

        if (f->journal_r == -ENOENT)
                doctor_add(r, "journal", DOCTOR_OK, NULL, "no knob journal in %s: no knob is owned", f->state_dir);
        else if (f->journal_r == -EACCES || f->journal_r == -EPERM)
                doctor_add(r, "journal", DOCTOR_OK, NULL, "%s cannot be read by this user", f->state_dir);
        else if (f->journal_r < 0) {
                snprintf(fix, sizeof fix,
                         "put the knobs back by hand from %s/knobs.journal (docs: npu-tuned(8), RESTORE), then remove it",
                         f->state_dir);
                doctor_add(r, "journal", DOCTOR_FAIL, fix, "%s/knobs.journal does not parse: %s", f->state_dir,
                           strerror(-f->journal_r));
        } else if (!f->daemon) {
                snprintf(fix, sizeof fix, "npu-tuned --restore --state-dir %s (gives every knob its original value back)",
                         f->state_dir);
                doctor_add(r, "journal", DOCTOR_FAIL, fix,
                           "%s/knobs.journal holds %u knob(s) and no npu-tuned runs: it stopped without giving them back",
                           f->state_dir, f->journal_entries);
        } else
                doctor_add(r, "journal", DOCTOR_OK, NULL, "%s/knobs.journal: the %u knob(s) the running daemon owns",
                           f->state_dir, f->journal_entries);
}

static void check_daemon(const doctor_facts *f, doctor_report *r) {
        char fix[256];

        if (!f->daemon) {
                doctor_add(r, "daemon", DOCTOR_WARN, "systemctl enable --now npu-tuned",
                           "npu-tuned is not running (nothing owns org.nputuned1 on the bus)");
                return;
        }
        if (f->reload_usec && !f->reload_ok) {
                doctor_add(r, "daemon", DOCTOR_FAIL, "npu-tuned --check-policy, fix the file, then npu-tunectl reload",
                           "the last reload was refused, the previous policy runs: %s", f->reload_message);
                return;
        }
        if (f->knobs_drifted) {
                snprintf(fix, sizeof fix, "npu-tunectl reload (writes them again), or \"host\": { \"reassert\": true }; "
                                          "and find who writes them");
                doctor_add(r, "daemon", DOCTOR_FAIL, fix, "%u of %u owned knob(s) changed behind npu-tuned's back (first: %s)",
                           f->knobs_drifted, f->knobs, f->drifted ? f->drifted : "?");
                return;
        }
        doctor_add(r, "daemon", DOCTOR_OK, NULL, "npu-tuned %s, %u knob(s)%s, %u managed process(es)%s",
                   f->daemon_state ? f->daemon_state : "?", f->knobs,
                   f->knobs_refused ? " (some refused by the kernel)" : "", f->n_managed,
                   f->reload_usec ? ", last reload taken" : "");
}

static void check_managed(const doctor_facts *f, doctor_report *r) {
        list bad_cpuset = {}, outside = {}, remote = {};
        pid_t first_outside = 0;
        char fix[256];

        if (!f->daemon)
                return;
        for (unsigned i = 0; i < f->n_managed; i++) {
                const doctor_managed *m = &f->managed[i];
                if (!tune_cpuset_is_empty(&m->accel_cpus) && !tune_cpuset_is_empty(&m->cpuset_cpus) &&
                    !tune_cpuset_overlaps(&m->accel_cpus, &m->cpuset_cpus))
                        list_add(&bad_cpuset, "pid %d (%s) on %s: its cgroup cpuset has no CPU near them", (int) m->pid,
                                 m->comm, m->accelerators);
                if (m->threads_outside && !first_outside)
                        first_outside = m->pid;
                if (m->threads_outside)
                        list_add(&outside, "pid %d (%s): %u of %u thread(s) outside its plan (tid %d on %s)", (int) m->pid,
                                 m->comm, m->threads_outside, m->threads, (int) m->first_outside, m->first_outside_cpus);
                if (m->locality >= 0 && m->locality < 90)
                        list_add(&remote, "pid %d (%s): %.1f%% of its memory on its node(s)", (int) m->pid, m->comm,
                                 m->locality);
        }
        if (bad_cpuset.n)
                doctor_add(r, "placement-cpuset", DOCTOR_FAIL,
                           "give the container CPUs of its accelerators' node (the kubelet's topology manager: "
                           "--topology-manager-policy=single-numa-node, or the runtime's --cpuset-cpus)",
                           "%s", bad_cpuset.buf);
        if (outside.n) {
                snprintf(fix, sizeof fix, "npu-tunectl explain %d (who binds it, and why)", (int) first_outside);
                doctor_add(r, "placement-threads", DOCTOR_WARN, fix, "%s (/proc/PID/task/TID/status)", outside.buf);
        } else
                doctor_add(r, "placement-threads", DOCTOR_OK, NULL, "%u managed process(es), every thread where its plan says",
                           f->n_managed);
        if (remote.n)
                doctor_add(r, "placement-memory", DOCTOR_WARN,
                           "\"processes\": [ { \"name\": \"RULE\", \"memory\": { \"migrate\": true } } ]; "
                           "npu-tunectl explain PID shows where it is",
                           "%s", remote.buf);
}

void doctor_check_all(const doctor_facts *f, doctor_report *r) {
        check_policy(f, r);
        check_daemon(f, r);
        check_journal(f, r);
        check_accelerators(f, r);
        check_memory(f, r);
        check_thp(f, r);
        check_governor(f, r);
        check_numa_balancing(f, r);
        check_smt(f, r);
        check_aspm(f, r);
        check_irqs(f, r);
        check_tuners(f, r);
        check_binders(f, r);
        check_unmatched(f, r);
        check_managed(f, r);
        check_kmsg(f, r);
}
