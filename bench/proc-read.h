/* SPDX-License-Identifier: GPL-2.0-only */
/* What the bench programs read of another process (the pinner they measure) in /proc. */
#pragma once

#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* CPU seconds (user + system) of a process, from /proc/PID/stat; -1 if unreadable. */
static inline double proc_cpu_seconds(pid_t pid) {
        char path[64], buf[1024], *p;
        unsigned long ut = 0, st = 0;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        p = fgets(buf, sizeof buf, f);
        fclose(f);
        if (!p || !(p = strrchr(buf, ')')) ||
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
                return -1;
        return (double) (ut + st) / (double) sysconf(_SC_CLK_TCK);
}

/* The sum of the values of the lines of /proc/PID/status that start with one of keys
 * (NULL-terminated, each with its colon: "VmRSS:"); -1 if unreadable. */
static inline long proc_status_sum(pid_t pid, const char *const *keys) {
        char path[64], line[256];
        long total = 0;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof line, f))
                for (const char *const *k = keys; *k; k++) {
                        long v;
                        size_t n = strlen(*k);
                        if (strncmp(line, *k, n) == 0 && sscanf(line + n, "%ld", &v) == 1)
                                total += v;
                }
        fclose(f);
        return total;
}
