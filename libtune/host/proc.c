/* SPDX-License-Identifier: GPL-2.0-only */
/* Root-resolved readers for /proc/PID. Bounded reads; the parsing is in proc-parse.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "npu-tuned/context.h"
#include "npu-tuned/macro.h"
#include "npu-tuned/parse.h"
#include "npu-tuned/proc.h"

/* statx() came with glibc 2.28 and getdents64() with 2.30 (Kylin V10 has 2.28, CentOS 7
 * 2.17); the system calls are older (statx: Linux 4.11, its struct in the kernel headers
 * of 4.11). Without statx (Linux < 4.11) the open-file scan finds no device: ENOSYS. */
#if defined(__GLIBC__) && !__GLIBC_PREREQ(2, 30)
#include <sys/syscall.h>
#define getdents64(fd, buf, n) syscall(SYS_getdents64, fd, buf, n)
#endif
#if defined(__GLIBC__) && !__GLIBC_PREREQ(2, 28)
#include <linux/stat.h>
#ifndef SYS_statx
#error "statx: kernel headers >= 4.11 are needed (SYS_statx, struct statx)"
#endif
#define statx(dfd, path, flags, mask, buf) ((int) syscall(SYS_statx, dfd, path, flags, mask, buf))
#endif

/* n bytes of s at p, if they fit before end; NULL stays NULL. Whole runs: a path is built
 * at every read of /proc/PID and for every thread placed, and a byte-at-a-time copy with a
 * bound check per byte was most of its cost. */
static inline __attribute__((always_inline)) char *put_n(char *p, const char *end, const char *s, size_t n) {
        if (!p || (size_t) (end - p) < n)
                return NULL;
        memcpy(p, s, n);
        return p + n;
}

#define put_literal(p, end, s) put_n(p, end, s, sizeof(s) - 1)

static inline __attribute__((always_inline)) char *put_id(char *p, const char *end, pid_t v) {
        char digits[TUNE_DECIMAL_MAX];
        const char *d = tune_format_decimal(digits, (uint64_t) v);

        return put_n(p, end, d, (size_t) (digits + TUNE_DECIMAL_MAX - 1 - d));
}

/* Inline into each of this file's readers, its file name and tid known there: one body for
 * all of them (and tune_proc_path()) cost an exe read, at every exec on the host, a dozen
 * instructions more than the one each reader had when it was theirs alone. */
static inline __attribute__((always_inline)) int pid_path(char *buf, size_t size, pid_t pid, pid_t tid,
                                                          const char *file) {
        const char *end = buf + size - 1;
        char *p;

        if (pid <= 0 || tid < 0 || size == 0)
                return -EINVAL;
        p = put_id(put_literal(buf, end, "/proc/"), end, pid);
        if (tid > 0)
                p = put_id(put_literal(p, end, "/task/"), end, tid);
        if (file)
                p = put_n(put_literal(p, end, "/"), end, file, strlen(file));
        if (!p)
                return -ENAMETOOLONG;
        *p = 0;
        return 0;
}

int tune_proc_path(char *buf, size_t size, pid_t pid, pid_t tid, const char *file) {
        return pid_path(buf, size, pid, tid, file);
}

/* /proc/PID/file, at most max bytes of it: what each reader of one such file starts with. */
static int read_pid_file(const tune_ctx *ctx, pid_t pid, const char *file, size_t max, char **ret, size_t *ret_len,
                         bool *ret_truncated) {
        char path[64];
        int r = pid_path(path, sizeof path, pid, 0, file);
        if (r < 0)
                return r;
        return tune_read_prefix(ctx, path, max, ret, ret_len, ret_truncated);
}

int tune_pidfd_exited(int pidfd) {
        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
        int r = poll(&pfd, 1, 0);

        return r < 0 ? negative_errno() : r > 0;
}

int tune_proc_read_stat(const tune_ctx *ctx, pid_t pid, tune_proc_stat *ret) {
        /* Read at every exec: on the stack (at most 4096 bytes of it, as always). */
        char path[64], text[4096 + 1];
        int r;

        r = pid_path(path, sizeof path, pid, 0, "stat");
        if (r < 0)
                return r;
        r = tune_read_prefix_into(ctx, path, text, sizeof text, NULL, NULL);
        if (r < 0)
                return r;
        return tune_parse_proc_stat(text, ret);
}

/* /proc/PID/status into buf, NUL-terminated: at most TUNE_STATUS_MAX bytes (it is a few
 * KiB; Groups can be long, and what is cut is not used). On the stack, not the heap: read
 * at every match with a user criterion, and only parsed. */
static int read_status(const tune_ctx *ctx, pid_t pid, char buf[static TUNE_STATUS_MAX + 1]) {
        char path[64];
        int r = pid_path(path, sizeof path, pid, 0, "status");

        return r < 0 ? r : tune_read_prefix_into(ctx, path, buf, TUNE_STATUS_MAX + 1, NULL, NULL);
}

int tune_proc_read_status_facts(const tune_ctx *ctx, pid_t pid, tune_status_facts *ret) {
        char text[TUNE_STATUS_MAX + 1];
        int r = read_status(ctx, pid, text);

        return r < 0 ? r : tune_parse_status_facts(text, ret);
}

int tune_proc_read_status(const tune_ctx *ctx, pid_t pid, tune_proc_status *ret) {
        char text[TUNE_STATUS_MAX + 1];
        int r = read_status(ctx, pid, text);

        return r < 0 ? r : tune_parse_proc_status(text, ret);
}

int tune_proc_read_children(const tune_ctx *ctx, pid_t pid, pid_t *ret, size_t max, size_t *ret_n) {
        _cleanup_free_ char *text = NULL;
        char path[80];
        size_t len;
        bool truncated;
        int r;

        r = pid_path(path, sizeof path, pid, pid, "children");
        if (r < 0)
                return r;
        /* 8 bytes a pid at most ("4194304 "): what max of them take, and no more. */
        r = tune_read_prefix(ctx, path, max * 8, &text, &len, &truncated);
        if (r < 0)
                return r;
        if (truncated) /* the last pid may be cut: drop it */
                for (; len > 0 && text[len - 1] != ' '; len--)
                        text[len - 1] = 0;
        return tune_parse_pid_list(text, max, ret, ret_n);
}

int tune_proc_read_creds(const tune_ctx *ctx, pid_t pid, tune_creds *ret) {
        char text[TUNE_STATUS_MAX + 1];
        int r = read_status(ctx, pid, text);

        return r < 0 ? r : tune_parse_creds(text, ret);
}

int tune_proc_read_comm(const tune_ctx *ctx, pid_t pid, pid_t tid, char ret[static TUNE_COMM_MAX]) {
        _cleanup_close_ int fd = -EBADF;
        char path[64], text[65];
        ssize_t n;
        int r;

        r = pid_path(path, sizeof path, pid, tid, "comm");
        if (r < 0)
                return r;
        /* Read for every thread of a process at its match, and on its events: one read()
         * into the stack, since the kernel hands a task's name over whole (at most 16
         * bytes); anything of 64 bytes or more is not a comm. */
        fd = tune_open(ctx, path, O_RDONLY | O_NOCTTY, 0);
        if (fd < 0)
                return fd;
        do
                n = read(fd, text, sizeof text - 1);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return negative_errno();
        if ((size_t) n >= sizeof text - 1 || memchr(text, 0, (size_t) n))
                return -EBADMSG;
        text[n] = 0;
        return tune_parse_comm(text, ret);
}

int tune_proc_read_cmdline(const tune_ctx *ctx, pid_t pid, char **ret) {
        _cleanup_free_ char *raw = NULL;
        char path[64];
        size_t len;
        int r;

        r = pid_path(path, sizeof path, pid, 0, "cmdline");
        if (r < 0)
                return r;
        /* Takes the process's mmap_lock: through the slow reader (context.h). */
        r = tune_read_slow(ctx, pid, path, TUNE_CMDLINE_MAX, &raw, &len, NULL);
        if (r < 0)
                return r;
        return tune_cmdline_join(raw, len, ret);
}

int tune_proc_read_environ(const tune_ctx *ctx, pid_t pid, char **ret, size_t *ret_len, bool *ret_truncated) {
        char path[64];
        bool truncated = false;
        int r;

        r = pid_path(path, sizeof path, pid, 0, "environ");
        if (r < 0)
                return r;
        r = tune_read_slow(ctx, pid, path, TUNE_ENVIRON_MAX, ret, ret_len, &truncated);
        if (r < 0)
                return r;
        if (ret_truncated)
                *ret_truncated = truncated;
        return 0;
}

int tune_proc_read_cmdline_environ(const tune_ctx *ctx, pid_t pid, char **ret_cmdline, int *ret_cmdline_r, char **ret,
                                   size_t *ret_len, bool *ret_truncated) {
        char cmdline_path[64], environ_path[64];
        tune_slow_file files[2];
        int r;

        r = pid_path(cmdline_path, sizeof cmdline_path, pid, 0, "cmdline");
        if (r >= 0)
                r = pid_path(environ_path, sizeof environ_path, pid, 0, "environ");
        if (r < 0) {
                *ret_cmdline_r = r;
                return r;
        }
        files[0] = (tune_slow_file) { .path = cmdline_path, .max = TUNE_CMDLINE_MAX };
        files[1] = (tune_slow_file) { .path = environ_path, .max = TUNE_ENVIRON_MAX };
        tune_read_slow_pair(ctx, pid, files);
        *ret_cmdline_r = files[0].r;
        if (files[0].r >= 0) {
                *ret_cmdline_r = tune_cmdline_join(files[0].text, files[0].len, ret_cmdline);
                free(files[0].text);
        }
        if (files[1].r < 0)
                return files[1].r;
        *ret = files[1].text;
        if (ret_len)
                *ret_len = files[1].len;
        if (ret_truncated)
                *ret_truncated = files[1].truncated;
        return 0;
}

int tune_proc_read_exe(const tune_ctx *ctx, pid_t pid, char **ret) {
        static const char deleted[] = " (deleted)";
        char path[64];
        char *s;
        size_t len;
        int r;

        r = pid_path(path, sizeof path, pid, 0, "exe");
        if (r < 0)
                return r;
        r = tune_readlink(ctx, path, &s);
        if (r < 0)
                return r;
        len = strlen(s);
        if (len > sizeof deleted - 1 && streq(s + len - (sizeof deleted - 1), deleted))
                s[len - (sizeof deleted - 1)] = 0;
        *ret = s;
        return 0;
}

int tune_proc_read_cgroup(const tune_ctx *ctx, pid_t pid, char **ret) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = read_pid_file(ctx, pid, "cgroup", TUNE_CGROUP_MAX, &text, &len, NULL);
        if (r < 0)
                return r;
        if (memchr(text, 0, len))
                return -EBADMSG;
        return tune_parse_proc_cgroup(text, ret);
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return x < y ? -1 : x > y;
}

/* Numeric entries of a directory below the root. */
/* The numeric entries of a /proc directory, sorted. getdents64() on a plain fd: a
 * managed process's task list is read at every match and walk, and opendir() costs three
 * system calls more (fstat, two fcntl) for nothing. */
static int list_numeric(const tune_ctx *ctx, const char *path, pid_t **ret, size_t *ret_n) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ pid_t *list = NULL;
        size_t n = 0, cap = 0;
        _Alignas(struct dirent64) char buf[8192];

        fd = tune_open(ctx, path, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return fd;
        for (;;) {
                ssize_t got = getdents64(fd, buf, sizeof buf);
                if (got < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (got == 0)
                        break;
                for (ssize_t off = 0; off < got;) {
                        const struct dirent64 *de = (const struct dirent64 *) (buf + off);
                        long v;

                        off += de->d_reclen;
                        if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
                            tune_parse_int(de->d_name, 1, INT_MAX, &v) < 0)
                                continue;
                        if (TUNE_GROW(list, cap, n, 64) < 0)
                                return -ENOMEM;
                        list[n++] = (pid_t) v;
                }
        }
        if (n > 1)
                qsort(list, n, sizeof *list, cmp_pid);
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

int tune_proc_list_tasks(const tune_ctx *ctx, pid_t pid, pid_t **ret, size_t *ret_n) {
        char path[64];
        int r;

        r = pid_path(path, sizeof path, pid, 0, "task");
        if (r < 0)
                return r;
        return list_numeric(ctx, path, ret, ret_n);
}

int tune_proc_list_pids(const tune_ctx *ctx, pid_t **ret, size_t *ret_n) {
        return list_numeric(ctx, "/proc", ret, ret_n);
}

static int cmp_dev(const void *a, const void *b) {
        dev_t x = *(const dev_t *) a, y = *(const dev_t *) b;
        return x < y ? -1 : x > y;
}

/* Whether /proc/PID/fdinfo/FD says the fd was opened O_PATH ("flags:" in octal). An
 * unreadable fdinfo (the fd is gone) counts as path-only: nothing is claimed from it. */
static bool fd_is_path_only(const tune_ctx *ctx, pid_t pid, const char *fd) {
        _cleanup_free_ char *text = NULL;
        char path[96];
        const char *p;
        unsigned long flags;

        if (tune_path(path, sizeof path, "/proc/%d/fdinfo/%s", (int) pid, fd) < 0 ||
            tune_read_prefix(ctx, path, 4096, &text, NULL, NULL) < 0)
                return true;
        if (startswith_lit(text, "flags:"))
                p = text + strlen("flags:");
        else {
                p = strstr(text, "\nflags:");
                if (!p)
                        return true;
                p += strlen("\nflags:");
        }
        if (sscanf(p, "%lo", &flags) != 1)
                return true;
        return (flags & O_PATH) != 0;
}

int tune_proc_list_char_devices(const tune_ctx *ctx, pid_t pid, dev_t **ret, size_t *ret_n) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ dev_t *list = NULL;
        size_t n = 0, cap = 0, seen = 0;
        struct dirent *de;
        char path[64];
        int r;

        if (!tune_ctx_is_live(ctx))
                return -EOPNOTSUPP;
        r = pid_path(path, sizeof path, pid, 0, "fd");
        if (r < 0)
                return r;
        r = tune_opendir(ctx, path, &d);
        if (r < 0)
                return r;
        while ((de = readdir(d)) && seen < TUNE_FD_SCAN_MAX) {
                struct statx stx;
                dev_t rdev;

                if (de->d_name[0] < '0' || de->d_name[0] > '9')
                        continue;
                seen++;
                /* Follows the magic link to the open file itself, wherever the process
                 * sees it (another mount namespace, a deleted node): no path lookup. And
                 * AT_STATX_DONT_SYNC takes the attributes the kernel has cached, never
                 * asking the filesystem: a FUSE (or NFS) server the process controls
                 * cannot make this wait (docs/trust.md). */
                if (statx(dirfd(d), de->d_name, AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT, STATX_TYPE, &stx) < 0 ||
                    !(stx.stx_mask & STATX_TYPE) || !S_ISCHR(stx.stx_mode))
                        continue;
                rdev = makedev(stx.stx_rdev_major, stx.stx_rdev_minor);
                /* An O_PATH fd is no open device: any user may hold one to a node they
                 * could never open (or one a FUSE server made up). */
                if (fd_is_path_only(ctx, pid, de->d_name))
                        continue;
                if (TUNE_GROW(list, cap, n, 16) < 0)
                        return -ENOMEM;
                list[n++] = rdev;
        }
        if (n > 1) {
                size_t o = 1;
                qsort(list, n, sizeof *list, cmp_dev);
                for (size_t i = 1; i < n; i++)
                        if (list[i] != list[o - 1])
                                list[o++] = list[i];
                n = o;
        }
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

int tune_read_rdev(const tune_ctx *ctx, const char *path, dev_t *ret) {
        struct stat st;
        const char *rel = path;

        while (*rel == '/')
                rel++;
        if (!*rel)
                return -EINVAL;
        if (fstatat(tune_ctx_root_fd(ctx), rel, &st, 0) < 0)
                return negative_errno();
        if (!S_ISCHR(st.st_mode))
                return -ENOTTY;
        *ret = st.st_rdev;
        return 0;
}

int tune_proc_read_visibility(const tune_ctx *ctx, tune_proc_visibility *ret) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        /* Bounded like any /proc read; the mount table is root's, and what is cut past
         * 1 MiB would only be mounts made later than /proc. */
        r = tune_read_prefix(ctx, "/proc/self/mountinfo", 1024 * 1024, &text, &len, NULL);
        if (r == -ENOENT) {
                *ret = (tune_proc_visibility) { .hidepid = TUNE_PROC_HIDEPID_OFF };
                return 0;
        }
        if (r < 0)
                return r;
        return tune_parse_proc_visibility(text, ret);
}
