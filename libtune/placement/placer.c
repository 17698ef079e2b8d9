/* SPDX-License-Identifier: GPL-2.0-only */
/* The placer (see include/npu-tuned/plan.h): the stateful side of placement planning. It
 * keeps the managed processes in arrival order with their last plans, runs the planner
 * (tune_plan_compute(), plan.c) on every change over the processes whose plans it can move
 * (placer_replan_around(): those dealt CPUs on the nodes it touches; a process whose plan
 * is independent of the others' is planned alone), and says whose CPUs changed so the
 * daemon re-pins just those. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/plan.h"

typedef struct placer_entry {
        uint64_t key;
        uint64_t arrival;           /* increasing with arrival: the order of the entries */
        const tune_policy_rule *rule;
        tune_accel *accels;         /* copies without local_cpus (the plan does not need them) */
        const tune_accel **accel_ptrs;
        unsigned n_accels;
        tune_claim claim;
        tune_plan plan;
        bool placed;
        /* The plan its last planning was given as the previous one (moved, not copied, when
         * plan was replaced): tune_placer_explain() plans again from the same requests. */
        tune_plan previous;
        bool has_previous;
        tune_plan_cpuset cpuset;
        bool has_cpuset;
} placer_entry;

/* A slot of the key index: open addressing, linear probing; e NULL: free. */
typedef struct placer_slot {
        uint64_t key;
        placer_entry *e;
} placer_slot;
/* When a node's last available CPU was given in the last plan of its processes
 * (tune_plan_fill, by arrival rather than by index): a short process borrows there only
 * before then. */
typedef struct placer_fill {
        bool full;
        tune_claim_tier tier;
        bool by_borrow;
        uint64_t after; /* by_borrow: the arrival of the process that took its last CPU */
} placer_fill;

struct tune_placer {
        const tune_topology *t;
        tune_plan_params params;
        /* Arrival order (the planner deals in it). Pointers, so that an exit moves N
         * pointers and not N entries of half a KiB each. */
        placer_entry **entries;
        unsigned n, n_alloc;
        /* Key -> entry: every event of a managed process looks its entry up, and a scan
         * made a burst of N processes cost N^2 comparisons. n_slots is 0 or a power of two
         * at least twice n. */
        placer_slot *slots;
        unsigned n_slots;
        uint64_t arrivals;
        placer_fill *fills;    /* [node index] of t, as every managed process planned again
                                * would fill it; NULL: not known (re-plan every process) */
        uint64_t plans_made;
};

static unsigned slot_of(const tune_placer *p, uint64_t key) {
        /* splitmix64's finaliser: keys are (pid, start time) packed, whose low bits repeat. */
        key ^= key >> 30;
        key *= UINT64_C(0xbf58476d1ce4e5b9);
        key ^= key >> 27;
        key *= UINT64_C(0x94d049bb133111eb);
        key ^= key >> 31;
        return (unsigned) key & (p->n_slots - 1);
}

static placer_entry *placer_find(const tune_placer *p, uint64_t key) {
        if (p->n_slots == 0)
                return NULL;
        for (unsigned i = slot_of(p, key);; i = (i + 1) & (p->n_slots - 1)) {
                if (!p->slots[i].e)
                        return NULL;
                if (p->slots[i].key == key)
                        return p->slots[i].e;
        }
}

/* e's index in p->entries: a binary search by arrival, which reads log N entries, where
 * an index kept in each entry would have to be rewritten in every later one at an exit. */
static unsigned entry_index(const tune_placer *p, const placer_entry *e) {
        unsigned lo = 0, hi = p->n;

        while (hi - lo > 1) {
                unsigned mid = lo + (hi - lo) / 2;
                if (p->entries[mid]->arrival <= e->arrival)
                        lo = mid;
                else
                        hi = mid;
        }
        return lo;
}

static void index_put(tune_placer *p, placer_entry *e) {
        unsigned i = slot_of(p, e->key);

        while (p->slots[i].e)
                i = (i + 1) & (p->n_slots - 1);
        p->slots[i] = (placer_slot) { .key = e->key, .e = e };
}

/* Room in the index for n entries. */
static int index_reserve(tune_placer *p, unsigned n) {
        placer_slot *old = p->slots;
        unsigned old_n = p->n_slots, want = p->n_slots ? p->n_slots : 16;

        while (want < 2 * n)
                want *= 2;
        if (want == p->n_slots)
                return 0;
        p->slots = calloc(want, sizeof *p->slots);
        if (!p->slots) {
                p->slots = old;
                return -ENOMEM;
        }
        p->n_slots = want;
        for (unsigned i = 0; i < old_n; i++)
                if (old[i].e)
                        index_put(p, old[i].e);
        free(old);
        return 0;
}

/* Takes key out of the index, moving back the entries probed past it (no tombstones). */
static void index_drop(tune_placer *p, uint64_t key) {
        unsigned mask = p->n_slots - 1, i, j;

        if (p->n_slots == 0)
                return;
        for (i = slot_of(p, key); p->slots[i].e && p->slots[i].key != key; i = (i + 1) & mask)
                ;
        if (!p->slots[i].e)
                return;
        for (j = (i + 1) & mask; p->slots[j].e; j = (j + 1) & mask) {
                unsigned home = slot_of(p, p->slots[j].key);
                /* Slot j's entry may move to the hole at i unless its home lies in (i, j]. */
                if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
                        p->slots[i] = p->slots[j];
                        i = j;
                }
        }
        p->slots[i] = (placer_slot) {};
}

void tune_keys_done(tune_keys *k) {
        if (!k)
                return;
        free(k->keys);
        k->keys = NULL;
        k->n = 0;
}

bool tune_keys_contain(const tune_keys *k, uint64_t key) {
        for (unsigned i = 0; i < k->n; i++)
                if (k->keys[i] == key)
                        return true;
        return false;
}

int tune_keys_add(tune_keys *k, uint64_t key) {
        uint64_t *a = realloc(k->keys, (k->n + 1) * sizeof(uint64_t));
        if (!a)
                return -ENOMEM;
        k->keys = a;
        k->keys[k->n++] = key;
        return 0;
}

static void entry_done(placer_entry *e) {
        free(e->accels);
        free(e->accel_ptrs);
        tune_plan_done(&e->plan);
        tune_plan_done(&e->previous);
        tune_plan_cpuset_done(&e->cpuset);
        memset(e, 0, sizeof *e);
}

int tune_placer_new(const tune_topology *t, const tune_plan_params *params, tune_placer **ret) {
        tune_placer *p;

        if (!t || !ret)
                return -EINVAL;
        p = tune_alloc0(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->t = t;
        if (params)
                p->params = *params;
        *ret = p;
        return 0;
}

tune_placer *tune_placer_free(tune_placer *p) {
        if (!p)
                return NULL;
        for (unsigned i = 0; i < p->n; i++) {
                entry_done(p->entries[i]);
                free(p->entries[i]);
        }
        free(p->entries);
        free(p->slots);
        free(p->fills);
        free(p);
        return NULL;
}

static bool placement_cpus_equal(const tune_plan *a, const tune_plan *b) {
        if (a->action != b->action || !tune_cpuset_equal(&a->pool, &b->pool))
                return false;
        for (unsigned i = 0; i < _TUNE_ROLE_MAX; i++)
                if (!tune_cpuset_equal(&a->role_cpus[i], &b->role_cpus[i]))
                        return false;
        return true;
}

/* e's new plan: the one it replaces becomes its previous. */
static void entry_take_plan(placer_entry *e, tune_plan *plan) {
        tune_plan_done(&e->previous);
        e->has_previous = e->placed;
        if (e->placed)
                e->previous = e->plan;
        else
                tune_plan_done(&e->plan);
        e->plan = *plan;
        *plan = (tune_plan) {};
        e->placed = true;
}

static const tune_plan_cpuset *entry_cpuset(const placer_entry *e) {
        return e->has_cpuset ? &e->cpuset : NULL;
}

static tune_plan_request entry_request(const placer_entry *e) {
        return (tune_plan_request) {
                .key = e->key,
                .claim = e->claim,
                .rule = e->rule,
                .accels = e->accel_ptrs,
                .n_accels = e->n_accels,
                .previous = e->placed ? &e->plan : NULL,
                .cpuset = entry_cpuset(e),
        };
}

/* Every entry's request, in entry order; last_planned: with the previous plan its last
 * planning was given (tune_placer_explain()), not its current one. NULL: out of memory. */
static tune_plan_request *placer_requests(const tune_placer *p, bool last_planned) {
        tune_plan_request *reqs = tune_alloc0(p->n ? p->n : 1, sizeof *reqs);

        for (unsigned i = 0; reqs && i < p->n; i++) {
                const placer_entry *e = p->entries[i];

                reqs[i] = entry_request(e);
                if (last_planned)
                        reqs[i].previous = e->has_previous ? &e->previous : NULL;
        }
        return reqs;
}

/* Swap in out[j] as the plan of entry idx[j] (idx NULL: entry j), j < m, and report the
 * entries (other than skip_key) whose CPUs changed; takes out's plans and frees out in
 * every case. On failure nothing changes. */
static int placer_take(tune_placer *p, const unsigned *idx, unsigned m, tune_plan *out, uint64_t skip_key, bool skip,
                       tune_keys *ret_changed) {
        tune_keys changed = {};
        int r = 0;

        for (unsigned j = 0; j < m && r >= 0; j++) {
                placer_entry *e = p->entries[idx ? idx[j] : j];
                if (skip && e->key == skip_key)
                        continue;
                if (e->placed && !placement_cpus_equal(&e->plan, &out[j]))
                        r = tune_keys_add(&changed, e->key);
        }
        if (r < 0) {
                for (unsigned j = 0; j < m; j++)
                        tune_plan_done(&out[j]);
                free(out);
                tune_keys_done(&changed);
                return r;
        }
        for (unsigned j = 0; j < m; j++)
                entry_take_plan(p->entries[idx ? idx[j] : j], &out[j]);
        free(out);
        if (ret_changed) {
                tune_keys_done(ret_changed);
                *ret_changed = changed;
        } else
                tune_keys_done(&changed);
        return 0;
}

/* A node's fill in a plan of the entries idx (NULL: every entry), by arrival. */
static placer_fill fill_by_arrival(const tune_placer *p, const unsigned *idx, const tune_plan_fill *f) {
        bool by_borrow = f->full && f->by_borrow;

        return (placer_fill) {
                .full = f->full,
                .tier = f->tier,
                .by_borrow = by_borrow,
                .after = by_borrow ? p->entries[idx ? idx[f->from - 1] : f->from - 1]->arrival : 0,
        };
}

/* Re-plan every entry; on success swap the new placements in and report the entries
 * (other than skip_key) whose CPUs changed. On failure nothing changes. */
static int placer_replan(tune_placer *p, const tune_topology *t, uint64_t skip_key, bool skip, tune_keys *ret_changed) {
        _cleanup_free_ tune_plan_request *reqs = NULL;
        _cleanup_free_ tune_plan_fill *fills = NULL;
        _cleanup_free_ placer_fill *kept = NULL;
        tune_plan *out = NULL;
        int r;

        reqs = placer_requests(p, false);
        fills = tune_alloc0(t->n_nodes ? t->n_nodes : 1, sizeof *fills);
        kept = tune_alloc0(t->n_nodes ? t->n_nodes : 1, sizeof *kept);
        out = tune_alloc0(p->n ? p->n : 1, sizeof *out);
        if (!reqs || !fills || !kept || !out) {
                free(out);
                return -ENOMEM;
        }
        r = tune_plan_compute_fills(t, &p->params, reqs, p->n, fills, out);
        if (r < 0) {
                free(out);
                return r;
        }
        p->plans_made += p->n;
        for (unsigned i = 0; i < t->n_nodes; i++)
                kept[i] = fill_by_arrival(p, NULL, &fills[i]);
        r = placer_take(p, NULL, p->n, out, skip_key, skip, ret_changed);
        if (r < 0)
                return r;
        p->t = t;
        free(p->fills);
        p->fills = TAKE_PTR(kept);
        return 0;
}

/* Whether pl (planned in cpuset cs, NULL: none) was dealt CPUs on the node of index i of t
 * with the other plans: its home nodes, the nodes it borrowed from, the nodes its pool has
 * CPUs on. A far cpuset's plan is homed on the nodes its cpuset has CPUs on, not on its
 * accelerators' (home_nodes). A whole cpuset shared was dealt no CPU of it. */
static bool plan_on_node(const tune_topology *t, const tune_plan *pl, const tune_plan_cpuset *cs, unsigned i) {
        const tune_node *node = &t->nodes[i];

        if (pl->cpuset_far && (!cs || tune_cpuset_is_empty(&cs->cpus) || tune_cpuset_overlaps(&node->cpus, &cs->cpus)))
                return true;
        return (!pl->cpuset_far && tune_cpuset_has(&pl->home_nodes, (unsigned) node->id)) ||
               tune_cpuset_has(&pl->borrowed_nodes, (unsigned) node->id) ||
               (!pl->shared && tune_cpuset_overlaps(&node->cpus, &pl->pool));
}

/* Whether pl (a plan dealt CPUs with the others) is on a node whose mark is `marked`; with
 * mark_them, marks every node it is on. */
static bool plan_nodes(const tune_topology *t, const tune_plan *pl, const tune_plan_cpuset *cs, bool *mark, bool marked,
                       bool mark_them) {
        bool any = false;

        for (unsigned i = 0; i < t->n_nodes; i++)
                if (mark[i] == marked && plan_on_node(t, pl, cs, i)) {
                        any = true;
                        if (!mark_them)
                                break;
                        mark[i] = true;
                }
        return any;
}

/* Whether a node that fills as f is full when e's turn to borrow comes: the planner lends
 * tier by tier, after the tier's deal, to the tier's short plans in arrival order. */
static bool fill_before(const placer_fill *f, const placer_entry *e) {
        return f->full && (f->tier < e->claim.tier || (f->tier == e->claim.tier && (!f->by_borrow || f->after < e->arrival)));
}

/* The fills of the nodes not marked, for a plan of the entries idx[0..m) (none of which is
 * on them): a node another entry took the last CPU of is full for those that arrived after it. */
static void placer_given_fills(const tune_placer *p, const unsigned *idx, unsigned m, const bool *mark, tune_plan_fill *fills) {
        for (unsigned i = 0; i < p->t->n_nodes; i++) {
                const placer_fill *f = &p->fills[i];
                unsigned from = 0;

                fills[i] = (tune_plan_fill) {};
                if (mark[i])
                        continue;
                while (f->by_borrow && from < m && p->entries[idx[from]]->arrival < f->after)
                        from++;
                fills[i] = (tune_plan_fill) { .given = true, .full = f->full, .tier = f->tier, .by_borrow = f->by_borrow, .from = from };
        }
}

/* The entries outside the component (not in) that its new plan moves: a plan that asked a
 * node of the component (marked) for spare CPUs (tune_plan.asked_nodes) and was not lent
 * any there (it is not on it) takes some if the node is not full by its turn to borrow now
 * (fills: the component's new plan's). Adds them to in (joined: scratch) and marks their
 * nodes; returns whether there were any. */
static bool placer_askers_join(const tune_placer *p, const placer_fill *fills, bool *in, bool *joined, bool *mark) {
        const tune_topology *t = p->t;
        bool any = false;

        for (unsigned k = 0; k < p->n; k++) {
                const placer_entry *e = p->entries[k];

                joined[k] = false;
                if (in[k] || !e->placed || e->plan.independent || tune_cpuset_is_empty(&e->plan.asked_nodes))
                        continue;
                for (unsigned i = 0; i < t->n_nodes && !joined[k]; i++)
                        joined[k] = mark[i] && tune_cpuset_has(&e->plan.asked_nodes, (unsigned) t->nodes[i].id) &&
                                    !fill_before(&fills[i], e);
                any = any || joined[k];
        }
        for (unsigned k = 0; k < p->n; k++)
                if (joined[k]) {
                        in[k] = true;
                        (void) plan_nodes(t, &p->entries[k]->plan, entry_cpuset(p->entries[k]), mark, false, true);
                }
        return any;
}

/* Re-plan only the entries a change can move: the entry `must` (its index; -1: none) and
 * every entry whose plan takes part in dealing CPUs on a marked node (mark: the nodes the
 * changed plan was on, by index in the topology), closed over the nodes those are on: the
 * component. The planner deals each node's CPUs among the plans homed there, then lends
 * the nodes' spare CPUs, tier by tier, to the short plans in arrival order, nearest node
 * first; a node lends nothing once full. So the component, planned alone with every other
 * node full from the point where its last plan filled it (placer_given_fills()), gets what
 * re-planning every entry would give it, and no entry outside changes (a re-plan keeps a
 * plan as it is), provided that:
 *  - its new plans stay on its nodes. When one reaches further (it is homed or borrows
 *    where it was not: a node that was not full yet at its turn), the component grows by
 *    those nodes and is planned again;
 *  - no plan outside that asked a node of the component for spare CPUs finds it not full
 *    by its turn to borrow now (placer_askers_join()). Those join, and it is planned again.
 * Once the nodes are full, a burst of arrivals then costs a plan of the arriving process's
 * node each, not a plan of every managed process. The fills planned are kept for the next
 * change (p->fills). Overlapping firmware nodes (pools shared between nodes), a host of
 * one node and the reference mode (tune_plan_params.replan_all) re-plan everything.
 * Reports changed as placer_replan(). */
static int placer_replan_around(tune_placer *p, int must, bool *mark, uint64_t skip_key, bool skip, tune_keys *ret_changed) {
        const tune_topology *t = p->t;
        _cleanup_free_ bool *in = NULL, *joined = NULL;
        _cleanup_free_ unsigned *idx = NULL;
        _cleanup_free_ tune_plan_request *reqs = NULL;
        _cleanup_free_ tune_plan_fill *fills = NULL;
        _cleanup_free_ placer_fill *planned = NULL;
        size_t n = p->n ? p->n : 1, n_nodes = t->n_nodes ? t->n_nodes : 1;
        int r;

        /* One node, or one process: every coupled plan is in the component anyway. */
        if (p->params.replan_all || t->nodes_overlap || !mark || !p->fills || t->n_nodes <= 1 || p->n <= 1)
                return placer_replan(p, t, skip_key, skip, ret_changed);
        in = tune_alloc0(n, sizeof(bool));
        joined = tune_alloc0(n, sizeof(bool));
        idx = tune_alloc0(n, sizeof(unsigned));
        reqs = tune_alloc0(n, sizeof *reqs);
        fills = tune_alloc0(n_nodes, sizeof *fills);
        planned = tune_alloc0(n_nodes, sizeof *planned);
        if (!in || !joined || !idx || !reqs || !fills || !planned)
                return -ENOMEM;
        for (;;) {
                unsigned m = 0;
                bool grew = true, further = false;
                tune_plan *out;

                while (grew) {
                        grew = false;
                        for (unsigned i = 0; i < p->n; i++) {
                                placer_entry *e = p->entries[i];
                                bool coupled = e->placed && !e->plan.independent;

                                if (in[i] || ((int) i != must &&
                                              (!coupled || !plan_nodes(t, &e->plan, entry_cpuset(e), mark, true, false))))
                                        continue;
                                in[i] = true;
                                if (coupled && plan_nodes(t, &e->plan, entry_cpuset(e), mark, false, true))
                                        grew = true;
                        }
                }
                for (unsigned i = 0; i < p->n; i++)
                        if (in[i]) {
                                idx[m] = i;
                                reqs[m++] = entry_request(p->entries[i]);
                        }
                if (m == p->n)
                        return placer_replan(p, t, skip_key, skip, ret_changed);
                out = tune_alloc0(m ? m : 1, sizeof *out);
                if (!out)
                        return -ENOMEM;
                placer_given_fills(p, idx, m, mark, fills);
                r = tune_plan_compute_fills(t, &p->params, reqs, m, fills, out);
                if (r < 0) {
                        free(out);
                        return r;
                }
                p->plans_made += m;
                for (unsigned j = 0; j < m; j++)
                        if (!out[j].independent && plan_nodes(t, &out[j], reqs[j].cpuset, mark, false, true))
                                further = true;
                if (!further) {
                        for (unsigned i = 0; i < t->n_nodes; i++)
                                if (mark[i])
                                        planned[i] = fill_by_arrival(p, idx, &fills[i]);
                        further = placer_askers_join(p, planned, in, joined, mark);
                }
                if (!further) {
                        r = placer_take(p, idx, m, out, skip_key, skip, ret_changed);
                        for (unsigned i = 0; r >= 0 && i < t->n_nodes; i++)
                                if (mark[i])
                                        p->fills[i] = planned[i];
                        return r;
                }
                for (unsigned j = 0; j < m; j++)
                        tune_plan_done(&out[j]);
                free(out);
        }
}

/* The nodes (by index in p's topology) e's plan takes part in dealing CPUs on, for
 * placer_replan_around(); NULL (re-plan everything) when out of memory. */
static bool *entry_mark(const tune_placer *p, const placer_entry *e) {
        bool *mark = tune_alloc0(p->t->n_nodes ? p->t->n_nodes : 1, sizeof(bool));

        if (mark && e->placed && !e->plan.independent)
                (void) plan_nodes(p->t, &e->plan, entry_cpuset(e), mark, false, true);
        return mark;
}

/* Mark the nodes e's next plan will likely be homed on (its accelerators', its rule's
 * unattributed_nodes, its cpuset's), so that placer_replan_around() gathers its component
 * before the first plan rather than after it (a plan saved; a wrong guess only costs one). */
static void entry_mark_likely(const tune_placer *p, const placer_entry *e, bool *mark) {
        const tune_topology *t = p->t;

        for (unsigned i = 0; mark && i < t->n_nodes; i++) {
                int id = t->nodes[i].id;

                for (unsigned j = 0; j < e->n_accels; j++)
                        if (e->accels[j].numa_node == id)
                                mark[i] = true;
                if (tune_cpuset_has(&e->rule->unattributed_nodes, (unsigned) id) ||
                    (e->has_cpuset && tune_cpuset_overlaps(&t->nodes[i].cpus, &e->cpuset.cpus)))
                        mark[i] = true;
        }
}

/* A change to e alone when its plan was and stays independent (plan.h): no other plan
 * can change, so planning e by itself gives what placer_replan() would, without planning
 * every managed process again (a burst of N processes would cost N^2 plans). 1: done, e
 * planned; 0: not independent, re-plan all; nothing changed then. */
static int placer_plan_alone(tune_placer *p, placer_entry *e) {
        tune_plan_request req = entry_request(e);
        tune_plan out = {};
        int r;

        if ((e->placed && !e->plan.independent) || !tune_plan_request_may_be_independent(&req))
                return 0;
        r = tune_plan_compute(p->t, &p->params, &req, 1, &out);
        if (r < 0)
                return r;
        p->plans_made++;
        if (!out.independent) {
                tune_plan_done(&out);
                return 0;
        }
        entry_take_plan(e, &out);
        return 1;
}

/* placer_plan_alone(), else placer_replan_around(); *ret_changed: the other entries whose
 * CPUs changed (none when planned alone). */
static int placer_plan_changed(tune_placer *p, placer_entry *e, tune_keys *ret_changed) {
        int r = placer_plan_alone(p, e);
        if (r < 0)
                return r;
        if (r == 0) {
                _cleanup_free_ bool *mark = entry_mark(p, e);
                entry_mark_likely(p, e, mark);
                return placer_replan_around(p, (int) entry_index(p, e), mark, e->key, true, ret_changed);
        }
        if (ret_changed)
                tune_keys_done(ret_changed);
        return 0;
}

static int entry_fill(placer_entry *e, uint64_t key, const tune_policy_rule *rule,
                      const tune_accel *const *accels, unsigned n_accels, const tune_claim *claim) {
        *e = (placer_entry) { .key = key, .rule = rule, .n_accels = n_accels };
        if (claim)
                e->claim = *claim;
        if (n_accels == 0)
                return 0;
        e->accels = tune_alloc0(n_accels, sizeof(tune_accel));
        e->accel_ptrs = tune_alloc0(n_accels, sizeof(tune_accel *));
        if (!e->accels || !e->accel_ptrs) {
                entry_done(e);
                return -ENOMEM;
        }
        for (unsigned j = 0; j < n_accels; j++) {
                if (!accels[j]) {
                        entry_done(e);
                        return -EINVAL;
                }
                e->accels[j] = *accels[j];
                e->accels[j].local_cpus = (tune_cpuset) {};
                e->accel_ptrs[j] = &e->accels[j];
        }
        return 0;
}

int tune_placer_set(tune_placer *p, uint64_t key, const tune_policy_rule *rule,
                    const tune_accel *const *accels, unsigned n_accels, tune_keys *ret_changed) {
        return tune_placer_set_claim(p, key, rule, accels, n_accels, NULL, ret_changed);
}

int tune_placer_set_claim(tune_placer *p, uint64_t key, const tune_policy_rule *rule,
                          const tune_accel *const *accels, unsigned n_accels, const tune_claim *claim,
                          tune_keys *ret_changed) {
        placer_entry fresh, *e;
        int r;

        if (!p || !rule || (n_accels > 0 && !accels))
                return -EINVAL;
        r = entry_fill(&fresh, key, rule, accels, n_accels, claim);
        if (r < 0)
                return r;

        e = placer_find(p, key);
        if (e) {
                /* Replace in place, keeping the CPUs it has; its memory is decided anew. */
                placer_entry old = *e;
                fresh.arrival = old.arrival;
                fresh.plan = old.plan;
                fresh.placed = old.placed;
                fresh.cpuset = old.cpuset;
                fresh.has_cpuset = old.has_cpuset;
                fresh.plan.memory_decided = false;
                *e = fresh;
                r = placer_plan_changed(p, e, ret_changed);
                if (r < 0) {
                        e->plan.memory_decided = old.plan.memory_decided;
                        fresh.plan = (tune_plan) {};
                        fresh.cpuset = (tune_plan_cpuset) {};
                        entry_done(&fresh);
                        *e = old;
                        return r;
                }
                old.plan = (tune_plan) {};
                old.cpuset = (tune_plan_cpuset) {};
                entry_done(&old);
                return 0;
        }

        if (p->n == p->n_alloc) {
                unsigned want = p->n_alloc ? 2 * p->n_alloc : 16;
                placer_entry **a = realloc(p->entries, want * sizeof *a);
                if (!a) {
                        entry_done(&fresh);
                        return -ENOMEM;
                }
                p->entries = a;
                p->n_alloc = want;
        }
        e = malloc(sizeof *e);
        if (!e || index_reserve(p, p->n + 1) < 0) {
                free(e);
                entry_done(&fresh);
                return -ENOMEM;
        }
        fresh.arrival = ++p->arrivals;
        *e = fresh;
        p->entries[p->n++] = e;
        index_put(p, e);
        r = placer_plan_changed(p, e, ret_changed);
        if (r < 0) {
                p->n--;
                index_drop(p, key);
                entry_done(e);
                free(e);
                return r;
        }
        return 0;
}

int tune_placer_set_cpuset(tune_placer *p, uint64_t key, const tune_plan_cpuset *cpuset, tune_keys *ret_changed) {
        placer_entry *e;
        tune_plan_cpuset old;
        bool old_has, old_decided;
        tune_keys changed = {};
        _cleanup_free_ bool *mark = NULL;
        int r;

        if (!p)
                return -EINVAL;
        e = placer_find(p, key);
        if (!e)
                return -ENOENT;
        if (e->has_cpuset == !!cpuset && (!cpuset || tune_plan_cpuset_equal(&e->cpuset, cpuset)))
                return 0;
        mark = entry_mark(p, e);
        old = e->cpuset;
        old_has = e->has_cpuset;
        old_decided = e->plan.memory_decided;
        e->cpuset = (tune_plan_cpuset) {};
        e->has_cpuset = false;
        if (cpuset) {
                r = tune_plan_cpuset_copy(&e->cpuset, cpuset);
                if (r < 0) {
                        e->cpuset = old;
                        e->has_cpuset = old_has;
                        return r;
                }
                e->has_cpuset = true;
                /* Memory decided on nodes it may no longer use is decided again. */
                if (!tune_cpuset_is_empty(&cpuset->mems) && !tune_cpuset_is_subset(&e->plan.mem_nodes, &cpuset->mems))
                        e->plan.memory_decided = false;
        }
        r = placer_plan_alone(p, e);
        if (r == 0) {
                entry_mark_likely(p, e, mark);
                r = placer_replan_around(p, (int) entry_index(p, e), mark, 0, false, &changed);
        }
        if (r < 0) {
                tune_plan_cpuset_done(&e->cpuset);
                e->cpuset = old;
                e->has_cpuset = old_has;
                e->plan.memory_decided = old_decided;
                return r;
        }
        tune_plan_cpuset_done(&old);
        if (ret_changed) {
                tune_keys_done(ret_changed);
                *ret_changed = changed;
        } else
                tune_keys_done(&changed);
        return 1;
}

int tune_placer_remove(tune_placer *p, uint64_t key, tune_keys *ret_changed) {
        placer_entry *removed;
        _cleanup_free_ bool *mark = NULL;
        unsigned i;
        int r;

        removed = placer_find(p, key);
        if (!removed)
                return -ENOENT;
        i = entry_index(p, removed);
        mark = entry_mark(p, removed);
        memmove(&p->entries[i], &p->entries[i + 1], (p->n - i - 1) * sizeof *p->entries);
        p->n--;
        index_drop(p, key);
        if ((removed->placed && removed->plan.independent) || p->n == 0) {
                /* It held no CPU any other plan was dealt around, or there is no other
                 * plan left to change (the last managed process exits: its fills are
                 * gone with it, and the next plan of every entry finds them again). */
                if (p->n == 0) {
                        free(p->fills);
                        p->fills = NULL;
                }
                entry_done(removed);
                free(removed);
                if (ret_changed)
                        tune_keys_done(ret_changed);
                return 0;
        }
        /* The plans dealt CPUs where it had them. */
        r = placer_replan_around(p, -1, mark, key, true, ret_changed);
        if (r < 0) {
                /* Put it back where it was (the index has room: it held it). */
                memmove(&p->entries[i + 1], &p->entries[i], (p->n - i) * sizeof *p->entries);
                p->entries[i] = removed;
                p->n++;
                index_put(p, removed);
                return r;
        }
        entry_done(removed);
        free(removed);
        return 0;
}

int tune_placer_set_topology(tune_placer *p, const tune_topology *t, tune_keys *ret_changed) {
        if (!p || !t)
                return -EINVAL;
        return placer_replan(p, t, 0, false, ret_changed);
}

const tune_plan *tune_placer_get(const tune_placer *p, uint64_t key) {
        const placer_entry *e = placer_find(p, key);
        return e && e->placed ? &e->plan : NULL;
}

int tune_placer_explain(const tune_placer *p, uint64_t key, tune_plan *ret) {
        _cleanup_free_ tune_plan_request *reqs = NULL;
        _cleanup_free_ tune_plan *out = NULL;
        tune_plan_params params = p->params;
        const placer_entry *e = placer_find(p, key);
        const tune_plan *pl = e && e->placed ? &e->plan : NULL;
        tune_plan copy = {};
        unsigned at;
        int r;

        if (!pl)
                return -ENOENT;
        at = entry_index(p, e);
        r = tune_plan_copy(&copy, pl);
        if (r < 0)
                return r;
        if (!pl->no_reasons) {
                *ret = copy;
                return 0;
        }
        reqs = placer_requests(p, true);
        out = tune_alloc0(p->n, sizeof *out);
        if (!reqs || !out) {
                tune_plan_done(&copy);
                return -ENOMEM;
        }
        params.no_reasons = false;
        r = tune_plan_compute(p->t, &params, reqs, p->n, out);
        if (r < 0) {
                tune_plan_done(&copy);
                return r;
        }
        /* The decisions are the ones kept (copy); only the reasons are taken. */
        copy.reasons = TAKE_PTR(out[at].reasons);
        copy.n_reasons = out[at].n_reasons;
        out[at].n_reasons = 0;
        copy.no_reasons = false;
        for (unsigned i = 0; i < p->n; i++)
                tune_plan_done(&out[i]);
        *ret = copy;
        return 0;
}

unsigned tune_placer_count(const tune_placer *p) {
        return p->n;
}

uint64_t tune_placer_plans_made(const tune_placer *p) {
        return p->plans_made;
}

int tune_placer_inference_cpus(const tune_placer *p, tune_cpuset *ret) {
        _cleanup_cpuset_ tune_cpuset all = {};

        for (unsigned i = 0; i < p->n; i++) {
                const tune_plan *pl = &p->entries[i]->plan;
                if (!p->entries[i]->placed || pl->action != TUNE_PLAN_PLACE)
                        continue;
                int r = tune_cpuset_or(&all, &pl->pool);
                if (r < 0)
                        return r;
        }
        tune_cpuset_done(ret);
        *ret = all;
        all = (tune_cpuset) {};
        return 0;
}
