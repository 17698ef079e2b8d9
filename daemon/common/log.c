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

/* One line, one write, put together without printf (its machinery costs more than a line
 * of a placed process's own work). */
static void log_write(int level, const char *file, int line, const char *buf) {
        char out[2048 + 512], d[TUNE_DECIMAL_MAX + 1];
        size_t n;

        if (stderr_is_journal())
                tune_concat(out, sizeof out, "<", tune_format_signed(d, level), ">", buf, "\n", NULL);
        else if (max_level >= LOG_DEBUG)
                tune_concat(out, sizeof out, "npu-tuned: ", buf, " (", file, ":", tune_format_signed(d, line), ")\n", NULL);
        else
                tune_concat(out, sizeof out, "npu-tuned: ", buf, "\n", NULL);
        n = strlen(out);
        if (out[n - 1] != '\n') /* cut: still a line */
                out[n - 1] = '\n';
        fwrite(out, 1, n, stderr);
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
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        log_write(level, file, line, buf);
        errno = saved;
        return -error;
}

#define MAX_FIELDS 12

static int log_struct_message(int level, const char *message_id, const char *const *fields, const char *file, int line,
                              const char *message) {
        const char *buf = message + sizeof "MESSAGE=" - 1;
        char priority[16], id[64], code_file[256], code_line[32], d[TUNE_DECIMAL_MAX + 1];
        struct iovec iov[MAX_FIELDS + 7];
        unsigned n = 0;

        if (!stderr_is_journal()) {
                log_write(level, file, line, buf);
                return 0;
        }
#define IOV(s) (iov[n++] = (struct iovec){ .iov_base = (char *) (s), .iov_len = strlen(s) })
        tune_concat(priority, sizeof priority, "PRIORITY=", tune_format_signed(d, level), NULL);
        tune_concat(id, sizeof id, "MESSAGE_ID=", message_id, NULL);
        tune_concat(code_file, sizeof code_file, "CODE_FILE=", file, NULL);
        tune_concat(code_line, sizeof code_line, "CODE_LINE=", tune_format_signed(d, line), NULL);
        IOV(message);
        IOV(priority);
        IOV(id);
        IOV("SYSLOG_IDENTIFIER=npu-tuned");
        IOV(code_file);
        IOV(code_line);
        for (unsigned i = 0; fields && fields[i] && i < MAX_FIELDS; i++)
                IOV(fields[i]);
#undef IOV
        if (sd_journal_sendv(iov, (int) n) < 0)
                log_write(level, file, line, buf); /* the journal socket is gone: the stream still works */
        return 0;
}

/* The text goes after its field name in one buffer: formatted once, copied never; the other
 * fields are put together without printf (two entries per placed process). */
#define MESSAGE_MAX (sizeof "MESSAGE=" - 1 + 2048)

int log_struct_internal(int level, const char *message_id, const char *const *fields, const char *file, int line,
                        const char *fmt, ...) {
        char message[MESSAGE_MAX] = "MESSAGE=";
        va_list ap;

        if (level > max_level)
                return 0;
        va_start(ap, fmt);
        vsnprintf(message + sizeof "MESSAGE=" - 1, 2048, fmt, ap);
        va_end(ap);
        return log_struct_message(level, message_id, fields, file, line, message);
}

int log_struct_text_internal(int level, const char *message_id, const char *const *fields, const char *file, int line,
                             const char *text) {
        char message[MESSAGE_MAX];

        if (level > max_level)
                return 0;
        tune_concat(message, sizeof message, "MESSAGE=", text, NULL);
        return log_struct_message(level, message_id, fields, file, line, message);
}
