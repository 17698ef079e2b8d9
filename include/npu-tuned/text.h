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
 * cuts; returns buf. For the file names, journal fields and log lines of every placement,
 * where snprintf's machinery costs some hundreds of instructions a call. A macro, each part
 * put in place where it is written: a literal's length is known there (its copy a few
 * moves, not a strnlen() and a memcpy() call), and there is no va_arg walk; up to 40 parts
 * (more: a compile error), each evaluated once, in order. */
#define tune_concat(buf, size, ...)                                                               \
        ({                                                                                        \
                char *tune_concat_buf_ = (buf), *tune_concat_at_ = tune_concat_buf_;              \
                size_t tune_concat_size_ = (size);                                                \
                size_t tune_concat_room_ = tune_concat_size_ > 0 ? tune_concat_size_ - 1 : 0;     \
                TUNE_CONCAT_EACH_(__VA_ARGS__)                                                    \
                if (tune_concat_size_ > 0)                                                        \
                        *tune_concat_at_ = 0;                                                     \
                tune_concat_buf_;                                                                 \
        })

/* One part of tune_concat(): s at *at, as much of it as *room allows; NULL ends the list. */
static inline __attribute__((always_inline)) void tune_concat_put_(char **at, size_t *room, const char *s) {
        size_t n;

        if (!s) {
                *room = 0;
                return;
        }
        if (*room == 0)
                return;
        if (__builtin_constant_p(__builtin_strlen(s)) && __builtin_strlen(s) <= *room) {
                memcpy(*at, s, __builtin_strlen(s)); /* a literal that fits: moves */
                n = __builtin_strlen(s);
        } else {
                n = strnlen(s, *room);
                memcpy(*at, s, n);
        }
        *at += n;
        *room -= n;
}

#define TUNE_CONCAT_PUT_(s) tune_concat_put_(&tune_concat_at_, &tune_concat_room_, (s));
#define TUNE_CONCAT_CAT2_(a, b) a##b
#define TUNE_CONCAT_CAT_(a, b) TUNE_CONCAT_CAT2_(a, b)
#define TUNE_CONCAT_N2_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, _33, _34, _35, _36, _37, _38, _39, _40, count, ...) count
#define TUNE_CONCAT_N_(...) TUNE_CONCAT_N2_(__VA_ARGS__, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define TUNE_CONCAT_EACH_(...) TUNE_CONCAT_CAT_(TUNE_CONCAT_E, TUNE_CONCAT_N_(__VA_ARGS__))(__VA_ARGS__)
#define TUNE_CONCAT_E1(s) TUNE_CONCAT_PUT_(s)
#define TUNE_CONCAT_E2(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E1(__VA_ARGS__)
#define TUNE_CONCAT_E3(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E2(__VA_ARGS__)
#define TUNE_CONCAT_E4(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E3(__VA_ARGS__)
#define TUNE_CONCAT_E5(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E4(__VA_ARGS__)
#define TUNE_CONCAT_E6(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E5(__VA_ARGS__)
#define TUNE_CONCAT_E7(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E6(__VA_ARGS__)
#define TUNE_CONCAT_E8(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E7(__VA_ARGS__)
#define TUNE_CONCAT_E9(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E8(__VA_ARGS__)
#define TUNE_CONCAT_E10(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E9(__VA_ARGS__)
#define TUNE_CONCAT_E11(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E10(__VA_ARGS__)
#define TUNE_CONCAT_E12(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E11(__VA_ARGS__)
#define TUNE_CONCAT_E13(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E12(__VA_ARGS__)
#define TUNE_CONCAT_E14(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E13(__VA_ARGS__)
#define TUNE_CONCAT_E15(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E14(__VA_ARGS__)
#define TUNE_CONCAT_E16(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E15(__VA_ARGS__)
#define TUNE_CONCAT_E17(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E16(__VA_ARGS__)
#define TUNE_CONCAT_E18(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E17(__VA_ARGS__)
#define TUNE_CONCAT_E19(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E18(__VA_ARGS__)
#define TUNE_CONCAT_E20(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E19(__VA_ARGS__)
#define TUNE_CONCAT_E21(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E20(__VA_ARGS__)
#define TUNE_CONCAT_E22(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E21(__VA_ARGS__)
#define TUNE_CONCAT_E23(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E22(__VA_ARGS__)
#define TUNE_CONCAT_E24(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E23(__VA_ARGS__)
#define TUNE_CONCAT_E25(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E24(__VA_ARGS__)
#define TUNE_CONCAT_E26(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E25(__VA_ARGS__)
#define TUNE_CONCAT_E27(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E26(__VA_ARGS__)
#define TUNE_CONCAT_E28(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E27(__VA_ARGS__)
#define TUNE_CONCAT_E29(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E28(__VA_ARGS__)
#define TUNE_CONCAT_E30(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E29(__VA_ARGS__)
#define TUNE_CONCAT_E31(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E30(__VA_ARGS__)
#define TUNE_CONCAT_E32(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E31(__VA_ARGS__)
#define TUNE_CONCAT_E33(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E32(__VA_ARGS__)
#define TUNE_CONCAT_E34(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E33(__VA_ARGS__)
#define TUNE_CONCAT_E35(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E34(__VA_ARGS__)
#define TUNE_CONCAT_E36(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E35(__VA_ARGS__)
#define TUNE_CONCAT_E37(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E36(__VA_ARGS__)
#define TUNE_CONCAT_E38(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E37(__VA_ARGS__)
#define TUNE_CONCAT_E39(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E38(__VA_ARGS__)
#define TUNE_CONCAT_E40(s, ...) TUNE_CONCAT_PUT_(s) TUNE_CONCAT_E39(__VA_ARGS__)
