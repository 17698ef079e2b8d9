/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/lines.h"
#include "npu-tuned/numa-maps.h"

/* Bound on the whole file: 65530 VMAs (the default vm.max_map_count) take ~10 MiB. */
#define NUMA_MAPS_FILE_MAX (256u * 1024u * 1024u)

void tune_numa_vma_done(tune_numa_vma *v) {
        if (!v)
                return;
        free(v->node_pages);
        v->node_pages = NULL;
        v->n_slots = 0;
}

static int parse_u64(const char *s, size_t len, int base, uint64_t *ret) {
        uint64_t v = 0;

        if (len == 0 || len > 20)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                unsigned d;
                char c = s[i];

                if (c >= '0' && c <= '9')
                        d = (unsigned) (c - '0');
                else if (base == 16 && c >= 'a' && c <= 'f')
                        d = (unsigned) (c - 'a' + 10);
                else if (base == 16 && c >= 'A' && c <= 'F')
                        d = (unsigned) (c - 'A' + 10);
                else
                        return -EINVAL;
                if (__builtin_mul_overflow(v, (uint64_t) base, &v) || __builtin_add_overflow(v, d, &v))
                        return -ERANGE;
        }
        *ret = v;
        return 0;
}

static bool token_is(const char *tok, size_t len, const char *word) {
        size_t n = strlen(word);
        return len == n && memcmp(tok, word, n) == 0;
}

/* "key=value" with a known key: the value after '=', else NULL. */
static const char *token_value(const char *tok, size_t len, const char *key, size_t *ret_len) {
        size_t n = strlen(key);
        if (len <= n || memcmp(tok, key, n) != 0 || tok[n] != '=')
                return NULL;
        *ret_len = len - n - 1;
        return tok + n + 1;
}

static int vma_add_node(tune_numa_vma *v, unsigned node, uint64_t pages) {
        if (node >= v->n_slots) {
                unsigned n = v->n_slots ? v->n_slots : 8;
                uint64_t *a;

                while (n <= node)
                        n *= 2;
                if (n > TUNE_NUMA_NODES_MAX)
                        n = TUNE_NUMA_NODES_MAX;
                a = realloc(v->node_pages, n * sizeof(uint64_t));
                if (!a)
                        return -ENOMEM;
                memset(a + v->n_slots, 0, (n - v->n_slots) * sizeof(uint64_t));
                v->node_pages = a;
                v->n_slots = n;
        }
        if (__builtin_add_overflow(v->node_pages[node], pages, &v->node_pages[node]) ||
            __builtin_add_overflow(v->total, pages, &v->total))
                return -ERANGE;
        if ((int) node > v->max_node)
                v->max_node = (int) node;
        return 0;
}

static int parse_token(const char *tok, size_t len, tune_numa_vma *v) {
        const char *val;
        size_t vlen;
        uint64_t x;
        int r;

        if (len >= 3 && tok[0] == 'N' && tok[1] >= '0' && tok[1] <= '9') {
                const char *eq = memchr(tok, '=', len);
                uint64_t node;

                if (!eq)
                        return -EINVAL;
                r = parse_u64(tok + 1, (size_t) (eq - tok - 1), 10, &node);
                if (r < 0)
                        return r;
                if (node >= TUNE_NUMA_NODES_MAX)
                        return -ERANGE;
                r = parse_u64(eq + 1, len - (size_t) (eq - tok) - 1, 10, &x);
                if (r < 0)
                        return r;
                return vma_add_node(v, (unsigned) node, x);
        }
        if ((val = token_value(tok, len, "anon", &vlen)))
                return parse_u64(val, vlen, 10, &v->anon);
        if ((val = token_value(tok, len, "kernelpagesize_kB", &vlen))) {
                r = parse_u64(val, vlen, 10, &x);
                if (r < 0)
                        return r;
                /* 4 KiB .. 16 GiB pages. */
                if (x < 4 || x > 16u * 1024 * 1024)
                        return -ERANGE;
                v->page_kib = (unsigned) x;
                return 0;
        }
        if (len >= 5 && memcmp(tok, "file=", 5) == 0)
                v->file = true;
        else if (token_is(tok, len, "heap"))
                v->heap = true;
        else if (token_is(tok, len, "stack"))
                v->stack = true;
        else if (token_is(tok, len, "huge"))
                v->huge = true;
        return 0;
}

int tune_numa_maps_parse_line(const char *line, size_t len, tune_numa_vma *v) {
        size_t i = 0, start;
        int r;

        if (v->node_pages)
                memset(v->node_pages, 0, v->n_slots * sizeof(uint64_t));
        v->start = 0;
        v->page_kib = 4;
        v->file = v->heap = v->stack = v->huge = false;
        v->anon = v->total = 0;
        v->max_node = -1;

        while (i < len && line[i] != ' ')
                i++;
        r = parse_u64(line, i, 16, &v->start);
        if (r < 0)
                return -EINVAL;
        while (i < len) {
                while (i < len && line[i] == ' ')
                        i++;
                start = i;
                while (i < len && line[i] != ' ')
                        i++;
                if (i > start) {
                        r = parse_token(line + start, i - start, v);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

void tune_numa_usage_done(tune_numa_usage *u) {
        if (!u)
                return;
        free(u->node_kib);
        free(u->node_anon_kib);
        memset(u, 0, sizeof *u);
}

static int usage_grow(tune_numa_usage *u, unsigned n) {
        uint64_t *a, *b;

        if (n <= u->n_nodes)
                return 0;
        a = realloc(u->node_kib, n * sizeof(uint64_t));
        if (!a)
                return -ENOMEM;
        u->node_kib = a;
        b = realloc(u->node_anon_kib, n * sizeof(uint64_t));
        if (!b)
                return -ENOMEM;
        u->node_anon_kib = b;
        memset(a + u->n_nodes, 0, (n - u->n_nodes) * sizeof(uint64_t));
        memset(b + u->n_nodes, 0, (n - u->n_nodes) * sizeof(uint64_t));
        u->n_nodes = n;
        return 0;
}

int tune_numa_usage_add(tune_numa_usage *u, const tune_numa_vma *v) {
        int r;

        u->n_vmas++;
        if (v->max_node < 0)
                return 0;
        r = usage_grow(u, (unsigned) v->max_node + 1);
        if (r < 0)
                return r;
        for (int node = 0; node <= v->max_node; node++) {
                uint64_t kib;

                if (v->node_pages[node] == 0)
                        continue;
                if (__builtin_mul_overflow(v->node_pages[node], (uint64_t) v->page_kib, &kib) ||
                    __builtin_add_overflow(u->node_kib[node], kib, &u->node_kib[node]) ||
                    __builtin_add_overflow(u->total_kib, kib, &u->total_kib))
                        return -ERANGE;
                if (!v->file) {
                        u->node_anon_kib[node] += kib;
                        u->anon_total_kib += kib;
                }
        }
        return 0;
}

int tune_numa_maps_parse(const char *text, size_t len, tune_numa_usage *u) {
        tune_numa_vma v = {};
        size_t i = 0;
        int r = 0;

        while (i < len && r >= 0) {
                const char *nl = memchr(text + i, '\n', len - i);
                size_t end = nl ? (size_t) (nl - text) : len;

                if (end > i) {
                        if (end - i > TUNE_NUMA_MAPS_LINE_MAX || tune_numa_maps_parse_line(text + i, end - i, &v) < 0)
                                u->n_bad_lines++;
                        else
                                r = tune_numa_usage_add(u, &v);
                }
                i = end + 1;
        }
        tune_numa_vma_done(&v);
        return r < 0 ? r : 0;
}

uint64_t tune_numa_usage_kib_on(const tune_numa_usage *u, const tune_cpuset *nodes, bool anon_only) {
        const uint64_t *a = anon_only ? u->node_anon_kib : u->node_kib;
        uint64_t sum = 0;

        for (unsigned n = 0; n < u->n_nodes; n++)
                if (tune_cpuset_has(nodes, n))
                        sum += a[n];
        return sum;
}

double tune_numa_usage_locality(const tune_numa_usage *u, const tune_cpuset *nodes, bool anon_only) {
        uint64_t total = anon_only ? u->anon_total_kib : u->total_kib;

        if (total == 0)
                return 100.0;
        return 100.0 * (double) tune_numa_usage_kib_on(u, nodes, anon_only) / (double) total;
}

typedef struct foreach_state {
        tune_numa_vma vma;
        tune_numa_vma_fn fn;
        void *userdata;
        unsigned bad;
} foreach_state;

static int foreach_line(const char *line, size_t len, void *userdata) {
        foreach_state *st = userdata;

        if (tune_numa_maps_parse_line(line, len, &st->vma) < 0) {
                st->bad++;
                return 0;
        }
        return st->fn(&st->vma, st->userdata);
}

int tune_numa_maps_foreach(const tune_ctx *ctx, pid_t pid, tune_numa_vma_fn fn, void *userdata, unsigned *ret_bad_lines) {
        foreach_state st = { .fn = fn, .userdata = userdata };
        unsigned n_long = 0;
        char path[64];
        int r;

        if (pid <= 0 || !fn)
                return -EINVAL;
        r = tune_path(path, sizeof path, "/proc/%d/numa_maps", (int) pid);
        if (r < 0)
                return r;
        /* numa_maps takes the process's mmap_lock: through the slow reader (context.h). */
        r = tune_foreach_line_slow(ctx, pid, path, TUNE_NUMA_MAPS_LINE_MAX, NUMA_MAPS_FILE_MAX, foreach_line, &st,
                                   &n_long);
        tune_numa_vma_done(&st.vma);
        if (r == -ENOENT || r == -ESRCH)
                return -ESRCH;
        if (r < 0)
                return r;
        if (ret_bad_lines)
                *ret_bad_lines = st.bad + n_long;
        return 0;
}

static int add_to_usage(const tune_numa_vma *v, void *userdata) {
        return tune_numa_usage_add(userdata, v);
}

int tune_numa_maps_read(const tune_ctx *ctx, pid_t pid, tune_numa_usage *ret) {
        tune_numa_usage u = {};
        unsigned bad = 0;
        int r;

        r = tune_numa_maps_foreach(ctx, pid, add_to_usage, &u, &bad);
        if (r < 0) {
                tune_numa_usage_done(&u);
                return r;
        }
        u.n_bad_lines = bad;
        tune_numa_usage_done(ret);
        *ret = u;
        return 0;
}
