/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Text built by appending, for the files and lines written on the hot path: a
 * FILE *open_memstream() costs a zeroed BUFSIZ buffer and stdio's locking per text, more
 * than the text itself; this grows one buffer as it goes. Out of memory is remembered and
 * reported once, at tune_text_take(). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "npu-tuned/macro.h"

typedef struct tune_text {
        char *buf; /* NUL-terminated once anything was put */
        size_t len, cap;
        bool oom;
} tune_text;

/* tune_text_put() when the buffer has no room (or after out of memory). */
void tune_text_put_grow(tune_text *t, const char *s, size_t n);

/* Inline: a record or an attribution file is some dozens of puts, mostly of literals
 * (their length then known here, and their copy a few moves), each into room there is. */
static inline void tune_text_put(tune_text *t, const char *s, size_t n) {
        if (t->oom || t->len + n + 1 > t->cap) {
                tune_text_put_grow(t, s, n);
                return;
        }
        memcpy(t->buf + t->len, s, n);
        t->len += n;
        t->buf[t->len] = 0;
}

static inline void tune_text_put_str(tune_text *t, const char *s) {
        tune_text_put(t, s, strlen(s));
}

static inline void tune_text_put_u64(tune_text *t, uint64_t v) {
        char d[TUNE_DECIMAL_MAX];
        const char *p = tune_format_decimal(d, v);

        tune_text_put(t, p, (size_t) (d + TUNE_DECIMAL_MAX - 1 - p));
}

static inline void tune_text_put_i64(tune_text *t, int64_t v) {
        char d[TUNE_DECIMAL_MAX + 1];
        const char *p = tune_format_signed(d, v);

        tune_text_put(t, p, (size_t) (d + TUNE_DECIMAL_MAX - p));
}
/* The text (the caller frees it; "" if nothing was put) and t emptied; -ENOMEM, with t
 * freed, if any put ran out of memory. */
int tune_text_take(tune_text *t, char **ret);
void tune_text_done(tune_text *t);

/* The strings up to the NULL one after another in buf, cut at size - 1 bytes as snprintf
 * cuts; returns buf. For the file names and journal fields of every placement, where
 * snprintf's machinery costs some hundreds of instructions a call. */
char *tune_concat(char *buf, size_t size, ...) __attribute__((sentinel));
