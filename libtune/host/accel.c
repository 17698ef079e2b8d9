/* SPDX-License-Identifier: GPL-2.0-only */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/parse.h"

#define PCI_DEVICES "/sys/bus/pci/devices"

static const uint32_t ascend_vendors[] = { 0x19e5, 0x20c6, 0x203f, 0x20e9 };
static const uint32_t ascend_devices[] = { 0xd100, 0xd500, 0xd801, 0xd802, 0xd803, 0xd806 };

const char *tune_index_source_to_string(tune_index_source s) {
        switch (s) {
        case TUNE_INDEX_PCI_ORDER:
                return "pci-order";
        case TUNE_INDEX_ASCEND_DEV_ID:
                return "devdrv-dev_id";
        case TUNE_INDEX_NVIDIA_MINOR:
                return "nvidia-device-minor";
        case TUNE_INDEX_DRM_RENDER:
                return "drm-render-node";
        case TUNE_INDEX_ACCEL_CLASS:
                return "accel-class";
        }
        return "unknown";
}

void tune_pci_locality_done(tune_pci_locality *l) {
        tune_cpuset_done(&l->local_cpus);
}

static int read_hex_attr(const tune_ctx *ctx, const char *pci, const char *attr, uint32_t max, uint32_t *ret) {
        _cleanup_free_ char *s = NULL;
        char path[128];
        int r;

        r = tune_path(path, sizeof path, PCI_DEVICES "/%s/%s", pci, attr);
        if (r < 0)
                return r;
        r = tune_read_string(ctx, path, &s);
        if (r < 0)
                return r;
        return tune_parse_hex_u32(s, max, ret);
}

int tune_pci_read_locality(const tune_ctx *ctx, const char *pci, tune_pci_locality *ret) {
        tune_pci_locality l = { .numa_node = -1 };
        _cleanup_free_ char *s = NULL;
        char path[128];
        int r;

        if (tune_parse_pci_address(pci, l.pci) < 0)
                return -EINVAL;
        /* vendor/device may be missing in captures; 0 then means unknown. */
        if (read_hex_attr(ctx, l.pci, "vendor", 0xffff, &l.vendor) < 0)
                l.vendor = 0;
        if (read_hex_attr(ctx, l.pci, "device", 0xffff, &l.device) < 0)
                l.device = 0;
        r = tune_path(path, sizeof path, PCI_DEVICES "/%s", l.pci);
        if (r < 0)
                return r;
        if (!tune_exists(ctx, path))
                return -ENOENT;
        if (read_hex_attr(ctx, l.pci, "class", 0xffffff, &l.class_) < 0)
                l.class_ = 0;
        r = tune_path(path, sizeof path, PCI_DEVICES "/%s/numa_node", l.pci);
        if (r < 0)
                return r;
        if (tune_read_string(ctx, path, &s) >= 0) {
                long node;
                /* Anything but a sane node number means "unknown": never invent node 0. */
                if (tune_parse_int(s, -1, TUNE_CPU_MAX - 1, &node) >= 0)
                        l.numa_node = (int) node;
        }
        free(s);
        s = NULL;
        r = tune_path(path, sizeof path, PCI_DEVICES "/%s/local_cpulist", l.pci);
        if (r < 0)
                return r;
        if (tune_read_string(ctx, path, &s) >= 0)
                r = tune_cpuset_parse_list(&l.local_cpus, s);
        else {
                r = tune_path(path, sizeof path, PCI_DEVICES "/%s/local_cpus", l.pci);
                if (r >= 0 && (r = tune_read_string(ctx, path, &s)) >= 0)
                        r = tune_cpuset_parse_mask(&l.local_cpus, s);
        }
        if (r < 0 && r != -ENOENT) {
                tune_pci_locality_done(&l);
                return r;
        }
        *ret = l;
        return 0;
}

void tune_accels_done(tune_accels *a) {
        for (unsigned i = 0; i < a->n; i++)
                tune_cpuset_done(&a->items[i].local_cpus);
        free(a->items);
        a->items = NULL;
        a->n = 0;
}

static bool in_list(uint32_t v, const uint32_t *list, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (list[i] == v)
                        return true;
        return false;
}

/* Which kind a PCI function is, or NULL. */
static const char *classify(const tune_ctx *ctx, const tune_pci_locality *l, const tune_accel_kind *extra,
                            unsigned n_extra, const tune_accel_kind **ret_extra) {
        *ret_extra = NULL;
        /* Policy-declared kinds first: they may claim new parts of a known vendor. */
        for (unsigned i = 0; i < n_extra; i++)
                if (extra[i].vendor == l->vendor && (extra[i].device == TUNE_PCI_ANY_DEVICE || extra[i].device == l->device)) {
                        *ret_extra = &extra[i];
                        return extra[i].name;
                }
        if (in_list(l->vendor, ascend_vendors, ELEMENTSOF(ascend_vendors)) &&
            in_list(l->device, ascend_devices, ELEMENTSOF(ascend_devices)))
                return "ascend";
        /* NVIDIA: VGA (0x0300) or 3D controller (0x0302); not its audio/USB functions. */
        if ((l->vendor == 0x10de || l->vendor == 0) && (l->class_ >> 8 == 0x0300 || l->class_ >> 8 == 0x0302)) {
                char path[128];
                /* The driver's own list is decisive (and the only evidence when the PCI
                 * ids are unreadable). */
                if (l->vendor == 0x10de ||
                    (tune_path(path, sizeof path, "/proc/driver/nvidia/gpus/%s", l->pci) >= 0 && tune_exists(ctx, path)))
                        return "nvidia";
        }
        /* AMD GPUs: display (0x03xx) or processing accelerator (0x1200), and a ROCm stack
         * (/dev/kfd) so that a server's VGA chip is not taken for a compute device. */
        if (l->vendor == 0x1002 && (l->class_ >> 16 == 0x03 || l->class_ >> 8 == 0x1200) && tune_exists(ctx, "/dev/kfd"))
                return "amd";
        return NULL;
}

static int read_ascend_dev_id(const tune_ctx *ctx, const char *pci, int *ret) {
        _cleanup_free_ char *s = NULL;
        char path[160];
        long v;
        int r;

        r = tune_path(path, sizeof path, "/sys/bus/pci/drivers/devdrv_device_driver/%s/dev_id", pci);
        if (r < 0)
                return r;
        r = tune_read_string(ctx, path, &s);
        if (r < 0)
                return r;
        r = tune_parse_int(s, 0, 4095, &v);
        if (r < 0)
                return r;
        *ret = (int) v;
        return 0;
}

static int read_nvidia_info(const tune_ctx *ctx, tune_accel *a) {
        _cleanup_free_ char *text = NULL;
        char path[128];
        int r, minor;

        r = tune_path(path, sizeof path, "/proc/driver/nvidia/gpus/%s/information", a->pci);
        if (r < 0)
                return r;
        r = tune_read_file(ctx, path, 64 * 1024, &text, NULL);
        if (r < 0)
                return r;
        (void) tune_parse_nvidia_uuid(text, a->uuid, sizeof a->uuid);
        r = tune_parse_nvidia_minor(text, &minor);
        if (r < 0)
                return r;
        a->index = minor;
        return 0;
}

static int read_drm_render_index(const tune_ctx *ctx, const char *pci, int *ret) {
        _cleanup_closedir_ DIR *d = NULL;
        char path[128];
        struct dirent *de;
        int r;

        r = tune_path(path, sizeof path, PCI_DEVICES "/%s/drm", pci);
        if (r < 0)
                return r;
        r = tune_opendir(ctx, path, &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                long n;
                if (strncmp(de->d_name, "renderD", 7) == 0 && tune_parse_int(de->d_name + 7, 128, 255, &n) >= 0) {
                        *ret = (int) n - 128;
                        return 0;
                }
        }
        return -ENOENT;
}

/* The pattern's "%N" is replaced by the index; no printf on policy text. */
static void expand_pattern(const char *pattern, int index, char *buf, size_t size) {
        const char *at = strstr(pattern, "%N");
        if (!at) {
                snprintf(buf, size, "%s", pattern);
                return;
        }
        snprintf(buf, size, "%.*s%d%s", (int) (at - pattern), pattern, index, at + 2);
}

static int cmp_accel(const void *a, const void *b) {
        const tune_accel *x = a, *y = b;
        int c = strcmp(x->kind, y->kind);
        if (c)
                return c;
        if (x->index != y->index)
                return x->index < y->index ? -1 : 1;
        return strcmp(x->pci, y->pci);
}

static int cmp_pci(const void *a, const void *b) {
        const tune_accel *x = a, *y = b;
        int c = strcmp(x->kind, y->kind);
        return c ? c : strcmp(x->pci, y->pci);
}

static int push(tune_accels *list, unsigned *cap, tune_accel *a) {
        if (TUNE_GROW(list->items, *cap, list->n, 8) < 0)
                return -ENOMEM;
        list->items[list->n++] = *a;
        return 0;
}

/* An accelerator from a PCI function's locality; takes over l's CPU set. */
static tune_accel accel_from_locality(const char *kind, tune_pci_locality *l) {
        tune_accel a = {
                .index = -1,
                .index_source = TUNE_INDEX_PCI_ORDER,
                .vendor = l->vendor,
                .device = l->device,
                .class_ = l->class_,
                .numa_node = l->numa_node,
                .local_cpus = l->local_cpus,
        };
        snprintf(a.kind, sizeof a.kind, "%s", kind);
        memcpy(a.pci, l->pci, sizeof a.pci);
        l->local_cpus = (tune_cpuset){};
        return a;
}

static bool have_pci(const tune_accels *list, const char *pci) {
        for (unsigned i = 0; i < list->n; i++)
                if (streq(list->items[i].pci, pci))
                        return true;
        return false;
}

/* /sys/class/accel/accelN/device -> ../../../0000:xx:yy.z */
static int discover_accel_class(const tune_ctx *ctx, tune_accels *list, unsigned *cap) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r;

        if (tune_opendir(ctx, "/sys/class/accel", &d) < 0)
                return 0;
        while ((de = readdir(d))) {
                _cleanup_free_ char *link = NULL;
                tune_pci_locality l;
                tune_accel a = {};
                char path[300];
                long n;

                if (strncmp(de->d_name, "accel", 5) != 0 || tune_parse_int(de->d_name + 5, 0, 4095, &n) < 0)
                        continue;
                if (tune_path(path, sizeof path, "/sys/class/accel/%s/device", de->d_name) < 0 ||
                    tune_readlink(ctx, path, &link) < 0)
                        continue;
                const char *base = strrchr(link, '/');
                base = base ? base + 1 : link;
                if (tune_pci_read_locality(ctx, base, &l) < 0)
                        continue;
                if (have_pci(list, l.pci)) {
                        tune_pci_locality_done(&l);
                        continue;
                }
                a = accel_from_locality("accel", &l);
                a.index = (int) n;
                a.index_source = TUNE_INDEX_ACCEL_CLASS;
                snprintf(a.dev_path, sizeof a.dev_path, "/dev/accel/accel%ld", n);
                r = push(list, cap, &a);
                if (r < 0) {
                        tune_cpuset_done(&a.local_cpus);
                        return r;
                }
        }
        return 0;
}

int tune_accels_discover(const tune_ctx *ctx, const tune_accel_kind *extra, unsigned n_extra, tune_accels *ret) {
        _cleanup_closedir_ DIR *d = NULL;
        tune_accels list = {};
        unsigned cap = 0;
        struct dirent *de;
        int r;

        r = tune_opendir(ctx, PCI_DEVICES, &d);
        if (r == -ENOENT) {
                *ret = list; /* no PCI bus: no accelerators */
                return 0;
        }
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                const tune_accel_kind *x;
                tune_pci_locality l;
                const char *kind;
                tune_accel a;

                if (de->d_name[0] == '.' || tune_pci_read_locality(ctx, de->d_name, &l) < 0)
                        continue;
                kind = classify(ctx, &l, extra, n_extra, &x);
                if (!kind) {
                        tune_pci_locality_done(&l);
                        continue;
                }
                a = accel_from_locality(kind, &l);
                if (x)
                        ; /* PCI order */
                else if (streq(kind, "ascend") && read_ascend_dev_id(ctx, a.pci, &a.index) >= 0)
                        a.index_source = TUNE_INDEX_ASCEND_DEV_ID;
                else if (streq(kind, "nvidia") && read_nvidia_info(ctx, &a) >= 0)
                        a.index_source = TUNE_INDEX_NVIDIA_MINOR;
                else if (streq(kind, "amd") && read_drm_render_index(ctx, a.pci, &a.index) >= 0)
                        a.index_source = TUNE_INDEX_DRM_RENDER;
                r = push(&list, &cap, &a);
                if (r < 0) {
                        tune_cpuset_done(&a.local_cpus);
                        tune_accels_done(&list);
                        return r;
                }
        }
        r = discover_accel_class(ctx, &list, &cap);
        if (r < 0) {
                tune_accels_done(&list);
                return r;
        }

        /* Devices without a driver-given index are numbered in PCI address order within
         * their kind, after the highest driver-given index of that kind. */
        if (list.n > 1)
                qsort(list.items, list.n, sizeof(tune_accel), cmp_pci);
        for (unsigned i = 0; i < list.n;) {
                unsigned j = i;
                int next = 0;
                while (j < list.n && streq(list.items[j].kind, list.items[i].kind)) {
                        if (list.items[j].index >= next)
                                next = list.items[j].index + 1;
                        j++;
                }
                for (unsigned k = i; k < j; k++)
                        if (list.items[k].index < 0)
                                list.items[k].index = next++;
                i = j;
        }
        for (unsigned i = 0; i < list.n; i++) {
                tune_accel *a = &list.items[i];
                const tune_accel_kind *x = NULL;
                for (unsigned k = 0; k < n_extra; k++)
                        if (streq(extra[k].name, a->kind))
                                x = &extra[k];
                if (x && x->device_pattern)
                        expand_pattern(x->device_pattern, a->index, a->dev_path, sizeof a->dev_path);
                else if (streq(a->kind, "ascend"))
                        snprintf(a->dev_path, sizeof a->dev_path, "/dev/davinci%d", a->index);
                else if (streq(a->kind, "nvidia"))
                        snprintf(a->dev_path, sizeof a->dev_path, "/dev/nvidia%d", a->index);
                else if (streq(a->kind, "amd") && a->index_source == TUNE_INDEX_DRM_RENDER)
                        snprintf(a->dev_path, sizeof a->dev_path, "/dev/dri/renderD%d", a->index + 128);
        }
        if (list.n > 1)
                qsort(list.items, list.n, sizeof(tune_accel), cmp_accel);
        *ret = list;
        return 0;
}

int tune_accels_override_node(tune_accels *a, const tune_topology *t, const char *pci, int node) {
        char norm[13];
        const tune_node *n = tune_topology_node(t, node);

        if (tune_parse_pci_address(pci, norm) < 0)
                return -EINVAL;
        if (!n)
                return -ENXIO;
        for (unsigned i = 0; i < a->n; i++)
                if (streq(a->items[i].pci, norm)) {
                        int r = tune_cpuset_copy(&a->items[i].local_cpus, &n->cpus);
                        if (r < 0)
                                return r;
                        a->items[i].numa_node = node;
                        a->items[i].numa_node_overridden = true;
                        return 0;
                }
        return -ENODEV;
}

const tune_accel *tune_accels_find(const tune_accels *a, const char *kind, int index) {
        for (unsigned i = 0; i < a->n; i++)
                if (a->items[i].index == index && (!kind || streq(a->items[i].kind, kind)))
                        return &a->items[i];
        return NULL;
}
