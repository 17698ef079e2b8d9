/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The plan: which CPUs and which memory node(s) a managed process gets, and why.
 *
 * tune_plan_compute() is a pure function of the topology, the plan parameters, and the list of
 * managed processes (each with its rule, its accelerators and its previous plan). It
 * plans all of them together, because fairness is a property of the set: when a second
 * process arrives on a node the first one's elastic share shrinks, and when one exits the
 * others may grow. Previous plans keep CPUs where they can, so re-planning moves as
 * few threads as possible.
 *
 * tune_placer is the stateful wrapper the daemon holds: it owns the list of managed
 * processes (in arrival order), calls tune_plan_compute() on every change and tells the caller
 * which other processes' CPU sets changed, so it re-applies just those.
 *
 * How CPUs are handed out (per NUMA node):
 *   available = the node's usable CPUs minus its first `housekeeping_cpus_per_node`;
 *   a process "homes" on the nodes of its accelerators; it wants control.cpus +
 *   compute.cpus CPUs when both are set (spread evenly over its home nodes), or, when one
 *   of them is 0 ("the rest"), an elastic fair share of its home nodes;
 *   on each node the available CPUs are dealt round-robin among the USERS (uids) whose
 *   processes are homed there, and each user's turn goes round-robin, in arrival order,
 *   to that user's processes, until each has what it wants or none are left (max-min
 *   fair between users, then between one user's processes: a user who starts many
 *   processes does not shrink another user's share);
 *   a process still short takes spare CPUs from the nearest node(s) by distance (after
 *   every node's own processes are served), and the plan says so;
 *   all of that happens tier by tier (tune_claim_tier, docs/trust.md): first for the
 *   claims someone other than the process vouches for (root's, a named user or cgroup),
 *   then for claims verified by the process's own access, then for unverified claims,
 *   each with what the tiers before it left: a claim never takes a CPU that a claim of a
 *   higher tier wants;
 *   a process that gets no CPU at all is refused, with the reason.
 * Pools never overlap, except explicit "unattributed_cpus" pools, which the policy author
 * chose by hand and which are not exclusive.
 *
 * Inside a pool, control takes the lowest CPUs and compute the next ones, so on one node
 * both roles are contiguous ranges (the reference deployment's 96-107 / 108-119). When the pool had to
 * borrow from another node, compute gets the home CPUs first (it feeds the accelerator)
 * and control takes the borrowed ones.
 *
 * Memory: for each home node, that node if its MemFree is at least the rule's
 * memory_min_free_kib, else the nearest node by distance that has it (ties: more free
 * memory, then the lower id). The decision is made once, when the process is first
 * planned, and kept on re-plans (pages should not chase MemFree around). Only nodes in the
 * topology's mems_usable and the process's cpuset mems are candidates.
 *
 * A process in a cgroup with a cpuset (a container, a Kubernetes pod) is planned inside
 * it: its pool only takes CPUs of its cpuset, its memory only nodes of its mems. When its
 * cpuset has no CPU on its accelerators' nodes, the nodes of its cpuset's CPUs are its
 * home for CPUs (memory still prefers the accelerators' nodes), and the reasons say so
 * with the fix. When nothing is left for it to take exclusively, its pool is its whole
 * cpuset (shared), still split by role.
 *
 * Firmware that lists a CPU in several nodes (tune_topology.nodes_overlap): every CPU is
 * dealt once. Nodes with the same CPUs form one pool (the lowest node's); a CPU of a
 * partial overlap belongs to the lowest node that lists it. */

#include <stdbool.h>
#include <stdint.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/affinity.h"
#include "npu-tuned/cpuset.h"
#include "npu-tuned/policy.h"
#include "npu-tuned/thread-role.h"
#include "npu-tuned/topology.h"

/* A plan holds at most this many reasons; later ones are dropped (a plan that needs
 * more explanation than this is explaining the same thing over and over). */
#define TUNE_PLAN_REASONS_MAX 64

typedef struct tune_plan_params {
        unsigned housekeeping_cpus_per_node; /* policy->host.irq_housekeeping_cpus_per_node */
        bool no_reasons; /* plan without the reasons (the same decisions): for a caller that
                          * shows them only on demand (tune_placer_explain()); formatting
                          * them is about 40% of a plan's instructions */
        bool replan_all; /* the placer re-plans every process on each change that is not
                          * planned alone (an independent plan), not only those whose CPUs it
                          * can move: the reference the incremental re-plan is tested against */
} tune_plan_params;

typedef enum tune_plan_action {
        TUNE_PLAN_PLACE,  /* pin threads by role; move memory if mem_nodes is set */
        TUNE_PLAN_LEAVE,  /* the policy says leave this process alone */
        TUNE_PLAN_REFUSE, /* it should be placed but cannot be: reasons say why */
} tune_plan_action;

const char *tune_plan_action_to_string(tune_plan_action a) _pure_;

typedef struct tune_plan {
        tune_plan_action action;
        tune_cpuset home_nodes;     /* accelerators' nodes (or the rule's unattributed nodes) */
        tune_cpuset pool;           /* every CPU the process may use */
        tune_cpuset role_cpus[_TUNE_ROLE_MAX]; /* control, compute, other (= pool) */
        tune_cpuset borrowed_nodes; /* nodes outside home_nodes that lent CPUs */
        tune_cpuset asked_nodes;    /* nodes it asked for spare CPUs while short (it may take
                                     * CPUs there): those that lent, and those full by its turn */
        unsigned cpus_wanted;       /* control + compute; 0: an elastic fair share */
        bool shared;                /* explicit unattributed_cpus: not exclusive */
        bool memory_decided;        /* mem_nodes was decided (possibly: leave memory alone) */
        tune_cpuset mem_nodes;      /* where the memory goes; empty: leave it where it is */
        bool memory_shared;         /* move pages it shares too: the rule's memory.shared, for a
                                     * vouched claim only (docs/trust.md, "Trust tiers") */
        bool in_cpuset;             /* planned inside the process's cgroup cpuset */
        bool cpuset_far;            /* ... which has no CPU on its accelerators' nodes */
        bool independent;           /* took no part in dealing node CPUs (its rule's
                                     * unattributed_cpus, or not placed by its rule): its
                                     * plan neither depends on nor changes any other's */
        char **reasons;             /* human-readable, in the order the decisions were made */
        unsigned n_reasons;
        bool no_reasons;            /* planned with tune_plan_params.no_reasons: none kept */
} tune_plan;

void tune_plan_done(tune_plan *p);
int tune_plan_copy(tune_plan *dst, const tune_plan *src);
/* The CPUs a thread of this role gets. */
const tune_cpuset *tune_plan_role_cpus(const tune_plan *p, tune_role role) _pure_;
/* The plan as a JSON object (for --explain --json and the D-Bus Explain call):
 * {"action", "home_nodes", "pool", "roles": {"control", "compute", "other"},
 *  "borrowed_nodes", "cpus_wanted", "shared", "mem_nodes", "reasons": [...]}, sets in the
 * kernel's list format. The caller owns *ret (json_object_put()). */
struct json_object;
int tune_plan_to_json(const tune_plan *p, struct json_object **ret);
/* json_object_object_add() that takes v in every case: -ENOMEM when v is NULL (its
 * allocation failed) or cannot be added, and then v is freed. */
int tune_json_add(struct json_object *o, const char *key, struct json_object *v);
/* The first node of mem_nodes, the target of pages on no node of mem_nodes; -1 if none. */
int tune_plan_memory_target(const tune_plan *p) _pure_;

/* Who backs a claim, in the order the plan serves them (docs/trust.md, "Trust tiers"):
 * each tier is dealt CPUs (home nodes, then borrowing) from what the tiers before it left. */
typedef enum tune_claim_tier {
        TUNE_CLAIM_VOUCHED,    /* someone other than the process vouches: it runs as root, or its
                                * rule names its user or cgroup */
        TUNE_CLAIM_VERIFIED,   /* verified by the process's own access (its accelerators' device
                                * files open, or the nodes' permissions) or by "claims": "any":
                                * where anyone may open the devices, anyone is here, so it shares
                                * what vouched claims leave, between uids */
        TUNE_CLAIM_UNVERIFIED, /* only CPUs no other claim wants */
        _TUNE_CLAIM_TIER_MAX,
} tune_claim_tier;

/* Whose claim a request is and whether it is believable (docs/trust.md). The zero value
 * is root's claim (vouched). */
typedef struct tune_claim {
        uid_t uid;             /* CPUs are shared fairly between uids first */
        tune_claim_tier tier;
        char why[160];         /* how it was (not) verified, for the reasons; "" none */
} tune_claim;

/* The cgroup cpuset a process lives in (include/npu-tuned/cgroup-cpuset.h), as the planner
 * takes it: empty sets mean "not restricted". */
typedef struct tune_plan_cpuset {
        tune_cpuset cpus;
        tune_cpuset mems;
        char *owner; /* for reasons: "cgroup /kubepods.slice/... (pod ..., container ...)" */
} tune_plan_cpuset;

void tune_plan_cpuset_done(tune_plan_cpuset *c);
int tune_plan_cpuset_copy(tune_plan_cpuset *dst, const tune_plan_cpuset *src);
bool tune_plan_cpuset_equal(const tune_plan_cpuset *a, const tune_plan_cpuset *b) _pure_;

typedef struct tune_plan_request {
        uint64_t key;                    /* the caller's id for the process; not interpreted */
        tune_claim claim;
        const tune_policy_rule *rule;
        const tune_accel *const *accels; /* the accelerators attributed to the process */
        unsigned n_accels;
        const tune_plan *previous;  /* its last plan; NULL when new */
        const tune_plan_cpuset *cpuset;  /* its cgroup's cpuset; NULL: not restricted */
} tune_plan_request;

/* Plan n processes, given in arrival order (earlier ones win ties). ret must point to n
 * zero-initialised plans; on success each is filled (the caller frees them with
 * tune_plan_done()), on failure none is. Returns 0 or -ENOMEM / -EINVAL (a request
 * without a rule). Refusals are not errors: they are plans with action REFUSE. */
int tune_plan_compute(const tune_topology *t, const tune_plan_params *params,
                      const tune_plan_request *reqs, unsigned n, tune_plan *ret);
/* When a node's last available CPU was given, for the placer's incremental re-plan
 * (libtune/placement/placer.c): a short process borrows on a node only before this. */
typedef struct tune_plan_fill {
        bool given;            /* in: the processes on this node are not among the requests,
                                * and it fills as below (out: left as it is) */
        bool full;             /* false: some CPU was never given */
        tune_claim_tier tier;  /* in this tier's deal or borrowing */
        bool by_borrow;        /* lent to a short process (else dealt to those homed there) */
        unsigned from;         /* by_borrow: full for the requests of this index and after */
} tune_plan_fill;

/* tune_plan_compute(), and when fills is not NULL, each node's fill (fills[i] for
 * t->nodes[i]): in, the nodes whose fill is given; out, the fill of every other node. */
int tune_plan_compute_fills(const tune_topology *t, const tune_plan_params *params, const tune_plan_request *reqs,
                            unsigned n, tune_plan_fill *fills, tune_plan *ret);
/* Whether req's plan can be independent (tune_plan.independent) at all: false means it is
 * certainly dealt node CPUs with the others, so planning it alone would be wasted. */
bool tune_plan_request_may_be_independent(const tune_plan_request *req) _pure_;

/* The CPUs on `node` that managed processes may get at all (usable minus housekeeping). */
int tune_plan_available_cpus(const tune_topology *t, const tune_plan_params *params, int node, tune_cpuset *ret);

/* ---- the stateful allocator the daemon holds ---- */

typedef struct tune_placer tune_placer;

typedef struct tune_keys {
        uint64_t *keys;
        unsigned n;
} tune_keys;
void tune_keys_done(tune_keys *k);
bool tune_keys_contain(const tune_keys *k, uint64_t key) _pure_;
int tune_keys_add(tune_keys *k, uint64_t key);

/* The placer borrows t until it is freed or given another topology; rules passed to
 * tune_placer_set() are borrowed too: after a policy reload, call tune_placer_set() again
 * for every managed process with its new rule (or tune_placer_remove() it). */
int tune_placer_new(const tune_topology *t, const tune_plan_params *params, tune_placer **ret);
tune_placer *tune_placer_free(tune_placer *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(tune_placer *, tune_placer_free);

/* Add a process (or replace the rule/accelerators of a known one, which also re-decides
 * its memory node) and re-plan. The accelerators are copied (e.g. resolved from the
 * watcher's attribution refs with tune_accels_find()). *ret_changed (may be NULL) receives the keys of OTHER
 * processes whose pool or role CPUs changed: re-apply their affinities. On failure the
 * placer is unchanged. */
int tune_placer_set(tune_placer *p, uint64_t key, const tune_policy_rule *rule,
                    const tune_accel *const *accels, unsigned n_accels, tune_keys *ret_changed);
/* The same with whose claim it is (NULL: root's, verified). */
int tune_placer_set_claim(tune_placer *p, uint64_t key, const tune_policy_rule *rule,
                          const tune_accel *const *accels, unsigned n_accels, const tune_claim *claim,
                          tune_keys *ret_changed);

/* The cgroup cpuset of a known process (NULL: none) changed: keep it and re-plan when it
 * differs from what the placer had. Memory is decided again when the decided nodes are no
 * longer all allowed. *ret_changed gets the keys of every process whose CPUs changed, this
 * one included. -ENOENT if unknown; 0 when nothing changed, 1 when it re-planned. */
int tune_placer_set_cpuset(tune_placer *p, uint64_t key, const tune_plan_cpuset *cpuset, tune_keys *ret_changed);
/* Forget a process (it exited) and re-plan; -ENOENT if unknown. */
int tune_placer_remove(tune_placer *p, uint64_t key, tune_keys *ret_changed);
/* The topology changed (CPU hotplug): re-plan everything on the new one. */
int tune_placer_set_topology(tune_placer *p, const tune_topology *t, tune_keys *ret_changed);
const tune_plan *tune_placer_get(const tune_placer *p, uint64_t key) _pure_;
/* tune_placer_get() into *ret (a copy, tune_plan_done() it), with its reasons even when the
 * placer plans without them: every managed process planned again with reasons (the same
 * decisions: planning is a function of the requests), the reasons of key's kept. -ENOENT
 * when key is not planned. */
int tune_placer_explain(const tune_placer *p, uint64_t key, tune_plan *ret);
unsigned tune_placer_count(const tune_placer *p) _pure_;
/* How many process plans the placer has computed (a process re-planned N times counts N):
 * what a change costs it. */
uint64_t tune_placer_plans_made(const tune_placer *p) _pure_;
/* The union of every placed pool: the "inference CPUs" the IRQ knob keeps IRQs off. */
int tune_placer_inference_cpus(const tune_placer *p, tune_cpuset *ret);

/* ---- threads ---- */

/* The CPUs a thread gets under a plan: its role's sub-pool. NULL unless the plan
 * is PLACE. */
const tune_cpuset *tune_plan_thread_cpus(const tune_plan *p, const tune_policy_rule *rule,
                                         pid_t pid, pid_t tid, const char *comm, tune_role *ret_role);

/* A chooser for tune_affinity_apply() (include/npu-tuned/affinity.h): userdata points to a
 * tune_thread_target; every thread gets its role's CPUs, nothing when not PLACE. */
typedef struct tune_thread_target {
        const tune_plan *plan;
        const tune_policy_rule *rule;
} tune_thread_target;
int tune_thread_target_choose(pid_t pid, pid_t tid, tune_thread_name *name, void *userdata, const tune_cpuset **ret);
