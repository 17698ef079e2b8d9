/* SPDX-License-Identifier: GPL-2.0-only */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/cpuset.h"
#include "npu-tuned/parse.h"

#define W(s) tune_cpuset_words(s)
#define W_MUT(s) tune_cpuset_words_mut(s)

/* Makes room for CPU cpu: in the inline words while they hold it, on the heap past them
 * (moving the inline words there). New words are zero. */
static int cpuset_grow(tune_cpuset *s, unsigned cpu) {
        unsigned need = cpu / 64 + 1;
        uint64_t *w;

        if (cpu >= TUNE_CPU_MAX)
                return -ERANGE;
        if (need <= s->n_words)
                return 0;
        if (!s->words && need <= TUNE_CPUSET_INLINE_WORDS) {
                memset(s->inline_words + s->n_words, 0, (need - s->n_words) * sizeof(uint64_t));
                s->n_words = need;
                return 0;
        }
        if (s->words) {
                w = realloc(s->words, need * sizeof(uint64_t));
                if (!w)
                        return -ENOMEM;
        } else {
                w = malloc(need * sizeof(uint64_t));
                if (!w)
                        return -ENOMEM;
                memcpy(w, s->inline_words, s->n_words * sizeof(uint64_t));
        }
        memset(w + s->n_words, 0, (need - s->n_words) * sizeof(uint64_t));
        s->words = w;
        s->n_words = need;
        return 0;
}

int tune_cpuset_add(tune_cpuset *s, unsigned cpu) {
        int r = cpuset_grow(s, cpu);
        if (r < 0)
                return r;
        W_MUT(s)[cpu / 64] |= UINT64_C(1) << (cpu % 64);
        return 0;
}

int tune_cpuset_add_range(tune_cpuset *s, unsigned first, unsigned last) {
        if (first > last)
                return -EINVAL;
        int r = cpuset_grow(s, last);
        if (r < 0)
                return r;
        uint64_t *w = W_MUT(s);
        for (unsigned c = first; c <= last; c++)
                w[c / 64] |= UINT64_C(1) << (c % 64);
        return 0;
}

void tune_cpuset_remove(tune_cpuset *s, unsigned cpu) {
        if (cpu / 64 < s->n_words)
                W_MUT(s)[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}

bool tune_cpuset_has(const tune_cpuset *s, unsigned cpu) {
        return cpu / 64 < s->n_words && (W(s)[cpu / 64] >> (cpu % 64)) & 1;
}

unsigned tune_cpuset_count(const tune_cpuset *s) {
        const uint64_t *w = W(s);
        unsigned n = 0;
        for (unsigned i = 0; i < s->n_words; i++)
                n += (unsigned) __builtin_popcountll(w[i]);
        return n;
}

bool tune_cpuset_is_empty(const tune_cpuset *s) {
        const uint64_t *w = W(s);
        for (unsigned i = 0; i < s->n_words; i++)
                if (w[i])
                        return false;
        return true;
}

static uint64_t word_at(const tune_cpuset *s, unsigned i) {
        return i < s->n_words ? W(s)[i] : 0;
}

bool tune_cpuset_equal(const tune_cpuset *a, const tune_cpuset *b) {
        unsigned n = a->n_words > b->n_words ? a->n_words : b->n_words;
        for (unsigned i = 0; i < n; i++)
                if (word_at(a, i) != word_at(b, i))
                        return false;
        return true;
}

bool tune_cpuset_is_subset(const tune_cpuset *sub, const tune_cpuset *super) {
        const uint64_t *w = W(sub);
        for (unsigned i = 0; i < sub->n_words; i++)
                if (w[i] & ~word_at(super, i))
                        return false;
        return true;
}

bool tune_cpuset_overlaps(const tune_cpuset *a, const tune_cpuset *b) {
        const uint64_t *wa = W(a), *wb = W(b);
        unsigned n = a->n_words < b->n_words ? a->n_words : b->n_words;
        for (unsigned i = 0; i < n; i++)
                if (wa[i] & wb[i])
                        return true;
        return false;
}

int tune_cpuset_next(const tune_cpuset *s, unsigned from) {
        const uint64_t *words = W(s);
        for (unsigned i = from / 64; i < s->n_words; i++) {
                uint64_t w = words[i];
                if (i == from / 64)
                        w &= ~UINT64_C(0) << (from % 64);
                if (w)
                        return (int) (i * 64 + (unsigned) __builtin_ctzll(w));
        }
        return -1;
}

unsigned tune_cpuset_next_absent(const tune_cpuset *s, unsigned from) {
        const uint64_t *words = W(s);
        for (unsigned i = from / 64; i < s->n_words; i++) {
                uint64_t w = ~words[i];
                if (i == from / 64)
                        w &= ~UINT64_C(0) << (from % 64);
                if (w)
                        return i * 64 + (unsigned) __builtin_ctzll(w);
        }
        return from > s->n_words * 64 ? from : s->n_words * 64;
}

int tune_cpuset_copy(tune_cpuset *dst, const tune_cpuset *src) {
        uint64_t *w = NULL;

        if (dst == src)
                return 0;
        if (src->n_words <= TUNE_CPUSET_INLINE_WORDS) {
                /* A small set copies into the inline words, wherever it was. */
                memcpy(dst->inline_words, W(src), src->n_words * sizeof(uint64_t));
        } else {
                w = malloc(src->n_words * sizeof(uint64_t));
                if (!w)
                        return -ENOMEM;
                memcpy(w, W(src), src->n_words * sizeof(uint64_t));
        }
        free(dst->words);
        dst->words = w;
        dst->n_words = src->n_words;
        return 0;
}

int tune_cpuset_or(tune_cpuset *dst, const tune_cpuset *src) {
        if (src->n_words > dst->n_words) {
                int r = cpuset_grow(dst, src->n_words * 64 - 1);
                if (r < 0)
                        return r;
        }
        const uint64_t *ws = W(src);
        uint64_t *wd = W_MUT(dst);
        for (unsigned i = 0; i < src->n_words; i++)
                wd[i] |= ws[i];
        return 0;
}

void tune_cpuset_and(tune_cpuset *dst, const tune_cpuset *src) {
        uint64_t *w = W_MUT(dst);
        for (unsigned i = 0; i < dst->n_words; i++)
                w[i] &= word_at(src, i);
}

void tune_cpuset_andnot(tune_cpuset *dst, const tune_cpuset *src) {
        uint64_t *w = W_MUT(dst);
        for (unsigned i = 0; i < dst->n_words; i++)
                w[i] &= ~word_at(src, i);
}

void tune_cpuset_clear(tune_cpuset *s) {
        uint64_t *w = W_MUT(s);
        for (unsigned i = 0; i < s->n_words; i++)
                w[i] = 0;
}

static const char *skip_space(const char *p) {
        while (*p && isspace((unsigned char) *p))
                p++;
        return p;
}

static int parse_uint(const char **p, unsigned *ret) {
        unsigned long v = 0;
        const char *s = *p;

        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        while (isdigit((unsigned char) *s)) {
                v = v * 10 + (unsigned long) (*s - '0');
                if (v >= TUNE_CPU_MAX)
                        return -ERANGE;
                s++;
        }
        *p = s;
        *ret = (unsigned) v;
        return 0;
}

int tune_cpuset_parse_list(tune_cpuset *ret, const char *text) {
        _cleanup_cpuset_ tune_cpuset s = {};
        const char *p;
        int r;

        if (!text)
                return -EINVAL;
        p = skip_space(text);
        while (*p) {
                unsigned a, b;

                r = parse_uint(&p, &a);
                if (r < 0)
                        return r;
                b = a;
                if (*p == '-') {
                        p++;
                        r = parse_uint(&p, &b);
                        if (r < 0)
                                return r;
                        if (b < a)
                                return -EINVAL;
                }
                r = tune_cpuset_add_range(&s, a, b);
                if (r < 0)
                        return r;
                if (*p == ',') {
                        p++;
                        if (!isdigit((unsigned char) *p))
                                return -EINVAL;
                        continue;
                }
                p = skip_space(p);
                if (*p)
                        return -EINVAL;
        }
        tune_cpuset_done(ret);
        *ret = s;
        s = (tune_cpuset){};
        return 0;
}

int tune_cpuset_parse_mask(tune_cpuset *ret, const char *text) {
        _cleanup_cpuset_ tune_cpuset s = {};
        const char *start, *end;
        unsigned bit = 0;
        int r;

        if (!text)
                return -EINVAL;
        start = skip_space(text);
        end = start + strlen(start);
        while (end > start && isspace((unsigned char) end[-1]))
                end--;
        if (end == start)
                return -EINVAL;
        /* Walk from the least significant end; commas separate 32-bit groups. */
        unsigned in_group = 0;
        for (const char *p = end; p > start; p--) {
                char c = p[-1];
                if (c == ',') {
                        if (in_group == 0 || p - 1 == start)
                                return -EINVAL;
                        bit = (bit + 31) / 32 * 32;
                        in_group = 0;
                        continue;
                }
                int v = tune_parse_hex_digit(c);
                if (v < 0 || in_group >= 8)
                        return -EINVAL;
                for (int i = 0; i < 4; i++)
                        if (v & (1 << i)) {
                                r = tune_cpuset_add(&s, bit + (unsigned) i);
                                if (r < 0)
                                        return r;
                        }
                bit += 4;
                in_group++;
        }
        tune_cpuset_done(ret);
        *ret = s;
        s = (tune_cpuset){};
        return 0;
}

size_t tune_cpuset_format_list_into(const tune_cpuset *s, char *buf, size_t size) {
        size_t len = 0; /* of the whole list, written or not */

        for (int cpu = tune_cpuset_next(s, 0); cpu >= 0;) {
                int last = (int) tune_cpuset_next_absent(s, (unsigned) cpu + 1) - 1;
                char item[2 * TUNE_DECIMAL_MAX + 1], digits[TUNE_DECIMAL_MAX], *e = item;
                if (len)
                        *e++ = ',';
                e = stpcpy(e, tune_format_decimal(digits, (uint64_t) cpu));
                if (last > cpu) {
                        *e++ = '-';
                        e = stpcpy(e, tune_format_decimal(digits, (uint64_t) last));
                }
                size_t n = (size_t) (e - item);
                if (len + 1 < size)
                        memcpy(buf + len, item, MIN(n, size - 1 - len));
                len += n;
                cpu = tune_cpuset_next(s, (unsigned) last + 1);
        }
        if (size > 0)
                buf[MIN(len, size - 1)] = 0;
        return len;
}

int tune_cpuset_format_list(const tune_cpuset *s, char **ret) {
        /* Most lists fit here: one pass. A longer one is measured by it, then written. */
        char small[256];
        size_t len = tune_cpuset_format_list_into(s, small, sizeof small);
        char *buf = malloc(len + 1);

        if (!buf)
                return -ENOMEM;
        if (len < sizeof small)
                memcpy(buf, small, len + 1);
        else
                (void) tune_cpuset_format_list_into(s, buf, len + 1);
        *ret = buf;
        return 0;
}

int tune_cpuset_format_mask(const tune_cpuset *s, unsigned min_bits, char **ret) {
        int last = -1;

        for (int c = tune_cpuset_next(s, 0); c >= 0; c = tune_cpuset_next(s, (unsigned) c + 1))
                last = c;
        if ((unsigned) (last + 1) > min_bits)
                min_bits = (unsigned) (last + 1);
        unsigned groups = min_bits == 0 ? 1 : (min_bits + 31) / 32;
        char *buf = malloc(groups * 9 + 1), *p;
        if (!buf)
                return -ENOMEM;
        p = buf;
        for (unsigned g = groups; g > 0; g--) {
                uint32_t v = 0;
                for (unsigned i = 0; i < 32; i++)
                        if (tune_cpuset_has(s, (g - 1) * 32 + i))
                                v |= UINT32_C(1) << i;
                /* The kernel prints the top group only as wide as nr_cpu_ids needs. */
                if (g == groups && min_bits % 32 != 0) {
                        unsigned digits = (min_bits % 32 + 3) / 4;
                        p += sprintf(p, "%0*x", (int) digits, v);
                } else
                        p += sprintf(p, "%08x", v);
                if (g > 1)
                        *p++ = ',';
        }
        *p = 0;
        *ret = buf;
        return 0;
}
