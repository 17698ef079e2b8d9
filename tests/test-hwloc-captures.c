/* SPDX-License-Identifier: GPL-2.0-only */
/* Real machines: run libtune's discovery on every sysfs capture of hwloc's test corpus
 * ($NPU_SHARED_DIR/fixtures/hwloc-linux/NAME.tar.bz2, set by tests/meson.build) and
 * compare with what hwloc itself (the library behind lstopo) reads from the same root:
 *   - the set of NUMA node numbers, each node's CPUs and its memory size;
 *   - the online CPUs and the usable (cgroup-allowed) CPUs;
 *   - for every PCI function: its local CPUs (hwloc: the cpuset of the non-I/O object it
 *     is attached to) and its NUMA node where hwloc attaches it below exactly one node.
 * Where hwloc and the kernel's files disagree, KNOWN_DIFFERENCES says why and the test
 * asserts that exact difference, so a change on either side shows up. */
#include <dirent.h>
#include <errno.h>
#include <hwloc.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/context.h"
#include "npu-tuned/topology.h"

extern char **environ;

typedef struct known_difference {
        const char *capture;
        const char *what; /* "nodes" or a PCI address */
        const char *why;
        unsigned hwloc_before; /* only with a hwloc whose API version is below this (0: any) */
} known_difference;

static const known_difference KNOWN_DIFFERENCES[] = {
        { "8em64t-2s2ca2c-buggynuma", "nodes",
          "the kernel lists 8 nodes that each hold every CPU; hwloc discards such NUMA information "
          "as buggy and shows one node. npu-tuned reports the kernel's nodes and flags them as "
          "overlapping (tune_topology.nodes_overlap; --print-topology warns)." },
        { "32em64t-2n8c+dax+nvme+mic+dimms", "0000:00:02.0",
          "the kernel's local_cpus for this one function says CPUs 0-3 (numa_node -1) while the rest "
          "of bus 00 says 0-7; hwloc gives every function below a host bridge the bridge's locality. "
          "npu-tuned reports the function's own file: that is what the kernel says about it." },
        { "8em64t-2s2ca2c-buggynuma", "mems_usable",
          "hwloc shows one node (see \"nodes\"), so its allowed nodeset is {0}; the kernel's 8 nodes are all allowed." },
        { "nvidiagpunumanodes", "usable",
          "the process is in the v1 cpuset /jjh whose cpuset.cpus is 0-175 but cpuset.effective_cpus 0-87 "
          "(its parent lost CPUs); hwloc reads the configured cpuset.cpus, npu-tuned the effective set the kernel "
          "enforces: 0-87 of the online 0-15,88-103." },
        { "nvidiagpunumanodes", "mems_usable",
          "the same cgroup: cpuset.mems 0,8,250-255 configured, cpuset.effective_mems 0 enforced." },
        /* hwloc learnt an offline node 0 in 2.5.0 (its NEWS); Debian 11 and other older
         * distributions ship 2.4, which puts the online CPUs of node 1 in a node 0. */
        { "offline-cpu0-node0", "nodes", "hwloc before 2.5 does not support NUMA node 0 being offline", 0x00020500 },
        { "offline-cpu0-node0", "mems_usable", "hwloc before 2.5 does not support NUMA node 0 being offline",
          0x00020500 },
};

/* What npu-tuned must report for a capture whatever hwloc says (the facts). */
static const struct {
        const char *capture, *usable, *mems_usable;
} EXPECTED_USABLE[] = {
        { "8em64t-2s2ca2c-buggynuma", "0-7", "0-7" },
        { "nvidiagpunumanodes", "0-15", "0" },
        { "32amd64-4s2n4c-cgroup2", "0-5", "0-5" },
};

static int checked, differences, failures;

static const char *known(const char *capture, const char *what) {
        for (size_t i = 0; i < ELEMENTSOF(KNOWN_DIFFERENCES); i++)
                if (streq(KNOWN_DIFFERENCES[i].capture, capture) && streq(KNOWN_DIFFERENCES[i].what, what) &&
                    (KNOWN_DIFFERENCES[i].hwloc_before == 0 || hwloc_get_api_version() < KNOWN_DIFFERENCES[i].hwloc_before))
                        return KNOWN_DIFFERENCES[i].why;
        return NULL;
}

static int bitmap_to_cpuset(hwloc_const_bitmap_t b, tune_cpuset *ret) {
        _cleanup_free_ char *s = NULL;
        if (hwloc_bitmap_list_asprintf(&s, b) < 0)
                return -ENOMEM;
        return tune_cpuset_parse_list(ret, s);
}

static char *fmt(const tune_cpuset *s) {
        char *f = NULL;
        if (tune_cpuset_format_list(s, &f) < 0)
                return strdup("?");
        return f;
}

static void report(const char *capture, const char *what, const char *ours, const char *theirs) {
        const char *why = known(capture, what);
        if (why) {
                printf("  %s: %s differs as expected (ours %s, hwloc %s): %s\n", capture, what, ours, theirs, why);
                differences++;
        } else {
                printf("FAIL %s: %s: npu-tuned %s, hwloc %s\n", capture, what, ours, theirs);
                failures++;
        }
}

static int run(char *const argv[]) {
        pid_t pid;
        int status;
        if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0)
                return -errno;
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

static void compare_capture(const char *name, const char *root) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_topology_freep) tune_topology *t = NULL;
        hwloc_topology_t topo;
        hwloc_obj_t obj;
        int r, n;

        r = tune_ctx_new(root, &ctx);
        if (r >= 0)
                r = tune_topology_load(ctx, &t);
        if (r < 0) {
                printf("FAIL %s: libtune cannot read it: %s\n", name, strerror(-r));
                failures++;
                return;
        }
        setenv("HWLOC_FSROOT", root, 1);
        setenv("HWLOC_COMPONENTS", "linux,stop", 1);
        setenv("HWLOC_SHOW_ERRORS", "none", 1);
        hwloc_topology_init(&topo);
        hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
        hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
        if (hwloc_topology_load(topo) < 0) {
                printf("FAIL %s: hwloc cannot load it\n", name);
                failures++;
                hwloc_topology_destroy(topo);
                return;
        }

        /* Nodes: hwloc shows the CPU-less memory nodes too (GPU memory on POWER9). */
        /* hwloc hides NVIDIA GPU memory nodes by default; npu-tuned keeps them, flagged
         * accelerator_memory, so compare the host's nodes and check the flags separately. */
        unsigned host_nodes = 0, accel_nodes = 0;
        for (unsigned i = 0; i < t->n_nodes; i++) {
                if (t->nodes[i].accelerator_memory)
                        accel_nodes++;
                else
                        host_nodes++;
        }
        if (accel_nodes)
                printf("  %s: %u NVIDIA GPU memory node(s) flagged accelerator_memory (hwloc hides them)\n", name, accel_nodes);
        n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
        bool nodes_ok = (unsigned) n == host_nodes;
        char ours[4096] = "", theirs[4096] = "";
        for (unsigned i = 0; i < t->n_nodes; i++) {
                if (t->nodes[i].accelerator_memory)
                        continue;
                _cleanup_free_ char *c = fmt(&t->nodes[i].cpus);
                size_t l = strlen(ours);
                snprintf(ours + l, sizeof ours - l, "%s%d:[%s]", i ? " " : "", t->nodes[i].id, c);
        }
        for (int i = 0; i < n; i++) {
                _cleanup_cpuset_ tune_cpuset cs = {};
                _cleanup_free_ char *c = NULL;
                obj = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned) i);
                bitmap_to_cpuset(obj->cpuset, &cs);
                c = fmt(&cs);
                size_t l = strlen(theirs);
                snprintf(theirs + l, sizeof theirs - l, "%s%u:[%s]", i ? " " : "", obj->os_index, c);
                const tune_node *node = tune_topology_node(t, (int) obj->os_index);
                if (!node || !tune_cpuset_equal(&node->cpus, &cs))
                        nodes_ok = false;
                /* hwloc reports local memory in bytes from the same meminfo. */
                else if (obj->attr->numanode.local_memory != node->mem_total_kib * 1024) {
                        printf("FAIL %s: node %u memory: npu-tuned %llu KiB, hwloc %llu bytes\n", name, obj->os_index,
                               (unsigned long long) node->mem_total_kib, (unsigned long long) obj->attr->numanode.local_memory);
                        failures++;
                }
        }
        checked++;
        if (!nodes_ok)
                report(name, "nodes", ours, theirs);
        else if (known(name, "nodes")) {
                printf("FAIL %s: expected a difference in nodes, found none\n", name);
                failures++;
        }
        /* The one capture whose kernel nodes overlap (see KNOWN_DIFFERENCES). */
        if (t->nodes_overlap != streq(name, "8em64t-2s2ca2c-buggynuma")) {
                printf("FAIL %s: nodes_overlap is %d\n", name, t->nodes_overlap);
                failures++;
        }

        /* CPUs: online = hwloc's topology cpuset; usable = hwloc's allowed cpuset. */
        {
                _cleanup_cpuset_ tune_cpuset on = {}, al = {};
                bitmap_to_cpuset(hwloc_topology_get_topology_cpuset(topo), &on);
                bitmap_to_cpuset(hwloc_topology_get_allowed_cpuset(topo), &al);
                checked += 2;
                if (!tune_cpuset_equal(&on, &t->online)) {
                        _cleanup_free_ char *a = fmt(&t->online), *b = fmt(&on);
                        report(name, "online", a, b);
                }
                if (!tune_cpuset_equal(&al, &t->usable)) {
                        _cleanup_free_ char *a = fmt(&t->usable), *b = fmt(&al);
                        report(name, "usable", a, b);
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(EXPECTED_USABLE); i++) {
                _cleanup_free_ char *u = NULL, *m = NULL;
                if (!streq(EXPECTED_USABLE[i].capture, name))
                        continue;
                u = fmt(&t->usable);
                m = fmt(&t->mems_usable);
                checked++;
                if (!streq(u, EXPECTED_USABLE[i].usable) || !streq(m, EXPECTED_USABLE[i].mems_usable)) {
                        printf("FAIL %s: usable %s mems_usable %s, want %s and %s\n", name, u, m,
                               EXPECTED_USABLE[i].usable, EXPECTED_USABLE[i].mems_usable);
                        failures++;
                }
        }
        /* Memory nodes: mems_usable = hwloc's allowed nodeset (cpuset.mems.effective). */
        {
                _cleanup_cpuset_ tune_cpuset al = {};
                bitmap_to_cpuset(hwloc_topology_get_allowed_nodeset(topo), &al);
                checked++;
                if (!tune_cpuset_equal(&al, &t->mems_usable)) {
                        _cleanup_free_ char *a = fmt(&t->mems_usable), *b = fmt(&al);
                        report(name, "mems_usable", a, b);
                }
        }

        /* PCI functions. */
        for (obj = hwloc_get_next_pcidev(topo, NULL); obj; obj = hwloc_get_next_pcidev(topo, obj)) {
                tune_pci_locality loc;
                char bdf[32];
                hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, obj);
                _cleanup_cpuset_ tune_cpuset theirs_cpus = {};

                snprintf(bdf, sizeof bdf, "%04x:%02x:%02x.%01x", obj->attr->pcidev.domain, obj->attr->pcidev.bus,
                         obj->attr->pcidev.dev, obj->attr->pcidev.func);
                if (tune_pci_read_locality(ctx, bdf, &loc) < 0)
                        continue; /* hwloc also lists bridges it found through other files */
                bitmap_to_cpuset(anc->cpuset, &theirs_cpus);
                checked++;
                /* The kernel's local_cpus may name offline CPUs: compare what can run. */
                tune_cpuset_and(&loc.local_cpus, &t->online);
                if (tune_cpuset_is_empty(&loc.local_cpus))
                        tune_cpuset_copy(&loc.local_cpus, &t->online);
                if (!tune_cpuset_equal(&loc.local_cpus, &theirs_cpus)) {
                        _cleanup_free_ char *a = fmt(&loc.local_cpus), *b = fmt(&theirs_cpus);
                        report(name, bdf, a, b);
                }
                /* NUMA node: when hwloc attaches it below exactly one node. */
                if (anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1 && loc.numa_node >= 0) {
                        int hn = hwloc_bitmap_first(anc->nodeset);
                        checked++;
                        if (hn != loc.numa_node) {
                                char a[16], b[16];
                                snprintf(a, sizeof a, "node %d", loc.numa_node);
                                snprintf(b, sizeof b, "node %d", hn);
                                report(name, bdf, a, b);
                        }
                }
                tune_pci_locality_done(&loc);
        }
        hwloc_topology_destroy(topo);

        /* Accelerators found, for the log. */
        tune_accels a = {};
        if (tune_accels_discover(ctx, NULL, 0, &a) >= 0) {
                for (unsigned i = 0; i < a.n; i++)
                        printf("  %s: %s %d at %s, node %d\n", name, a.items[i].kind, a.items[i].index, a.items[i].pci,
                               a.items[i].numa_node);
                tune_accels_done(&a);
        }
        if (streq(name, "nvidiagpunumanodes") && accel_nodes != 6) {
                printf("FAIL %s: expected the 6 V100 memory nodes flagged, got %u\n", name, accel_nodes);
                failures++;
        }
        printf("ok %s: %u nodes\n", name, t->n_nodes);
}

int main(void) {
        const char *shared = getenv("NPU_SHARED_DIR");
        char dir[PATH_MAX], tmp[] = "/tmp/npu-tuned-captures-XXXXXX";
        struct dirent **list;
        int n;

        if (!shared)
                shared = "../shared";
        snprintf(dir, sizeof dir, "%s/fixtures/hwloc-linux", shared);
        n = scandir(dir, &list, NULL, alphasort);
        if (n < 0) {
                /* The corpus lives beside the source tree, not in it: a tarball's or a package
                 * build's tree has none, and nothing here can be compared without it. */
                printf("SKIP: no capture corpus at %s (set NPU_SHARED_DIR to the folder holding "
                       "fixtures/hwloc-linux): %m\n", dir);
                return 77;
        }
        if (!mkdtemp(tmp))
                return 1;
        for (int i = 0; i < n; i++) {
                const char *f = list[i]->d_name;
                size_t l = strlen(f);
                if (l > 8 && streq(f + l - 8, ".tar.bz2")) {
                        char tar[PATH_MAX], out[PATH_MAX], name[256];
                        snprintf(name, sizeof name, "%.*s", (int) (l - 8), f);
                        if (tune_path(tar, sizeof tar, "%s/%s", dir, f) < 0 ||
                            tune_path(out, sizeof out, "%s/%s", tmp, name) < 0)
                                return 1;
                        mkdir(out, 0755);
                        char a0[] = "tar", a1[] = "-xjf", a3[] = "-C";
                        char *argv[] = { a0, a1, tar, a3, out, NULL };
                        if (run(argv) < 0) {
                                printf("FAIL %s: cannot unpack\n", name);
                                failures++;
                                continue;
                        }
                        /* Each tarball holds one top directory (its name may differ). */
                        DIR *d = opendir(out);
                        struct dirent *de;
                        char root[PATH_MAX] = "";
                        while (d && (de = readdir(d)))
                                if (de->d_name[0] != '.')
                                        (void) tune_path(root, sizeof root, "%s/%s", out, de->d_name);
                        if (d)
                                closedir(d);
                        compare_capture(name, root);
                }
                free(list[i]);
        }
        free(list);
        char r0[] = "rm", r1[] = "-rf";
        char *rm[] = { r0, r1, tmp, NULL };
        run(rm);
        printf("%d comparisons, %d known differences, %d failures\n", checked, differences, failures);
        return failures ? 1 : 0;
}
