/* SPDX-License-Identifier: GPL-2.0-only */
/* The state directory trust check (see include/npu-tuned/state-dir.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/state-dir.h"

/* A directory on the way to the state directory: one that someone else could rename
 * entries in (writable by a user other than us, no sticky bit) is refused. */
static int check_ancestor(const struct stat *st) {
        if (!S_ISDIR(st->st_mode))
                return -ENOTDIR;
        if (st->st_uid != 0 && st->st_uid != geteuid())
                return -EPERM;
        if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
                return -EACCES;
        return 0;
}

static int check_dir(const struct stat *st) {
        if (!S_ISDIR(st->st_mode))
                return -ENOTDIR;
        if (st->st_uid != geteuid())
                return -EPERM;
        if (st->st_mode & (S_IWGRP | S_IWOTH))
                return -EACCES;
        return 0;
}

int tune_state_file_check(const struct stat *st) {
        if (!S_ISREG(st->st_mode))
                return -EBADMSG;
        if (st->st_uid != geteuid() || st->st_nlink != 1)
                return -EPERM;
        if (st->st_mode & 077)
                return -EACCES;
        return 0;
}

const char *tune_state_dir_refusal(int error) {
        switch (error) {
        case -EPERM:
                return "is owned by another user (or a directory on its way is)";
        case -EACCES:
                return "is writable by group or others (or a directory on its way is, without the sticky bit)";
        case -ELOOP:
                return "is a symbolic link (or one is on its way)";
        case -ENOTDIR:
                return "is not a directory";
        default:
                return strerror(-error);
        }
}

/* The last directory the walk below accepted, kept open: every affinity record write
 * opens the state directory, and the walk is two system calls per component. What a walk
 * proved of it holds for that inode (its fd cannot be swapped); a later call takes it
 * again only while the path still names that very inode and the inode still passes
 * check_dir() and is not deleted, else walks anew. The daemon is single-threaded; so is
 * this cache. */
static struct {
        char *path;
        int fd;
        dev_t dev;
        ino_t ino;
} accepted = { .fd = -EBADF };

static void accepted_forget(void) {
        free(accepted.path);
        accepted.path = NULL;
        if (accepted.fd >= 0)
                close(accepted.fd);
        accepted.fd = -EBADF;
}

static int accepted_reuse(const char *path) {
        struct stat st, now;
        int fd;

        if (accepted.fd < 0 || !streq(accepted.path, path))
                return -ENOENT;
        if (fstat(accepted.fd, &st) < 0 || st.st_nlink == 0 || check_dir(&st) < 0 ||
            (st.st_mode & 07777) != 0700 || fstatat(AT_FDCWD, path, &now, AT_SYMLINK_NOFOLLOW) < 0 ||
            now.st_dev != accepted.dev || now.st_ino != accepted.ino) {
                accepted_forget();
                return -ENOENT;
        }
        /* A new open file, not a dup: a dup shares the offset, and a caller that lists the
         * directory (fdopendir) would leave the next one's listing at its end. */
        fd = openat(accepted.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

static void accepted_keep(const char *path, int fd) {
        struct stat st;

        accepted_forget();
        if (path[0] != '/' || fstat(fd, &st) < 0)
                return; /* a relative path names another directory after a chdir */
        accepted.path = strdup(path);
        accepted.fd = accepted.path ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -EBADF;
        if (accepted.fd < 0) {
                accepted_forget();
                return;
        }
        accepted.dev = st.st_dev;
        accepted.ino = st.st_ino;
}

static int state_dir_walk(const char *path, bool create);

int tune_state_dir_open(const char *path, bool create) {
        int fd;

        if (!path || !*path)
                return -EINVAL;
        fd = accepted_reuse(path);
        if (fd != -ENOENT)
                return fd;
        fd = state_dir_walk(path, create);
        if (fd >= 0)
                accepted_keep(path, fd);
        return fd;
}

/* Walk path one component at a time from "/" (or the working directory), never following
 * a symlink, checking each directory on the way. */
static int state_dir_walk(const char *path, bool create) {
        _cleanup_free_ char *copy = NULL;
        _cleanup_close_ int fd = -EBADF;
        char *p, *save = NULL;
        struct stat st;
        int r;

        if (!path || !*path)
                return -EINVAL;
        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        fd = open(path[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        p = strtok_r(copy, "/", &save);
        if (!p)
                return -EINVAL; /* "/" itself is nobody's state directory */
        while (p) {
                char *next = strtok_r(NULL, "/", &save);
                bool last = !next;
                int child;

                if (fstat(fd, &st) < 0)
                        return negative_errno();
                r = check_ancestor(&st);
                if (r < 0)
                        return r;
                if (streq(p, "..") || streq(p, "."))
                        return -EINVAL;
                child = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0 && errno == ENOENT && create) {
                        if (mkdirat(fd, p, last ? 0700 : 0755) < 0 && errno != EEXIST)
                                return negative_errno();
                        child = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                }
                if (child < 0) {
                        /* O_DIRECTORY | O_NOFOLLOW on a symlink says ENOTDIR: say what it is. */
                        if (errno == ENOTDIR && fstatat(fd, p, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISLNK(st.st_mode))
                                return -ELOOP;
                        return negative_errno();
                }
                close(fd);
                fd = child;
                p = next;
        }
        if (fstat(fd, &st) < 0)
                return negative_errno();
        r = check_dir(&st);
        if (r < 0)
                return r;
        /* Nobody else needs to list it: the pids of managed processes are in its names. */
        if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}
