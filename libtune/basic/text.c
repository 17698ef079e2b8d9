/* SPDX-License-Identifier: GPL-2.0-only */
/* Text built by appending (see include/npu-tuned/text.h). */
#include <errno.h>
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
