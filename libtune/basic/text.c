/* SPDX-License-Identifier: GPL-2.0-only */
/* Text built by appending (see include/npu-tuned/text.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/text.h"

void tune_text_put_grow(tune_text *t, const char *s, size_t n) {
        if (t->oom)
                return;
        if (t->len + n + 1 > t->cap) {
                /* A record or an attribution file is a few hundred bytes: one
                 * allocation for most, not one per doubling from a few bytes. */
                size_t cap = (t->len + n + 1) * 2 < 512 ? 512 : (t->len + n + 1) * 2;
                char *nb = realloc(t->buf, cap);

                if (!nb) {
                        t->oom = true;
                        return;
                }
                t->buf = nb;
                t->cap = cap;
        }
        memcpy(t->buf + t->len, s, n);
        t->len += n;
        t->buf[t->len] = 0;
}

char *tune_concat(char *buf, size_t size, ...) {
        size_t o = 0;
        const char *s;
        va_list ap;

        if (size == 0)
                return buf;
        va_start(ap, size);
        while ((s = va_arg(ap, const char *)) && o < size - 1) {
                size_t n = strnlen(s, size - 1 - o);
                memcpy(buf + o, s, n);
                o += n;
        }
        va_end(ap);
        buf[o] = 0;
        return buf;
}

int tune_text_take(tune_text *t, char **ret) {
        if (!t->oom && !t->buf)
                tune_text_put(t, "", 0);
        if (t->oom) {
                tune_text_done(t);
                return -ENOMEM;
        }
        *ret = t->buf;
        *t = (tune_text) {};
        return 0;
}

void tune_text_done(tune_text *t) {
        free(t->buf);
        *t = (tune_text) {};
}
