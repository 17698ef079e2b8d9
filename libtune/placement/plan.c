/* SPDX-License-Identifier: GPL-2.0-only */
/* The planner (see include/npu-tuned/plan.h): tune_plan_compute(), a pure function from
 * the topology and the managed processes to their plans. The stateful placer that calls
 * it on every change is placer.c. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/plan.h"

/* Sorts after every real distance (1..255). */
#define DISTANCE_UNKNOWN 1000

static const char *const action_names[] = {
        [TUNE_PLAN_PLACE] = "place",
        [TUNE_PLAN_LEAVE] = "leave",
        [TUNE_PLAN_REFUSE] = "refuse",
};

const char *tune_plan_action_to_string(tune_plan_action a) {
        return (unsigned) a < ELEMENTSOF(action_names) ? action_names[a] : NULL;
}

void tune_plan_done(tune_plan *p) {
        if (!p)
                return;
        tune_cpuset_done(&p->home_nodes);
        tune_cpuset_done(&p->pool);
        for (unsigned i = 0; i < _TUNE_ROLE_MAX; i++)
                tune_cpuset_done(&p->role_cpus[i]);
        tune_cpuset_done(&p->borrowed_nodes);
        tune_cpuset_done(&p->asked_nodes);
        tune_cpuset_done(&p->mem_nodes);
        for (unsigned i = 0; i < p->n_reasons; i++)
                free(p->reasons[i]);
        free(p->reasons);
        memset(p, 0, sizeof *p);
}

int tune_plan_copy(tune_plan *dst, const tune_plan *src) {
        tune_plan c = {
                .action = src->action,
                .cpus_wanted = src->cpus_wanted,
                .shared = src->shared,
                .memory_decided = src->memory_decided,
                .memory_shared = src->memory_shared,
                .in_cpuset = src->in_cpuset,
                .cpuset_far = src->cpuset_far,
                .independent = src->independent,
                .no_reasons = src->no_reasons,
        };
        int r = 0;

        if (tune_cpuset_copy(&c.home_nodes, &src->home_nodes) < 0 ||
            tune_cpuset_copy(&c.pool, &src->pool) < 0 ||
            tune_cpuset_copy(&c.borrowed_nodes, &src->borrowed_nodes) < 0 ||
            tune_cpuset_copy(&c.asked_nodes, &src->asked_nodes) < 0 ||
            tune_cpuset_copy(&c.mem_nodes, &src->mem_nodes) < 0)
                r = -ENOMEM;
        for (unsigned i = 0; r == 0 && i < _TUNE_ROLE_MAX; i++)
                if (tune_cpuset_copy(&c.role_cpus[i], &src->role_cpus[i]) < 0)
                        r = -ENOMEM;
        if (r == 0 && src->n_reasons > 0) {
                c.reasons = tune_alloc0(src->n_reasons, sizeof(char *));
                if (!c.reasons)
                        r = -ENOMEM;
                for (unsigned i = 0; r == 0 && i < src->n_reasons; i++) {
                        c.reasons[i] = strdup(src->reasons[i]);
                        if (!c.reasons[i])
                                r = -ENOMEM;
                        c.n_reasons = i + 1;
                }
        }
        if (r < 0) {
                tune_plan_done(&c);
                return r;
        }
        *dst = c;
        return 0;
}

const tune_cpuset *tune_plan_role_cpus(const tune_plan *p, tune_role role) {
        if ((unsigned) role >= _TUNE_ROLE_MAX)
                return NULL;
        return &p->role_cpus[role];
}

int tune_plan_memory_target(const tune_plan *p) {
        return tune_cpuset_next(&p->mem_nodes, 0);
}

const tune_cpuset *tune_plan_thread_cpus(const tune_plan *p, const tune_policy_rule *rule,
                                         pid_t pid, pid_t tid, const char *comm, tune_role *ret_role) {
        tune_role role;

        if (p->action != TUNE_PLAN_PLACE)
                return NULL;
        role = tune_thread_classify(rule, pid, tid, comm);
        if (ret_role)
                *ret_role = role;
        return &p->role_cpus[role];
}

int tune_thread_target_choose(pid_t pid, pid_t tid, tune_thread_name *name, void *userdata, const tune_cpuset **ret) {
        const tune_thread_target *t = userdata;

        if (!t || !t->plan || !t->rule)
                return -EINVAL;
        /* The name only where the rule picks roles by name, and not for a main thread
         * that a main_thread role takes whatever its name. */
        const char *comm = tune_thread_role_needs_name(t->rule, pid, tid) ? tune_thread_name_get(name) : NULL;
        *ret = tune_plan_thread_cpus(t->plan, t->rule, pid, tid, comm, NULL);
        return 0;
}

_printf_(2, 3) static int add_reason_text(tune_plan *p, const char *fmt, ...) {
        va_list ap;
        char *s, **a;
        int r;

        if (p->n_reasons >= TUNE_PLAN_REASONS_MAX)
                return 0;
        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        a = realloc(p->reasons, (p->n_reasons + 1) * sizeof(char *));
        if (!a) {
                free(s);
                return -ENOMEM;
        }
        p->reasons = a;
        p->reasons[p->n_reasons++] = s;
        return 0;
}

/* A reason, unless the plan is made without them: then its arguments (formatted sets,
 * sizes) are not even evaluated. */
#define add_reason(p, ...) ((p)->no_reasons ? 0 : add_reason_text(p, __VA_ARGS__))

/* "3.2 GiB", "512 MiB": memory amounts in reasons. */
static const char *format_gib(uint64_t kib, char buf[static 32]) {
        if (kib >= 1024 * 1024)
                snprintf(buf, 32, "%.1f GiB", (double) kib / (1024.0 * 1024.0));
        else
                snprintf(buf, 32, "%" PRIu64 " MiB", kib / 1024);
        return buf;
}

/* A set as list text into a fixed buffer, for reasons ("?" when it does not fit). */
static const char *format_set(const tune_cpuset *s, char *buf, size_t size) {
        _cleanup_free_ char *text = NULL;

        if (tune_cpuset_format_list(s, &text) < 0 || strlen(text) >= size)
                snprintf(buf, size, "?");
        else
                snprintf(buf, size, "%s", text);
        return buf;
}

static void accel_name(const tune_accel *a, char buf[static 64]) {
        snprintf(buf, 64, "%s %d (%s)", a->kind, a->index, a->pci[0] ? a->pci : "no PCI address");
}

int tune_plan_available_cpus(const tune_topology *t, const tune_plan_params *params, int node, tune_cpuset *ret) {
        _cleanup_cpuset_ tune_cpuset s = {};
        const tune_node *n = tune_topology_node(t, node);
        unsigned hk = params ? params->housekeeping_cpus_per_node : 0;
        int r;

        if (!n)
                return -ENXIO;
        r = tune_cpuset_copy(&s, &n->cpus);
        if (r < 0)
                return r;
        /* An empty usable set means "not computed" (hand-built topologies). */
        if (!tune_cpuset_is_empty(&t->usable))
                tune_cpuset_and(&s, &t->usable);
        for (unsigned i = 0; i < hk; i++) {
                int c = tune_cpuset_next(&s, 0);
                if (c < 0)
                        break;
                tune_cpuset_remove(&s, (unsigned) c);
        }
        tune_cpuset_done(ret);
        *ret = s;
        s = (tune_cpuset) {};
        return 0;
}

/* ---- the pure planner ---- */

typedef struct plan_node {
        int id;
        tune_cpuset avail;
        unsigned usable;     /* before housekeeping, for reasons */
        unsigned cap;
        unsigned used;       /* CPUs granted */
        unsigned n_homed;    /* exclusive claims homed here */
        tune_cpuset taken;   /* CPUs chosen */
        unsigned pool_of;    /* index of the node whose pool deals this node's CPUs (itself, or
                              * the lowest node with the same CPUs when the firmware overlaps) */
        tune_plan_fill fill; /* when used reached cap */
} plan_node;

typedef struct plan_claim {
        const tune_plan_request *req;
        tune_plan *out;
        bool exclusive;      /* takes CPUs from the nodes' available CPUs */
        bool *home;          /* [node index] */
        unsigned n_home;
        unsigned want;       /* fixed: control + compute */
        bool elastic;
        unsigned min;        /* elastic: the least it can work with */
        unsigned *demand;    /* [node index] CPUs wanted from each home node */
        unsigned *grant;     /* [node index] CPUs granted */
        unsigned *chosen;    /* [node index] CPUs picked so far */
        int *dist;           /* [node index] distance from the nearest home node */
        unsigned *room;      /* [node index] available CPUs it may take there (its cpuset's) */
        const tune_cpuset *allowed; /* its cgroup cpuset's CPUs; NULL: not restricted */
        const tune_cpuset *mems;    /* its cgroup cpuset's memory nodes; NULL: not restricted */
        unsigned total;
} plan_claim;

typedef struct plan_state {
        const tune_topology *t;
        const tune_plan_params *params;
        plan_node *nodes;
        unsigned n_nodes;
        plan_claim *claims;
        unsigned n_claims;
        void *claim_arrays; /* every claim's per-node arrays, in one allocation */
        const tune_plan_fill *fills; /* [node index] given fills; NULL: none */
} plan_state;

static void plan_state_done(plan_state *s) {
        for (unsigned i = 0; i < s->n_nodes; i++) {
                tune_cpuset_done(&s->nodes[i].avail);
                tune_cpuset_done(&s->nodes[i].taken);
        }
        free(s->nodes);
        free(s->claim_arrays);
        free(s->claims);
}

static int node_index(const plan_state *s, int id) {
        for (unsigned i = 0; i < s->n_nodes; i++)
                if (s->nodes[i].id == id)
                        return (int) i;
        return -1;
}

static int node_of_cpu(const tune_topology *t, int cpu) {
        for (unsigned i = 0; i < t->n_nodes; i++)
                if (tune_cpuset_has(&t->nodes[i].cpus, (unsigned) cpu))
                        return t->nodes[i].id;
        return -1;
}

static int distance_or_unknown(const tune_topology *t, int from, int to) {
        int d;

        if (from == to)
                return 10;
        d = tune_topology_distance(t, from, to);
        return d > 0 ? d : DISTANCE_UNKNOWN;
}

static int claim_set_home(plan_state *s, plan_claim *c, int node_id) {
        int i = node_index(s, node_id);
        if (i < 0)
                return -ENXIO;
        i = (int) s->nodes[i].pool_of;
        if (!c->home[i]) {
                c->home[i] = true;
                c->n_home++;
        }
        return tune_cpuset_add(&c->out->home_nodes, (unsigned) node_id);
}

/* Home nodes from the accelerators; REFUSE when none has a known node. */
static int resolve_accelerators(plan_state *s, plan_claim *c) {
        const tune_plan_request *req = c->req;
        tune_plan *out = c->out;
        unsigned n_unknown = 0;
        char name[64];
        int r;

        for (unsigned j = 0; j < req->n_accels; j++) {
                const tune_accel *a = req->accels[j];
                int node = a->numa_node;

                accel_name(a, name);
                if (node >= 0 && tune_topology_node(s->t, node)) {
                        r = add_reason(out, "accelerator %s: NUMA node %d%s", name, node,
                                       a->numa_node_overridden ? " (set by the policy's node override)" : "");
                } else if (node >= 0) {
                        n_unknown++;
                        r = add_reason(out, "accelerator %s: firmware reports NUMA node %d, which this host does not have", name, node);
                        node = -1;
                } else if (s->n_nodes == 1) {
                        node = s->nodes[0].id;
                        r = add_reason(out, "accelerator %s: firmware reports no NUMA node; this host has only node %d, so it is that one", name, node);
                } else {
                        n_unknown++;
                        r = add_reason(out, "accelerator %s: firmware reports no NUMA node and the policy has no node override for %s",
                                       name, a->pci[0] ? a->pci : "it");
                }
                if (r < 0)
                        return r;
                if (node >= 0) {
                        r = claim_set_home(s, c, node);
                        if (r < 0)
                                return r;
                }
        }
        if (c->n_home == 0) {
                out->action = TUNE_PLAN_REFUSE;
                return add_reason(out, "not placed: none of its accelerators has a known NUMA node (declare one with "
                                  "\"node_overrides\": [{\"pci\": ..., \"node\": N}] in the policy)");
        }
        if (n_unknown > 0)
                return add_reason(out, "placed by the %u accelerator(s) with a known node; %u with an unknown node ignored",
                                  req->n_accels - n_unknown, n_unknown);
        return 0;
}

static int resolve_unattributed(plan_state *s, plan_claim *c) {
        const tune_policy_rule *rule = c->req->rule;
        tune_plan *out = c->out;
        char buf[256];
        int r;

        if (rule->unattributed == TUNE_UNATTRIBUTED_LEAVE) {
                out->action = TUNE_PLAN_LEAVE;
                return add_reason(out, "no accelerator attributed; the rule leaves such processes alone");
        }
        if (!tune_cpuset_is_empty(&rule->unattributed_nodes)) {
                TUNE_CPUSET_FOREACH(node, &rule->unattributed_nodes) {
                        if (!tune_topology_node(s->t, node)) {
                                r = add_reason(out, "unattributed_nodes names node %d, which this host does not have", node);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        r = claim_set_home(s, c, node);
                        if (r < 0)
                                return r;
                }
                if (c->n_home == 0) {
                        out->action = TUNE_PLAN_REFUSE;
                        return add_reason(out, "not placed: none of the rule's unattributed_nodes exists here");
                }
                return add_reason(out, "no accelerator attributed; placed on the rule's unattributed_nodes %s",
                                  format_set(&out->home_nodes, buf, sizeof buf));
        }
        if (!tune_cpuset_is_empty(&rule->unattributed_cpus)) {
                r = tune_cpuset_copy(&out->pool, &rule->unattributed_cpus);
                if (r < 0)
                        return r;
                tune_cpuset_and(&out->pool, tune_cpuset_is_empty(&s->t->usable) ? &s->t->online : &s->t->usable);
                if (tune_cpuset_is_empty(&out->pool)) {
                        out->action = TUNE_PLAN_REFUSE;
                        return add_reason(out, "not placed: none of the rule's unattributed_cpus %s is usable here",
                                          format_set(&rule->unattributed_cpus, buf, sizeof buf));
                }
                c->exclusive = false;
                out->shared = true;
                TUNE_CPUSET_FOREACH(cpu, &out->pool) {
                        int node = node_of_cpu(s->t, cpu);
                        if (node >= 0) {
                                r = claim_set_home(s, c, node);
                                if (r < 0)
                                        return r;
                        }
                }
                return add_reason(out, "no accelerator attributed; placed on the rule's unattributed_cpus %s "
                                  "(chosen by hand: not exclusive, other processes may share them)",
                                  format_set(&out->pool, buf, sizeof buf));
        }
        out->action = TUNE_PLAN_REFUSE;
        return add_reason(out, "not placed: no accelerator attributed, and the rule places such processes "
                          "but names neither unattributed_cpus nor unattributed_nodes");
}

/* What each claim wants from each of its home nodes: fixed wants are spread evenly over
 * the home nodes (the remainder to the lower ones), elastic ones take what is there. */
static void claim_set_demand(const plan_state *s, plan_claim *c) {
        unsigned rank = 0;

        for (unsigned i = 0; i < s->n_nodes; i++) {
                if (!c->home[i])
                        c->demand[i] = 0;
                else if (c->elastic)
                        c->demand[i] = UINT_MAX;
                else
                        c->demand[i] = c->want / c->n_home + (rank++ < c->want % c->n_home ? 1 : 0);
        }
}

/* The fix to name when a process's cpuset has no CPU near its accelerators. */
#define CPUSET_FAR_FIX "give it CPUs of its accelerators' node(s): in Kubernetes, the kubelet's " \
        "Topology Manager policy single-numa-node (or restricted) with the static CPU Manager and a " \
        "Guaranteed pod with integer CPUs; elsewhere, the container's --cpuset-cpus"

/* How many of each node's available CPUs the claim may take (its cpuset's), and, when its
 * cpuset has none on its home nodes, make the nodes of its cpuset its home for CPUs. */
static int apply_cpuset(plan_state *s, plan_claim *c) {
        const tune_plan_cpuset *cs = c->req->cpuset;
        tune_plan *out = c->out;
        unsigned near = 0, total = 0;
        char b1[256], b2[256], b3[256];
        int r;

        for (unsigned i = 0; i < s->n_nodes; i++)
                c->room[i] = s->nodes[i].cap;
        if (!cs || (tune_cpuset_is_empty(&cs->cpus) && tune_cpuset_is_empty(&cs->mems)))
                return 0;
        out->in_cpuset = true;
        if (!tune_cpuset_is_empty(&cs->mems))
                c->mems = &cs->mems;
        if (tune_cpuset_is_empty(&cs->cpus))
                return add_reason(out, "%s: memory nodes %s; its CPUs are not restricted", cs->owner ? cs->owner : "its cgroup",
                                  format_set(&cs->mems, b2, sizeof b2));
        c->allowed = &cs->cpus;
        for (unsigned i = 0; i < s->n_nodes; i++) {
                _cleanup_cpuset_ tune_cpuset in = {};
                r = tune_cpuset_copy(&in, &s->nodes[i].avail);
                if (r < 0)
                        return r;
                tune_cpuset_and(&in, c->allowed);
                c->room[i] = tune_cpuset_count(&in);
                total += c->room[i];
                if (c->home[i])
                        near += c->room[i];
        }
        r = add_reason(out, "%s: CPUs %s, memory nodes %s: the pool and the memory are planned inside them (npu-tuned never "
                       "changes a cgroup)", cs->owner ? cs->owner : "its cgroup", format_set(&cs->cpus, b1, sizeof b1),
                       tune_cpuset_is_empty(&cs->mems) ? "any" : format_set(&cs->mems, b2, sizeof b2));
        if (r < 0 || near > 0 || total == 0)
                return r;
        /* Nothing near its accelerators: serve it from the nodes its cpuset has. */
        _cleanup_cpuset_ tune_cpuset nodes = {};
        out->cpuset_far = true;
        c->n_home = 0;
        for (unsigned i = 0; i < s->n_nodes; i++) {
                c->home[i] = c->room[i] > 0;
                if (!c->home[i])
                        continue;
                c->n_home++;
                r = tune_cpuset_add(&nodes, (unsigned) s->nodes[i].id);
                if (r < 0)
                        return r;
        }
        return add_reason(out, "its cpuset has no CPU on its accelerators' node(s) %s: placed inside its cpuset, on node(s) %s, "
                          "roles still split there; expect slower host-device transfers. Fix: %s (cpuset now %s)",
                          format_set(&out->home_nodes, b1, sizeof b1), format_set(&nodes, b2, sizeof b2), CPUSET_FAR_FIX,
                          format_set(c->allowed, b3, sizeof b3));
}

static int resolve_claim(plan_state *s, plan_claim *c) {
        const tune_policy_rule *rule = c->req->rule;
        unsigned cc = rule->control.cpus, kc = rule->compute.cpus;
        int r;

        c->out->action = TUNE_PLAN_PLACE;
        c->exclusive = true;
        if (rule->name) {
                if (rule->file)
                        r = add_reason(c->out, "rule \"%s\" (%s)", rule->name, rule->file);
                else
                        r = add_reason(c->out, "rule \"%s\"", rule->name);
                if (r < 0)
                        return r;
        }
        if (c->req->claim.why[0]) {
                r = add_reason(c->out, "claim of uid %u %s: %s", (unsigned) c->req->claim.uid,
                               c->req->claim.tier == TUNE_CLAIM_UNVERIFIED ? "not verified" : "verified", c->req->claim.why);
                if (r < 0)
                        return r;
        }
        if (rule->accel_mode == TUNE_ACCEL_NONE || c->req->n_accels == 0)
                r = resolve_unattributed(s, c);
        else
                r = resolve_accelerators(s, c);
        if (r < 0)
                return r;
        if (c->out->action != TUNE_PLAN_PLACE)
                return 0;

        r = apply_cpuset(s, c);
        if (r < 0)
                return r;
        if (cc > 0 && kc > 0) {
                c->want = cc + kc;
                c->out->cpus_wanted = c->want;
        } else {
                c->elastic = true;
                c->min = cc + kc + 1;
        }
        claim_set_demand(s, c);
        for (unsigned i = 0; i < s->n_nodes; i++)
                if (c->demand[i] > c->room[i])
                        c->demand[i] = c->room[i];
        for (unsigned i = 0; i < s->n_nodes; i++) {
                c->dist[i] = DISTANCE_UNKNOWN;
                for (unsigned h = 0; h < s->n_nodes; h++)
                        if (c->home[h]) {
                                int d = distance_or_unknown(s->t, s->nodes[h].id, s->nodes[i].id);
                                if (d < c->dist[i])
                                        c->dist[i] = d;
                        }
        }
        return 0;
}

/* Whether a claim takes part in this tier of the deal (vouched claims first, then the
 * verified ones, then the unverified ones, each with what the tiers before it left). */
static bool claim_in_tier(const plan_claim *c, tune_claim_tier tier) {
        return c->exclusive && c->out->action == TUNE_PLAN_PLACE && c->req->claim.tier == tier;
}

typedef struct homed_claim {
        uid_t uid;
        unsigned k;      /* claim index: arrival order */
        unsigned first;  /* the arrival of this uid's first claim on the node */
} homed_claim;

static int cmp_homed_by_uid(const void *a, const void *b) {
        const homed_claim *x = a, *y = b;
        if (x->uid != y->uid)
                return x->uid < y->uid ? -1 : 1;
        return x->k < y->k ? -1 : x->k > y->k;
}

static int cmp_homed_by_user_arrival(const void *a, const void *b) {
        const homed_claim *x = a, *y = b;
        if (x->first != y->first)
                return x->first < y->first ? -1 : 1;
        return x->k < y->k ? -1 : x->k > y->k;
}

/* Note when the node's last CPU is given: by the deal of a tier, or lent to the claim of
 * index k (the claims after it find it full). */
static void note_fill(plan_node *node, tune_claim_tier tier, bool by_borrow, unsigned k) {
        if (node->fill.full || node->used < node->cap)
                return;
        node->fill = (tune_plan_fill) { .full = true, .tier = tier, .by_borrow = by_borrow, .from = by_borrow ? k + 1 : 0 };
}

/* Whether node i's fill is given (its claims are not planned here) and it is full by the
 * time claim k of this tier borrows. */
static bool given_full(const plan_state *s, unsigned i, tune_claim_tier tier, unsigned k) {
        const tune_plan_fill *f = s->fills ? &s->fills[i] : NULL;

        return f && f->given && f->full && (f->tier < tier || (f->tier == tier && (!f->by_borrow || f->from <= k)));
}

/* Deal each node's available CPUs to the claims of one tier homed there: round-robin over
 * uids (in the order their first claim arrived), each uid's turn going round-robin to its
 * claims in arrival order. With one uid this is plain round-robin over the claims. Each
 * round costs O(claims), so a user with thousands of claims costs time, not fairness. */
/* Claims a plan step keeps its per-claim scratch for on the stack: a plan is made for a
 * process and the few sharing its nodes, and each step's three allocations cost more
 * than the step. */
#define PLAN_SMALL_CLAIMS 16

static int deal_home_cpus(plan_state *s, tune_claim_tier tier) {
        size_t m = s->n_claims ? s->n_claims : 1;
        homed_claim homed_small[PLAN_SMALL_CLAIMS] = {};
        unsigned ustart_small[PLAN_SMALL_CLAIMS + 1] = {}, cursor_small[PLAN_SMALL_CLAIMS] = {};
        _cleanup_free_ homed_claim *homed_heap = NULL;
        _cleanup_free_ unsigned *ustart_heap = NULL, *cursor_heap = NULL;
        homed_claim *homed = homed_small;
        unsigned *ustart = ustart_small, *cursor = cursor_small;

        if (m > PLAN_SMALL_CLAIMS) {
                homed = homed_heap = tune_alloc0(m, sizeof(homed_claim));
                ustart = ustart_heap = tune_alloc0(m + 1, sizeof(unsigned));
                cursor = cursor_heap = tune_alloc0(m, sizeof(unsigned));
                if (!homed_heap || !ustart_heap || !cursor_heap)
                        return -ENOMEM;
        }
        for (unsigned i = 0; i < s->n_nodes; i++) {
                plan_node *node = &s->nodes[i];
                unsigned n = 0, n_users = 0;
                bool progress = true;

                for (unsigned k = 0; k < s->n_claims; k++) {
                        const plan_claim *c = &s->claims[k];
                        if (claim_in_tier(c, tier) && c->home[i])
                                homed[n++] = (homed_claim) { .uid = c->req->claim.uid, .k = k };
                }
                if (n == 0)
                        continue;
                /* Group by uid, then order the groups by their first arrival. */
                qsort(homed, n, sizeof *homed, cmp_homed_by_uid);
                for (unsigned h = 0, first = 0; h < n; h++) {
                        if (h == 0 || homed[h].uid != homed[h - 1].uid)
                                first = homed[h].k;
                        homed[h].first = first;
                }
                qsort(homed, n, sizeof *homed, cmp_homed_by_user_arrival);
                for (unsigned h = 0; h < n; h++)
                        if (h == 0 || homed[h].uid != homed[h - 1].uid) {
                                cursor[n_users] = 0;
                                ustart[n_users++] = h;
                        }
                ustart[n_users] = n;

                while (progress && node->used < node->cap) {
                        progress = false;
                        for (unsigned u = 0; u < n_users && node->used < node->cap; u++) {
                                unsigned count = ustart[u + 1] - ustart[u];
                                /* This user's next claim (after the last one served) that wants more. */
                                for (unsigned step = 0; step < count; step++) {
                                        unsigned h = (cursor[u] + step) % count;
                                        plan_claim *c = &s->claims[homed[ustart[u] + h].k];

                                        if (c->grant[i] >= c->demand[i])
                                                continue;
                                        c->grant[i]++;
                                        c->total++;
                                        node->used++;
                                        cursor[u] = (h + 1) % count;
                                        progress = true;
                                        break;
                                }
                        }
                }
                note_fill(node, tier, false, 0);
        }
        return 0;
}

/* A claim's candidate nodes in order (candidates_by_distance()): on the stack up to
 * PLAN_SMALL_NODES nodes, the hosts there are. */
#define PLAN_SMALL_NODES 64
typedef struct node_order {
        unsigned small[PLAN_SMALL_NODES];
        unsigned *heap;
} node_order;

static void node_order_done(node_order *o) {
        free(o->heap);
}

/* Order candidate nodes for a short claim: home nodes first, then by distance, then id.
 * Returns the order, held by o, or NULL when out of memory. */
static unsigned *candidates_by_distance(const plan_state *s, const plan_claim *c, node_order *o) {
        unsigned *order = o->small;

        o->heap = NULL;
        if (s->n_nodes > PLAN_SMALL_NODES) {
                order = o->heap = tune_alloc0(s->n_nodes, sizeof(unsigned));
                if (!order)
                        return NULL;
        }
        for (unsigned i = 0; i < s->n_nodes; i++)
                order[i] = i;
        for (unsigned i = 1; i < s->n_nodes; i++) {
                unsigned v = order[i], j = i;
                while (j > 0) {
                        unsigned u = order[j - 1];
                        bool before = c->home[v] != c->home[u] ? c->home[v] :
                                      c->dist[v] != c->dist[u] ? c->dist[v] < c->dist[u] :
                                      s->nodes[v].id < s->nodes[u].id;
                        if (!before)
                                break;
                        order[j] = u;
                        j--;
                }
                order[j] = v;
        }
        return order;
}

static int borrow_cpus(plan_state *s, tune_claim_tier tier) {
        for (unsigned k = 0; k < s->n_claims; k++) {
                plan_claim *c = &s->claims[k];
                _cleanup_(node_order_done) node_order held = {};
                unsigned *order;
                unsigned target;

                if (!claim_in_tier(c, tier))
                        continue;
                target = c->elastic ? c->min : c->want;
                if (c->total >= target)
                        continue;
                order = candidates_by_distance(s, c, &held);
                if (!order)
                        return -ENOMEM;
                for (unsigned o = 0; o < s->n_nodes && c->total < target; o++) {
                        unsigned i = order[o];
                        plan_node *node = &s->nodes[i];
                        unsigned spare = node->cap - node->used, take;
                        int r;

                        if (c->room[i] == c->grant[i])
                                continue;
                        /* What it takes here depends on what is left here by now. */
                        r = tune_cpuset_add(&c->out->asked_nodes, (unsigned) node->id);
                        if (r < 0)
                                return r;
                        if (given_full(s, i, tier, k))
                                continue;
                        if (c->room[i] - c->grant[i] < spare)
                                spare = c->room[i] - c->grant[i];
                        if (spare == 0)
                                continue;
                        take = target - c->total < spare ? target - c->total : spare;
                        c->grant[i] += take;
                        c->total += take;
                        node->used += take;
                        note_fill(node, tier, true, k);
                        if (c->home[i])
                                continue;
                        r = tune_cpuset_add(&c->out->borrowed_nodes, (unsigned) node->id);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int take_cpu(plan_state *s, plan_claim *c, unsigned i, int cpu) {
        int r = tune_cpuset_add(&s->nodes[i].taken, (unsigned) cpu);
        if (r < 0)
                return r;
        c->chosen[i]++;
        return tune_cpuset_add(&c->out->pool, (unsigned) cpu);
}

/* Pick concrete CPUs: first every claim keeps what it had (stability), then home claims
 * and then borrowers fill up from the lowest free CPU (contiguous ranges). */
static int choose_cpus(plan_state *s) {
        for (unsigned i = 0; i < s->n_nodes; i++) {
                plan_node *node = &s->nodes[i];

                for (unsigned k = 0; k < s->n_claims; k++) {
                        plan_claim *c = &s->claims[k];
                        const tune_plan *prev = c->req->previous;

                        /* A shared pool (its whole cpuset) was not dealt to it: keeping
                         * those CPUs first would take them from the claims they were dealt
                         * to, and plan differently each time it is planned again. */
                        if (c->grant[i] == 0 || !prev || prev->shared)
                                continue;
                        TUNE_CPUSET_FOREACH(cpu, &prev->pool) {
                                if (c->chosen[i] >= c->grant[i])
                                        break;
                                if (!tune_cpuset_has(&node->avail, (unsigned) cpu) ||
                                    tune_cpuset_has(&node->taken, (unsigned) cpu) ||
                                    (c->allowed && !tune_cpuset_has(c->allowed, (unsigned) cpu)))
                                        continue;
                                int r = take_cpu(s, c, i, cpu);
                                if (r < 0)
                                        return r;
                        }
                }
                /* Home claims before borrowers; in each, claims held to a cpuset first:
                 * the others can take any CPU. */
                for (int pass = 0; pass < 4; pass++)
                        for (unsigned k = 0; k < s->n_claims; k++) {
                                plan_claim *c = &s->claims[k];

                                if (c->grant[i] == 0 || c->home[i] != (pass < 2) || !c->allowed != (pass % 2 == 1))
                                        continue;
                                TUNE_CPUSET_FOREACH(cpu, &node->avail) {
                                        if (c->chosen[i] >= c->grant[i])
                                                break;
                                        if (tune_cpuset_has(&node->taken, (unsigned) cpu) ||
                                            (c->allowed && !tune_cpuset_has(c->allowed, (unsigned) cpu)))
                                                continue;
                                        int r = take_cpu(s, c, i, cpu);
                                        if (r < 0)
                                                return r;
                                }
                        }
        }
        return 0;
}

/* The pool's CPUs in preference order: home nodes (by id), then borrowed nodes (nearest
 * first). *ret_n_home: how many of them are on home nodes. */
static int ordered_pool(const plan_state *s, const plan_claim *c, int **ret, unsigned *ret_n, unsigned *ret_n_home) {
        _cleanup_(node_order_done) node_order held = {};
        unsigned *order;
        _cleanup_free_ int *list = NULL;
        _cleanup_cpuset_ tune_cpuset seen = {}; /* overlapping firmware lists a CPU twice */
        unsigned n = 0, n_home = 0, total = tune_cpuset_count(&c->out->pool);

        list = tune_alloc0(total ? total : 1, sizeof(int));
        order = candidates_by_distance(s, c, &held);
        if (!list || !order)
                return -ENOMEM;
        for (unsigned o = 0; o < s->n_nodes; o++) {
                unsigned i = order[o];
                TUNE_CPUSET_FOREACH(cpu, &s->t->nodes[i].cpus) {
                        if (!tune_cpuset_has(&c->out->pool, (unsigned) cpu) || n >= total ||
                            tune_cpuset_has(&seen, (unsigned) cpu))
                                continue;
                        if (tune_cpuset_add(&seen, (unsigned) cpu) < 0)
                                return -ENOMEM;
                        list[n++] = cpu;
                        if (c->home[i])
                                n_home++;
                }
        }
        /* CPUs in no node (only in hand-made topologies): last. */
        TUNE_CPUSET_FOREACH(cpu, &c->out->pool)
                if (node_of_cpu(s->t, cpu) < 0 && n < total)
                        list[n++] = cpu;
        *ret = TAKE_PTR(list);
        *ret_n = n;
        *ret_n_home = n_home;
        return 0;
}

static int add_range(tune_cpuset *s, const int *list, unsigned from, unsigned to) {
        for (unsigned j = from; j < to; j++) {
                int r = tune_cpuset_add(s, (unsigned) list[j]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* On a re-plan, roles keep the CPUs they had where the pool still has them, so threads do
 * not move for nothing; new CPUs fill up in preference order. Returns 1 when it applied,
 * 0 when nothing of the previous split survives (then split afresh). */
static int split_roles_sticky(plan_claim *c, const int *list, unsigned n, unsigned cc, unsigned kc) {
        const tune_plan *prev = c->req->previous;
        tune_plan *out = c->out;
        _cleanup_cpuset_ tune_cpuset used = {};
        const tune_role roles[2] = { TUNE_ROLE_CONTROL, TUNE_ROLE_COMPUTE };
        const unsigned want[2] = { cc, kc };
        unsigned got[2] = {};
        int r;

        if (!tune_cpuset_overlaps(&prev->role_cpus[TUNE_ROLE_CONTROL], &out->pool) &&
            !tune_cpuset_overlaps(&prev->role_cpus[TUNE_ROLE_COMPUTE], &out->pool))
                return 0;
        /* Previous roles that were one shared set (pool too small to split) start afresh. */
        if (tune_cpuset_overlaps(&prev->role_cpus[TUNE_ROLE_CONTROL], &prev->role_cpus[TUNE_ROLE_COMPUTE]))
                return 0;
        for (unsigned k = 0; k < 2; k++)
                TUNE_CPUSET_FOREACH(cpu, &prev->role_cpus[roles[k]]) {
                        if (got[k] >= want[k])
                                break;
                        if (!tune_cpuset_has(&out->pool, (unsigned) cpu) || tune_cpuset_has(&used, (unsigned) cpu))
                                continue;
                        r = tune_cpuset_add(&out->role_cpus[roles[k]], (unsigned) cpu);
                        if (r >= 0)
                                r = tune_cpuset_add(&used, (unsigned) cpu);
                        if (r < 0)
                                return r;
                        got[k]++;
                }
        for (unsigned k = 0; k < 2; k++)
                for (unsigned j = 0; j < n && got[k] < want[k]; j++) {
                        if (tune_cpuset_has(&used, (unsigned) list[j]))
                                continue;
                        r = tune_cpuset_add(&out->role_cpus[roles[k]], (unsigned) list[j]);
                        if (r >= 0)
                                r = tune_cpuset_add(&used, (unsigned) list[j]);
                        if (r < 0)
                                return r;
                        got[k]++;
                }
        return 1;
}

static int split_roles(const plan_state *s, plan_claim *c) {
        const tune_policy_rule *rule = c->req->rule;
        tune_plan *out = c->out;
        _cleanup_free_ int *list = NULL;
        unsigned n, h, cc = rule->control.cpus, kc = rule->compute.cpus, cc_home, kc_home;
        char b1[256], b2[256];
        int r;

        r = tune_cpuset_copy(&out->role_cpus[TUNE_ROLE_OTHER], &out->pool);
        if (r < 0)
                return r;
        r = ordered_pool(s, c, &list, &n, &h);
        if (r < 0)
                return r;
        if (!tune_rule_has_role_selectors(rule) || (cc == 0 && kc == 0) || n < 2) {
                r = tune_cpuset_copy(&out->role_cpus[TUNE_ROLE_CONTROL], &out->pool);
                if (r >= 0)
                        r = tune_cpuset_copy(&out->role_cpus[TUNE_ROLE_COMPUTE], &out->pool);
                if (r < 0)
                        return r;
                return add_reason(out, "%s: every thread gets the whole pool %s",
                                  !tune_rule_has_role_selectors(rule) ? "the rule names no thread roles" :
                                  n < 2 ? "one CPU cannot be split by role" : "the rule sizes neither role",
                                  format_set(&out->pool, b1, sizeof b1));
        }
        if (cc > 0 && kc > 0) {
                if (n < cc + kc) {
                        unsigned want = cc + kc;
                        cc = (n * cc + want / 2) / want;
                        cc = cc < 1 ? 1 : cc > n - 1 ? n - 1 : cc;
                        kc = n - cc;
                        r = add_reason(out, "the pool has %u CPUs, fewer than the %u the roles want: control gets %u, compute %u",
                                       n, want, cc, kc);
                        if (r < 0)
                                return r;
                }
        } else if (cc > 0) {
                cc = cc < n - 1 ? cc : n - 1;
                kc = n - cc;
        } else {
                kc = kc < n - 1 ? kc : n - 1;
                cc = n - kc;
        }
        /* Keeping roles where they were must not put compute on borrowed CPUs while home
         * CPUs go to control (a cpuset that shrank to part of the node): split afresh. */
        if (c->req->previous && c->req->previous->action == TUNE_PLAN_PLACE && h == n) {
                r = split_roles_sticky(c, list, n, cc, kc);
                if (r != 0)
                        return r < 0 ? r : add_reason(out, "control threads: %s; compute threads: %s (kept where they were); "
                                                      "threads of neither role: the whole pool",
                                                      format_set(&out->role_cpus[TUNE_ROLE_CONTROL], b1, sizeof b1),
                                                      format_set(&out->role_cpus[TUNE_ROLE_COMPUTE], b2, sizeof b2));
        }
        /* Compute gets the home CPUs first; on one node this is just "control first". */
        kc_home = kc < h ? kc : h;
        cc_home = cc < h - kc_home ? cc : h - kc_home;
        r = add_range(&out->role_cpus[TUNE_ROLE_CONTROL], list, 0, cc_home);
        if (r >= 0)
                r = add_range(&out->role_cpus[TUNE_ROLE_CONTROL], list, h, h + (cc - cc_home));
        if (r >= 0)
                r = add_range(&out->role_cpus[TUNE_ROLE_COMPUTE], list, cc_home, cc_home + kc_home);
        if (r >= 0)
                r = add_range(&out->role_cpus[TUNE_ROLE_COMPUTE], list, h + (cc - cc_home), h + (cc - cc_home) + (kc - kc_home));
        if (r < 0)
                return r;
        return add_reason(out, "control threads: %s; compute threads: %s; threads of neither role: the whole pool",
                          format_set(&out->role_cpus[TUNE_ROLE_CONTROL], b1, sizeof b1),
                          format_set(&out->role_cpus[TUNE_ROLE_COMPUTE], b2, sizeof b2));
}

static int explain_pool(const plan_state *s, const plan_claim *c) {
        tune_plan *out = c->out;
        char buf[256];
        int r;

        for (unsigned i = 0; i < s->n_nodes; i++) {
                const plan_node *node = &s->nodes[i];
                if (!c->home[i])
                        continue;
                r = add_reason(out, "node %d: %u usable CPU(s), %u after %u housekeeping CPU(s), shared by %u managed process(es)",
                               node->id, node->usable, node->cap, node->usable - node->cap, node->n_homed);
                if (r < 0)
                        return r;
        }
        TUNE_CPUSET_FOREACH(id, &out->home_nodes) {
                int i = node_index(s, id);
                if (i < 0 || s->nodes[i].pool_of == (unsigned) i)
                        continue;
                r = add_reason(out, "the firmware lists node %d's CPUs %s in node %d too (nodes_overlap): one pool per distinct "
                               "CPU set, so its CPUs come from node %d's pool", id,
                               format_set(&s->t->nodes[i].cpus, buf, sizeof buf), s->nodes[s->nodes[i].pool_of].id,
                               s->nodes[s->nodes[i].pool_of].id);
                if (r < 0)
                        return r;
        }
        if (c->elastic)
                r = add_reason(out, "wants a fair share of its node(s) (a role takes \"the rest\"; at least %u CPUs); got %u: %s",
                               c->min, c->total, format_set(&out->pool, buf, sizeof buf));
        else
                r = add_reason(out, "wants %u CPUs (control %u + compute %u); got %u: %s", c->want,
                               c->req->rule->control.cpus, c->req->rule->compute.cpus, c->total,
                               format_set(&out->pool, buf, sizeof buf));
        if (r < 0)
                return r;
        if (!tune_cpuset_is_empty(&out->borrowed_nodes)) {
                _cleanup_(node_order_done) node_order held = {};
                unsigned *order = candidates_by_distance(s, c, &held);
                unsigned home_total = 0;

                if (!order)
                        return -ENOMEM;
                for (unsigned i = 0; i < s->n_nodes; i++)
                        if (c->home[i])
                                home_total += c->grant[i];
                for (unsigned o = 0; o < s->n_nodes; o++) {
                        unsigned i = order[o];
                        if (c->home[i] || c->grant[i] == 0)
                                continue;
                        r = add_reason(out, "its home node(s) had %u free CPU(s) of %u wanted: borrowed %u from node %d "
                                       "(distance %d), the nearest node with spare CPUs",
                                       home_total, c->elastic ? c->min : c->want, c->grant[i], s->nodes[i].id, c->dist[i]);
                        if (r < 0)
                                return r;
                        home_total += c->grant[i];
                }
        }
        if (!c->elastic && c->total < c->want)
                return add_reason(out, "short of %u CPU(s): no node had spare CPUs left", c->want - c->total);
        return 0;
}

/* May the claim's memory go to node n: the daemon's mems_usable and its cpuset's mems. */
static bool memory_allowed(const plan_state *s, const plan_claim *c, int node) {
        if (!tune_cpuset_is_empty(&s->t->mems_usable) && !tune_cpuset_has(&s->t->mems_usable, (unsigned) node))
                return false;
        return !c->mems || tune_cpuset_has(c->mems, (unsigned) node);
}

/* Memory for one home node: that node if it has min_free, else the nearest that has. */
static int decide_memory_for(const plan_state *s, plan_claim *c, unsigned h, uint64_t min_free) {
        const tune_node *home = &s->t->nodes[h], *best = NULL;
        tune_plan *out = c->out;
        _cleanup_free_ char *why = NULL, *passed = NULL;
        int best_d = 0, r;
        char b1[32], b2[32];
        bool home_allowed = memory_allowed(s, c, home->id);

        if (home_allowed && home->mem_total_kib > 0 && home->mem_free_kib >= min_free) {
                r = tune_cpuset_add(&out->mem_nodes, (unsigned) home->id);
                if (r < 0)
                        return r;
                if (min_free == 0)
                        return add_reason(out, "memory: node %d (%s free; the rule sets no minimum)",
                                          home->id, format_gib(home->mem_free_kib, b1));
                return add_reason(out, "memory: node %d has %s free >= %s minimum: memory stays on node %d",
                                  home->id, format_gib(home->mem_free_kib, b1), format_gib(min_free, b2), home->id);
        }
        for (unsigned i = 0; i < s->n_nodes; i++) {
                const tune_node *n = &s->t->nodes[i];
                int d = distance_or_unknown(s->t, home->id, n->id);

                /* An accelerator's own memory (GPU memory as a CPU-less node) never takes a
                 * process's host memory. */
                if (i == h || n->mem_total_kib == 0 || n->mem_free_kib < min_free || n->accelerator_memory ||
                    !memory_allowed(s, c, n->id))
                        continue;
                if (!best || d < best_d || (d == best_d && n->mem_free_kib > best->mem_free_kib)) {
                        best = n;
                        best_d = d;
                }
        }
        if (!home_allowed)
                r = asprintf(&why, "memory: node %d is not one it may use (%s)", home->id,
                             c->mems && !tune_cpuset_has(c->mems, (unsigned) home->id) ? "not in its cpuset's mems" :
                                                                                       "not in the daemon's mems_usable");
        else if (home->mem_total_kib == 0)
                r = asprintf(&why, "memory: node %d has no memory of its own", home->id);
        else
                r = asprintf(&why, "memory: node %d has %s free < %s minimum", home->id,
                             format_gib(home->mem_free_kib, b1), format_gib(min_free, b2));
        if (r < 0)
                return -ENOMEM;
        if (!best)
                return add_reason(out, "%s; no node has %s free: memory left where it is", why, format_gib(min_free, b2));
        r = tune_cpuset_add(&out->mem_nodes, (unsigned) best->id);
        if (r < 0)
                return r;
        if (best_d >= DISTANCE_UNKNOWN)
                return add_reason(out, "%s; no distance table: node %d, which has room (%s free)", why, best->id,
                                  format_gib(best->mem_free_kib, b1));

        /* Name the nearer nodes that were passed over, nearest first, so the choice can be
         * checked against numactl -H. */
        for (int d = 1; d < best_d; d++)
                for (unsigned i = 0; i < s->n_nodes; i++) {
                        const tune_node *n = &s->t->nodes[i];
                        char *more;

                        if (i == h || distance_or_unknown(s->t, home->id, n->id) != d)
                                continue;
                        r = asprintf(&more, "%s%snode %d (distance %d, %s)", passed ? passed : "", passed ? ", " : "", n->id, d,
                                     !memory_allowed(s, c, n->id) ? "not allowed" :
                                     n->mem_total_kib == 0 ? "no memory" : format_gib(n->mem_free_kib, b1));
                        if (r < 0)
                                return -ENOMEM;
                        free(passed);
                        passed = more;
                }
        return add_reason(out, "%s; nearest node with room by distance: node %d (distance %d, %s free)%s%s", why,
                          best->id, best_d, format_gib(best->mem_free_kib, b1),
                          passed ? "; nearer nodes without room: " : "", passed ? passed : "");
}

static int decide_memory(const plan_state *s, plan_claim *c) {
        const tune_policy_rule *rule = c->req->rule;
        const tune_plan *prev = c->req->previous;
        tune_plan *out = c->out;
        char buf[256];
        int r;

        if (prev && prev->memory_decided) {
                out->memory_decided = true;
                out->memory_shared = prev->memory_shared;
                r = tune_cpuset_copy(&out->mem_nodes, &prev->mem_nodes);
                if (r < 0)
                        return r;
                if (tune_cpuset_is_empty(&out->mem_nodes))
                        return add_reason(out, "memory: left where it is (decided when first placed)");
                return add_reason(out, "memory: node(s) %s (decided when first placed)",
                                  format_set(&out->mem_nodes, buf, sizeof buf));
        }
        out->memory_decided = true;
        if (!rule->memory_migrate)
                return add_reason(out, "memory: left where it is (the rule does not move memory)");
        /* Pages it shares with others (a model file's page cache, another process's shared
         * memory) move with it only when someone other than the process vouches for its
         * claim: a look-alike that can open the devices must not drag them (docs/trust.md). */
        out->memory_shared = rule->memory_shared && c->req->claim.tier == TUNE_CLAIM_VOUCHED;
        if (rule->memory_shared && !out->memory_shared) {
                r = add_reason(out, "memory: its own pages only, not those it shares (memory.shared is for claims of "
                                    "root, or of a user or cgroup the rule names)");
                if (r < 0)
                        return r;
        }
        /* The accelerators' nodes (not the pools they share under overlapping firmware,
         * nor the cpuset's nodes a far cpuset gave it CPUs on). */
        TUNE_CPUSET_FOREACH(id, &out->home_nodes) {
                int h = node_index(s, id);
                if (h < 0)
                        continue;
                r = decide_memory_for(s, c, (unsigned) h, rule->memory_min_free_kib);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int plan_state_init(plan_state *s, const tune_topology *t, const tune_plan_params *params,
                           const tune_plan_request *reqs, unsigned n, tune_plan *ret) {
        int r;

        s->t = t;
        s->params = params;
        s->n_nodes = t->n_nodes;
        s->nodes = tune_alloc0(t->n_nodes ? t->n_nodes : 1, sizeof(plan_node));
        s->claims = tune_alloc0(n ? n : 1, sizeof(plan_claim));
        if (!s->nodes || !s->claims)
                return -ENOMEM;
        s->n_claims = n;
        for (unsigned i = 0; i < t->n_nodes; i++) {
                _cleanup_cpuset_ tune_cpuset usable = {};
                plan_node *node = &s->nodes[i];

                node->id = t->nodes[i].id;
                r = tune_plan_available_cpus(t, params, node->id, &node->avail);
                if (r < 0)
                        return r;
                r = tune_plan_available_cpus(t, NULL, node->id, &usable);
                if (r < 0)
                        return r;
                node->usable = tune_cpuset_count(&usable);
                node->pool_of = i;
                /* Overlapping firmware: deal every CPU once. A node with the CPUs of a
                 * lower one joins its pool; a partial overlap stays with the lower node. */
                for (unsigned j = 0; t->nodes_overlap && j < i; j++) {
                        if (tune_cpuset_is_empty(&t->nodes[i].cpus) || !tune_cpuset_overlaps(&t->nodes[i].cpus, &t->nodes[j].cpus))
                                continue;
                        if (tune_cpuset_equal(&t->nodes[i].cpus, &t->nodes[j].cpus) && s->nodes[j].pool_of == j) {
                                node->pool_of = j;
                                tune_cpuset_clear(&node->avail);
                                break;
                        }
                        tune_cpuset_andnot(&node->avail, &t->nodes[j].cpus);
                }
                node->cap = tune_cpuset_count(&node->avail);
                if (node->cap == 0)
                        node->fill = (tune_plan_fill) { .full = true };
        }
        /* Per claim: demand, grant, chosen, room (unsigned) and dist (int), then home (bool)
         * after every claim's numbers: one allocation for a plan, not six per claim. */
        size_t m = s->n_nodes ? s->n_nodes : 1;
        if (n > 0 && m > SIZE_MAX / n / (5 * sizeof(unsigned) + sizeof(bool)))
                return -ENOMEM;
        s->claim_arrays = tune_alloc0(n ? n : 1, m * (5 * sizeof(unsigned) + sizeof(bool)));
        if (!s->claim_arrays)
                return -ENOMEM;
        unsigned *numbers = s->claim_arrays;
        bool *homes = (bool *) (numbers + (size_t) n * 5 * m);
        for (unsigned k = 0; k < n; k++) {
                plan_claim *c = &s->claims[k];
                unsigned *mine = numbers + (size_t) k * 5 * m;
                c->req = &reqs[k];
                c->out = &ret[k];
                c->out->no_reasons = params && params->no_reasons;
                c->demand = mine;
                c->grant = mine + m;
                c->chosen = mine + 2 * m;
                c->room = mine + 3 * m;
                c->dist = (int *) (mine + 4 * m);
                c->home = homes + (size_t) k * m;
        }
        return 0;
}

/* A claim held to a cpuset that has nothing left to take exclusively: the pool is the
 * whole cpuset (what the process may use anyway), shared, split by role. */
static int place_in_whole_cpuset(plan_state *s, plan_claim *c) {
        tune_plan *out = c->out;
        char buf[256];
        int r;

        r = tune_cpuset_copy(&out->pool, c->allowed);
        if (r < 0)
                return r;
        tune_cpuset_and(&out->pool, tune_cpuset_is_empty(&s->t->usable) ? &s->t->online : &s->t->usable);
        if (tune_cpuset_is_empty(&out->pool)) {
                out->action = TUNE_PLAN_REFUSE;
                return add_reason(out, "not placed: its cpuset %s has no CPU npu-tuned may use",
                                  format_set(c->allowed, buf, sizeof buf));
        }
        c->exclusive = false;
        out->shared = true;
        return add_reason(out, "every available CPU of its cpuset is given to other managed processes (or is a housekeeping "
                          "CPU): its pool is its whole cpuset %s, shared", format_set(&out->pool, buf, sizeof buf));
}

static int plan_all(plan_state *s) {
        int r;

        for (unsigned k = 0; k < s->n_claims; k++) {
                r = resolve_claim(s, &s->claims[k]);
                if (r < 0)
                        return r;
                /* Only exclusive claims take part in the deals below (claim_in_tier(),
                 * n_homed): the others are planned from their own request alone. */
                s->claims[k].out->independent = !s->claims[k].exclusive || s->claims[k].out->action != TUNE_PLAN_PLACE;
                if (s->claims[k].exclusive && s->claims[k].out->action == TUNE_PLAN_PLACE)
                        for (unsigned i = 0; i < s->n_nodes; i++)
                                if (s->claims[k].home[i])
                                        s->nodes[i].n_homed++;
        }
        /* Vouched claims first, home and borrowed; then verified ones; unverified ones get
         * what is left. */
        for (tune_claim_tier tier = 0; tier < _TUNE_CLAIM_TIER_MAX; tier++) {
                r = deal_home_cpus(s, tier);
                if (r < 0)
                        return r;
                r = borrow_cpus(s, tier);
                if (r < 0)
                        return r;
        }
        r = choose_cpus(s);
        if (r < 0)
                return r;
        for (unsigned k = 0; k < s->n_claims; k++) {
                plan_claim *c = &s->claims[k];

                if (c->out->action != TUNE_PLAN_PLACE)
                        continue;
                if (c->exclusive) {
                        /* Overlapping cpusets of two claims can leave a grant unfilled. */
                        c->total = tune_cpuset_count(&c->out->pool);
                        if (c->total == 0 && c->req->claim.tier == TUNE_CLAIM_UNVERIFIED) {
                                c->out->action = TUNE_PLAN_REFUSE;
                                r = add_reason(c->out, "not placed: its claim is not verified, and every CPU it could "
                                               "have is wanted by verified claims (docs/trust.md)");
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        /* Held to a cpuset with nothing left to take exclusively (trust first:
                         * an unverified claim does not get a shared pool either). */
                        if (c->total == 0 && c->allowed) {
                                r = place_in_whole_cpuset(s, c);
                                if (r < 0)
                                        return r;
                                if (c->out->action == TUNE_PLAN_PLACE) {
                                        r = split_roles(s, c);
                                        if (r >= 0)
                                                r = decide_memory(s, c);
                                        if (r < 0)
                                                return r;
                                }
                                continue;
                        }
                        if (c->total == 0) {
                                c->out->action = TUNE_PLAN_REFUSE;
                                r = add_reason(c->out, "not placed: no node has a free CPU left for it "
                                               "(every available CPU is given to other managed processes)");
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        r = explain_pool(s, c);
                        if (r < 0)
                                return r;
                }
                r = split_roles(s, c);
                if (r < 0)
                        return r;
                r = decide_memory(s, c);
                if (r < 0)
                        return r;
        }
        return 0;
}

bool tune_plan_request_may_be_independent(const tune_plan_request *req) {
        const tune_policy_rule *rule = req->rule;

        /* As resolve_claim() and resolve_unattributed() decide: only a process without
         * accelerators whose rule leaves it, or places it on CPUs chosen by hand (or on
         * nothing), is not dealt node CPUs. */
        if (rule->accel_mode != TUNE_ACCEL_NONE && req->n_accels > 0)
                return false;
        return rule->unattributed == TUNE_UNATTRIBUTED_LEAVE || tune_cpuset_is_empty(&rule->unattributed_nodes);
}

int tune_plan_compute(const tune_topology *t, const tune_plan_params *params,
                      const tune_plan_request *reqs, unsigned n, tune_plan *ret) {
        return tune_plan_compute_fills(t, params, reqs, n, NULL, ret);
}

int tune_plan_compute_fills(const tune_topology *t, const tune_plan_params *params, const tune_plan_request *reqs,
                            unsigned n, tune_plan_fill *fills, tune_plan *ret) {
        plan_state s = { .fills = fills };
        int r;

        if (!t || (n > 0 && (!reqs || !ret)))
                return -EINVAL;
        for (unsigned k = 0; k < n; k++)
                if (!reqs[k].rule || (reqs[k].n_accels > 0 && !reqs[k].accels))
                        return -EINVAL;
        r = plan_state_init(&s, t, params, reqs, n, ret);
        if (r >= 0)
                r = plan_all(&s);
        for (unsigned i = 0; r >= 0 && fills && i < s.n_nodes; i++)
                if (!fills[i].given)
                        fills[i] = s.nodes[i].fill;
        plan_state_done(&s);
        if (r < 0)
                for (unsigned k = 0; k < n; k++)
                        tune_plan_done(&ret[k]);
        return r;
}

/* ---- the cpuset of a request ---- */

void tune_plan_cpuset_done(tune_plan_cpuset *c) {
        if (!c)
                return;
        tune_cpuset_done(&c->cpus);
        tune_cpuset_done(&c->mems);
        free(c->owner);
        c->owner = NULL;
}

int tune_plan_cpuset_copy(tune_plan_cpuset *dst, const tune_plan_cpuset *src) {
        tune_plan_cpuset c = {};

        if (tune_cpuset_copy(&c.cpus, &src->cpus) < 0 || tune_cpuset_copy(&c.mems, &src->mems) < 0 ||
            (src->owner && !(c.owner = strdup(src->owner)))) {
                tune_plan_cpuset_done(&c);
                return -ENOMEM;
        }
        tune_plan_cpuset_done(dst);
        *dst = c;
        return 0;
}

bool tune_plan_cpuset_equal(const tune_plan_cpuset *a, const tune_plan_cpuset *b) {
        if (!a || !b)
                return a == b;
        return tune_cpuset_equal(&a->cpus, &b->cpus) && tune_cpuset_equal(&a->mems, &b->mems) &&
               streq(a->owner ? a->owner : "", b->owner ? b->owner : "");
}
