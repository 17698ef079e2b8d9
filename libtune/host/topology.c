/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/cgroup-cpuset.h"
#include "npu-tuned/parse.h"
#include "npu-tuned/topology.h"

#define NODE_DIR "/sys/devices/system/node"
#define CPU_DIR "/sys/devices/system/cpu"

tune_topology *tune_topology_free(tune_topology *t) {
        if (!t)
                return NULL;
        for (unsigned i = 0; i < t->n_nodes; i++) {
                tune_cpuset_done(&t->nodes[i].cpus);
                free(t->nodes[i].distances);
        }
        free(t->nodes);
        free(t->cpus);
        tune_cpuset_done(&t->online);
        tune_cpuset_done(&t->usable);
        tune_cpuset_done(&t->mems_usable);
        free(t);
        return NULL;
}

static int scan_numbered_dirs(const tune_ctx *ctx, const char *dir, const char *prefix, tune_cpuset *ret);

static int read_cpuset_list(const tune_ctx *ctx, const char *path, tune_cpuset *ret) {
        _cleanup_free_ char *s = NULL;
        int r = tune_read_string(ctx, path, &s);
        if (r < 0)
                return r;
        return tune_cpuset_parse_list(ret, s);
}

static int read_node_memory(const tune_ctx *ctx, tune_node *n) {
        _cleanup_free_ char *text = NULL;
        char path[128];
        int r;

        r = tune_path(path, sizeof path, NODE_DIR "/node%d/meminfo", n->id);
        if (r < 0)
                return r;
        r = tune_read_file(ctx, path, 0, &text, NULL);
        if (r < 0)
                return r;
        return tune_parse_meminfo(text, &n->mem_total_kib, &n->mem_free_kib);
}

static int load_nodes(const tune_ctx *ctx, tune_topology *t) {
        _cleanup_cpuset_ tune_cpuset ids = {}, possible = {};
        unsigned n = 0;
        int r;

        r = read_cpuset_list(ctx, NODE_DIR "/online", &ids);
        if (r == -ENOENT) {
                /* Old kernels have node directories but no "online" list. */
                r = scan_numbered_dirs(ctx, NODE_DIR, "node", &ids);
                if (r >= 0 && tune_cpuset_is_empty(&ids))
                        r = -ENOENT;
        }
        if (r == -ENOENT) {
                /* Kernel without CONFIG_NUMA: one node holding every online CPU. */
                _cleanup_free_ char *text = NULL;
                t->numa_from_sysfs = false;
                t->nodes = calloc(1, sizeof(tune_node));
                if (!t->nodes)
                        return -ENOMEM;
                t->n_nodes = 1;
                r = tune_cpuset_copy(&t->nodes[0].cpus, &t->online);
                if (r < 0)
                        return r;
                r = tune_read_file(ctx, "/proc/meminfo", 0, &text, NULL);
                if (r >= 0)
                        r = tune_parse_meminfo(text, &t->nodes[0].mem_total_kib, &t->nodes[0].mem_free_kib);
                return r == -ENOENT ? 0 : r;
        }
        if (r < 0)
                return r;
        if (tune_cpuset_is_empty(&ids))
                return -EBADMSG;
        t->numa_from_sysfs = true;
        t->nodes = calloc(tune_cpuset_count(&ids), sizeof(tune_node));
        if (!t->nodes)
                return -ENOMEM;
        TUNE_CPUSET_FOREACH(id, &ids) {
                tune_node *node = &t->nodes[n++];
                char path[128];

                t->n_nodes = n;
                node->id = id;
                r = tune_path(path, sizeof path, NODE_DIR "/node%d/cpulist", id);
                if (r < 0)
                        return r;
                r = read_cpuset_list(ctx, path, &node->cpus);
                if (r == -ENOENT) {
                        /* Old kernels only have the mask form. */
                        _cleanup_free_ char *mask = NULL;
                        r = tune_path(path, sizeof path, NODE_DIR "/node%d/cpumap", id);
                        if (r < 0)
                                return r;
                        r = tune_read_string(ctx, path, &mask);
                        if (r >= 0)
                                r = tune_cpuset_parse_mask(&node->cpus, mask);
                }
                if (r < 0 && r != -ENOENT)
                        return r;
                /* Placement only ever wants CPUs that can run: the kernel keeps offline
                 * CPUs in some node lists. */
                tune_cpuset_and(&node->cpus, &t->online);
                r = read_node_memory(ctx, node);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        if (read_cpuset_list(ctx, NODE_DIR "/possible", &possible) < 0)
                tune_cpuset_clear(&possible);
        /* Distances: the kernel prints one entry per online node, in node order. A row of
         * the wrong length is firmware nonsense: keep the topology, drop the distances. */
        for (unsigned i = 0; i < t->n_nodes; i++) {
                _cleanup_free_ char *text = NULL;
                _cleanup_free_ int *row = NULL;
                char path[128];
                size_t got;

                r = tune_path(path, sizeof path, NODE_DIR "/node%d/distance", t->nodes[i].id);
                if (r < 0)
                        return r;
                if (tune_read_string(ctx, path, &text) < 0)
                        continue;
                row = calloc(t->n_nodes, sizeof(int));
                if (!row)
                        return -ENOMEM;
                r = tune_parse_distances(text, row, t->n_nodes, &got);
                if (r == -E2BIG && !tune_cpuset_is_empty(&possible) && tune_cpuset_count(&possible) <= 4096) {
                        /* Some kernels print a column per possible node (offline ones
                         * too): pick the online nodes' columns. */
                        _cleanup_free_ int *wide = calloc(tune_cpuset_count(&possible), sizeof(int));
                        size_t wgot, col = 0, k = 0;
                        if (!wide)
                                return -ENOMEM;
                        if (tune_parse_distances(text, wide, tune_cpuset_count(&possible), &wgot) < 0 ||
                            wgot != tune_cpuset_count(&possible))
                                continue;
                        TUNE_CPUSET_FOREACH(p, &possible) {
                                if (tune_cpuset_has(&ids, (unsigned) p))
                                        row[k++] = wide[col];
                                col++;
                        }
                        got = k;
                } else if (r < 0)
                        continue;
                if (got != t->n_nodes)
                        continue;
                t->nodes[i].distances = TAKE_PTR(row);
        }
        return 0;
}

static int read_cpu_int(const tune_ctx *ctx, int cpu, const char *file, long *ret) {
        char path[160];
        int r = tune_path(path, sizeof path, CPU_DIR "/cpu%d/%s", cpu, file);
        if (r < 0)
                return r;
        return tune_read_int(ctx, path, ret);
}

/* The <prefix>N directories that exist, for trees without the list files (old kernels). */
static int scan_numbered_dirs(const tune_ctx *ctx, const char *dir, const char *prefix, tune_cpuset *ret) {
        size_t plen = strlen(prefix);
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r;

        r = tune_opendir(ctx, dir, &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                const char *p = de->d_name;
                unsigned long n = 0;
                if (strncmp(p, prefix, plen) != 0 || !p[plen])
                        continue;
                for (p += plen; *p >= '0' && *p <= '9' && n < TUNE_CPU_MAX; p++)
                        n = n * 10 + (unsigned long) (*p - '0');
                if (*p || n >= TUNE_CPU_MAX)
                        continue;
                r = tune_cpuset_add(ret, (unsigned) n);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int load_cpus(const tune_ctx *ctx, tune_topology *t) {
        _cleanup_cpuset_ tune_cpuset all = {};
        _cleanup_cpuset_ tune_cpuset present = {};
        unsigned n = 0;
        int r;

        r = read_cpuset_list(ctx, CPU_DIR "/online", &t->online);
        if (r == -ENOENT) {
                /* Old kernels (and some captures) lack "online": every present CPU whose
                 * cpuN/online does not say 0 is online. */
                r = read_cpuset_list(ctx, CPU_DIR "/present", &present);
                if (r == -ENOENT)
                        r = read_cpuset_list(ctx, CPU_DIR "/possible", &present);
                if (r == -ENOENT)
                        r = scan_numbered_dirs(ctx, CPU_DIR, "cpu", &present);
                if (r < 0)
                        return r;
                TUNE_CPUSET_FOREACH(c, &present) {
                        long on;
                        if (read_cpu_int(ctx, c, "online", &on) >= 0 && on == 0)
                                continue;
                        r = tune_cpuset_add(&t->online, (unsigned) c);
                        if (r < 0)
                                return r;
                }
                tune_cpuset_clear(&present);
        } else if (r < 0)
                return r;
        if (tune_cpuset_is_empty(&t->online))
                return -EBADMSG;
        r = tune_cpuset_copy(&all, &t->online);
        if (r < 0)
                return r;
        /* Offline CPUs are listed by "present" (or "possible"); include those with a
         * sysfs directory so the report can say they exist but are offline. */
        if (read_cpuset_list(ctx, CPU_DIR "/present", &present) >= 0 ||
            read_cpuset_list(ctx, CPU_DIR "/possible", &present) >= 0)
                TUNE_CPUSET_FOREACH(c, &present) {
                        char path[64];
                        if (tune_path(path, sizeof path, CPU_DIR "/cpu%d", c) >= 0 && tune_exists(ctx, path)) {
                                r = tune_cpuset_add(&all, (unsigned) c);
                                if (r < 0)
                                        return r;
                        }
                }
        t->cpus = calloc(tune_cpuset_count(&all), sizeof(tune_cpu));
        if (!t->cpus)
                return -ENOMEM;
        TUNE_CPUSET_FOREACH(c, &all) {
                tune_cpu *cpu = &t->cpus[n++];
                long v;

                cpu->id = c;
                cpu->online = tune_cpuset_has(&t->online, (unsigned) c);
                cpu->package = read_cpu_int(ctx, c, "topology/physical_package_id", &v) >= 0 ? (int) v : -1;
                cpu->core = read_cpu_int(ctx, c, "topology/core_id", &v) >= 0 ? (int) v : -1;
                cpu->node = -1;
        }
        t->n_cpus = n;
        return 0;
}

/* A "Cpus_allowed_list:"-style key of proc/self/status as a set; -ENOENT when absent. */
static int status_list(const char *status, const char *key, tune_cpuset *ret) {
        const char *v;
        size_t len;
        char buf[4096];

        if (tune_find_key(status, key, &v, &len) < 0 || len >= sizeof buf)
                return -ENOENT;
        memcpy(buf, v, len);
        buf[len] = 0;
        return tune_cpuset_parse_list(ret, buf);
}

/* What this process may use: the online CPUs (every node) narrowed by its cgroup's cpuset
 * (v2 or v1) and by its own affinity and memory policy as proc/self/status shows them. */
static int compute_usable(const tune_ctx *ctx, tune_topology *t) {
        _cleanup_free_ char *status = NULL;
        _cleanup_(tune_cgroup_cpuset_done) tune_cgroup_cpuset cg = {};
        _cleanup_cpuset_ tune_cpuset allowed = {};
        int r;

        r = tune_cpuset_copy(&t->usable, &t->online);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < t->n_nodes; i++) {
                r = tune_cpuset_add(&t->mems_usable, (unsigned) t->nodes[i].id);
                if (r < 0)
                        return r;
        }
        r = tune_cgroup_cpuset_read(ctx, 0, &cg);
        if (r == -ENOMEM)
                return r;
        if (r >= 0) {
                t->cgroup_version = cg.version;
                if (!tune_cpuset_is_empty(&cg.cpus))
                        tune_cpuset_and(&t->usable, &cg.cpus);
                if (!tune_cpuset_is_empty(&cg.mems))
                        tune_cpuset_and(&t->mems_usable, &cg.mems);
        }
        if (tune_read_file(ctx, "/proc/self/status", 0, &status, NULL) >= 0) {
                if (status_list(status, "Cpus_allowed_list", &allowed) >= 0 && !tune_cpuset_is_empty(&allowed))
                        tune_cpuset_and(&t->usable, &allowed);
                if (t->numa_from_sysfs && status_list(status, "Mems_allowed_list", &allowed) >= 0 &&
                    !tune_cpuset_is_empty(&allowed))
                        tune_cpuset_and(&t->mems_usable, &allowed);
        }
        return 0;
}

/* NVIDIA's driver says which node holds a GPU's own memory ("Node: 255"). */
static int mark_accelerator_memory(const tune_ctx *ctx, tune_topology *t) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        if (tune_opendir(ctx, "/proc/driver/nvidia/gpus", &d) < 0)
                return 0;
        while ((de = readdir(d))) {
                _cleanup_free_ char *text = NULL;
                char path[128], buf[16];
                const char *v;
                size_t len;
                long node;

                if (de->d_name[0] == '.' ||
                    tune_path(path, sizeof path, "/proc/driver/nvidia/gpus/%s/numa_status", de->d_name) < 0 ||
                    tune_read_file(ctx, path, 16 * 1024, &text, NULL) < 0 ||
                    tune_find_key(text, "Node", &v, &len) < 0 || len == 0 || len >= sizeof buf)
                        continue;
                memcpy(buf, v, len);
                buf[len] = 0;
                if (tune_parse_int(buf, 0, TUNE_CPU_MAX - 1, &node) < 0)
                        continue;
                for (unsigned i = 0; i < t->n_nodes; i++)
                        if (t->nodes[i].id == node && tune_cpuset_is_empty(&t->nodes[i].cpus))
                                t->nodes[i].accelerator_memory = true;
        }
        return 0;
}

int tune_topology_load(const tune_ctx *ctx, tune_topology **ret) {
        _cleanup_(tune_topology_freep) tune_topology *t = NULL;
        int r;

        t = calloc(1, sizeof *t);
        if (!t)
                return -ENOMEM;
        r = load_cpus(ctx, t);
        if (r < 0)
                return r;
        r = load_nodes(ctx, t);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < t->n_nodes; i++)
                TUNE_CPUSET_FOREACH(c, &t->nodes[i].cpus) {
                        tune_cpu *cpu = (tune_cpu *) tune_topology_cpu(t, c);
                        if (cpu && cpu->node < 0)
                                cpu->node = t->nodes[i].id;
                }
        r = mark_accelerator_memory(ctx, t);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < t->n_nodes; i++)
                for (unsigned k = i + 1; k < t->n_nodes; k++)
                        if (tune_cpuset_overlaps(&t->nodes[i].cpus, &t->nodes[k].cpus))
                                t->nodes_overlap = true;
        r = compute_usable(ctx, t);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(t);
        return 0;
}

const tune_node *tune_topology_node(const tune_topology *t, int id) {
        for (unsigned i = 0; i < t->n_nodes; i++)
                if (t->nodes[i].id == id)
                        return &t->nodes[i];
        return NULL;
}

const tune_cpu *tune_topology_cpu(const tune_topology *t, int id) {
        unsigned lo = 0, hi = t->n_cpus;
        while (lo < hi) {
                unsigned mid = (lo + hi) / 2;
                if (t->cpus[mid].id == id)
                        return &t->cpus[mid];
                if (t->cpus[mid].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

int tune_topology_distance(const tune_topology *t, int from, int to) {
        const tune_node *a = tune_topology_node(t, from);
        if (!a || !a->distances)
                return -1;
        for (unsigned i = 0; i < t->n_nodes; i++)
                if (t->nodes[i].id == to)
                        return a->distances[i];
        return -1;
}

int tune_topology_refresh_memory(const tune_ctx *ctx, tune_topology *t) {
        if (!t->numa_from_sysfs)
                return 0;
        for (unsigned i = 0; i < t->n_nodes; i++) {
                int r = read_node_memory(ctx, &t->nodes[i]);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        return 0;
}
