/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npu-tuned/lines.h"

/* Room for one longest line plus a generous read. */
#define READ_CHUNK (64u * 1024u)

int tune_foreach_line(const tune_ctx *ctx, const char *path, size_t max_line, size_t max_total,
                      tune_line_fn fn, void *userdata, unsigned *ret_long_lines) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        const size_t cap = max_line + READ_CHUNK;
        size_t have = 0, total = 0;
        unsigned n_long = 0;
        bool skipping = false; /* inside an over-long line */
        int r;

        if (max_line == 0 || !fn)
                return -EINVAL;
        fd = tune_open(ctx, path, O_RDONLY | O_NOCTTY, 0);
        if (fd < 0)
                return fd;
        buf = malloc(cap);
        if (!buf)
                return -ENOMEM;

        for (;;) {
                ssize_t n = tune_read_retry(fd, buf + have, cap - have);
                size_t i = 0;

                if (n < 0)
                        return (int) n;
                total += (size_t) n;
                if (total > max_total)
                        return -EFBIG;
                have += (size_t) n;
                while (i < have) {
                        char *nl = memchr(buf + i, '\n', have - i);
                        size_t end;

                        if (!nl && n > 0)
                                break;           /* need more */
                        end = nl ? (size_t) (nl - buf) : have; /* at EOF: the last line */
                        if (skipping)
                                skipping = false;
                        else if (end - i > max_line)
                                n_long++;
                        else if (end > i) {
                                r = fn(buf + i, end - i, userdata);
                                if (r < 0)
                                        return r;
                        }
                        i = end + 1;
                }
                if (i > have)
                        i = have;
                memmove(buf, buf + i, have - i);
                have -= i;
                if (n == 0)
                        break;
                if (have > max_line) {
                        /* An over-long line: drop it, skip to its newline. */
                        if (!skipping)
                                n_long++;
                        have = 0;
                        skipping = true;
                }
        }
        if (ret_long_lines)
                *ret_long_lines = n_long;
        return 0;
}

int tune_foreach_line_slow(const tune_ctx *ctx, pid_t pid, const char *path, size_t max_line, size_t max_total,
                           tune_line_fn fn, void *userdata, unsigned *ret_long_lines) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        unsigned n_long = 0;
        bool truncated = false;
        int r;

        if (!tune_ctx_has_slow_reader(ctx))
                return tune_foreach_line(ctx, path, max_line, max_total, fn, userdata, ret_long_lines);
        if (max_line == 0 || !fn)
                return -EINVAL;
        /* The slow reader reads on a thread it may give up on, so the text comes whole. */
        r = tune_read_slow(ctx, pid, path, max_total, &text, &len, &truncated);
        if (r < 0)
                return r;
        if (truncated)
                return -EFBIG;
        for (size_t i = 0; i < len;) {
                const char *nl = memchr(text + i, '\n', len - i);
                size_t end = nl ? (size_t) (nl - text) : len;

                if (end - i > max_line)
                        n_long++;
                else if (end > i) {
                        r = fn(text + i, end - i, userdata);
                        if (r < 0)
                                return r;
                }
                i = end + 1;
        }
        if (ret_long_lines)
                *ret_long_lines = n_long;
        return 0;
}
