/* SPDX-License-Identifier: GPL-2.0-only */
/* The textfile in place: node_exporter's textfile collector reads every *.prom file of its
 * directory at each scrape, so the text goes to a new file beside it (a name it ignores)
 * and is renamed over the old one. The daemon runs as root: the directory must be root's
 * and writable by nobody else, and every name below it is opened relative to it with
 * O_NOFOLLOW (docs/trust.md). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metrics.h"
#include "npu-tuned/macro.h"

static int write_all(int fd, const char *text, size_t len) {
        while (len > 0) {
                ssize_t n = write(fd, text, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                text += n;
                len -= (size_t) n;
        }
        return 0;
}

int metrics_write_file(const char *path, const char *text) {
        char dir[PATH_MAX], tmp[NAME_MAX + 1];
        const char *slash = strrchr(path, '/'), *name;
        struct stat st;
        int dfd, fd, r;

        if (!slash || slash[1] == 0 || (size_t) (slash - path) >= sizeof dir)
                return -EINVAL;
        name = slash + 1;
        if (slash == path)
                strcpy(dir, "/");
        else
                snprintf(dir, sizeof dir, "%.*s", (int) (slash - path), path);
        /* ".npu-tuned.prom.tmp": not *.prom, so a scrape meanwhile never reads it. */
        if (snprintf(tmp, sizeof tmp, ".%s.tmp", name) >= (int) sizeof tmp)
                return -ENAMETOOLONG;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        if (fstat(dfd, &st) < 0) {
                r = -errno;
                goto out;
        }
        if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
                r = -EPERM;
                goto out;
        }
        /* A file left by a write that was cut short (the daemon killed) goes first. */
        (void) unlinkat(dfd, tmp, 0);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
                r = -errno;
                goto out;
        }
        r = write_all(fd, text, strlen(text));
        /* Readable by the collector's user whatever the umask. */
        if (r >= 0 && fchmod(fd, 0644) < 0)
                r = -errno;
        if (close(fd) < 0 && r >= 0)
                r = -errno;
        if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0)
                r = -errno;
        if (r < 0)
                (void) unlinkat(dfd, tmp, 0);
out:
        close(dfd);
        return r;
}
