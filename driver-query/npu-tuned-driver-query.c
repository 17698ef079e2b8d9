/* SPDX-License-Identifier: GPL-2.0-only */
/* npu-tuned-driver-query: ask the accelerator drivers' management libraries which host
 * processes use which device, print it, exit. The daemon runs it (daemon/watcher/
 * watcher-driver.c) so that a vendor library is never loaded into the daemon itself: a
 * hang, a crash or a leak there ends with this process.
 *
 * Output (include/npu-tuned/driver-procs.h): "via nvml" or "via dcmi", then "PID PCI"
 * lines; the PCI address as sysfs writes it. Exit status 0 when at least one library
 * answered, 2 when none was there or trusted (the reason on stderr).
 *
 * A library is loaded only from a file that root owns and nobody else may write, in
 * directories root owns and nobody else may write, all the way up (docs/placement.md,
 * "The driver"). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINES_MAX 1024 /* as the daemon's parser takes (TUNE_DRIVER_LINES_MAX) */

static unsigned lines;
static FILE *out; /* stdout as it was given: the libraries' own chatter goes to stderr */

static void print_pid(unsigned long pid, unsigned domain, unsigned bus, unsigned dev, unsigned fn) {
        if (lines >= LINES_MAX || pid == 0 || pid > 4194304 || domain > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
                return;
        fprintf(out, "%lu %04x:%02x:%02x.%x\n", pid, domain, bus, dev, fn);
        lines++;
}

/* Whether fd (a directory or the file) is root's and nobody else may write it. */
static int check_owner(int fd, const char *what, const char *path) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
                fprintf(stderr, "%s: %s is owned by uid %u with mode %04o, not root's alone: not loading it\n", path,
                        what, (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777));
                return -EPERM;
        }
        return 0;
}

/* Open path for dlopen() through /proc/self/fd, each component checked as it is
 * walked: no link followed after realpath() resolved them, so nothing can be swapped
 * in between the check and the load. */
static int open_trusted(const char *path) {
        char real[PATH_MAX], *p, *next;
        int dfd, fd, r;

        if (!realpath(path, real))
                return -errno;
        dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        r = check_owner(dfd, "a directory above it", path);
        for (p = real + 1; r >= 0; p = next + 1) {
                next = strchr(p, '/');
                if (!next)
                        break;
                *next = 0;
                fd = openat(dfd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                close(dfd);
                if (fd < 0)
                        return -errno;
                dfd = fd;
                r = check_owner(dfd, "a directory above it", path);
        }
        if (r < 0) {
                close(dfd);
                return r;
        }
        /* O_NONBLOCK: a FIFO planted there (by root: nobody else may) must not hang it. */
        fd = openat(dfd, p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        close(dfd);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || check_owner(fd, "the file", path) < 0) {
                close(fd);
                return -EPERM;
        }
        return fd;
}

static void *load(const char *const *dirs, const char *name) {
        char path[PATH_MAX], fdpath[64];
        void *h;
        int fd;

        for (size_t i = 0; dirs[i]; i++) {
                snprintf(path, sizeof path, "%s/%s", dirs[i], name);
                if (access(path, F_OK) < 0)
                        continue;
                fd = open_trusted(path);
                if (fd < 0)
                        continue; /* said why */
                snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
                h = dlopen(fdpath, RTLD_NOW | RTLD_LOCAL);
                if (!h) {
                        fprintf(stderr, "%s: %s\n", path, dlerror());
                        close(fd);
                        continue;
                }
                /* The descriptor stays open until exit: the loader knows a library by the
                 * name it was opened by, and a second "/proc/self/fd/N" with the number
                 * reused would be taken for the first library. */
                return h;
        }
        return NULL;
}

/* ---- NVML (libnvidia-ml.so.1): nvml.h of the CUDA toolkit ---- */

typedef struct nvml_process_info { /* nvmlProcessInfo_t (v2 and v3 have this layout) */
        unsigned pid;
        unsigned long long used_gpu_memory;
        unsigned gpu_instance_id;
        unsigned compute_instance_id;
} nvml_process_info;

typedef struct nvml_pci_info { /* nvmlPciInfo_t, as nvmlDeviceGetPciInfo_v3 fills it */
        char bus_id_legacy[16];
        unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
        char bus_id[32];
} nvml_pci_info;

#define NVML_MAX_PROCESSES 1024

static int query_nvml(void *h) {
        int (*init)(void) = (int (*)(void)) dlsym(h, "nvmlInit_v2");
        int (*shutdown)(void) = (int (*)(void)) dlsym(h, "nvmlShutdown");
        int (*count)(unsigned *) = (int (*)(unsigned *)) dlsym(h, "nvmlDeviceGetCount_v2");
        int (*handle)(unsigned, void **) = (int (*)(unsigned, void **)) dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
        int (*pci)(void *, nvml_pci_info *) = (int (*)(void *, nvml_pci_info *)) dlsym(h, "nvmlDeviceGetPciInfo_v3");
        int (*procs)(void *, unsigned *, nvml_process_info *) =
                (int (*)(void *, unsigned *, nvml_process_info *)) dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v3");
        static nvml_process_info info[NVML_MAX_PROCESSES];
        unsigned n = 0;

        if (!init || !shutdown || !count || !handle || !pci || !procs) {
                fprintf(stderr, "libnvidia-ml.so.1: a function is missing (a driver older than 510?)\n");
                return -ENOSYS;
        }
        int r = init();
        if (r != 0) {
                /* 999, unknown, or 12, no permission: a device cgroup that keeps /dev/nvidiactl shut
                 * (the systemd unit's DevicePolicy=closed without the DeviceAllow= docs/placement.md gives). */
                fprintf(stderr, "libnvidia-ml.so.1: nvmlInit_v2 failed (NVML error %d): can this process open "
                                "/dev/nvidiactl?\n", r);
                return -EIO;
        }
        fprintf(out, "via nvml\n");
        if (count(&n) != 0)
                n = 0;
        for (unsigned i = 0; i < n && i < 256; i++) {
                nvml_pci_info p = {};
                unsigned domain, bus, dev, fn, k = NVML_MAX_PROCESSES;
                void *d = NULL;

                if (handle(i, &d) != 0 || pci(d, &p) != 0)
                        continue;
                p.bus_id[sizeof p.bus_id - 1] = 0;
                /* "00000000:3B:00.0": an eight-digit domain; sysfs writes four. */
                if (sscanf(p.bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4)
                        continue;
                if (procs(d, &k, info) != 0) /* NVML_ERROR_INSUFFICIENT_SIZE: more than we take */
                        continue;
                for (unsigned j = 0; j < k && j < NVML_MAX_PROCESSES; j++)
                        print_pid(info[j].pid, domain, bus, dev, fn);
        }
        (void) shutdown();
        return 0;
}

/* ---- Ascend DCMI (libdcmi.so): dcmi_interface_api.h of the Ascend driver ---- */

struct dcmi_proc_mem_info {
        int proc_id; /* a host pid */
        unsigned long proc_mem_usage;
};

struct dcmi_pcie_info { /* dcmi_get_device_pcie_info: no domain */
        unsigned deviceid, venderid, subvenderid, subdeviceid, bdf_deviceid, bdf_busid, bdf_funcid;
};

struct dcmi_pcie_info_all { /* dcmi_get_device_pcie_info_v2 */
        unsigned venderid, subvenderid, deviceid, subdeviceid;
        int domain;
        unsigned bdf_busid, bdf_deviceid, bdf_funcid;
        unsigned char reserve[32];
};

#define DCMI_MAX_CARDS 64
#define DCMI_MAX_PROCESSES 32 /* the API's own bound; the buffer is larger in case one day it is not */

static int query_dcmi(void *h) {
        int (*init)(void) = (int (*)(void)) dlsym(h, "dcmi_init");
        int (*cards)(int *, int *, int) = (int (*)(int *, int *, int)) dlsym(h, "dcmi_get_card_num_list");
        int (*devices)(int, int *) = (int (*)(int, int *)) dlsym(h, "dcmi_get_device_num_in_card");
        int (*resources)(int, int, struct dcmi_proc_mem_info *, int *) =
                (int (*)(int, int, struct dcmi_proc_mem_info *, int *)) dlsym(h, "dcmi_get_device_resource_info");
        int (*pcie2)(int, int, struct dcmi_pcie_info_all *) =
                (int (*)(int, int, struct dcmi_pcie_info_all *)) dlsym(h, "dcmi_get_device_pcie_info_v2");
        int (*pcie1)(int, int, struct dcmi_pcie_info *) =
                (int (*)(int, int, struct dcmi_pcie_info *)) dlsym(h, "dcmi_get_device_pcie_info");
        int list[DCMI_MAX_CARDS], n_cards = 0;

        if (!init || !cards || !devices || !resources || (!pcie2 && !pcie1)) {
                fprintf(stderr, "libdcmi.so: a function is missing\n");
                return -ENOSYS;
        }
        int r = init();
        if (r != 0) {
                fprintf(stderr, "libdcmi.so: dcmi_init failed (DCMI error %d): can this process open "
                                "/dev/davinci_manager?\n", r);
                return -EIO;
        }
        fprintf(out, "via dcmi\n");
        if (cards(&n_cards, list, DCMI_MAX_CARDS) != 0 || n_cards < 0)
                n_cards = 0;
        for (int c = 0; c < n_cards && c < DCMI_MAX_CARDS; c++) {
                int n_dev = 0;
                if (devices(list[c], &n_dev) != 0)
                        continue;
                for (int d = 0; d < n_dev && d < 8; d++) {
                        struct dcmi_proc_mem_info info[4 * DCMI_MAX_PROCESSES] = {};
                        unsigned domain = 0, bus, dev, fn;
                        int k = 0;

                        if (pcie2) {
                                struct dcmi_pcie_info_all p = {};
                                if (pcie2(list[c], d, &p) != 0 || p.domain < 0)
                                        continue;
                                domain = (unsigned) p.domain;
                                bus = p.bdf_busid, dev = p.bdf_deviceid, fn = p.bdf_funcid;
                        } else {
                                /* An older driver: no domain, 0000 taken (docs/placement.md). */
                                struct dcmi_pcie_info p = {};
                                if (pcie1(list[c], d, &p) != 0)
                                        continue;
                                bus = p.bdf_busid, dev = p.bdf_deviceid, fn = p.bdf_funcid;
                        }
                        /* A chip that is no NPU (an MCU) has no processes: the call fails. */
                        if (resources(list[c], d, info, &k) != 0)
                                continue;
                        for (int j = 0; j < k && j < DCMI_MAX_PROCESSES; j++)
                                if (info[j].proc_id > 0)
                                        print_pid((unsigned long) info[j].proc_id, domain, bus, dev, fn);
                }
        }
        return 0;
}

static const char *const default_dirs[] = {
        "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib64",
        "/usr/local/Ascend/driver/lib64/driver", "/usr/local/Ascend/driver/lib64", NULL,
};

int main(int argc, char **argv) {
        const char *one[2] = {};
        const char *const *dirs = default_dirs;
        bool any = false;
        void *h;

        if (argc == 3 && strcmp(argv[1], "--library-dir") == 0 && argv[2][0] == '/') {
                one[0] = argv[2];
                dirs = one;
        } else if (argc != 1) {
                fprintf(stderr, "usage: %s [--library-dir ABSOLUTE-DIR]\n", argv[0]);
                return 1;
        }
        /* The libraries may print to stdout: that goes to stderr, and the lines through a
         * copy of the descriptor given as stdout. */
        int fd = dup(STDOUT_FILENO);
        if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0 || !(out = fdopen(fd, "w")))
                return 1;
        h = load(dirs, "libnvidia-ml.so.1");
        if (h && query_nvml(h) >= 0)
                any = true;
        fflush(out);
        h = load(dirs, "libdcmi.so");
        if (h && query_dcmi(h) >= 0)
                any = true;
        if (fflush(out) != 0)
                return 1;
        if (!any)
                fprintf(stderr, "no driver library answered\n");
        return any ? 0 : 2;
}
