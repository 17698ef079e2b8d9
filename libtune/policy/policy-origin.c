/* SPDX-License-Identifier: GPL-2.0-only */
/* Which file set each effective value of a merged policy, and which earlier files' values
 * it replaced: for --check-policy and --print-policy, and the warning when a drop-in's
 * value is overridden by a file read after it (a drop-in named to sort before the shipped
 * file it adapts: its value silently loses). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"

static const char *value_text(json_object *v) {
        return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* The setters of one leaf, in file order. */
typedef struct setter {
        unsigned file;
        json_object *value;
        char *path;
        int line, column;
} setter;

static int setters_of(const struct tune_policy_sources *s, const char *merged_path, setter **ret, unsigned *ret_n) {
        setter *l = calloc(s->n ? s->n : 1, sizeof *l);
        unsigned n = 0;

        if (!l)
                return -ENOMEM;
        for (unsigned i = 0; i < s->n; i++) {
                int r = policy_source_value(s, i, merged_path, &l[n].value, &l[n].path, &l[n].line, &l[n].column);
                if (r < 0) {
                        for (unsigned j = 0; j < n; j++)
                                free(l[j].path);
                        free(l);
                        return r;
                }
                if (r > 0)
                        l[n++].file = i;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

static void setters_free(setter *l, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                free(l[i].path);
        free(l);
}

/* A leaf's setters (n may be 0) are gathered here, once, for whichever callback looks at them. */
typedef int (*leaf_fn)(const struct tune_policy_sources *s, const setter *l, unsigned n, const char *display,
                       void *userdata);

/* Every leaf of the merged document (a scalar, or a list that is not merged by name),
 * comments and the version left out. */
static int walk(const struct tune_policy_sources *s, json_object *o, unsigned depth, const char *parent,
                const char *id_of_o, const char *merged_path, const char *display, leaf_fn fn, void *userdata) {
        json_object_object_foreach(o, key, value) {
                _cleanup_free_ char *mp = NULL, *dp = NULL;
                const char *id_key = policy_list_id_key(depth, parent, key);
                int r;

                /* (an entry's name is in its display path already) */
                if (streq(key, "comment") || (depth == 0 && streq(key, "version")) || (id_of_o && streq(key, id_of_o)))
                        continue;
                if (asprintf(&mp, "%s%s%s", merged_path, *merged_path ? "." : "", key) < 0 ||
                    asprintf(&dp, "%s%s%s", display, *display ? "." : "", key) < 0)
                        return -ENOMEM;
                if (id_key && json_object_is_type(value, json_type_array)) {
                        for (size_t i = 0; i < json_object_array_length(value); i++) {
                                json_object *e = json_object_array_get_idx(value, i), *id = NULL;
                                _cleanup_free_ char *emp = NULL, *edp = NULL;
                                if (!json_object_is_type(e, json_type_object))
                                        continue;
                                (void) json_object_object_get_ex(e, id_key, &id);
                                if (asprintf(&emp, "%s[%zu]", mp, i) < 0 ||
                                    asprintf(&edp, "%s[%s]", dp, id ? json_object_get_string(id) : "?") < 0)
                                        return -ENOMEM;
                                r = walk(s, e, depth + 1, NULL, id_key, emp, edp, fn, userdata);
                                if (r < 0)
                                        return r;
                        }
                        continue;
                }
                if (json_object_is_type(value, json_type_object) && depth < TUNE_POLICY_DEPTH_MAX)
                        r = walk(s, value, depth + 1, key, NULL, mp, dp, fn, userdata);
                else {
                        setter *l = NULL;
                        unsigned n = 0;

                        r = setters_of(s, mp, &l, &n);
                        if (r < 0)
                                return r;
                        r = fn(s, l, n, dp, userdata);
                        setters_free(l, n);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool same_value(json_object *a, json_object *b) {
        return streq(value_text(a), value_text(b));
}

static int check_leaf(const struct tune_policy_sources *s, const setter *l, unsigned n, const char *display,
                      void *userdata) {
        tune_policy_errors *errors = userdata;
        int r = 0;

        for (unsigned i = 0; r >= 0 && n > 1 && i + 1 < n; i++) {
                const setter *lost = &l[i], *won = &l[n - 1];
                if (s->items[lost->file].shipped || same_value(lost->value, won->value))
                        continue;
                /* Values are JSON text from a trusted file: no control characters. */
                r = policy_error_add(errors, s->items[lost->file].name, lost->path, lost->line, lost->column, true,
                                     "%.64s is overridden by %.64s from %s (line %d), which is read after it: files "
                                     "merge in the order of their names, whatever their directory; name a drop-in so "
                                     "that it sorts after the files it adapts (60-site.json after "
                                     "50-atlas-800i-a2.json)",
                                     value_text(lost->value), value_text(won->value), s->items[won->file].name,
                                     won->line);
        }
        return r;
}

int policy_check_overrides(const struct tune_policy_sources *s, tune_policy_errors *errors) {
        if (!s || s->n < 2 || !json_object_is_type(s->merged, json_type_object))
                return 0;
        return walk(s, s->merged, 0, NULL, NULL, "", "", check_leaf, errors);
}

typedef struct origins {
        tune_policy_origin *items;
        unsigned n;
} origins;

static int origin_leaf(const struct tune_policy_sources *s, const setter *l, unsigned n, const char *display,
                       void *userdata) {
        origins *o = userdata;
        tune_policy_origin *x;
        int r = 0;

        if (n == 0)
                return 0;
        x = reallocarray(o->items, o->n + 1, sizeof *x);
        if (!x)
                return -ENOMEM;
        o->items = x;
        x = &o->items[o->n++];
        *x = (tune_policy_origin){
                .key_path = strdup(display),
                .value = strdup(value_text(l[n - 1].value)),
                .file = s->items[l[n - 1].file].name,
                .line = l[n - 1].line,
        };
        if (n > 1) {
                x->overridden = calloc(n - 1, sizeof *x->overridden);
                for (unsigned i = 0; x->overridden && i + 1 < n; i++) {
                        if (same_value(l[i].value, l[n - 1].value))
                                continue; /* set twice to the same: nothing was replaced */
                        x->overridden[x->n_overridden] = (tune_policy_origin_lost){
                                .value = strdup(value_text(l[i].value)),
                                .file = s->items[l[i].file].name,
                                .line = l[i].line,
                                .shipped = s->items[l[i].file].shipped,
                        };
                        if (!x->overridden[x->n_overridden].value)
                                r = -ENOMEM;
                        x->n_overridden++;
                }
                if (!x->overridden)
                        r = -ENOMEM;
        }
        if (!x->key_path || !x->value)
                return -ENOMEM;
        return r;
}

int tune_policy_origins(const tune_policy *p, tune_policy_origin **ret, unsigned *ret_n) {
        origins o = {};
        int r = 0;

        if (!p || !ret || !ret_n)
                return -EINVAL;
        if (p->sources && json_object_is_type(p->sources->merged, json_type_object))
                r = walk(p->sources, p->sources->merged, 0, NULL, NULL, "", "", origin_leaf, &o);
        if (r < 0) {
                tune_policy_origins_free(o.items, o.n);
                return r;
        }
        *ret = o.items;
        *ret_n = o.n;
        return 0;
}

void tune_policy_origins_free(tune_policy_origin *l, unsigned n) {
        for (unsigned i = 0; l && i < n; i++) {
                free(l[i].key_path);
                free(l[i].value);
                for (unsigned j = 0; j < l[i].n_overridden; j++)
                        free(l[i].overridden[j].value);
                free(l[i].overridden);
        }
        free(l);
}
