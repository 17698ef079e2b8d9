/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/irqbalance.h"

void tune_irqbalance_setup_done(tune_irqbalance_setup *s) {
        if (!s)
                return;
        free(s->banned_irqs);
        tune_cpuset_done(&s->banned_cpus);
        *s = (tune_irqbalance_setup) {};
}

static int cmp_uint(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return x < y ? -1 : x > y;
}

/* The next space-separated word of [*p, end): its start and length; false at the end. */
static bool next_word(const char **p, const char *end, const char **ret, size_t *ret_len) {
        const char *s = *p;
        while (s < end && *s == ' ')
                s++;
        if (s >= end)
                return false;
        const char *e = s;
        while (e < end && *e != ' ')
                e++;
        *ret = s;
        *ret_len = (size_t) (e - s);
        *p = e;
        return true;
}

static bool word_is(const char *w, size_t len, const char *lit) {
        return len == strlen(lit) && memcmp(w, lit, len) == 0;
}

static int word_uint(const char *w, size_t len, unsigned max, unsigned *ret) {
        unsigned long v = 0;
        if (len == 0 || len > 10)
                return -EBADMSG;
        for (size_t i = 0; i < len; i++) {
                if (w[i] < '0' || w[i] > '9')
                        return -EBADMSG;
                v = v * 10 + (unsigned long) (w[i] - '0');
        }
        if (v > max)
                return -EBADMSG;
        *ret = (unsigned) v;
        return 0;
}

int tune_irqbalance_parse_setup(const char *text, size_t len, tune_irqbalance_setup *ret) {
        tune_irqbalance_setup s = {};
        const char *p = text, *end = text + len, *w;
        size_t wl;
        int r = -EBADMSG;

        if (!text || !ret)
                return -EINVAL;
        if (!next_word(&p, end, &w, &wl) || !word_is(w, wl, "SLEEP") || !next_word(&p, end, &w, &wl) ||
            word_uint(w, wl, 86400, &s.sleep_s) < 0)
                return -EBADMSG;
        while (next_word(&p, end, &w, &wl)) {
                if (word_is(w, wl, "BANNED")) {
                        char mask[TUNE_IRQBALANCE_MSG_MAX + 1];
                        if (!next_word(&p, end, &w, &wl) || wl >= sizeof mask)
                                goto fail;
                        memcpy(mask, w, wl);
                        mask[wl] = 0;
                        r = tune_cpuset_parse_mask(&s.banned_cpus, mask);
                        if (r < 0)
                                goto fail;
                        if (s.n_banned_irqs > 1) /* qsort() must not see the NULL of an empty list */
                                qsort(s.banned_irqs, s.n_banned_irqs, sizeof(unsigned), cmp_uint);
                        tune_irqbalance_setup_done(ret);
                        *ret = s;
                        return 0;
                }
                /* IRQ <n> LOAD <l> DIFF <d> CLASS <c> */
                unsigned irq, *a;
                if (!word_is(w, wl, "IRQ") || !next_word(&p, end, &w, &wl) || word_uint(w, wl, 1u << 24, &irq) < 0)
                        goto fail;
                for (int k = 0; k < 6; k++)
                        if (!next_word(&p, end, &w, &wl))
                                goto fail;
                if (s.n_banned_irqs >= 4096)
                        goto fail;
                a = realloc(s.banned_irqs, (s.n_banned_irqs + 1) * sizeof(unsigned));
                if (!a) {
                        r = -ENOMEM;
                        goto fail;
                }
                s.banned_irqs = a;
                s.banned_irqs[s.n_banned_irqs++] = irq;
        }
fail:
        tune_irqbalance_setup_done(&s);
        return r == -ENOMEM ? r : -EBADMSG;
}

int tune_irqbalance_format_ban_irqs(const unsigned *a, unsigned n_a, const unsigned *b, unsigned n_b, char **ret) {
        _cleanup_free_ unsigned *all = calloc((size_t) n_a + n_b + 1, sizeof(unsigned));
        char buf[TUNE_IRQBALANCE_MSG_MAX + 16];
        size_t len;
        unsigned n = 0, said = 0;

        if (!all)
                return -ENOMEM;
        /* memcpy() must not see the NULL of an empty list. */
        if (n_a > 0)
                memcpy(all, a, n_a * sizeof(unsigned));
        if (n_b > 0)
                memcpy(all + n_a, b, n_b * sizeof(unsigned));
        qsort(all, n_a + n_b, sizeof(unsigned), cmp_uint);
        len = (size_t) snprintf(buf, sizeof buf, "settings ban irqs ");
        for (unsigned i = 0; i < n_a + n_b; i++) {
                if (all[i] == 0 || (n > 0 && all[i] == all[n - 1]))
                        continue;
                all[n++] = all[i];
                int w = snprintf(buf + len, sizeof buf - len, "%s%u", said ? " " : "", all[i]);
                if (w < 0 || len + (size_t) w > TUNE_IRQBALANCE_MSG_MAX)
                        return -E2BIG;
                len += (size_t) w;
                said++;
        }
        if (said == 0)
                snprintf(buf + len, sizeof buf - len, "NONE");
        *ret = strdup(buf);
        return *ret ? 0 : -ENOMEM;
}

int tune_irqbalance_format_ban_cpus(const tune_cpuset *cpus, char **ret) {
        _cleanup_free_ char *list = NULL;

        if (!cpus || tune_cpuset_is_empty(cpus))
                return (*ret = strdup("settings cpus NULL")) ? 0 : -ENOMEM;
        if (tune_cpuset_format_list(cpus, &list) < 0)
                return -ENOMEM;
        if (strlen(list) + strlen("settings cpus ") > TUNE_IRQBALANCE_MSG_MAX)
                return -E2BIG;
        return asprintf(ret, "settings cpus %s", list) < 0 ? -ENOMEM : 0;
}
