/* SPDX-License-Identifier: GPL-2.0-only */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

static int max_level = LOG_INFO;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) {
        static int journal = -1;
        int saved = errno;
        va_list ap;

        if (error < 0)
                error = -error;
        if (level > max_level)
                return -error;
        if (journal < 0)
                journal = getenv("JOURNAL_STREAM") != NULL;
        char buf[2048];
        errno = error;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        if (journal)
                fprintf(stderr, "<%d>%s\n", level, buf);
        else if (max_level >= LOG_DEBUG)
                fprintf(stderr, "npu-tuned: %s (%s:%d)\n", buf, file, line);
        else
                fprintf(stderr, "npu-tuned: %s\n", buf);
        errno = saved;
        return -error;
}
