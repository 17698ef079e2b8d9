/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
/* openat2 and its struct came with Linux 5.6's headers; the older ones of openEuler 20.03,
 * Kylin V10 or CentOS 7 lack them. The daemon then falls back at run time anyway
 * (open_in_root()), so declaring them here costs nothing where the kernel has it. */
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#else
struct open_how {
        uint64_t flags;
        uint64_t mode;
        uint64_t resolve;
};
#define RESOLVE_IN_ROOT 0x10
#endif
#ifndef SYS_openat2
#define SYS_openat2 437 /* the same number on every architecture */
#endif
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npu-tuned/context.h"

struct tune_ctx {
        char *root;
        int root_fd;
        bool live;
        tune_slow_read_fn slow_read;
        tune_slow_read_pair_fn slow_read_pair;
        void *slow_read_userdata;
};

int tune_ctx_new(const char *root, tune_ctx **ret) {
        _cleanup_free_ char *canon = NULL;
        tune_ctx *ctx;
        int fd;

        if (!root || !*root)
                root = "/";
        canon = realpath(root, NULL);
        if (!canon)
                return negative_errno();
        fd = open(canon, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        ctx = calloc(1, sizeof *ctx);
        if (!ctx) {
                close(fd);
                return -ENOMEM;
        }
        ctx->root = TAKE_PTR(canon);
        ctx->root_fd = fd;
        ctx->live = streq(ctx->root, "/");
        *ret = ctx;
        return 0;
}

tune_ctx *tune_ctx_free(tune_ctx *ctx) {
        if (!ctx)
                return NULL;
        if (ctx->root_fd >= 0)
                close(ctx->root_fd);
        free(ctx->root);
        free(ctx);
        return NULL;
}

const char *tune_ctx_root(const tune_ctx *ctx) {
        return ctx->root;
}

bool tune_ctx_is_live(const tune_ctx *ctx) {
        return ctx->live;
}

int tune_ctx_root_fd(const tune_ctx *ctx) {
        return ctx->root_fd;
}

static const char *relative(const char *path) {
        while (*path == '/')
                path++;
        return *path ? path : ".";
}

/* Enough that a rename storm on a 2-CPU machine never wins (tests/test-root-resolve-race.sh
 * makes it fail most runs without the retry); small enough that a walk can never spin. */
#define OPENAT2_EAGAIN_RETRIES 64
/* Symlinks followed in one walk, as the kernel's MAXSYMLINKS. */
#define IN_ROOT_LINKS_MAX 40

/* Whether fd is the root directory itself (its ".." must stay there). */
static bool is_root(int fd, const struct stat *root) {
        struct stat st;
        return fstat(fd, &st) >= 0 && st.st_dev == root->st_dev && st.st_ino == root->st_ino;
}

/* RESOLVE_IN_ROOT done by hand, for kernels without openat2 (before 5.6): one component
 * at a time with O_NOFOLLOW, each symlink read and walked again from the root when it is
 * absolute, ".." at the root staying there. Without it the fallback was a plain openat(),
 * and a symlink in a capture or fake tree could make the daemon read or write the host's
 * files. Races with renames inside the tree are the tree owner's problem, as the tree is
 * given by --root (a test's or root's): what cannot happen is that a link escapes. */
static int open_in_root(int root_fd, const char *path, int flags, mode_t mode) {
        _cleanup_free_ char *todo = strdup(path);
        _cleanup_close_ int cur = -EBADF;
        struct stat root_st;
        unsigned links = 0;
        char *p;

        if (!todo)
                return -ENOMEM;
        if (fstat(root_fd, &root_st) < 0)
                return negative_errno();
        cur = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return negative_errno();
        for (p = todo;;) {
                char *comp, *end;
                bool last;
                struct stat st;
                int fd;

                while (*p == '/')
                        p++;
                if (!*p) /* "/" or a path ending in "..": the directory reached */
                        return (fd = openat(cur, ".", flags | O_CLOEXEC, mode)) < 0 ? negative_errno() : fd;
                comp = p;
                end = strchrnul(p, '/');
                p = *end ? end + 1 : end;
                *end = 0;
                last = !*p || strspn(p, "/") == strlen(p);
                if (streq(comp, "."))
                        continue;
                if (streq(comp, "..")) {
                        if (is_root(cur, &root_st))
                                continue;
                        fd = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                        if (fd < 0)
                                return negative_errno();
                        close(cur);
                        cur = fd;
                        continue;
                }
                if ((!last || !(flags & O_NOFOLLOW)) && fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) >= 0 &&
                    S_ISLNK(st.st_mode)) {
                        char target[PATH_MAX];
                        ssize_t n = readlinkat(cur, comp, target, sizeof target - 1);
                        char *next;
                        if (n < 0)
                                return negative_errno();
                        if (++links > IN_ROOT_LINKS_MAX)
                                return -ELOOP;
                        target[n] = 0;
                        if (asprintf(&next, "%s/%s", target, p) < 0)
                                return -ENOMEM;
                        free(todo);
                        todo = p = next;
                        if (target[0] == '/') {
                                close(cur);
                                cur = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
                                if (cur < 0)
                                        return negative_errno();
                        }
                        continue;
                }
                if (last)
                        return (fd = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode)) < 0 ? negative_errno() : fd;
                fd = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return negative_errno();
                close(cur);
                cur = fd;
        }
}

int tune_open(const tune_ctx *ctx, const char *path, int flags, mode_t mode) {
        int fd;

        /* Below a test root, resolve ".." and absolute symlinks inside the root, as if it
         * were "/" (openat2 RESOLVE_IN_ROOT, Linux 5.6+): a capture or fake tree can never
         * make the daemon touch the host's files. The live root needs no such care (and
         * RESOLVE_IN_ROOT would refuse procfs magic links). */
        if (!ctx->live) {
                struct open_how how = {
                        .flags = (uint64_t) (flags | O_CLOEXEC),
                        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
                        .resolve = RESOLVE_IN_ROOT,
                };
                /* openat2 fails with EAGAIN when any rename or mount anywhere on the host
                 * raced a ".." step (sysfs links are all "../../devices/..."): the kernel
                 * cannot then prove the walk stayed inside the root and asks the caller to
                 * retry. A busy host renames all the time, so retry, bounded. */
                for (unsigned attempt = 0;; attempt++) {
                        fd = (int) syscall(SYS_openat2, ctx->root_fd, relative(path), &how, sizeof how);
                        if (fd >= 0 || errno != EAGAIN || attempt >= OPENAT2_EAGAIN_RETRIES)
                                break;
                }
                if (fd >= 0 || errno != ENOSYS)
                        return fd < 0 ? negative_errno() : fd;
                /* No openat2 (Linux < 5.6, or a seccomp filter that hides it). */
                return open_in_root(ctx->root_fd, relative(path), flags, mode);
        }
        fd = openat(ctx->root_fd, relative(path), flags | O_CLOEXEC, mode);
        return fd < 0 ? negative_errno() : fd;
}

int tune_opendir(const tune_ctx *ctx, const char *path, DIR **ret) {
        int fd = tune_open(ctx, path, O_RDONLY | O_DIRECTORY, 0);
        DIR *d;

        if (fd < 0)
                return fd;
        d = fdopendir(fd);
        if (!d) {
                int r = negative_errno();
                close(fd);
                return r;
        }
        *ret = d;
        return 0;
}

bool tune_exists(const tune_ctx *ctx, const char *path) {
        int fd = tune_open(ctx, path, O_PATH, 0);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

int tune_open_at(const tune_ctx *ctx, int dirfd, const char *name, int flags) {
        int fd;

        if (dirfd < 0 || !name || !*name || strchr(name, '/') || streq(name, ".."))
                return -EINVAL;
        fd = openat(dirfd, name, flags | O_CLOEXEC | O_NOCTTY | (ctx->live ? 0 : O_NOFOLLOW));
        return fd < 0 ? negative_errno() : fd;
}

int tune_read_virtual_at(const tune_ctx *ctx, int dirfd, const char *name, char *buf, size_t size, size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;
        size_t len = 0;

        if (size < 2)
                return -EINVAL;
        fd = tune_open_at(ctx, dirfd, name, O_RDONLY);
        if (fd < 0)
                return fd;
        /* The attributes this reads (a thread's comm) are made whole for each read, so the
         * live root stops after one (read_whole_at_once() below); a test tree's plain
         * files are read to the end. */
        for (;;) {
                ssize_t n = tune_read_retry(fd, buf + len, size - 1 - len);
                if (n < 0)
                        return (int) n;
                len += (size_t) n;
                if (len == size - 1)
                        return -EFBIG;
                if (n == 0 || ctx->live)
                        break;
        }
        buf[len] = 0;
        if (ret_len)
                *ret_len = len;
        return 0;
}

/* Live files whose text the kernel makes whole for each read, so that a read shorter
 * than asked for is the end: sysfs device attributes (one show() each) and the per-process files
 * the watcher reads at every exec (one show() or a loop to the end of the process's
 * memory). Not the seq files of many records (/proc/self/mounts, /proc/interrupts,
 * numa_maps): they return one buffer's worth at a time, short of the end. */
static bool read_whole_at_once(const char *path) {
        static const char *const per_process[] = { "stat", "status", "comm", "cmdline", "environ", "cgroup" };
        const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;

        if (startswith_lit(path, "/sys/fs/cgroup/"))
                /* One value each; not cgroup.procs and the like (a record per task). */
                return startswith_lit(base, "cpuset.");
        if (startswith_lit(path, "/sys/"))
                /* debugfs and tracefs hold seq files too. */
                return !startswith_lit(path, "/sys/fs/") && !startswith_lit(path, "/sys/kernel/");
        if (!startswith_lit(path, "/proc/"))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(per_process); i++)
                if (streq(base, per_process[i]))
                        return true;
        return false;
}

/* A full buffer: is there more of the file? One byte tells. */
static bool read_has_more(int fd) {
        char probe;
        return tune_read_retry(fd, &probe, 1) > 0;
}

/* One read() of up to want bytes at *len (moved on): 1 to read on, 0 at the end (no bytes
 * left, or a short read of a file the kernel hands out whole: read_whole_at_once(), one
 * read() less on every /proc read an exec makes), or a negative errno. */
static int read_chunk(int fd, char *buf, size_t *len, size_t want, bool virtual) {
        ssize_t n = tune_read_retry(fd, buf + *len, want);

        if (n <= 0)
                return (int) n;
        *len += (size_t) n;
        return !(virtual && (size_t) n < want);
}

int tune_read_prefix(const tune_ctx *ctx, const char *path, size_t max, char **ret, size_t *ret_len,
                     bool *ret_truncated) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *heap = NULL;
        /* Read on the stack first, and copied to the heap at its size once whole: the
         * /proc and sysfs texts an exec makes the daemon read are a few hundred bytes, and
         * a 4 KiB heap buffer for each is past malloc's per-thread cache, which costs more
         * than the read's own work (the allocator's free lists, their consolidation). The
         * read() calls are the same as into a heap buffer of that size. */
        char stack[4096], *buf = stack;
        size_t len = 0, cap = sizeof stack;
        bool truncated = false;

        const bool virtual = ctx->live && read_whole_at_once(path);

        fd = tune_open(ctx, path, O_RDONLY | O_NOCTTY, 0);
        if (fd < 0)
                return fd;
        if (max == 0)
                max = TUNE_READ_MAX;
        if (cap > max + 1)
                cap = max + 1;
        for (;;) {
                if (len == max) {
                        truncated = read_has_more(fd);
                        break;
                }
                if (len + 1 >= cap) {
                        size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
                        char *nb = realloc(heap, ncap);
                        if (!nb)
                                return -ENOMEM;
                        if (!heap)
                                memcpy(nb, stack, len);
                        buf = heap = nb;
                        cap = ncap;
                }
                int r = read_chunk(fd, buf, &len, cap - 1 - len, virtual);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
        }
        if (!heap) {
                heap = malloc(len + 1);
                if (!heap)
                        return -ENOMEM;
                memcpy(heap, stack, len);
        }
        heap[len] = 0;
        if (ret_len)
                *ret_len = len;
        if (ret_truncated)
                *ret_truncated = truncated;
        *ret = TAKE_PTR(heap);
        return 0;
}

int tune_read_prefix_into(const tune_ctx *ctx, const char *path, char *buf, size_t size, size_t *ret_len,
                          bool *ret_truncated) {
        _cleanup_close_ int fd = -EBADF;
        const bool virtual = ctx->live && read_whole_at_once(path);
        size_t len = 0;
        bool truncated = false;

        if (size < 2)
                return -EINVAL;
        fd = tune_open(ctx, path, O_RDONLY | O_NOCTTY, 0);
        if (fd < 0)
                return fd;
        for (;;) {
                if (len == size - 1) {
                        truncated = read_has_more(fd);
                        break;
                }
                int r = read_chunk(fd, buf, &len, size - 1 - len, virtual);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
        }
        buf[len] = 0;
        if (ret_len)
                *ret_len = len;
        if (ret_truncated)
                *ret_truncated = truncated;
        return 0;
}

void tune_ctx_set_slow_reader(tune_ctx *ctx, tune_slow_read_fn fn, void *userdata) {
        ctx->slow_read = fn;
        ctx->slow_read_pair = NULL;
        ctx->slow_read_userdata = userdata;
}

void tune_ctx_set_slow_pair_reader(tune_ctx *ctx, tune_slow_read_pair_fn fn) {
        ctx->slow_read_pair = ctx->slow_read ? fn : NULL;
}

bool tune_ctx_has_slow_reader(const tune_ctx *ctx) {
        return ctx->slow_read != NULL;
}

int tune_read_slow(const tune_ctx *ctx, pid_t pid, const char *path, size_t max, char **ret, size_t *ret_len,
                   bool *ret_truncated) {
        if (ctx->slow_read)
                return ctx->slow_read(ctx->slow_read_userdata, ctx, pid, path, max, ret, ret_len, ret_truncated);
        return tune_read_prefix(ctx, path, max, ret, ret_len, ret_truncated);
}

void tune_read_slow_pair(const tune_ctx *ctx, pid_t pid, tune_slow_file files[static 2]) {
        if (ctx->slow_read_pair) {
                ctx->slow_read_pair(ctx->slow_read_userdata, ctx, pid, files);
                return;
        }
        for (unsigned i = 0; i < 2; i++) {
                files[i].text = NULL;
                files[i].r = tune_read_slow(ctx, pid, files[i].path, files[i].max, &files[i].text, &files[i].len,
                                            &files[i].truncated);
        }
}

int tune_read_file(const tune_ctx *ctx, const char *path, size_t max, char **ret, size_t *ret_len) {
        bool truncated;
        char *buf;
        int r;

        r = tune_read_prefix(ctx, path, max, &buf, ret_len, &truncated);
        if (r < 0)
                return r;
        if (truncated) {
                free(buf);
                return -EFBIG;
        }
        *ret = buf;
        return 0;
}

/* Some kernels (and captures of them) pad attribute files with NUL bytes after the
 * newline: accept padding, refuse text hidden behind a NUL; then the trailing whitespace
 * goes. s[*len] is a NUL. */
static int string_settle(char *s, size_t *len) {
        char *nul = memchr(s, 0, *len);

        if (nul) {
                for (char *p = nul; p < s + *len; p++)
                        if (*p && *p != '\n' && *p != ' ')
                                return -EBADMSG;
                *len = (size_t) (nul - s);
        }
        while (*len > 0 && (s[*len - 1] == '\n' || s[*len - 1] == ' ' || s[*len - 1] == '\t'))
                s[--*len] = 0;
        return 0;
}

int tune_read_string(const tune_ctx *ctx, const char *path, char **ret) {
        char *s;
        size_t len;
        int r;

        r = tune_read_file(ctx, path, 0, &s, &len);
        if (r < 0)
                return r;
        r = string_settle(s, &len);
        if (r < 0) {
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

int tune_read_string_into(const tune_ctx *ctx, const char *path, char *buf, size_t size) {
        size_t len;
        bool truncated;
        int r;

        r = tune_read_prefix_into(ctx, path, buf, size, &len, &truncated);
        if (r < 0)
                return r;
        if (truncated)
                return -EFBIG;
        return string_settle(buf, &len);
}

int tune_read_int(const tune_ctx *ctx, const char *path, long *ret) {
        _cleanup_free_ char *s = NULL;
        char *end;
        long v;
        int r;

        r = tune_read_string(ctx, path, &s);
        if (r < 0)
                return r;
        errno = 0;
        v = strtol(s, &end, 0);
        if (errno != 0 || end == s || *end)
                return -EINVAL;
        *ret = v;
        return 0;
}

int tune_write_string(const tune_ctx *ctx, const char *path, const char *value) {
        _cleanup_close_ int fd = -EBADF;
        size_t len = strlen(value);
        ssize_t n;

        fd = tune_open(ctx, path, O_WRONLY | O_TRUNC | O_NOCTTY, 0);
        if (fd < 0)
                return fd;
        do
                n = write(fd, value, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return negative_errno();
        if ((size_t) n != len)
                return -EIO;
        return 0;
}

int tune_readlink(const tune_ctx *ctx, const char *path, char **ret) {
        _cleanup_close_ int dirfd = -EBADF;
        _cleanup_free_ char *dir = NULL;
        char buf[PATH_MAX];
        const char *base;
        ssize_t n;

        /* The live root resolves like plain openat (tune_open()): one syscall, which an
         * exec event's /proc/PID/exe read makes for every process started on the host. */
        if (ctx->live) {
                n = readlinkat(ctx->root_fd, relative(path), buf, sizeof buf - 1);
                if (n < 0)
                        return negative_errno();
                buf[n] = 0;
                *ret = strdup(buf);
                return *ret ? 0 : -ENOMEM;
        }
        /* Resolve the directory part through the resolver; read the last component's link. */
        dir = strdup(relative(path));
        if (!dir)
                return -ENOMEM;
        char *slash = strrchr(dir, '/');
        if (slash) {
                *slash = 0;
                base = slash + 1;
                dirfd = tune_open(ctx, dir, O_PATH | O_DIRECTORY, 0);
                if (dirfd < 0)
                        return dirfd;
        } else
                base = dir;
        n = readlinkat(slash ? dirfd : ctx->root_fd, base, buf, sizeof buf - 1);
        if (n < 0)
                return negative_errno();
        buf[n] = 0;
        *ret = strdup(buf);
        return *ret ? 0 : -ENOMEM;
}

/* fmt with only %d, %u, %ld and %s, formatted at buf: its length, -ENAMETOOLONG when it
 * does not fit, or -EOPNOTSUPP for any other conversion. Paths are built a dozen times per
 * placed process (a thread's directory, cgroup files), and vsnprintf costs about a
 * thousand instructions for each. */
static int format_simple_path(char *buf, size_t size, const char *fmt, va_list ap) {
        char *p = buf, *end = buf + size - 1;

        /* A run of the format, or a conversion, at a time: each copied whole (a byte at a
         * time cost more than the rest of a path's making, for a cgroup's long one most). */
        for (const char *f = fmt; *f;) {
                char num[TUNE_DECIMAL_MAX + 1]; /* and a '-' */
                const char *s;
                size_t n;

                if (*f != '%') {
                        const char *pct = strchrnul(f, '%');
                        s = f;
                        n = (size_t) (pct - f);
                        f = pct;
                } else if (f[1] == 's') {
                        s = va_arg(ap, const char *);
                        n = strlen(s);
                        f += 2;
                } else {
                        long long x;
                        if (f[1] == 'd')
                                x = va_arg(ap, int);
                        else if (f[1] == 'u')
                                x = va_arg(ap, unsigned);
                        else if (f[1] == 'l' && f[2] == 'd') {
                                x = va_arg(ap, long);
                                f++;
                        } else
                                return -EOPNOTSUPP;
                        f += 2;
                        char *digits = tune_format_decimal(num + 1, x < 0 ? -(uint64_t) x : (uint64_t) x);
                        if (x < 0)
                                *--digits = '-';
                        s = digits;
                        n = (size_t) (num + TUNE_DECIMAL_MAX - digits);
                }
                if (n > (size_t) (end - p)) {
                        memcpy(p, s, (size_t) (end - p));
                        p = end;
                        goto too_long;
                }
                memcpy(p, s, n);
                p += n;
        }
        *p = 0;
        return (int) (p - buf);
too_long:
        *p = 0;
        return -ENAMETOOLONG;
}

int tune_path(char *buf, size_t size, const char *fmt, ...) {
        va_list ap, simple;
        int n;

        if (size == 0)
                return -ENAMETOOLONG;
        va_start(ap, fmt);
        va_copy(simple, ap);
        n = format_simple_path(buf, size, fmt, simple);
        va_end(simple);
        if (n == -EOPNOTSUPP)
                n = vsnprintf(buf, size, fmt, ap);
        va_end(ap);
        if (n == -ENAMETOOLONG)
                return n;
        if (n < 0)
                return -EINVAL;
        if ((size_t) n >= size)
                return -ENAMETOOLONG;
        return 0;
}

int tune_boot_id(const tune_ctx *ctx, char **ret) {
        char *s = NULL;

        if (tune_read_string(ctx, "/proc/sys/kernel/random/boot_id", &s) < 0) {
                s = strdup("");
                if (!s)
                        return -ENOMEM;
        }
        *ret = s;
        return 0;
}
