/* SPDX-License-Identifier: GPL-2.0-only */
/* Whole-file state in the state directory, and its lock (see include/npu-tuned/state-file.h).
 * Used by the knob journal (libtune/knobs/journal.c) and the affinity records
 * (libtune/placement/affinity-record.c). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/state-dir.h"
#include "npu-tuned/state-file.h"

static int open_state_dir(const char *state_dir, bool create) {
        return tune_state_dir_open(state_dir, create);
}

/* "NAME.tmp" in buf: what asprintf() made, without its formatting machinery and an
 * allocation (about 900 instructions per write, one per matched process); a name the
 * kernel would refuse anyway (PATH_MAX) is refused here. */
static int tmp_name(const char *name, char buf[static PATH_MAX]) {
        size_t len = strlen(name);

        if (len > PATH_MAX - sizeof ".tmp")
                return -ENAMETOOLONG;
        memcpy(buf, name, len);
        memcpy(buf + len, ".tmp", sizeof ".tmp");
        return 0;
}

int tune_state_file_read(const char *state_dir, const char *name, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int dfd = -EBADF, fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t len = 0;
        int r;

        dfd = open_state_dir(state_dir, false);
        if (dfd < 0)
                return dfd;
        fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        r = tune_state_file_check(&st);
        if (r < 0)
                return r;
        if ((uint64_t) st.st_size > max)
                return -EBADMSG;
        buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n = tune_read_retry(fd, buf + len, (size_t) st.st_size + 1 - len);
                if (n < 0)
                        return (int) n;
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len > (size_t) st.st_size)
                        return -EBADMSG; /* grew under us */
        }
        buf[len] = 0;
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

static void step(tune_step_fn fn, const char *what, void *userdata) {
        if (fn)
                fn(what, userdata);
}

/* Temp file, [fsync], rename, [fsync(dir)] in the directory open at dfd. */
static int state_file_write_at(int dfd, const char *name, const char *text, bool sync, tune_step_fn step_fn,
                               void *userdata) {
        _cleanup_close_ int fd = -EBADF;
        char tmp[PATH_MAX];
        size_t len, done = 0;
        int r;

        r = tmp_name(name, tmp);
        if (r < 0)
                return r;
        /* A new file, never one that is there: a temp file left by a crash is ours (the
         * directory is trusted), so it goes and the create is tried once more. */
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST && unlinkat(dfd, tmp, 0) >= 0)
                fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        len = strlen(text);
        while (done < len) {
                ssize_t n = write(fd, text + done, len - done);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = negative_errno();
                        (void) unlinkat(dfd, tmp, 0);
                        return r;
                }
                done += (size_t) n;
        }
        if (sync && fsync(fd) < 0) {
                r = negative_errno();
                (void) unlinkat(dfd, tmp, 0);
                return r;
        }
        step(step_fn, "journal-synced", userdata);
        if (renameat(dfd, tmp, dfd, name) < 0) {
                r = negative_errno();
                (void) unlinkat(dfd, tmp, 0);
                return r;
        }
        step(step_fn, "journal-renamed", userdata);
        if (sync && fsync(dfd) < 0)
                return negative_errno();
        step(step_fn, "journal-dir-synced", userdata);
        return 0;
}

static int state_file_write(const char *state_dir, const char *name, const char *text, bool sync,
                            tune_step_fn step_fn, void *userdata) {
        _cleanup_close_ int dfd = open_state_dir(state_dir, true);

        if (dfd < 0)
                return dfd;
        return state_file_write_at(dfd, name, text, sync, step_fn, userdata);
}

int tune_state_file_write(const char *state_dir, const char *name, const char *text, tune_step_fn step_fn,
                          void *userdata) {
        return state_file_write(state_dir, name, text, true, step_fn, userdata);
}

static int state_file_delete(const char *state_dir, const char *name, bool sync) {
        _cleanup_close_ int dfd = -EBADF;
        char tmp[PATH_MAX];
        int r = tmp_name(name, tmp);

        if (r < 0)
                return r;
        dfd = open_state_dir(state_dir, false);
        if (dfd == -ENOENT)
                return 0;
        if (dfd < 0)
                return dfd;
        (void) unlinkat(dfd, tmp, 0);
        if (unlinkat(dfd, name, 0) < 0) {
                if (errno == ENOENT)
                        return 0;
                return negative_errno();
        }
        if (sync && fsync(dfd) < 0)
                return negative_errno();
        return 0;
}

int tune_state_file_delete(const char *state_dir, const char *name) {
        return state_file_delete(state_dir, name, true);
}

int tune_state_file_delete_unsynced(const char *state_dir, const char *name) {
        return state_file_delete(state_dir, name, false);
}

int tune_state_file_replace_at(int dfd, const char *name, const char *text) {
        return state_file_write_at(dfd, name, text, false, NULL, NULL);
}

int tune_state_file_create_at(int dfd, const char *name, const char *text) {
        _cleanup_close_ int fd = -EBADF;
        size_t len = strlen(text);
        ssize_t n;
        int r;

        if (len > TUNE_STATE_FILE_ONE_WRITE_MAX)
                return tune_state_file_replace_at(dfd, name, text);
        fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST)
                return tune_state_file_replace_at(dfd, name, text); /* replaced whole */
        if (fd < 0)
                return negative_errno();
        do
                n = write(fd, text, len);
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t) len)
                return 0;
        r = n < 0 ? negative_errno() : -EIO; /* a short write: the filesystem is full */
        (void) unlinkat(dfd, name, 0);
        return r;
}

int tune_state_file_ready_at(int dfd, const char *name) {
        for (unsigned attempt = 0;; attempt++) {
                int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd >= 0)
                        return fd;
                if (errno != EEXIST || attempt > 0)
                        return negative_errno();
                /* A leftover (whoever starts next adopts or clears it first): ours now. */
                if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
                        return negative_errno();
        }
}

int tune_state_file_fill(int fd, const char *text) {
        size_t len = strlen(text);
        ssize_t n;
        int r;

        if (len > TUNE_STATE_FILE_ONE_WRITE_MAX)
                return -E2BIG;
        do
                n = pwrite(fd, text, len, 0);
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t) len)
                return 0;
        r = n < 0 ? negative_errno() : -EIO; /* a short write: the filesystem is full */
        (void) ftruncate(fd, 0);
        return r;
}

int tune_state_file_remove_at(int dfd, const char *name) {
        if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
                return negative_errno();
        return 0;
}

int tune_state_dir_lock(const char *state_dir) {
        _cleanup_close_ int dfd = -EBADF, fd = -EBADF;

        dfd = open_state_dir(state_dir, true);
        if (dfd < 0)
                return dfd;
        fd = openat(dfd, TUNE_STATE_DIR_LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EBUSY : negative_errno();
        return TAKE_FD(fd);
}
