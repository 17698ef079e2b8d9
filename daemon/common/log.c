/* SPDX-License-Identifier: GPL-2.0-only */
#include <stdarg.h>
#include <stdbool.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "log.h"
#include "npu-tuned/macro.h"
#include "npu-tuned/text.h"

static int max_level = LOG_INFO;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_level_from_string(const char *s) {
        static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

        for (int i = 0; i < (int) ELEMENTSOF(names); i++)
                if (streq(s, names[i]))
                        return i;
        if (streq(s, "error"))
                return LOG_ERR;
        if (s[0] >= '0' && s[0] <= '7' && !s[1])
                return s[0] - '0';
        return -EINVAL;
}

/* Whether stderr is the journal's stream: JOURNAL_STREAM ("DEV:INODE") names it (systemd
 * sets it for the service; a child with redirected stderr inherits a stale one). */
static bool stderr_is_journal(void) {
        static int journal = -1;
        unsigned long long dev, ino;
        const char *e;
        struct stat st;

        if (journal >= 0)
                return journal;
        e = getenv("JOURNAL_STREAM");
        journal = e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) >= 0 &&
                  (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
        return journal;
}

/* All of iov to stderr, with one writev() unless it is cut short. Straight to the file
 * descriptor: stderr is unbuffered, and stdio's fwrite() costs more than the line itself. */
static void write_stderr(struct iovec *iov, int n) {
        int saved = errno;

        while (n > 0) {
                ssize_t k = writev(STDERR_FILENO, iov, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                for (; n > 0 && (size_t) k >= iov->iov_len; iov++, n--)
                        k -= (ssize_t) iov->iov_len;
                if (n > 0) {
                        iov->iov_base = (char *) iov->iov_base + k;
                        iov->iov_len -= (size_t) k;
                }
        }
        errno = saved;
}

/* One line (text: len bytes, at most 2047), one write, its parts never copied together. */
static void log_write(int level, const char *file, int line, const char *text, size_t len) {
        char prefix[TUNE_DECIMAL_MAX + 3], suffix[512], d[TUNE_DECIMAL_MAX + 1];
        struct iovec iov[3] = { { .iov_base = prefix }, { .iov_base = (char *) text, .iov_len = len },
                                { .iov_base = (char *) "\n", .iov_len = 1 } };

        if (stderr_is_journal()) {
                if (level >= 0 && level <= 9) {
                        prefix[0] = '<', prefix[1] = (char) ('0' + level), prefix[2] = '>';
                        iov[0].iov_len = 3;
                } else
                        iov[0].iov_len =
                                strlen(tune_concat(prefix, sizeof prefix, "<", tune_format_signed(d, level), ">", NULL));
        } else {
                iov[0] = (struct iovec){ .iov_base = (char *) "npu-tuned: ", .iov_len = sizeof "npu-tuned: " - 1 };
                if (max_level >= LOG_DEBUG) {
                        /* A cut suffix still ends the line (file: a source file's path). */
                        tune_concat(suffix, sizeof suffix, " (", file, ":", tune_format_signed(d, line), ")\n", NULL);
                        iov[2] = (struct iovec){ .iov_base = suffix, .iov_len = strlen(suffix) };
                        suffix[iov[2].iov_len - 1] = '\n';
                }
        }
        write_stderr(iov, 3);
}

int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) {
        int saved = errno;
        char buf[2048];
        va_list ap;

        if (error < 0)
                error = -error;
        if (level > max_level)
                return -error;
        errno = error;
        va_start(ap, fmt);
        int n = vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        log_write(level, file, line, buf, n < 0 ? 0 : MIN((size_t) n, sizeof buf - 1));
        errno = saved;
        return -error;
}

#define MAX_FIELDS 12

/* name and value after each other at *o in store, cut at size - 1 bytes: one iovec. */
static struct iovec put_field(char *store, size_t *o, const char *name, const char *value, size_t size) {
        size_t n = strlen(name);
        size_t v = value ? strnlen(value, size - 1 - MIN(n, size - 1)) : 0;
        char *f = store + *o;

        n = MIN(n, size - 1);
        memcpy(f, name, n);
        if (v > 0)
                memcpy(f + n, value, v);
        *o += n + v;
        return (struct iovec){ .iov_base = f, .iov_len = n + v };
}

/* message: "MESSAGE=" and the text, len bytes. */
static int log_struct_message(int level, const char *message_id, const log_field *fields, const char *file, int line,
                              const char *message, size_t len) {
        const size_t skip = sizeof LOG_MESSAGE_FIELD - 1;
        char store[(4 + MAX_FIELDS) * LOG_FIELD_MAX], d[TUNE_DECIMAL_MAX + 1];
        struct iovec iov[MAX_FIELDS + 7];
        size_t o = 0;
        int n = 0;

        if (!stderr_is_journal()) {
                log_write(level, file, line, message + skip, len - skip);
                return 0;
        }
        iov[n++] = (struct iovec){ .iov_base = (char *) message, .iov_len = len };
        iov[n++] = put_field(store, &o, "PRIORITY=", tune_format_signed(d, level), 16);
        iov[n++] = put_field(store, &o, "MESSAGE_ID=", message_id, 64);
        iov[n++] = (struct iovec){ .iov_base = (char *) "SYSLOG_IDENTIFIER=npu-tuned",
                                   .iov_len = sizeof "SYSLOG_IDENTIFIER=npu-tuned" - 1 };
        iov[n++] = put_field(store, &o, "CODE_FILE=", file, LOG_FIELD_MAX);
        iov[n++] = put_field(store, &o, "CODE_LINE=", tune_format_signed(d, line), 32);
        for (unsigned i = 0; fields && fields[i].name && i < MAX_FIELDS; i++)
                iov[n++] = put_field(store, &o, fields[i].name, fields[i].value,
                                     fields[i].size ? MIN(fields[i].size, LOG_FIELD_MAX) : LOG_FIELD_MAX);
        if (sd_journal_sendv(iov, n) < 0) /* the journal socket is gone: the stream still works */
                log_write(level, file, line, message + skip, len - skip);
        return 0;
}

/* The printf text goes after its field name in one buffer: formatted once, copied never. */
int log_struct_internal(int level, const char *message_id, const log_field *fields, const char *file, int line,
                        const char *fmt, ...) {
        const size_t skip = sizeof LOG_MESSAGE_FIELD - 1;
        char message[sizeof LOG_MESSAGE_FIELD - 1 + LOG_MESSAGE_TEXT_MAX];
        va_list ap;

        if (level > max_level)
                return 0;
        memcpy(message, LOG_MESSAGE_FIELD, skip); /* not an initializer: that zeroes all 2 k */
        va_start(ap, fmt);
        int n = vsnprintf(message + skip, LOG_MESSAGE_TEXT_MAX, fmt, ap);
        va_end(ap);
        return log_struct_message(level, message_id, fields, file, line, message,
                                  skip + (n < 0 ? 0 : MIN((size_t) n, LOG_MESSAGE_TEXT_MAX - 1)));
}

int log_struct_text_internal(int level, const char *message_id, const log_field *fields, const char *file, int line,
                             const log_message *m) {
        if (level > max_level)
                return 0;
        return log_struct_message(level, message_id, fields, file, line, m->buf, m->len);
}
