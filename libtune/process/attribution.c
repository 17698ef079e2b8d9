/* SPDX-License-Identifier: GPL-2.0-only */
/* Accelerator attribution: the environment captured at exec, ranks, device files. Pure. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "npu-tuned/attribution.h"
#include "npu-tuned/engine-binding.h"
#include "npu-tuned/macro.h"
#include "npu-tuned/text.h"

static const char *const env_state_names[_TUNE_ENV_STATE_MAX] = {
        [TUNE_ENV_NOT_READ] = "not-read",
        [TUNE_ENV_READ] = "read",
        [TUNE_ENV_WIPED] = "wiped",
        [TUNE_ENV_UNREADABLE] = "unreadable",
};

const char *tune_env_state_to_string(tune_env_state s) {
        return s >= 0 && s < _TUNE_ENV_STATE_MAX ? env_state_names[s] : NULL;
}

static const char *const source_names[_TUNE_ATTRIBUTION_SOURCE_MAX] = {
        [TUNE_ATTRIBUTION_NONE] = "none",
        [TUNE_ATTRIBUTION_RULE] = "rule",
        [TUNE_ATTRIBUTION_ENV] = "env",
        [TUNE_ATTRIBUTION_ENV_INHERITED] = "env-inherited",
        [TUNE_ATTRIBUTION_RANK] = "rank",
        [TUNE_ATTRIBUTION_DEVICE_FILES] = "device-files",
        [TUNE_ATTRIBUTION_DRIVER] = "driver",
};

const char *tune_attribution_source_to_string(tune_attribution_source s) {
        return s >= 0 && s < _TUNE_ATTRIBUTION_SOURCE_MAX ? source_names[s] : NULL;
}

/* ---- Environment capture ---- */

void tune_strv_free(char **l) {
        if (!l)
                return;
        for (char **p = l; *p; p++)
                free(*p);
        free(l);
}

void tune_env_capture_done(tune_env_capture *e) {
        if (!e)
                return;
        for (unsigned i = 0; i < e->n; i++)
                free(e->vars[i]);
        free(e->vars);
        *e = (tune_env_capture){};
}

static bool valid_name_char(char c, bool first) {
        return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9');
}

/* Length of the NAME in "NAME=value", or 0 if the entry has not that form. */
static size_t entry_name_len(const char *s, size_t len) {
        size_t i = 0;

        while (i < len && valid_name_char(s[i], i == 0))
                i++;
        return i > 0 && i < len && s[i] == '=' ? i : 0;
}

const char *tune_env_capture_get(const tune_env_capture *e, const char *name) {
        size_t nl;

        if (!e || !name)
                return NULL;
        nl = strlen(name);
        for (unsigned i = 0; i < e->n; i++)
                if (strncmp(e->vars[i], name, nl) == 0 && e->vars[i][nl] == '=')
                        return e->vars[i] + nl + 1;
        return NULL;
}

static bool valid_name(const char *s) {
        if (!valid_name_char(s[0], true))
                return false;
        while (*++s)
                if (!valid_name_char(*s, false))
                        return false;
        return true;
}

/* The index among names of the name that the entry s (elen bytes) is an assignment of, or
 * -1; cand: the names that can be (the index's bits for s's first two bytes), bit i for
 * names[i], bit 63 for names[63] and every one after it. */
static int wanted_name(const char *const *names, unsigned n_names, const tune_env_name_index *idx, uint64_t cand,
                       const char *s, size_t elen) {
        for (; cand; cand &= cand - 1) {
                unsigned i = (unsigned) __builtin_ctzll(cand);
                unsigned last = i == 63 ? n_names : i + 1;

                if (i >= n_names) /* an index of a longer list: none of these names */
                        break;

                for (; i < last; i++) {
                        size_t nl = i < 63 ? idx->len[i] : strlen(names[i]);
                        if (i >= 63 && !valid_name(names[i])) /* bit 63 stands for every one of them */
                                continue;
                        if (nl < elen && s[nl] == '=' && memcmp(s, names[i], nl) == 0)
                                return (int) i;
                }
        }
        return -1;
}

void tune_env_name_index_build(tune_env_name_index *idx, const char *const *names, unsigned n_names) {
        memset(idx->first_byte, 0, sizeof idx->first_byte);
        memset(idx->second_byte, 0, sizeof idx->second_byte);
        for (unsigned i = 0; i < n_names && i < 63; i++)
                idx->len[i] = strlen(names[i]);
        for (unsigned i = 0; i < n_names; i++)
                if (valid_name(names[i])) {
                        uint64_t bit = UINT64_C(1) << (i < 63 ? i : 63);
                        idx->first_byte[(unsigned char) names[i][0]] |= bit;
                        idx->second_byte[names[i][1] ? (unsigned char) names[i][1] : '='] |= bit;
                }
}

int tune_env_capture_parse(const char *buf, size_t len, bool truncated, const char *const *names,
                           unsigned n_names, tune_env_capture *ret) {
        tune_env_name_index idx;

        if (!names && n_names > 0)
                return -EINVAL;
        tune_env_name_index_build(&idx, names, n_names);
        return tune_env_capture_parse_indexed(buf, len, truncated, names, n_names, &idx, ret);
}

#if defined(__SSE2__)
static inline uint64_t nul_mask16(const char *p) {
        __m128i v = _mm_loadu_si128((const __m128i *) p);
        return (uint32_t) _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128()));
}

/* Bit i: p[i] is a NUL, for the 64 bytes at p (those from avail on: none, and not read).
 * With SSE2 (every x86-64): 64 bytes in some twenty instructions, where a memchr() call
 * per entry costs some thirty and more (an environment is some dozens of entries of some
 * dozens of bytes). */
static inline uint64_t nul_mask64(const char *p, size_t avail) {
        char tail[64];

        if (avail < 64) {
                memset(tail, 1, sizeof tail);
                memcpy(tail, p, avail);
                p = tail;
        }
        return nul_mask16(p) | nul_mask16(p + 16) << 16 | nul_mask16(p + 32) << 32 | nul_mask16(p + 48) << 48;
}
#endif

/* What one parse keeps, for the entries that start with a wanted name's first two bytes. */
typedef struct env_keep {
        const char *const *names;
        unsigned n_names;
        const tune_env_name_index *idx;
        tune_env_capture e;
        uint64_t found; /* bit i: names[i] (below 63) kept, its first occurrence */
} env_keep;

/* The entry s (elen bytes) kept if it is NAME=value of one of the names in cand, its value
 * fits, and that name was not kept before (the first occurrence wins). */
static int keep_entry(env_keep *k, uint64_t cand, const char *s, size_t elen) {
        int i = wanted_name(k->names, k->n_names, k->idx, cand, s, elen);
        size_t nl;

        if (i < 0)
                return 0;
        nl = i < 63 ? k->idx->len[i] : strlen(k->names[i]);
        if (elen - nl - 1 > TUNE_ENV_VALUE_MAX ||
            (i < 63 ? (k->found & UINT64_C(1) << i) != 0 : tune_env_capture_get(&k->e, k->names[i]) != NULL))
                return 0; /* too long, or not its first occurrence */
        if (!k->e.vars) { /* the list only for an environment with one of the names */
                k->e.vars = tune_alloc0(k->n_names, sizeof *k->e.vars);
                if (!k->e.vars)
                        return -ENOMEM;
        }
        k->e.vars[k->e.n] = strndup(s, elen);
        if (!k->e.vars[k->e.n])
                return -ENOMEM;
        k->e.n++;
        if (i < 63)
                k->found |= UINT64_C(1) << i;
        return 0;
}

/* One entry (s, elen bytes, to its NUL or the end): what is looked at of each, most of
 * them no further than their first two bytes (the names with those there: idx); only an
 * entry a wanted name can be goes on to keep_entry(). Until one entry has the NAME=value
 * form, each is looked at whole (an environment overwritten by a title has none). */
static inline int env_entry(env_keep *k, bool *any_entry, const char *s, size_t elen) {
        uint64_t cand;

        if (elen < 2) /* "N=" is the shortest NAME=value */
                return 0;
        cand = k->idx->first_byte[(unsigned char) s[0]] & k->idx->second_byte[(unsigned char) s[1]];
        if (!*any_entry) {
                if (entry_name_len(s, elen) == 0)
                        return 0;
                *any_entry = true;
        }
        return cand ? keep_entry(k, cand, s, elen) : 0;
}

int tune_env_capture_parse_indexed(const char *buf, size_t len, bool truncated, const char *const *names,
                                   unsigned n_names, const tune_env_name_index *idx, tune_env_capture *ret) {
        env_keep k = { .names = names, .n_names = n_names, .idx = idx,
                       .e = { .state = TUNE_ENV_READ, .truncated = truncated, .len = len } };
        bool any_entry = false;
        size_t pos = 0; /* where the next entry starts */
        int r = 0;

        if ((!buf && len > 0) || (!names && n_names > 0) || !idx || !ret)
                return -EINVAL;
#if defined(__SSE2__)
        /* The NULs of 64 bytes at a time, each entry from one to the next. */
        for (size_t base = 0; base < len && r >= 0; base += 64)
                for (uint64_t nuls = nul_mask64(buf + base, len - base); nuls && r >= 0; nuls &= nuls - 1) {
                        size_t end = base + (size_t) __builtin_ctzll(nuls);
                        r = env_entry(&k, &any_entry, buf + pos, end - pos);
                        pos = end + 1;
                }
#else
        while (pos < len && r >= 0) {
                const char *nul = memchr(buf + pos, 0, len - pos);
                size_t end = nul ? (size_t) (nul - buf) : len;
                r = env_entry(&k, &any_entry, buf + pos, end - pos);
                pos = end + 1;
        }
#endif
        if (pos < len && r >= 0) /* an unterminated last entry counts */
                r = env_entry(&k, &any_entry, buf + pos, len - pos);
        if (r < 0) {
                tune_env_capture_done(&k.e);
                return r;
        }
        if (len > 0 && !any_entry)
                k.e.state = TUNE_ENV_WIPED;
        *ret = k.e;
        return 0;
}

int tune_env_capture_copy(tune_env_capture *dst, const tune_env_capture *src) {
        tune_env_capture e = *src;

        e.vars = NULL;
        e.n = 0;
        if (src->n > 0) {
                e.vars = calloc(src->n, sizeof *e.vars);
                if (!e.vars)
                        return -ENOMEM;
                for (unsigned i = 0; i < src->n; i++) {
                        e.vars[i] = strdup(src->vars[i]);
                        if (!e.vars[i]) {
                                tune_env_capture_done(&e);
                                return -ENOMEM;
                        }
                        e.n++;
                }
        }
        *dst = e;
        return 0;
}

bool tune_env_capture_usable(const tune_env_capture *e) {
        return e && e->state == TUNE_ENV_READ;
}

bool tune_env_capture_same_vars(const tune_env_capture *a, const tune_env_capture *b) {
        if (!a || !b || a->n != b->n)
                return false;
        for (unsigned i = 0; i < a->n; i++) {
                const char *eq = strchr(a->vars[i], '=');
                char name[128];

                if (!eq || (size_t) (eq - a->vars[i]) >= sizeof name)
                        return false;
                memcpy(name, a->vars[i], (size_t) (eq - a->vars[i]));
                name[eq - a->vars[i]] = 0;
                const char *v = tune_env_capture_get(b, name);
                if (!v || !streq(v, eq + 1))
                        return false;
        }
        return true;
}

void tune_attribution_describe_source(const tune_attribution *a, const tune_env_capture *env, char *buf, size_t size) {
        const char *source = tune_attribution_source_to_string(a ? a->source : TUNE_ATTRIBUTION_NONE);

        if (size == 0)
                return;
        if (tune_attribution_restored(a, env))
                tune_concat(buf, size, "attributed before the restart (from ", source, ")", NULL);
        else if (a && a->source == TUNE_ATTRIBUTION_DRIVER)
                tune_concat(buf, size, "from the driver (", a->variable, ")", NULL);
        else
                tune_concat(buf, size, "from ", source, NULL);
}

bool tune_attribution_restored(const tune_attribution *a, const tune_env_capture *env) {
        return a && env && env->restored &&
               (a->source == TUNE_ATTRIBUTION_ENV || a->source == TUNE_ATTRIBUTION_ENV_INHERITED ||
                a->source == TUNE_ATTRIBUTION_RANK);
}

static const char *const builtin_env_names[] = {
        "ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
        "ROCR_VISIBLE_DEVICES",      "HIP_VISIBLE_DEVICES",
};

static int strv_add_unique(char ***l, unsigned *n, const char *s) {
        char **nl;

        if (!s || !*s)
                return 0;
        for (unsigned i = 0; i < *n; i++)
                if (streq((*l)[i], s))
                        return 0;
        nl = reallocarray(*l, *n + 2, sizeof *nl);
        if (!nl)
                return -ENOMEM;
        *l = nl;
        nl[*n] = strdup(s);
        if (!nl[*n])
                return -ENOMEM;
        nl[++*n] = NULL;
        return 0;
}

int tune_attribution_env_names(const tune_policy *p, char ***ret, unsigned *ret_n) {
        char **l = calloc(1, sizeof *l);
        unsigned n = 0;
        int r = 0;

        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(builtin_env_names) && r >= 0; i++)
                r = strv_add_unique(&l, &n, builtin_env_names[i]);
        for (unsigned i = 0; p && i < p->n_kinds && r >= 0; i++)
                r = strv_add_unique(&l, &n, p->kinds[i].visible_env);
        for (unsigned i = 0; p && i < p->n_rules && r >= 0; i++)
                if (p->rules[i].rank_source == TUNE_RANK_ENV)
                        r = strv_add_unique(&l, &n, p->rules[i].rank_env);
        /* The engines' own binding switches, for rules with "binding": "auto". */
        for (size_t i = 0; tune_engine_binding_env_names[i] && r >= 0; i++)
                r = strv_add_unique(&l, &n, tune_engine_binding_env_names[i]);
        if (r < 0) {
                tune_strv_free(l);
                return r;
        }
        *ret = l;
        if (ret_n)
                *ret_n = n;
        return 0;
}

/* ---- Visible-devices lists ---- */

static bool parse_uint(const char *s, size_t len, unsigned max, unsigned *ret) {
        unsigned v = 0;

        if (len == 0 || len > 9)
                return false;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (unsigned) (s[i] - '0');
        }
        if (v > max)
                return false;
        *ret = v;
        return true;
}

static bool list_has(const unsigned *l, unsigned n, unsigned v) {
        for (unsigned i = 0; i < n; i++)
                if (l[i] == v)
                        return true;
        return false;
}

/* The base entry a number names, or -1. */
static int lookup_number(const tune_accels *accels, const unsigned *base, unsigned n_base, unsigned flags, unsigned v) {
        if (!(flags & TUNE_VISIBLE_PHYSICAL))
                return v < n_base ? (int) base[v] : -1;
        for (unsigned i = 0; i < n_base; i++)
                if (accels->items[base[i]].index >= 0 && (unsigned) accels->items[base[i]].index == v)
                        return (int) base[i];
        return -1;
}

/* The base entry whose UUID starts with the token (case-insensitive), if exactly one does. */
static int lookup_uuid(const tune_accels *accels, const unsigned *base, unsigned n_base, const char *tok, size_t len) {
        int found = -1;

        /* "GPU-" and at least a few digits: "GPU-" alone would name every device. */
        if (len < 5 || strncasecmp(tok, "GPU-", 4) != 0)
                return -1;
        for (unsigned i = 0; i < n_base; i++) {
                const char *u = accels->items[base[i]].uuid;
                if (strlen(u) >= len && strncasecmp(u, tok, len) == 0) {
                        if (found >= 0)
                                return -1; /* ambiguous prefix */
                        found = (int) base[i];
                }
        }
        return found;
}

int tune_visible_list_parse(const char *value, const tune_accels *accels, const unsigned *base, unsigned n_base,
                            unsigned flags, unsigned *ret, unsigned *ret_n, unsigned *ret_unknown) {
        unsigned n = 0, unknown = 0;
        const char *p = value;

        if (!value || !accels || (!base && n_base > 0) || !ret || !ret_n)
                return -EINVAL;
        for (;;) {
                const char *end = strchr(p, ',');
                size_t len = end ? (size_t) (end - p) : strlen(p);
                const char *tok = p;
                bool ok = false;

                while (len > 0 && (*tok == ' ' || *tok == '\t')) {
                        tok++;
                        len--;
                }
                while (len > 0 && (tok[len - 1] == ' ' || tok[len - 1] == '\t' || tok[len - 1] == '\n'))
                        len--;

                if (len == 0 && !end && p == value) {
                        /* An empty variable: CUDA and friends then show no device at all. */
                        break;
                }
                const char *dash = (flags & TUNE_VISIBLE_RANGES) ? memchr(tok, '-', len) : NULL;
                unsigned a, b;
                if (dash && parse_uint(tok, (size_t) (dash - tok), 1u << 20, &a) &&
                    parse_uint(dash + 1, len - (size_t) (dash - tok) - 1, 1u << 20, &b) && a <= b && b - a < 4096) {
                        ok = true;
                        for (unsigned v = a; v <= b; v++) {
                                int i = lookup_number(accels, base, n_base, flags, v);
                                if (i < 0)
                                        unknown++;
                                else if (!list_has(ret, n, (unsigned) i))
                                        ret[n++] = (unsigned) i;
                        }
                } else if (parse_uint(tok, len, 1u << 20, &a)) {
                        int i = lookup_number(accels, base, n_base, flags, a);
                        if (i >= 0) {
                                ok = true;
                                if (!list_has(ret, n, (unsigned) i))
                                        ret[n++] = (unsigned) i;
                        }
                } else if (flags & TUNE_VISIBLE_UUID) {
                        int i = lookup_uuid(accels, base, n_base, tok, len);
                        if (i >= 0) {
                                ok = true;
                                if (!list_has(ret, n, (unsigned) i))
                                        ret[n++] = (unsigned) i;
                        }
                }
                if (!ok) {
                        unknown++;
                        if (flags & TUNE_VISIBLE_CUDA_STOP)
                                break;
                }
                if (!end)
                        break;
                p = end + 1;
        }
        *ret_n = n;
        if (ret_unknown)
                *ret_unknown = unknown;
        return 0;
}

/* ---- Attribution ---- */

void tune_attribution_done(tune_attribution *a) {
        if (!a)
                return;
        free(a->accels);
        *a = (tune_attribution){ .rank = -1 };
}

int tune_attribution_copy(tune_attribution *dst, const tune_attribution *src) {
        tune_attribution a = *src;

        a.accels = NULL;
        if (src->n_accels > 0) {
                a.accels = calloc(src->n_accels, sizeof *a.accels);
                if (!a.accels)
                        return -ENOMEM;
                memcpy(a.accels, src->accels, src->n_accels * sizeof *a.accels);
        }
        *dst = a;
        return 0;
}

bool tune_attribution_equal(const tune_attribution *a, const tune_attribution *b) {
        if (a->source != b->source || a->n_accels != b->n_accels || a->rank != b->rank ||
            a->rank_picked != b->rank_picked || a->rank_refused != b->rank_refused || !streq(a->variable, b->variable))
                return false;
        for (unsigned i = 0; i < a->n_accels; i++)
                if (a->accels[i].index != b->accels[i].index || !streq(a->accels[i].kind, b->accels[i].kind))
                        return false;
        return true;
}

void tune_attribution_put_accels(tune_text *t, const tune_attribution *a) {
        for (unsigned i = 0; i < a->n_accels; i++) {
                if (i > 0)
                        tune_text_put(t, ",", 1);
                tune_text_put_str(t, a->accels[i].kind);
                tune_text_put(t, ":", 1);
                tune_text_put_i64(t, a->accels[i].index);
        }
}

int tune_attribution_format_accels(const tune_attribution *a, char **ret) {
        tune_text t = {};

        tune_attribution_put_accels(&t, a);
        return tune_text_take(&t, ret);
}

/* Indexes into accels->items of one kind, sorted by device index (accels is sorted by
 * kind, then index) or, with by_pci, by PCI address. */
static unsigned kind_base(const tune_accels *accels, const char *kind, bool by_pci, unsigned *base) {
        unsigned n = 0;

        for (unsigned i = 0; i < accels->n; i++)
                if (streq(accels->items[i].kind, kind))
                        base[n++] = i;
        if (by_pci)
                for (unsigned i = 1; i < n; i++) /* insertion sort: a handful of devices */
                        for (unsigned j = i; j > 0 && strcmp(accels->items[base[j - 1]].pci, accels->items[base[j]].pci) > 0; j--) {
                                unsigned t = base[j];
                                base[j] = base[j - 1];
                                base[j - 1] = t;
                        }
        return n;
}

static bool same_model(const tune_accels *accels, const unsigned *base, unsigned n) {
        for (unsigned i = 1; i < n; i++)
                if (accels->items[base[i]].vendor != accels->items[base[0]].vendor ||
                    accels->items[base[i]].device != accels->items[base[0]].device)
                        return false;
        return true;
}

typedef struct candidate {
        unsigned *list;
        unsigned n;
        unsigned unknown;
        char variable[96];
        bool order_assumed;
} candidate;

/* Evaluate one kind's variables. 1: decided (c->n > 0), 0: not. */
static int env_for_kind(const tune_attribution_input *in, const char *kind, candidate *c) {
        const tune_accels *accels = in->accels;
        const tune_env_capture *env = in->env;
        unsigned *base = c->list + accels->n; /* scratch: second half of the buffer */
        unsigned *tmp = base + accels->n;
        unsigned n_base, unknown = 0;
        const char *v, *w;

        c->n = 0;
        c->variable[0] = 0;
        c->order_assumed = false;
        if (streq(kind, "ascend")) {
                n_base = kind_base(accels, kind, false, base);
                v = tune_env_capture_get(env, "ASCEND_VISIBLE_DEVICES");
                w = tune_env_capture_get(env, "ASCEND_RT_VISIBLE_DEVICES");
                if (!v && !w)
                        return 0;
                if (v) {
                        unsigned n;
                        (void) tune_visible_list_parse(v, accels, base, n_base, TUNE_VISIBLE_PHYSICAL | TUNE_VISIBLE_RANGES,
                                                       tmp, &n, &unknown);
                        c->unknown += unknown;
                        /* The container runtime presents them in device order. */
                        for (unsigned i = 1; i < n; i++)
                                for (unsigned j = i; j > 0 && tmp[j - 1] > tmp[j]; j--) {
                                        unsigned t = tmp[j];
                                        tmp[j] = tmp[j - 1];
                                        tmp[j - 1] = t;
                                }
                        memcpy(base, tmp, n * sizeof *base);
                        n_base = n;
                        snprintf(c->variable, sizeof c->variable, "ASCEND_VISIBLE_DEVICES");
                }
                if (w) {
                        (void) tune_visible_list_parse(w, accels, base, n_base, 0, c->list, &c->n, &unknown);
                        c->unknown += unknown;
                        snprintf(c->variable, sizeof c->variable, "%s%s", v ? "ASCEND_VISIBLE_DEVICES+" : "",
                                 "ASCEND_RT_VISIBLE_DEVICES");
                } else {
                        memcpy(c->list, base, n_base * sizeof *base);
                        c->n = n_base;
                }
        } else if (streq(kind, "nvidia")) {
                const char *order = tune_env_capture_get(env, "CUDA_DEVICE_ORDER");
                v = tune_env_capture_get(env, "CUDA_VISIBLE_DEVICES");
                if (!v)
                        return 0;
                n_base = kind_base(accels, kind, true, base);
                if (!(order && streq(order, "PCI_BUS_ID")) && !same_model(accels, base, n_base))
                        c->order_assumed = true;
                (void) tune_visible_list_parse(v, accels, base, n_base, TUNE_VISIBLE_CUDA_STOP | TUNE_VISIBLE_UUID,
                                               c->list, &c->n, &unknown);
                c->unknown += unknown;
                snprintf(c->variable, sizeof c->variable, "%s", "CUDA_VISIBLE_DEVICES");
        } else if (streq(kind, "amd")) {
                v = tune_env_capture_get(env, "ROCR_VISIBLE_DEVICES");
                w = tune_env_capture_get(env, "HIP_VISIBLE_DEVICES");
                if (!v && !w)
                        return 0;
                n_base = kind_base(accels, kind, false, base);
                if (v) {
                        unsigned n;
                        (void) tune_visible_list_parse(v, accels, base, n_base, TUNE_VISIBLE_CUDA_STOP | TUNE_VISIBLE_UUID,
                                                       tmp, &n, &unknown);
                        c->unknown += unknown;
                        memcpy(base, tmp, n * sizeof *base);
                        n_base = n;
                        snprintf(c->variable, sizeof c->variable, "ROCR_VISIBLE_DEVICES");
                }
                if (w) {
                        (void) tune_visible_list_parse(w, accels, base, n_base, TUNE_VISIBLE_CUDA_STOP | TUNE_VISIBLE_UUID,
                                                       c->list, &c->n, &unknown);
                        c->unknown += unknown;
                        snprintf(c->variable, sizeof c->variable, "%s%s", v ? "ROCR_VISIBLE_DEVICES+" : "",
                                 "HIP_VISIBLE_DEVICES");
                } else {
                        memcpy(c->list, base, n_base * sizeof *base);
                        c->n = n_base;
                }
        } else
                return 0;
        return c->n > 0;
}

static int env_for_policy_kind(const tune_attribution_input *in, const tune_policy_kind *k, candidate *c) {
        unsigned *base = c->list + in->accels->n;
        unsigned n_base, unknown = 0;
        const char *v;

        c->n = 0;
        c->order_assumed = false;
        if (!k->visible_env)
                return 0;
        v = tune_env_capture_get(in->env, k->visible_env);
        if (!v)
                return 0;
        n_base = kind_base(in->accels, k->kind.name, false, base);
        (void) tune_visible_list_parse(v, in->accels, base, n_base,
                                       k->visible_ids == TUNE_VISIBLE_IDS_PHYSICAL ? TUNE_VISIBLE_PHYSICAL : 0, c->list,
                                       &c->n, &unknown);
        c->unknown += unknown;
        snprintf(c->variable, sizeof c->variable, "%s", k->visible_env);
        return c->n > 0;
}

static bool host_has_kind(const tune_accels *a, const char *kind) {
        for (unsigned i = 0; i < a->n; i++)
                if (streq(a->items[i].kind, kind))
                        return true;
        return false;
}

/* Fill ret->accels from indexes into accels->items, the rank picking one if given. */
static int set_result(tune_attribution *ret, const tune_accels *accels, const unsigned *list, unsigned n, int rank) {
        unsigned from = 0, count = n;

        ret->n_visible = n;
        if (rank >= 0 && n > 0) {
                from = (unsigned) rank % n;
                count = 1;
                ret->rank_picked = true;
        }
        if (count == 0)
                return 0;
        ret->accels = calloc(count, sizeof *ret->accels);
        if (!ret->accels)
                return -ENOMEM;
        for (unsigned i = 0; i < count; i++) {
                const tune_accel *a = &accels->items[list[from + i]];
                snprintf(ret->accels[i].kind, sizeof ret->accels[i].kind, "%s", a->kind);
                ret->accels[i].index = a->index;
        }
        ret->n_accels = count;
        return 0;
}

static int cmp_dev(const void *a, const void *b) {
        dev_t x = *(const dev_t *) a, y = *(const dev_t *) b;
        return x < y ? -1 : x > y;
}

int tune_attribute(const tune_attribution_input *in, tune_attribution *ret) {
        static const char *const builtin_kinds[] = { "ascend", "nvidia", "amd" };
        tune_accel_mode mode = in->rule ? in->rule->accel_mode : TUNE_ACCEL_AUTO;
        const tune_accels *accels = in->accels;
        _cleanup_free_ unsigned *buf = NULL;
        tune_attribution a = { .rank = in->rank };
        candidate c = {};
        int r;

        *ret = (tune_attribution){ .rank = in->rank };
        if (mode == TUNE_ACCEL_NONE || !accels)
                return 0;
        /* list, base and scratch: three times the number of accelerators (the rule's
         * list may be longer: it is not bounded by the host). */
        buf = calloc(3 * (size_t) accels->n + (in->rule ? in->rule->n_accels : 0) + 1, sizeof *buf);
        if (!buf)
                return -ENOMEM;
        c.list = buf;

        if (mode == TUNE_ACCEL_EXPLICIT) {
                unsigned n = 0;
                for (unsigned i = 0; i < in->rule->n_accels; i++) {
                        const tune_accel_ref *ref = &in->rule->accels[i];
                        const tune_accel *x = tune_accels_find(accels, ref->kind, ref->index);
                        if (!x)
                                a.n_unknown++;
                        else if (!list_has(buf, n, (unsigned) (x - accels->items)))
                                buf[n++] = (unsigned) (x - accels->items);
                }
                a.source = TUNE_ATTRIBUTION_RULE;
                r = set_result(&a, accels, buf, n, in->rank);
                if (r < 0)
                        return r;
                *ret = a;
                return 0;
        }

        /* The environment at exec (own or inherited). */
        if (in->env && in->env->n > 0) {
                bool decided = false;
                for (size_t k = 0; k < ELEMENTSOF(builtin_kinds) && !decided; k++)
                        if (host_has_kind(accels, builtin_kinds[k]) && env_for_kind(in, builtin_kinds[k], &c) > 0)
                                decided = true;
                for (unsigned k = 0; k < in->n_kinds && !decided; k++)
                        if (host_has_kind(accels, in->kinds[k].kind.name) && env_for_policy_kind(in, &in->kinds[k], &c) > 0)
                                decided = true;
                a.n_unknown = c.unknown;
                if (decided) {
                        a.source = in->env->inherited ? TUNE_ATTRIBUTION_ENV_INHERITED : TUNE_ATTRIBUTION_ENV;
                        snprintf(a.variable, sizeof a.variable, "%s", c.variable);
                        a.order_assumed = c.order_assumed;
                        r = set_result(&a, accels, c.list, c.n, in->rank);
                        if (r < 0)
                                return r;
                        *ret = a;
                        return 0;
                }
        }

        /* A rank and one kind of accelerator: all its devices are visible, but only if
         * the environment is known to set no visible-devices variable. With it unknown
         * (wiped before anyone read it, a launcher that is gone) the list may well be
         * "1,0": device rank would be a guess, and a wrong one pins next to another
         * process's device. */
        if (in->rank >= 0 && accels->n > 0) {
                bool one_kind = true;
                for (unsigned i = 1; i < accels->n; i++)
                        if (!streq(accels->items[i].kind, accels->items[0].kind))
                                one_kind = false;
                if (one_kind && !tune_env_capture_usable(in->env))
                        a.rank_refused = true;
                else if (one_kind) {
                        const char *kind = accels->items[0].kind;
                        unsigned n = kind_base(accels, kind, streq(kind, "nvidia"), buf);
                        if (streq(kind, "nvidia") && !same_model(accels, buf, n))
                                a.order_assumed = true;
                        a.source = TUNE_ATTRIBUTION_RANK;
                        r = set_result(&a, accels, buf, n, in->rank);
                        if (r < 0)
                                return r;
                        *ret = a;
                        return 0;
                }
        }

        /* Open device files. */
        if (in->open_devices && in->accel_rdevs) {
                unsigned n = 0;
                for (unsigned i = 0; i < accels->n; i++)
                        if (in->accel_rdevs[i] != 0 &&
                            bsearch(&in->accel_rdevs[i], in->open_devices, in->n_open_devices, sizeof(dev_t), cmp_dev))
                                buf[n++] = i;
                if (n > 0) {
                        a.source = TUNE_ATTRIBUTION_DEVICE_FILES;
                        r = set_result(&a, accels, buf, n, -1);
                        if (r < 0)
                                return r;
                        *ret = a;
                        return 0;
                }
        }

        /* The driver's word, last: it knows the device a process uses once it uses one,
         * whatever its environment said (a wiped one, a launcher that is gone). */
        if (in->driver) {
                const char *source;
                unsigned n = tune_driver_procs_lookup(in->driver, in->pid, accels, buf, &source);
                if (n > 0) {
                        a.source = TUNE_ATTRIBUTION_DRIVER;
                        snprintf(a.variable, sizeof a.variable, "%s", source);
                        r = set_result(&a, accels, buf, n, -1);
                        if (r < 0)
                                return r;
                        *ret = a;
                        return 0;
                }
        }
        *ret = a; /* NONE, with what was unknown */
        return 0;
}
