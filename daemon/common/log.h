/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <syslog.h>

#include "npu-tuned/macro.h"

/* Logging for the daemon (libtune never logs). To stderr; under systemd (JOURNAL_STREAM
 * names our stderr) each line carries a "<N>" priority prefix that journald understands,
 * and log_struct() entries go to the journal natively with their fields. The *_errno
 * variants set errno so "%m" prints the error, and return the negative errno. */

void log_set_max_level(int level);
int log_get_max_level(void);
/* "debug", "info", "notice", "warning", "err" (also "error", or 0-7); -EINVAL otherwise. */
int log_level_from_string(const char *s);
int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) _printf_(5, 6);

/* The level is compared here, before the call: a line below it (the debug lines of every
 * event) costs that comparison, not a call with its arguments. As in systemd's log.h, the
 * arguments of a line not written are not evaluated. */
#define log_full_errno(level, error, ...)                                                             \
        ({                                                                                            \
                int _log_level_ = (level), _log_error_ = (error);                                     \
                _log_level_ <= log_get_max_level()                                                    \
                        ? log_internal(_log_level_, _log_error_, __FILE__, __LINE__, __VA_ARGS__)     \
                        : (_log_error_ < 0 ? _log_error_ : -_log_error_);                             \
        })
#define log_full(level, ...) (void) log_full_errno((level), 0, __VA_ARGS__)

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(error, ...) log_full_errno(LOG_DEBUG, (error), __VA_ARGS__)
#define log_info_errno(error, ...) log_full_errno(LOG_INFO, (error), __VA_ARGS__)
#define log_notice_errno(error, ...) log_full_errno(LOG_NOTICE, (error), __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, (error), __VA_ARGS__)
#define log_error_errno(error, ...) log_full_errno(LOG_ERR, (error), __VA_ARGS__)
#define log_oom() log_full_errno(LOG_ERR, ENOMEM, "Out of memory.")

/* A journal field of an event: name with its '=' ("NPU_TUNED_PID="), then value, the two
 * cut together at size - 1 bytes as snprintf cuts (size at most LOG_FIELD_MAX; 0: that). A
 * list of fields ends with one whose name is NULL. They are put together only when the
 * entry goes to the journal: the stream's line is the message alone. */
#define LOG_FIELD_MAX 256
typedef struct log_field {
        const char *name;
        const char *value;
        unsigned size;
} log_field;

/* One event with journal fields (NPU_TUNED_PID=, NPU_TUNED_RULE=, NPU_TUNED_ACCEL=,
 * NPU_TUNED_KNOB=), message_id a MESSAGE_ID (daemon/events/events.h) so
 * `journalctl MESSAGE_ID=...` finds every event of its kind. Under systemd:
 * sd_journal_sendv(); otherwise the same line as log_full(). */
int log_struct_internal(int level, const char *message_id, const log_field *fields, const char *file, int line,
                        const char *fmt, ...) _printf_(6, 7);
#define log_struct(level, message_id, fields, ...) \
        log_struct_internal((level), (message_id), (fields), __FILE__, __LINE__, __VA_ARGS__)

/* Whether a line of this level is written at all: an event made for every placed process
 * puts nothing together for a line nobody wants. */
static inline bool log_wants(int level) {
        return level <= log_get_max_level();
}

/* The same with the message put together without printf (an event made for every placed
 * process), in place after the journal's field name: the journal gets the buffer as it is,
 * the stream the text after the name, and nothing is copied. Cut at size - 1 bytes of
 * text, as snprintf cuts; after a cut, further puts add nothing. */
#define LOG_MESSAGE_FIELD "MESSAGE="
#define LOG_MESSAGE_TEXT_MAX 2048
typedef struct log_message {
        size_t len, end; /* end: the length at which the text is cut */
        char buf[sizeof LOG_MESSAGE_FIELD - 1 + LOG_MESSAGE_TEXT_MAX];
} log_message;

/* text_size: the text's bound, with its NUL (at most LOG_MESSAGE_TEXT_MAX). */
static inline void log_message_init(log_message *m, size_t text_size) {
        memcpy(m->buf, LOG_MESSAGE_FIELD, sizeof LOG_MESSAGE_FIELD);
        m->len = sizeof LOG_MESSAGE_FIELD - 1;
        m->end = m->len + text_size - 1;
}

/* Inline: most puts are literals, their length then known here. */
static inline void log_message_put(log_message *m, const char *s, size_t n) {
        if (n > m->end - m->len)
                n = m->end - m->len;
        memcpy(m->buf + m->len, s, n);
        m->len += n;
        m->buf[m->len] = 0;
}

static inline void log_message_put_str(log_message *m, const char *s) {
        log_message_put(m, s, strlen(s));
}

int log_struct_text_internal(int level, const char *message_id, const log_field *fields, const char *file, int line,
                             const log_message *m);
#define log_struct_text(level, message_id, fields, m) \
        log_struct_text_internal((level), (message_id), (fields), __FILE__, __LINE__, (m))
