/* SPDX-License-Identifier: GPL-2.0-only */
/* Reaction-time histograms (see reaction-time.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reaction-time.h"

static const char *const kind_names[_REACTION_KIND_MAX] = {
        [REACTION_EXEC] = "exec",
        [REACTION_THREAD] = "thread",
        [REACTION_RENAME] = "rename",
};

const char *reaction_kind_to_string(reaction_kind k) {
        return k >= 0 && k < _REACTION_KIND_MAX ? kind_names[k] : NULL;
}

unsigned reaction_bucket_of(uint64_t ns) {
        unsigned e;

        if (ns < REACTION_SUB)
                return (unsigned) ns;
        e = 63u - (unsigned) __builtin_clzll(ns); /* ns in [2^e, 2^(e+1)), e >= SUB_BITS */
        if (e >= REACTION_TOP_EXP)
                return REACTION_BUCKETS - 1;
        /* ns >> (e - SUB_BITS) is in [SUB, 2 SUB): its low bits pick the eighth. */
        return REACTION_SUB + (e - REACTION_SUB_BITS) * REACTION_SUB +
               (unsigned) ((ns >> (e - REACTION_SUB_BITS)) & (REACTION_SUB - 1));
}

uint64_t reaction_bucket_limit(unsigned i) {
        unsigned octave, sub;

        if (i >= REACTION_BUCKETS - 1)
                return UINT64_MAX;
        if (i < REACTION_SUB)
                return i + 1;
        octave = (i - REACTION_SUB) / REACTION_SUB; /* e - SUB_BITS */
        sub = (i - REACTION_SUB) % REACTION_SUB;
        return (uint64_t) (REACTION_SUB + sub + 1) << octave;
}

static void hist_add(reaction_hist *h, uint64_t ns) {
        h->buckets[reaction_bucket_of(ns)]++;
        h->count++;
        h->sum_ns += ns;
        if (ns > h->max_ns)
                h->max_ns = ns;
}

void reaction_stats_add(reaction_stats *s, reaction_kind k, uint64_t ns, uint64_t handling_ns) {
        if (k < 0 || k >= _REACTION_KIND_MAX)
                return;
        hist_add(&s->kinds[k], ns);
        hist_add(&s->handling[k], handling_ns < ns ? handling_ns : ns);
}

uint64_t reaction_hist_quantile(const reaction_hist *h, double q) {
        uint64_t seen = 0, need;

        if (h->count == 0)
                return 0;
        if (q < 0)
                q = 0;
        if (q > 1)
                q = 1;
        need = (uint64_t) ((double) h->count * q + 0.999999);
        if (need == 0)
                need = 1;
        for (unsigned i = 0; i < REACTION_BUCKETS; i++) {
                seen += h->buckets[i];
                if (seen >= need) {
                        uint64_t limit = reaction_bucket_limit(i);
                        return limit < h->max_ns ? limit : h->max_ns;
                }
        }
        return h->max_ns;
}

int reaction_stats_format(const reaction_hist *hists, char **ret) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return -ENOMEM;
        for (int k = 0; k < _REACTION_KIND_MAX; k++) {
                const reaction_hist *h = &hists[k];
                fprintf(f, "%s%s n=%llu", k ? "; " : "", kind_names[k], (unsigned long long) h->count);
                if (h->count)
                        fprintf(f, " p50<=%lluus p99<=%lluus max=%lluus",
                                (unsigned long long) (reaction_hist_quantile(h, 0.5) + 999) / 1000,
                                (unsigned long long) (reaction_hist_quantile(h, 0.99) + 999) / 1000,
                                (unsigned long long) (h->max_ns + 999) / 1000);
        }
        if (fclose(f) != 0 || !buf) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}
