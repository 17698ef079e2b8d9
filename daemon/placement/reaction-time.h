/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The daemon's own reaction time: from the kernel's timestamp of a process event (the
 * proc connector's, CLOCK_MONOTONIC) to the last sched_setaffinity npu-tuned made for it,
 * per kind of event, as log-linear histograms; and the part of it that is npu-tuned's own
 * handling, from when it began to handle the event to that set. The rest is the wait
 * before: the kernel waking the daemon, and any events queued before this one. Pure: the
 * placement code feeds it, the debug log and the D-Bus properties read it. */

#include <stdint.h>

typedef enum reaction_kind {
        REACTION_EXEC,   /* a matched exec: every thread of the process placed */
        REACTION_THREAD, /* a new thread of a managed process */
        REACTION_RENAME, /* a thread renamed itself into another role */
        _REACTION_KIND_MAX,
} reaction_kind;

/* Log-linear buckets (HdrHistogram's layout with 3 bits of precision): a value under 8 ns
 * has a bucket of its own; above, each octave [2^e, 2^(e+1)) is cut into 8 equal buckets,
 * so a bucket's limit is at most 1/8 above any value in it (where power-of-two buckets
 * were up to 2x). The last one holds everything from 2^38 ns (about 4.6 min) up. */
#define REACTION_SUB_BITS 3
#define REACTION_SUB (1u << REACTION_SUB_BITS)
#define REACTION_TOP_EXP 38
#define REACTION_BUCKETS (REACTION_SUB + (REACTION_TOP_EXP - REACTION_SUB_BITS) * REACTION_SUB + 1)

typedef struct reaction_hist {
        uint64_t buckets[REACTION_BUCKETS];
        uint64_t count;
        uint64_t sum_ns;
        uint64_t max_ns;
} reaction_hist;

typedef struct reaction_stats {
        reaction_hist kinds[_REACTION_KIND_MAX];    /* the event's timestamp to the last set */
        reaction_hist handling[_REACTION_KIND_MAX]; /* the start of its handling to the last set */
} reaction_stats;

const char *reaction_kind_to_string(reaction_kind k);
unsigned reaction_bucket_of(uint64_t ns);
/* The upper bound (exclusive) of bucket i, in ns; UINT64_MAX for the last. */
uint64_t reaction_bucket_limit(unsigned i);
/* One reaction of kind k that took ns (event timestamp to the last set), handling_ns of
 * them after its handling began. */
void reaction_stats_add(reaction_stats *s, reaction_kind k, uint64_t ns, uint64_t handling_ns);
/* The smallest bucket limit under which a fraction q (0..1) of the samples lie, but never
 * more than the largest sample: an upper bound on the q-quantile, at most 1/8 above it
 * (one ns above it under 8 ns). 0 without samples. */
uint64_t reaction_hist_quantile(const reaction_hist *h, double q);
/* "exec n=12 p50<=131us p99<=262us max=201us; thread ...; rename ..." (kinds without
 * samples say n=0), of hists[_REACTION_KIND_MAX] (reaction_stats.kinds or .handling).
 * Returns 0 or -ENOMEM; free *ret. */
int reaction_stats_format(const reaction_hist *hists, char **ret);
