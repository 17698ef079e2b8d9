/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Text built by appending, for the files and lines written on the hot path: a
 * FILE *open_memstream() costs a zeroed BUFSIZ buffer and stdio's locking per text, more
 * than the text itself; this grows one buffer as it goes. Out of memory is remembered and
 * reported once, at tune_text_take(). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tune_text {
        char *buf; /* NUL-terminated once anything was put */
        size_t len, cap;
        bool oom;
} tune_text;

void tune_text_put(tune_text *t, const char *s, size_t n);
void tune_text_put_str(tune_text *t, const char *s);
void tune_text_put_u64(tune_text *t, uint64_t v);
void tune_text_put_i64(tune_text *t, int64_t v);
/* The text (the caller frees it; "" if nothing was put) and t emptied; -ENOMEM, with t
 * freed, if any put ran out of memory. */
int tune_text_take(tune_text *t, char **ret);
void tune_text_done(tune_text *t);

/* The strings up to the NULL one after another in buf, cut at size - 1 bytes as snprintf
 * cuts; returns buf. For the file names and journal fields of every placement, where
 * snprintf's machinery costs some hundreds of instructions a call. */
char *tune_concat(char *buf, size_t size, ...) __attribute__((sentinel));
