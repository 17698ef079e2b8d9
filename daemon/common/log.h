/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <errno.h>
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

#define log_full_errno(level, error, ...) log_internal((level), (error), __FILE__, __LINE__, __VA_ARGS__)
#define log_full(level, ...) (void) log_internal((level), 0, __FILE__, __LINE__, __VA_ARGS__)

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

/* One event with journal fields: fields is a NULL-terminated list of "NAME=value" strings
 * (NPU_TUNED_PID=, NPU_TUNED_RULE=, NPU_TUNED_ACCEL=, NPU_TUNED_KNOB=), message_id a
 * MESSAGE_ID (daemon/events/events.h) so `journalctl MESSAGE_ID=...` finds every event of its
 * kind. Under systemd: sd_journal_send(); otherwise the same line as log_full(). */
int log_struct_internal(int level, const char *message_id, const char *const *fields, const char *file, int line,
                        const char *fmt, ...) _printf_(6, 7);
#define log_struct(level, message_id, fields, ...) \
        log_struct_internal((level), (message_id), (fields), __FILE__, __LINE__, __VA_ARGS__)
/* The same with the message already in words (put together without printf by an event
 * made for every placed process). */
int log_struct_text_internal(int level, const char *message_id, const char *const *fields, const char *file, int line,
                             const char *text);
#define log_struct_text(level, message_id, fields, text) \
        log_struct_text_internal((level), (message_id), (fields), __FILE__, __LINE__, (text))
