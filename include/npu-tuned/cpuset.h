/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* A growable set of CPU (or NUMA node) numbers, with the kernel's two text formats:
 * the list format ("0-23,48") and the hex mask format ("ffffffff,00000001"). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu-tuned/macro.h"

/* Hard upper bound on CPU/node numbers we accept from any input (kernel NR_CPUS max is 8192). */
#define TUNE_CPU_MAX 8192

/* Words held in the set itself: 256 CPUs, a 192-CPU host's every set, so the sets a matched
 * process's placement makes and copies cost no allocation. */
#define TUNE_CPUSET_INLINE_WORDS 4

/* n_words words, CPU n in bit n % 64 of word n / 64. They live in inline_words while
 * n_words <= TUNE_CPUSET_INLINE_WORDS (words is NULL then) and on the heap (words) past
 * that. Nothing points into the set itself: a set moves by assignment, memcpy or realloc
 * of an array holding it, and {} is the empty set. Reach the words through
 * tune_cpuset_words(). */
typedef struct tune_cpuset {
        uint64_t *words;
        unsigned n_words;
        uint64_t inline_words[TUNE_CPUSET_INLINE_WORDS];
} tune_cpuset;

static inline const uint64_t *tune_cpuset_words(const tune_cpuset *s) {
        return s->words ? s->words : s->inline_words;
}

static inline uint64_t *tune_cpuset_words_mut(tune_cpuset *s) {
        return s->words ? s->words : s->inline_words;
}

/* Inline: a placed process's plans, records and their copies end some hundred sets, most
 * of them inline ones with nothing to free. */
static inline void tune_cpuset_done(tune_cpuset *s) {
        if (!s)
                return;
        if (s->words) {
                free(s->words);
                s->words = NULL;
        }
        s->n_words = 0;
}
int tune_cpuset_add(tune_cpuset *s, unsigned cpu);
int tune_cpuset_add_range(tune_cpuset *s, unsigned first, unsigned last);
void tune_cpuset_remove(tune_cpuset *s, unsigned cpu);
bool tune_cpuset_has(const tune_cpuset *s, unsigned cpu) _pure_;
unsigned tune_cpuset_count(const tune_cpuset *s) _pure_;
bool tune_cpuset_is_empty(const tune_cpuset *s) _pure_;
bool tune_cpuset_equal(const tune_cpuset *a, const tune_cpuset *b) _pure_;
bool tune_cpuset_is_subset(const tune_cpuset *sub, const tune_cpuset *super) _pure_;
bool tune_cpuset_overlaps(const tune_cpuset *a, const tune_cpuset *b) _pure_;
/* Returns the first member >= from, or -1. */
int tune_cpuset_next(const tune_cpuset *s, unsigned from) _pure_;
/* Returns the first number >= from that is not a member (there always is one): with
 * tune_cpuset_next(), the runs of a set a word at a time, for its list format. */
unsigned tune_cpuset_next_absent(const tune_cpuset *s, unsigned from) _pure_;
int tune_cpuset_copy(tune_cpuset *dst, const tune_cpuset *src);
int tune_cpuset_or(tune_cpuset *dst, const tune_cpuset *src);
void tune_cpuset_and(tune_cpuset *dst, const tune_cpuset *src);
void tune_cpuset_andnot(tune_cpuset *dst, const tune_cpuset *src);
void tune_cpuset_clear(tune_cpuset *s);

#define TUNE_CPUSET_FOREACH(cpu, set) \
        for (int cpu = tune_cpuset_next((set), 0); cpu >= 0; cpu = tune_cpuset_next((set), (unsigned) cpu + 1))

/* Parse the list format. Accepts surrounding whitespace and a trailing newline, an empty
 * string (empty set) and ranges with strides ("0-23:2" is not accepted: the kernel only
 * prints plain ranges). Returns -EINVAL on malformed text, -ERANGE past TUNE_CPU_MAX. */
int tune_cpuset_parse_list(tune_cpuset *ret, const char *text);
/* Parse the hex mask format, 32-bit groups separated by commas, most significant first. */
int tune_cpuset_parse_mask(tune_cpuset *ret, const char *text);
/* Format as a list ("" for the empty set). Caller frees. */
int tune_cpuset_format_list(const tune_cpuset *s, char **ret);
/* The same into buf, cut at size - 1 bytes as snprintf cuts (NUL-terminated when size > 0);
 * returns the whole list's length, as snprintf does. */
size_t tune_cpuset_format_list_into(const tune_cpuset *s, char *buf, size_t size);
/* Format as a mask with at least min_bits bits (rounded up to 32-bit groups), like the
 * kernel's cpumask_print for nr_cpu_ids = min_bits. Caller frees. */
int tune_cpuset_format_mask(const tune_cpuset *s, unsigned min_bits, char **ret);

static inline void tune_cpuset_donep(tune_cpuset *s) {
        tune_cpuset_done(s);
}
#define _cleanup_cpuset_ _cleanup_(tune_cpuset_donep)
