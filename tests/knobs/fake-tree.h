/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* A small fake sysfs/procfs for the knob unit tests, built in a temporary directory.
 *
 * How it differs from the kernel (and how the tests compare): a written file holds what
 * was written, so a bracketed choice file ("always [madvise] never") reads back as the
 * bare word ("never") and a mask as the text written ("11" where the kernel pads to
 * "00000011"); the tests compare through tune_knob_parse_value()/value_equal() (selected
 * word; masks as sets). Root may write any file here, while sysfs refuses files without
 * write permission bits: such a file stands for a read-only (e.g. managed IRQ) knob. */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static inline void fake_mkdirs(const char *path) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", path);
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = 0;
                        (void) mkdir(buf, 0755);
                        *p = '/';
                }
        (void) mkdir(buf, 0755);
}

static inline void fake_write(const char *root, const char *rel, const char *text, mode_t mode) {
        char path[4096], dir[4096];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", root, rel);
        snprintf(dir, sizeof dir, "%s", path);
        *strrchr(dir, '/') = 0;
        fake_mkdirs(dir);
        (void) chmod(path, 0644);
        f = fopen(path, "w");
        if (!f) {
                fprintf(stderr, "cannot create %s: %m\n", path);
                abort();
        }
        fputs(text, f);
        fclose(f);
        chmod(path, mode);
}

/* The file's text (trailing newline kept); "" if absent. Caller frees. */
static inline char *fake_read(const char *root, const char *rel) {
        char path[4096], buf[65536];
        size_t n = 0;
        int fd;

        snprintf(path, sizeof path, "%s/%s", root, rel);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                ssize_t k;
                while ((k = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
                        n += (size_t) k;
                close(fd);
        }
        buf[n] = 0;
        return strdup(buf);
}

static inline char *fake_root_new(const char *name) {
        char tmpl[4096];
        const char *tmp = getenv("TMPDIR");
        snprintf(tmpl, sizeof tmpl, "%s/npu-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
        if (!mkdtemp(tmpl))
                abort();
        return strdup(tmpl);
}

static inline int fake_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) ftw;
        return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static inline void fake_rm(char *root) {
        if (root)
                (void) nftw(root, fake_rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(root);
}

/* The machine: CPUs 0-3, CPU 3 offline; node 0 = CPUs 0-1, node 1 = CPU 2 (3 offline). */
static inline void fake_machine(const char *root) {
        fake_write(root, "sys/devices/system/cpu/online", "0-2\n", 0644);
        fake_write(root, "sys/devices/system/cpu/present", "0-3\n", 0644);
        fake_write(root, "sys/devices/system/cpu/possible", "0-3\n", 0644);
        for (int c = 0; c < 4; c++) {
                char rel[128];
                snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/online", c);
                fake_write(root, rel, c == 3 ? "0\n" : "1\n", 0644);
        }
        fake_write(root, "sys/devices/system/node/online", "0-1\n", 0644);
        fake_write(root, "sys/devices/system/node/possible", "0-1\n", 0644);
        fake_write(root, "sys/devices/system/node/node0/cpulist", "0-1\n", 0644);
        fake_write(root, "sys/devices/system/node/node1/cpulist", "2\n", 0644);
        fake_write(root, "sys/devices/system/node/node0/meminfo",
                   "Node 0 MemTotal: 1048576 kB\nNode 0 MemFree: 524288 kB\n", 0644);
        fake_write(root, "sys/devices/system/node/node1/meminfo",
                   "Node 1 MemTotal: 1048576 kB\nNode 1 MemFree: 524288 kB\n", 0644);
        fake_write(root, "proc/meminfo", "MemTotal: 2097152 kB\nMemFree: 1048576 kB\n", 0644);
}

/* One Ascend NPU at pci on node. */
static inline void fake_accel(const char *root, const char *pci, int node, int dev_id) {
        char rel[256], text[32];
        snprintf(rel, sizeof rel, "sys/bus/pci/devices/%s/vendor", pci);
        fake_write(root, rel, "0x19e5\n", 0644);
        snprintf(rel, sizeof rel, "sys/bus/pci/devices/%s/device", pci);
        fake_write(root, rel, "0xd801\n", 0644);
        snprintf(rel, sizeof rel, "sys/bus/pci/devices/%s/class", pci);
        fake_write(root, rel, "0x120000\n", 0644);
        snprintf(rel, sizeof rel, "sys/bus/pci/devices/%s/numa_node", pci);
        snprintf(text, sizeof text, "%d\n", node);
        fake_write(root, rel, text, 0644);
        snprintf(rel, sizeof rel, "sys/bus/pci/drivers/devdrv_device_driver/%s/dev_id", pci);
        snprintf(text, sizeof text, "%d\n", dev_id);
        fake_write(root, rel, text, 0644);
}

/* Drop CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH/CAP_FOWNER from the effective set, so that
 * file modes bind this (root) process as they bind everyone else: an EACCES can then be
 * provoked. Call in a child. Returns 0, or -errno. */
static inline int fake_drop_dac_override(void) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[2] = {};

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        d[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH) | (1u << CAP_FOWNER));
        if (syscall(SYS_capset, &h, d) < 0)
                return -errno;
        return 0;
}

/* Set or clear the immutable attribute (ext4/xfs/btrfs; needs CAP_LINUX_IMMUTABLE): a
 * write to an immutable file fails with EPERM, as sysfs does for a knob the firmware
 * owns. Returns 0, or -errno (e.g. -ENOTTY on tmpfs). */
static inline int fake_set_immutable(const char *root, const char *rel, bool on) {
        char path[4096];
        int fd, flags, r = 0;

        snprintf(path, sizeof path, "%s/%s", root, rel);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
                r = -errno;
        else {
                flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
                if (ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0)
                        r = -errno;
        }
        close(fd);
        return r;
}
