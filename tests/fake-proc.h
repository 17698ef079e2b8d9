/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Files of a fake /proc under a temporary root, for the unit tests that read processes
 * (tests/test-proc.c, tests/test-watcher-scan.c, tests/test-memmove.c). Binary-safe: environ and cmdline hold
 * NULs. Aborts the test (cmocka) when a file cannot be written. */

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p of every parent of path. */
static inline void fake_proc_mkparents(const char *path) {
        char buf[512];

        snprintf(buf, sizeof buf, "%s", path);
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = 0;
                        (void) mkdir(buf, 0755);
                        *p = '/';
                }
}

/* ROOT/rel := len bytes of data. */
static inline void fake_proc_put(const char *root, const char *rel, const void *data, size_t len) {
        char path[512];
        int fd;

        snprintf(path, sizeof path, "%s/%s", root, rel);
        fake_proc_mkparents(path);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t) len);
        close(fd);
}
