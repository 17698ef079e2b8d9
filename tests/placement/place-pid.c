/* SPDX-License-Identifier: GPL-2.0-only */
/* place-pid: place one running process by a rule given on the command line, with the
 * library alone (no daemon, no policy file): plan -> pin threads by role -> settle ->
 * migrate memory -> verify from numa_maps -> (optionally) restore. Prints one JSON object.
 *
 * It exists to prove placement on a real multi-node kernel (the QEMU guest of tests/vm/,
 * scenario placement.sh) before the daemon wiring lands, and to try rules by hand. The
 * scenario asserts from kernel state (Cpus_allowed_list, numa_maps), not from this output.
 *
 * Example (the VM scenario):
 *   place-pid --pid 123 --kind edu:1234:11e8 --accel edu:0 \
 *             --control-glob 'ctl-*' --control-main --control-cpus 1 \
 *             --compute-glob 'work-*' --compute-cpus 1 --min-free-mib 64 --rate-mib-s 256
 *
 * Exit status: 0 placed (or left/refused by the rule, see "action"), 1 an error, 2 usage. */
#include <errno.h>
#include <getopt.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/affinity.h"
#include "npu-tuned/memmove.h"
#include "npu-tuned/numa-maps.h"
#include "npu-tuned/parse.h"
#include "npu-tuned/plan.h"
#include "npu-tuned/topology.h"

#define GLOBS_MAX 16
#define ACCELS_MAX 16
#define KINDS_MAX 8
#define OVERRIDES_MAX 16

typedef struct options {
        pid_t pid;
        const char *root;
        char *control_globs[GLOBS_MAX + 1], *compute_globs[GLOBS_MAX + 1];
        unsigned n_control_globs, n_compute_globs;
        tune_policy_rule rule;
        tune_accel_kind kinds[KINDS_MAX];
        unsigned n_kinds;
        struct { char kind[TUNE_ACCEL_KIND_MAX]; int index; } accels[ACCELS_MAX];
        unsigned n_accels;
        char accel_pcis[ACCELS_MAX][13];
        unsigned n_accel_pcis;
        struct { char pci[13]; int node; } overrides[OVERRIDES_MAX];
        unsigned n_overrides;
        unsigned housekeeping;
        unsigned tick_ms;
        bool move_shared, dry_run, migrate_all;
        long restore_after_ms;
} options;

static uint64_t now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static void sleep_ms(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static void usage(FILE *f) {
        fputs("usage: place-pid --pid PID [options]\n"
              "  accelerators:  --kind NAME:VENDOR:DEVICE (hex)   --accel KIND:INDEX   --accel-pci BDF\n"
              "                 --node-override BDF=NODE\n"
              "  no accelerator: --unattributed-nodes LIST | --unattributed-cpus LIST (else: left alone)\n"
              "  roles:         --control-glob G  --control-main  --control-cpus N\n"
              "                 --compute-glob G  --compute-main  --compute-cpus N\n"
              "  CPUs:          --housekeeping N (per node)\n"
              "  memory:        --min-free-mib N  --no-migrate  --settle-ms N  --rate-mib-s N (0: one migrate_pages)\n"
              "                 --tick-ms N  --move-shared  --migrate-all\n"
              "  other:         --restore-after-ms N  --dry-run (plan only)  --root DIR (fake tree; implies --dry-run)\n", f);
}

static int parse_uint(const char *s, unsigned long max, unsigned long *ret) {
        long v;
        int r = tune_parse_int(s, 0, (long) max, &v);
        if (r < 0)
                return r;
        *ret = (unsigned long) v;
        return 0;
}

static int parse_options(int argc, char **argv, options *o) {
        enum {
                OPT_PID = 256, OPT_ROOT, OPT_KIND, OPT_ACCEL, OPT_ACCEL_PCI, OPT_OVERRIDE, OPT_UNATTR_NODES,
                OPT_UNATTR_CPUS, OPT_CONTROL_GLOB, OPT_CONTROL_MAIN, OPT_CONTROL_CPUS, OPT_COMPUTE_GLOB,
                OPT_COMPUTE_MAIN, OPT_COMPUTE_CPUS, OPT_HOUSEKEEPING, OPT_MIN_FREE, OPT_NO_MIGRATE, OPT_SETTLE,
                OPT_RATE, OPT_TICK, OPT_MOVE_SHARED, OPT_MIGRATE_ALL, OPT_RESTORE_AFTER, OPT_DRY_RUN,
        };
        static const struct option longopts[] = {
                { "pid", required_argument, NULL, OPT_PID },
                { "root", required_argument, NULL, OPT_ROOT },
                { "kind", required_argument, NULL, OPT_KIND },
                { "accel", required_argument, NULL, OPT_ACCEL },
                { "accel-pci", required_argument, NULL, OPT_ACCEL_PCI },
                { "node-override", required_argument, NULL, OPT_OVERRIDE },
                { "unattributed-nodes", required_argument, NULL, OPT_UNATTR_NODES },
                { "unattributed-cpus", required_argument, NULL, OPT_UNATTR_CPUS },
                { "control-glob", required_argument, NULL, OPT_CONTROL_GLOB },
                { "control-main", no_argument, NULL, OPT_CONTROL_MAIN },
                { "control-cpus", required_argument, NULL, OPT_CONTROL_CPUS },
                { "compute-glob", required_argument, NULL, OPT_COMPUTE_GLOB },
                { "compute-main", no_argument, NULL, OPT_COMPUTE_MAIN },
                { "compute-cpus", required_argument, NULL, OPT_COMPUTE_CPUS },
                { "housekeeping", required_argument, NULL, OPT_HOUSEKEEPING },
                { "min-free-mib", required_argument, NULL, OPT_MIN_FREE },
                { "no-migrate", no_argument, NULL, OPT_NO_MIGRATE },
                { "settle-ms", required_argument, NULL, OPT_SETTLE },
                { "rate-mib-s", required_argument, NULL, OPT_RATE },
                { "tick-ms", required_argument, NULL, OPT_TICK },
                { "move-shared", no_argument, NULL, OPT_MOVE_SHARED },
                { "migrate-all", no_argument, NULL, OPT_MIGRATE_ALL },
                { "restore-after-ms", required_argument, NULL, OPT_RESTORE_AFTER },
                { "dry-run", no_argument, NULL, OPT_DRY_RUN },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        unsigned long v;
        int c;

        o->rule = (tune_policy_rule) {
                .name = (char *) "place-pid",
                .accel_mode = TUNE_ACCEL_EXPLICIT,
                .unattributed = TUNE_UNATTRIBUTED_LEAVE,
                .memory_migrate = true,
        };
        o->tick_ms = 100;
        o->restore_after_ms = -1;
        while ((c = getopt_long(argc, argv, "h", longopts, NULL)) >= 0) {
                switch (c) {
                case OPT_PID:
                        if (parse_uint(optarg, INT32_MAX, &v) < 0 || v == 0)
                                return -EINVAL;
                        o->pid = (pid_t) v;
                        break;
                case OPT_ROOT:
                        o->root = optarg;
                        o->dry_run = true;
                        break;
                case OPT_KIND: {
                        tune_accel_kind *k;
                        char *c1 = strchr(optarg, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                        if (o->n_kinds >= KINDS_MAX || !c1 || !c2 || c1 == optarg ||
                            (size_t) (c1 - optarg) >= TUNE_ACCEL_KIND_MAX)
                                return -EINVAL;
                        k = &o->kinds[o->n_kinds++];
                        snprintf(k->name, sizeof k->name, "%.*s", (int) (c1 - optarg), optarg);
                        *c2 = 0;
                        if (tune_parse_hex_u32(c1 + 1, 0xffff, &k->vendor) < 0 ||
                            tune_parse_hex_u32(c2 + 1, 0xffff, &k->device) < 0)
                                return -EINVAL;
                        break;
                }
                case OPT_ACCEL: {
                        char *colon = strrchr(optarg, ':');
                        if (o->n_accels >= ACCELS_MAX || !colon || colon == optarg ||
                            (size_t) (colon - optarg) >= TUNE_ACCEL_KIND_MAX || parse_uint(colon + 1, 4095, &v) < 0)
                                return -EINVAL;
                        snprintf(o->accels[o->n_accels].kind, TUNE_ACCEL_KIND_MAX, "%.*s", (int) (colon - optarg), optarg);
                        o->accels[o->n_accels++].index = (int) v;
                        break;
                }
                case OPT_ACCEL_PCI:
                        if (o->n_accel_pcis >= ACCELS_MAX || tune_parse_pci_address(optarg, o->accel_pcis[o->n_accel_pcis]) < 0)
                                return -EINVAL;
                        o->n_accel_pcis++;
                        break;
                case OPT_OVERRIDE: {
                        char *eq = strchr(optarg, '=');
                        if (o->n_overrides >= OVERRIDES_MAX || !eq)
                                return -EINVAL;
                        *eq = 0;
                        if (tune_parse_pci_address(optarg, o->overrides[o->n_overrides].pci) < 0 ||
                            parse_uint(eq + 1, TUNE_NUMA_NODES_MAX - 1, &v) < 0)
                                return -EINVAL;
                        o->overrides[o->n_overrides++].node = (int) v;
                        break;
                }
                case OPT_UNATTR_NODES:
                case OPT_UNATTR_CPUS:
                        if (tune_cpuset_parse_list(c == OPT_UNATTR_NODES ? &o->rule.unattributed_nodes : &o->rule.unattributed_cpus,
                                                   optarg) < 0)
                                return -EINVAL;
                        o->rule.unattributed = TUNE_UNATTRIBUTED_PLACE;
                        break;
                case OPT_CONTROL_GLOB:
                        if (o->n_control_globs >= GLOBS_MAX)
                                return -EINVAL;
                        o->control_globs[o->n_control_globs++] = optarg;
                        break;
                case OPT_COMPUTE_GLOB:
                        if (o->n_compute_globs >= GLOBS_MAX)
                                return -EINVAL;
                        o->compute_globs[o->n_compute_globs++] = optarg;
                        break;
                case OPT_CONTROL_MAIN:
                        o->rule.control.main_thread = true;
                        break;
                case OPT_COMPUTE_MAIN:
                        o->rule.compute.main_thread = true;
                        break;
                case OPT_CONTROL_CPUS:
                case OPT_COMPUTE_CPUS:
                        if (parse_uint(optarg, TUNE_CPU_MAX, &v) < 0)
                                return -EINVAL;
                        (c == OPT_CONTROL_CPUS ? &o->rule.control : &o->rule.compute)->cpus = (unsigned) v;
                        break;
                case OPT_HOUSEKEEPING:
                        if (parse_uint(optarg, TUNE_CPU_MAX, &v) < 0)
                                return -EINVAL;
                        o->housekeeping = (unsigned) v;
                        break;
                case OPT_MIN_FREE:
                        if (parse_uint(optarg, UINT32_MAX, &v) < 0)
                                return -EINVAL;
                        o->rule.memory_min_free_kib = (uint64_t) v * 1024;
                        break;
                case OPT_NO_MIGRATE:
                        o->rule.memory_migrate = false;
                        break;
                case OPT_SETTLE:
                        if (parse_uint(optarg, 3600 * 1000, &v) < 0)
                                return -EINVAL;
                        o->rule.memory_settle_delay_ms = (unsigned) v;
                        break;
                case OPT_RATE:
                        if (parse_uint(optarg, 1024 * 1024, &v) < 0)
                                return -EINVAL;
                        o->rule.memory_rate_mib_s = (unsigned) v;
                        break;
                case OPT_TICK:
                        if (parse_uint(optarg, 10000, &v) < 0 || v == 0)
                                return -EINVAL;
                        o->tick_ms = (unsigned) v;
                        break;
                case OPT_MOVE_SHARED:
                        o->move_shared = true;
                        break;
                case OPT_MIGRATE_ALL:
                        o->migrate_all = true;
                        break;
                case OPT_RESTORE_AFTER:
                        if (parse_uint(optarg, 3600 * 1000, &v) < 0)
                                return -EINVAL;
                        o->restore_after_ms = (long) v;
                        break;
                case OPT_DRY_RUN:
                        o->dry_run = true;
                        break;
                case 'h':
                        usage(stdout);
                        exit(0);
                default:
                        return -EINVAL;
                }
        }
        if (optind < argc || o->pid == 0)
                return -EINVAL;
        o->rule.control.name_globs = o->n_control_globs ? o->control_globs : NULL;
        o->rule.compute.name_globs = o->n_compute_globs ? o->compute_globs : NULL;
        if (o->n_accels + o->n_accel_pcis == 0)
                o->rule.accel_mode = TUNE_ACCEL_NONE;
        return 0;
}

/* ---- JSON helpers ---- */

static json_object *usage_json(const tune_numa_usage *u, const tune_cpuset *nodes) {
        json_object *o = json_object_new_object(), *per = json_object_new_object(), *anon = json_object_new_object();
        char key[16];

        for (unsigned n = 0; n < u->n_nodes; n++) {
                if (u->node_kib[n] == 0)
                        continue;
                snprintf(key, sizeof key, "%u", n);
                json_object_object_add(per, key, json_object_new_int64((int64_t) u->node_kib[n]));
                json_object_object_add(anon, key, json_object_new_int64((int64_t) u->node_anon_kib[n]));
        }
        json_object_object_add(o, "total_kib", json_object_new_int64((int64_t) u->total_kib));
        json_object_object_add(o, "anon_kib", json_object_new_int64((int64_t) u->anon_total_kib));
        json_object_object_add(o, "node_kib", per);
        json_object_object_add(o, "node_anon_kib", anon);
        if (nodes && !tune_cpuset_is_empty(nodes)) {
                json_object_object_add(o, "locality_pct", json_object_new_double(tune_numa_usage_locality(u, nodes, false)));
                json_object_object_add(o, "anon_locality_pct", json_object_new_double(tune_numa_usage_locality(u, nodes, true)));
        }
        return o;
}

static json_object *affinity_stats_json(const tune_affinity_stats *s, int r, uint64_t us) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "seen", json_object_new_int((int) s->seen));
        json_object_object_add(o, "set", json_object_new_int((int) s->set));
        json_object_object_add(o, "unchanged", json_object_new_int((int) s->unchanged));
        json_object_object_add(o, "skipped", json_object_new_int((int) s->skipped));
        json_object_object_add(o, "vanished", json_object_new_int((int) s->vanished));
        json_object_object_add(o, "failed", json_object_new_int((int) s->failed));
        json_object_object_add(o, "rounds", json_object_new_int((int) s->rounds));
        json_object_object_add(o, "error", json_object_new_string(r < 0 ? strerror(-r) : ""));
        json_object_object_add(o, "us", json_object_new_int64((int64_t) us));
        return o;
}

/* Every thread as the kernel sees it now: comm, role under the rule, Cpus_allowed_list. */
static json_object *threads_json(const tune_ctx *ctx, pid_t pid, const tune_policy_rule *rule) {
        json_object *a = json_object_new_array();
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        char path[96];

        if (tune_path(path, sizeof path, "/proc/%d/task", (int) pid) < 0 || tune_opendir(ctx, path, &d) < 0)
                return a;
        while ((de = readdir(d))) {
                _cleanup_free_ char *comm = NULL, *status = NULL;
                const char *val;
                size_t len;
                long tid;

                if (tune_parse_int(de->d_name, 1, INT32_MAX, &tid) < 0)
                        continue;
                json_object *t = json_object_new_object();
                json_object_object_add(t, "tid", json_object_new_int((int) tid));
                if (tune_path(path, sizeof path, "/proc/%d/task/%ld/comm", (int) pid, tid) >= 0 &&
                    tune_read_string(ctx, path, &comm) >= 0) {
                        json_object_object_add(t, "comm", json_object_new_string(comm));
                        json_object_object_add(t, "role", json_object_new_string(
                                tune_role_to_string(tune_thread_classify(rule, pid, (pid_t) tid, comm))));
                }
                if (tune_path(path, sizeof path, "/proc/%d/task/%ld/status", (int) pid, tid) >= 0 &&
                    tune_read_file(ctx, path, 0, &status, NULL) >= 0 &&
                    tune_find_key(status, "Cpus_allowed_list", &val, &len) >= 0)
                        json_object_object_add(t, "cpus_allowed", json_object_new_string_len(val, (int) len));
                json_object_array_add(a, t);
        }
        return a;
}

static int run(options *o, json_object *out) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_topology_freep) tune_topology *t = NULL;
        _cleanup_cpuset_ tune_cpuset all_nodes = {};
        tune_accels found = {};
        const tune_accel *chosen[ACCELS_MAX * 2];
        tune_accel by_pci[ACCELS_MAX] = {};
        unsigned n_chosen = 0;
        tune_plan placement = {};
        tune_plan_params params = { .housekeeping_cpus_per_node = o->housekeeping };
        tune_numa_usage before = {}, after = {};
        tune_affinity_originals originals = {};
        int r;

        r = tune_ctx_new(o->root, &ctx);
        if (r < 0)
                return r;
        r = tune_topology_load(ctx, &t);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < t->n_nodes; i++)
                if (tune_cpuset_add(&all_nodes, (unsigned) t->nodes[i].id) < 0)
                        return -ENOMEM;

        if (o->n_accels > 0) {
                r = tune_accels_discover(ctx, o->kinds, o->n_kinds, &found);
                if (r < 0)
                        return r;
                for (unsigned i = 0; i < o->n_overrides; i++) {
                        r = tune_accels_override_node(&found, t, o->overrides[i].pci, o->overrides[i].node);
                        if (r < 0 && r != -ENODEV)
                                goto finish;
                }
                for (unsigned i = 0; i < o->n_accels; i++) {
                        const tune_accel *a = tune_accels_find(&found, o->accels[i].kind, o->accels[i].index);
                        if (!a) {
                                fprintf(stderr, "place-pid: no accelerator %s:%d on this host\n", o->accels[i].kind, o->accels[i].index);
                                r = -ENODEV;
                                goto finish;
                        }
                        chosen[n_chosen++] = a;
                }
        }
        for (unsigned i = 0; i < o->n_accel_pcis; i++) {
                tune_pci_locality l;
                r = tune_pci_read_locality(ctx, o->accel_pcis[i], &l);
                if (r < 0) {
                        fprintf(stderr, "place-pid: cannot read PCI device %s: %s\n", o->accel_pcis[i], strerror(-r));
                        goto finish;
                }
                snprintf(by_pci[i].kind, sizeof by_pci[i].kind, "pci");
                memcpy(by_pci[i].pci, l.pci, sizeof by_pci[i].pci);
                by_pci[i].numa_node = l.numa_node;
                for (unsigned k = 0; k < o->n_overrides; k++)
                        if (streq(o->overrides[k].pci, l.pci)) {
                                by_pci[i].numa_node = o->overrides[k].node;
                                by_pci[i].numa_node_overridden = true;
                        }
                tune_pci_locality_done(&l);
                chosen[n_chosen++] = &by_pci[i];
        }

        tune_plan_request req = { .key = (uint64_t) o->pid, .rule = &o->rule, .accels = chosen, .n_accels = n_chosen };
        r = tune_plan_compute(t, &params, &req, 1, &placement);
        if (r < 0)
                goto finish;
        json_object *pj;
        r = tune_plan_to_json(&placement, &pj);
        if (r < 0)
                goto finish;
        json_object_object_add(out, "placement", pj);

        r = tune_numa_maps_read(ctx, o->pid, &before);
        if (r < 0)
                goto finish;
        json_object_object_add(out, "numa_before", usage_json(&before, &placement.mem_nodes));
        if (o->dry_run || placement.action != TUNE_PLAN_PLACE)
                goto finish;

        /* Threads. */
        tune_thread_target target = { .plan = &placement, .rule = &o->rule };
        tune_affinity_stats st = {};
        uint64_t t0 = now_us();
        r = tune_affinity_apply(ctx, NULL, o->pid, tune_thread_target_choose, &target, &originals, &st);
        json_object_object_add(out, "affinity", affinity_stats_json(&st, r, now_us() - t0));
        if (r < 0)
                goto finish;

        /* Memory, after the settle delay; threads born meanwhile are placed first (the
         * daemon gets FORK events for them). */
        if (!tune_cpuset_is_empty(&placement.mem_nodes)) {
                json_object *mig = json_object_new_object();
                uint64_t m0;

                json_object_object_add(out, "migration", mig);
                sleep_ms(o->rule.memory_settle_delay_ms);
                st = (tune_affinity_stats) {};
                t0 = now_us();
                r = tune_affinity_apply(ctx, NULL, o->pid, tune_thread_target_choose, &target, &originals, &st);
                json_object_object_add(out, "affinity_after_settle", affinity_stats_json(&st, r, now_us() - t0));
                if (r < 0)
                        goto finish;
                m0 = now_us();
                if (o->migrate_all || o->rule.memory_rate_mib_s == 0) {
                        long not_moved = tune_memmove_migrate_all(ctx, o->pid, &all_nodes, &placement.mem_nodes, NULL);
                        json_object_object_add(mig, "mode", json_object_new_string("migrate_pages"));
                        if (not_moved < 0) {
                                r = (int) not_moved;
                                goto finish;
                        }
                        json_object_object_add(mig, "not_moved", json_object_new_int64(not_moved));
                } else {
                        _cleanup_(tune_memmove_freep) tune_memmove *m = NULL;
                        tune_memmove_params mp = { .move_shared = o->move_shared };
                        uint64_t budget = (uint64_t) o->rule.memory_rate_mib_s * 1024 * o->tick_ms / 1000;
                        unsigned steps = 0;

                        json_object_object_add(mig, "mode", json_object_new_string("move_pages"));
                        r = tune_memmove_new(ctx, o->pid, &placement.mem_nodes, &mp, &m);
                        if (r < 0)
                                goto finish;
                        do {
                                if (steps > 0)
                                        sleep_ms(o->tick_ms);
                                r = tune_memmove_step(m, budget ? budget : 1);
                                steps++;
                        } while (r == 1);
                        const tune_memmove_stats *s = tune_memmove_get_stats(m);
                        json_object_object_add(mig, "steps", json_object_new_int((int) steps));
                        json_object_object_add(mig, "budget_kib_per_step", json_object_new_int64((int64_t) budget));
                        json_object_object_add(mig, "planned_kib", json_object_new_int64((int64_t) s->planned_kib));
                        json_object_object_add(mig, "vmas", json_object_new_int((int) s->vmas));
                        json_object_object_add(mig, "scanned", json_object_new_int64((int64_t) s->scanned));
                        json_object_object_add(mig, "on_target", json_object_new_int64((int64_t) s->on_target));
                        json_object_object_add(mig, "moved", json_object_new_int64((int64_t) s->moved));
                        json_object_object_add(mig, "moved_kib", json_object_new_int64((int64_t) s->moved_kib));
                        json_object_object_add(mig, "absent", json_object_new_int64((int64_t) s->absent));
                        json_object_object_add(mig, "hinted", json_object_new_int64((int64_t) s->hinted));
                        json_object_object_add(mig, "busy", json_object_new_int64((int64_t) s->busy));
                        json_object_object_add(mig, "unmovable", json_object_new_int64((int64_t) s->unmovable));
                        json_object_object_add(mig, "denied", json_object_new_int64((int64_t) s->denied));
                        json_object_object_add(mig, "target_full", json_object_new_int64((int64_t) s->target_full));
                        json_object_object_add(mig, "failed", json_object_new_int64((int64_t) s->failed));
                        json_object_object_add(mig, "other", json_object_new_int64((int64_t) s->other));
                        json_object_object_add(mig, "calls", json_object_new_int((int) s->calls));
                        json_object_object_add(mig, "not_moved", json_object_new_int64((int64_t) tune_memmove_stats_not_moved(s)));
                        if (r < 0)
                                goto finish;
                }
                json_object_object_add(mig, "ms", json_object_new_int64((int64_t) ((now_us() - m0) / 1000)));
                r = tune_numa_maps_read(ctx, o->pid, &after);
                if (r < 0)
                        goto finish;
                json_object_object_add(out, "numa_after", usage_json(&after, &placement.mem_nodes));
        }
        json_object_object_add(out, "threads", threads_json(ctx, o->pid, &o->rule));

        if (o->restore_after_ms >= 0) {
                sleep_ms((unsigned) o->restore_after_ms);
                st = (tune_affinity_stats) {};
                t0 = now_us();
                r = tune_affinity_restore(ctx, NULL, &originals, &st);
                json_object_object_add(out, "restore", affinity_stats_json(&st, r, now_us() - t0));
                json_object_object_add(out, "threads_after_restore", threads_json(ctx, o->pid, &o->rule));
        }
finish:
        tune_affinity_originals_done(&originals);
        tune_numa_usage_done(&before);
        tune_numa_usage_done(&after);
        tune_plan_done(&placement);
        tune_accels_done(&found);
        return r;
}

int main(int argc, char **argv) {
        options o = {};
        json_object *out;
        int r;

        if (parse_options(argc, argv, &o) < 0) {
                usage(stderr);
                return 2;
        }
        out = json_object_new_object();
        json_object_object_add(out, "pid", json_object_new_int((int) o.pid));
        r = run(&o, out);
        json_object_object_add(out, "error", json_object_new_string(r < 0 ? strerror(-r) : ""));
        puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(out);
        tune_cpuset_done(&o.rule.unattributed_nodes);
        tune_cpuset_done(&o.rule.unattributed_cpus);
        return r < 0 ? 1 : 0;
}
