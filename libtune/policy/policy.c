/* SPDX-License-Identifier: GPL-2.0-only */
/* Policy loading: find the files, refuse the ones root should not trust, parse them, merge
 * them (RFC 7386 JSON Merge Patch, with the lists of rules, kinds and NUMA overrides merged
 * by name), validate the result and say exactly where each problem is. A policy with an
 * error is never returned, so nothing is ever half-applied. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "npu-tuned/parse.h"
#include "policy-internal.h"

static const char *const binding_names[] = {
        [TUNE_BINDING_DAEMON] = "daemon",
        [TUNE_BINDING_ENGINE] = "engine",
        [TUNE_BINDING_AUTO] = "auto",
};

const char *tune_binding_to_string(tune_binding b) {
        return (unsigned) b < ELEMENTSOF(binding_names) ? binding_names[b] : NULL;
}

#define EMBEDDED_NAME "(embedded default policy)"
#define FILES_MAX 1024
#define PROBLEMS_MAX 100 /* more helps nobody, and each costs a scan of its file */

/* --- errors ------------------------------------------------------------------------ */

int policy_error_add(tune_policy_errors *e, const char *file, const char *key_path, int line, int column, bool warning,
                     const char *fmt, ...) {
        tune_policy_error *items, *x;
        va_list ap;
        int r;

        if (e->n > PROBLEMS_MAX)
                return 0;
        if (e->n == PROBLEMS_MAX) {
                /* One last entry says so; it is an error, so a policy is never returned. */
                file = NULL;
                key_path = "";
                line = column = 0;
                warning = false;
        }
        items = realloc(e->items, (e->n + 1) * sizeof *items);
        if (!items)
                return -ENOMEM;
        e->items = items;
        x = &items[e->n];
        *x = (tune_policy_error){ .line = line, .column = column, .warning = warning };
        if (e->n == PROBLEMS_MAX)
                r = asprintf(&x->message, "too many problems: only the first %d are shown", PROBLEMS_MAX);
        else {
                va_start(ap, fmt);
                r = vasprintf(&x->message, fmt, ap);
                va_end(ap);
        }
        if (r < 0) {
                x->message = NULL;
                return -ENOMEM;
        }
        x->key_path = strdup(key_path ? key_path : "");
        x->file = file ? strdup(file) : NULL;
        if (!x->key_path || (file && !x->file)) {
                free(x->key_path);
                free(x->file);
                free(x->message);
                return -ENOMEM;
        }
        e->n++;
        return 0;
}

int policy_errors_move(tune_policy_errors *to, tune_policy_errors *from) {
        tune_policy_error *items;

        if (from->n == 0)
                return 0;
        items = realloc(to->items, (to->n + from->n) * sizeof *items);
        if (!items)
                return -ENOMEM;
        memcpy(items + to->n, from->items, from->n * sizeof *items);
        to->items = items;
        to->n += from->n;
        free(from->items);
        *from = (tune_policy_errors){};
        return 0;
}

void tune_policy_errors_done(tune_policy_errors *errors) {
        if (!errors)
                return;
        for (unsigned i = 0; i < errors->n; i++) {
                free(errors->items[i].file);
                free(errors->items[i].key_path);
                free(errors->items[i].message);
        }
        free(errors->items);
        *errors = (tune_policy_errors){};
}

unsigned tune_policy_errors_count(const tune_policy_errors *errors) {
        unsigned n = 0;
        for (unsigned i = 0; i < errors->n; i++)
                n += !errors->items[i].warning;
        return n;
}

int tune_policy_error_format(const tune_policy_error *e, char **ret) {
        char pos[64] = "";
        int r;

        if (e->line > 0)
                snprintf(pos, sizeof pos, " (line %d, column %d)", e->line, e->column);
        r = asprintf(ret, "%s%s%s%s%s%s", e->file ? e->file : "", e->file ? ": " : "", e->key_path ? e->key_path : "",
                     e->key_path && e->key_path[0] ? ": " : "", e->warning ? "warning: " : "", e->message);
        if (r < 0)
                return -ENOMEM;
        if (pos[0]) {
                char *s;
                if (asprintf(&s, "%s%s", *ret, pos) < 0) {
                        free(*ret);
                        return -ENOMEM;
                }
                free(*ret);
                *ret = s;
        }
        return 0;
}

char *policy_quote(const char *s, size_t len, size_t max) {
        size_t cut = len > max ? max : len;
        char *out, *p;

        /* Do not cut a UTF-8 sequence in half. */
        while (cut < len && cut > 0 && ((unsigned char) s[cut] & 0xc0) == 0x80)
                cut--;
        out = malloc(cut * 4 + 8);
        if (!out)
                return NULL;
        p = out;
        *p++ = '"';
        for (size_t i = 0; i < cut; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c == '"' || c == '\\') {
                        *p++ = '\\';
                        *p++ = (char) c;
                } else if (c < 0x20 || c == 0x7f)
                        p += sprintf(p, "\\x%02x", c);
                else
                        *p++ = (char) c;
        }
        *p++ = '"';
        if (cut < len)
                p = stpcpy(p, "...");
        *p = 0;
        return out;
}

/* --- sources ----------------------------------------------------------------------- */

void policy_sources_free(struct tune_policy_sources *s) {
        if (!s)
                return;
        if (s->merged && (s->n != 1 || s->merged != s->items[0].doc))
                json_object_put(s->merged);
        for (unsigned i = 0; i < s->n; i++) {
                free(s->items[i].name);
                free(s->items[i].text);
                json_object_put(s->items[i].doc);
        }
        free(s->items);
        free(s);
}

static int sources_add(struct tune_policy_sources *s, const char *name, char *text, size_t len) {
        tune_policy_source *items = realloc(s->items, (s->n + 1) * sizeof *items);
        if (!items)
                return -ENOMEM;
        s->items = items;
        items[s->n] = (tune_policy_source){ .name = strdup(name), .text = text, .len = len };
        if (!items[s->n].name)
                return -ENOMEM;
        s->n++;
        return 0;
}

/* Tokenise one text; syntax errors with their line and column. */
static int source_parse(tune_policy_source *src, tune_policy_errors *errors) {
        struct json_tokener *tok;
        const char *nul;
        int line, column, r;

        nul = memchr(src->text, 0, src->len);
        if (nul) {
                policy_offset_position(src->text, src->len, (size_t) (nul - src->text), &line, &column);
                return policy_error_add(errors, src->name, "", line, column, false,
                                        "contains a NUL byte: not a text file");
        }
        if (src->text[strspn(src->text, " \t\r\n")] == 0)
                return policy_error_add(errors, src->name, "", 0, 0, false,
                                        "has no JSON in it (an empty file in /etc/npu-tuned/policies.d masks the shipped "
                                        "file of the same name; elsewhere it is a mistake)");
        /* json-c counts every value on its stack, a scalar inside the innermost container
         * too: 32 nested objects/arrays pass, 33 do not. */
        tok = json_tokener_new_ex(TUNE_POLICY_DEPTH_MAX);
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        /* Include the terminating NUL: it ends a top-level number. */
        src->doc = json_tokener_parse_ex(tok, src->text, (int) src->len + 1);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        if (jerr == json_tokener_success && src->doc) {
                r = policy_scan_text(src->text, src->len, src->name, errors);
                return r;
        }
        json_object_put(src->doc);
        src->doc = NULL;
        if (end > src->len)
                end = src->len;
        policy_offset_position(src->text, src->len, end, &line, &column);
        if (jerr == json_tokener_error_depth)
                return policy_error_add(errors, src->name, "", line, column, false, "nesting deeper than %d levels",
                                        TUNE_POLICY_DEPTH_MAX);
        if (jerr == json_tokener_continue || (jerr != json_tokener_success && end >= src->len))
                return policy_error_add(errors, src->name, "", line, column, false,
                                        "JSON syntax error: unexpected end of file (an unclosed '{', '[' or string?)");
        if (jerr == json_tokener_error_parse_utf8_string)
                return policy_error_add(errors, src->name, "", line, column, false, "not valid UTF-8");
        return policy_error_add(errors, src->name, "", line, column, false, "JSON syntax error: %s",
                                json_tokener_error_desc(jerr));
}

int policy_parse_pci(const char *text, char ret[static 13]) {
        char full[16];

        if (text && strlen(text) == 7) {
                snprintf(full, sizeof full, "0000:%s", text);
                text = full;
        }
        return tune_parse_pci_address(text, ret);
}

/* --- merging ----------------------------------------------------------------------- */

/* The key that identifies elements of a list merged by name, or NULL for a plain value. */
static const char *list_id_key(unsigned depth, const char *parent, const char *key) {
        if (depth == 0 && streq(key, "processes"))
                return "name";
        if (depth == 1 && parent && streq(parent, "accelerators")) {
                if (streq(key, "kinds"))
                        return "name";
                if (streq(key, "numa_node_overrides"))
                        return "pci";
        }
        return NULL;
}

static bool same_id(json_object *a, json_object *b, const char *id_key) {
        json_object *x, *y;
        if (!a || !b || !json_object_is_type(a, json_type_object) || !json_object_is_type(b, json_type_object) ||
            !json_object_object_get_ex(a, id_key, &x) || !json_object_object_get_ex(b, id_key, &y) || !x || !y ||
            !json_object_is_type(x, json_type_string) || !json_object_is_type(y, json_type_string))
                return false;
        if (streq(id_key, "pci")) {
                char p[13], q[13];
                return policy_parse_pci(json_object_get_string(x), p) >= 0 &&
                       policy_parse_pci(json_object_get_string(y), q) >= 0 && streq(p, q);
        }
        return streq(json_object_get_string(x), json_object_get_string(y));
}

static int merge_patch(json_object *target, json_object *patch, unsigned depth, const char *parent);

static int copy_into(json_object *target, const char *key, json_object *value) {
        json_object *copy = NULL;
        if (json_object_deep_copy(value, &copy, NULL) < 0)
                return -ENOMEM;
        if (json_object_object_add(target, key, copy) < 0) {
                json_object_put(copy);
                return -ENOMEM;
        }
        return 0;
}

static int merge_list(json_object *target_list, json_object *patch_list, const char *id_key) {
        for (size_t i = 0; i < json_object_array_length(patch_list); i++) {
                json_object *pe = json_object_array_get_idx(patch_list, i), *te = NULL, *copy = NULL;
                for (size_t j = 0; j < json_object_array_length(target_list) && !te; j++)
                        if (same_id(json_object_array_get_idx(target_list, j), pe, id_key))
                                te = json_object_array_get_idx(target_list, j);
                if (te) {
                        int r = merge_patch(te, pe, 2, NULL);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (json_object_deep_copy(pe, &copy, NULL) < 0)
                        return -ENOMEM;
                if (json_object_array_add(target_list, copy) < 0) {
                        json_object_put(copy);
                        return -ENOMEM;
                }
        }
        return 0;
}

static int merge_patch(json_object *target, json_object *patch, unsigned depth, const char *parent) {
        json_object_object_foreach(patch, key, value) {
                json_object *cur = NULL;
                const char *id_key = list_id_key(depth, parent, key);
                int r;

                if (depth == 0 && streq(key, "version"))
                        continue;
                if (!value) {
                        json_object_object_del(target, key);
                        continue;
                }
                (void) json_object_object_get_ex(target, key, &cur);
                if (id_key && cur && json_object_is_type(cur, json_type_array) && json_object_is_type(value, json_type_array))
                        r = merge_list(cur, value, id_key);
                else if (cur && json_object_is_type(cur, json_type_object) && json_object_is_type(value, json_type_object) &&
                         depth < TUNE_POLICY_DEPTH_MAX)
                        r = merge_patch(cur, value, depth + 1, key);
                else
                        r = copy_into(target, key, value);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* --- attribution ------------------------------------------------------------------- */

typedef struct component {
        char key[128];
        long index; /* -1 for a key */
} component;

static int split_path(const char *path, component **ret, size_t *ret_n) {
        component *c = NULL;
        size_t n = 0;

        for (const char *p = path; *p;) {
                component x = { .index = -1 };
                if (*p == '.')
                        p++;
                if (*p == '[') {
                        char *end;
                        x.index = strtol(p + 1, &end, 10);
                        if (end == p + 1 || *end != ']' || x.index < 0)
                                break;
                        p = end + 1;
                } else {
                        size_t len = strcspn(p, ".[");
                        if (len == 0 || len >= sizeof x.key)
                                break;
                        memcpy(x.key, p, len);
                        x.key[len] = 0;
                        p += len;
                }
                component *cc = realloc(c, (n + 1) * sizeof *cc);
                if (!cc) {
                        free(c);
                        return -ENOMEM;
                }
                c = cc;
                c[n++] = x;
        }
        *ret = c;
        *ret_n = n;
        return 0;
}

/* Follow the first n components through the merged document and one file's document in
 * step; elements of lists merged by name are found by their name. Writes the path in the
 * file's terms. */
static bool translate(json_object *merged, json_object *doc, const component *c, size_t n, char *out, size_t out_size,
                      json_object **ret_value) {
        json_object *m = merged, *d = doc;
        const char *parent = NULL, *id_key = NULL;
        size_t len = 0;

        out[0] = 0;
        for (size_t i = 0; i < n; i++) {
                int w;
                if (c[i].index < 0) {
                        json_object *mv = NULL, *dv = NULL;
                        if (!m || !d || !json_object_is_type(m, json_type_object) || !json_object_is_type(d, json_type_object) ||
                            !json_object_object_get_ex(d, c[i].key, &dv))
                                return false;
                        (void) json_object_object_get_ex(m, c[i].key, &mv);
                        id_key = list_id_key((unsigned) i, parent, c[i].key);
                        parent = c[i].key;
                        m = mv;
                        d = dv;
                        w = snprintf(out + len, out_size - len, "%s%s", len ? "." : "", c[i].key);
                } else {
                        size_t idx = (size_t) c[i].index, found = SIZE_MAX;
                        if (!d || !json_object_is_type(d, json_type_array))
                                return false;
                        if (id_key) {
                                json_object *me = m && json_object_is_type(m, json_type_array) ? json_object_array_get_idx(m, idx) : NULL;
                                for (size_t j = 0; me && j < json_object_array_length(d); j++)
                                        if (same_id(json_object_array_get_idx(d, j), me, id_key))
                                                found = j;
                                if (found == SIZE_MAX)
                                        return false;
                                m = me;
                        } else {
                                if (idx >= json_object_array_length(d))
                                        return false;
                                found = idx;
                                m = m && json_object_is_type(m, json_type_array) ? json_object_array_get_idx(m, idx) : NULL;
                        }
                        d = json_object_array_get_idx(d, found);
                        id_key = NULL;
                        parent = NULL;
                        w = snprintf(out + len, out_size - len, "[%zu]", found);
                }
                if (w < 0 || (size_t) w >= out_size - len)
                        return false;
                len += (size_t) w;
        }
        if (ret_value)
                *ret_value = d;
        return true;
}

static int attribute(const struct tune_policy_sources *s, const char *merged_path, bool first, const char **ret_file,
                     char **ret_path, int *ret_line, int *ret_column) {
        _cleanup_free_ component *c = NULL;
        char buf[1024];
        size_t n;
        int r;

        *ret_file = NULL;
        *ret_path = NULL;
        *ret_line = *ret_column = 0;
        if (!s || s->n == 0)
                return 0;
        r = split_path(merged_path, &c, &n);
        if (r < 0)
                return r;
        for (size_t k = n + 1; k-- > 0;)
                for (unsigned j = 0; j < s->n; j++) {
                        unsigned f = first ? j : s->n - 1 - j;
                        if (!s->items[f].doc || !translate(s->merged, s->items[f].doc, c, k, buf, sizeof buf, NULL))
                                continue;
                        /* The member is missing in every file: name its parent, but keep the
                         * key that is missing in the path ("processes[2].match"). */
                        if (k < n) {
                                char full[1024];
                                int w = snprintf(full, sizeof full, "%s", buf);
                                for (size_t i = k; i < n && w >= 0 && (size_t) w < sizeof full; i++)
                                        w += c[i].index < 0 ? snprintf(full + w, sizeof full - (size_t) w, "%s%s", w ? "." : "", c[i].key)
                                                            : snprintf(full + w, sizeof full - (size_t) w, "[%ld]", c[i].index);
                                if (w < 0 || (size_t) w >= sizeof full)
                                        continue;
                                (void) policy_locate(s->items[f].text, s->items[f].len, buf, ret_line, ret_column);
                                *ret_path = strdup(full);
                        } else {
                                (void) policy_locate(s->items[f].text, s->items[f].len, buf, ret_line, ret_column);
                                *ret_path = strdup(buf);
                        }
                        if (!*ret_path)
                                return -ENOMEM;
                        *ret_file = s->items[f].name;
                        return 0;
                }
        return 0;
}

int policy_attribute(const struct tune_policy_sources *s, const char *merged_path, const char **ret_file, char **ret_path,
                     int *ret_line, int *ret_column) {
        return attribute(s, merged_path, false, ret_file, ret_path, ret_line, ret_column);
}

int policy_source_value(const struct tune_policy_sources *s, unsigned i, const char *merged_path, json_object **ret_value,
                        char **ret_path, int *ret_line, int *ret_column) {
        _cleanup_free_ component *c = NULL;
        char buf[1024];
        size_t n;
        int r;

        *ret_value = NULL;
        if (!s || i >= s->n || !s->items[i].doc)
                return 0;
        r = split_path(merged_path, &c, &n);
        if (r < 0)
                return r;
        if (!translate(s->merged, s->items[i].doc, c, n, buf, sizeof buf, ret_value))
                return 0;
        *ret_line = *ret_column = 0;
        (void) policy_locate(s->items[i].text, s->items[i].len, buf, ret_line, ret_column);
        *ret_path = strdup(buf);
        if (!*ret_path) {
                *ret_value = NULL;
                return -ENOMEM;
        }
        return 1;
}

const char *policy_list_id_key(unsigned depth, const char *parent, const char *key) {
        return list_id_key(depth, parent, key);
}

int policy_attribute_errors(const struct tune_policy_sources *s, tune_policy_errors *errors) {
        for (unsigned i = 0; i < errors->n; i++) {
                tune_policy_error *e = &errors->items[i];
                if (e->file) {
                        /* Recorded against a file already: only find the line. */
                        for (unsigned f = 0; s && e->line == 0 && f < s->n; f++)
                                if (streq(s->items[f].name, e->file) && e->key_path[0])
                                        (void) policy_locate(s->items[f].text, s->items[f].len, e->key_path, &e->line, &e->column);
                        continue;
                }
                const char *file;
                char *path;
                int line, column, r;
                r = attribute(s, e->key_path, false, &file, &path, &line, &column);
                if (r < 0)
                        return r;
                if (!file)
                        continue;
                e->file = strdup(file);
                if (!e->file) {
                        free(path);
                        return -ENOMEM;
                }
                free(e->key_path);
                e->key_path = path;
                e->line = line;
                e->column = column;
        }
        return 0;
}

int policy_rule_path(const tune_policy_rule *r, const char *suffix, char **ret) {
        return asprintf(ret, "processes[%u]%s", r->merged_index, suffix ? suffix : "") < 0 ? -ENOMEM : 0;
}

/* --- building a policy from its sources -------------------------------------------- */

static void policy_contents_done(tune_policy *p) {
        for (unsigned i = 0; i < p->n_files; i++)
                free(p->files[i]);
        free(p->files);
        free(p->host.governor);
        free(p->options.metrics_textfile);
        free(p->host.thp_enabled);
        free(p->host.thp_defrag);
        free(p->host.aspm_policy);
        for (unsigned i = 0; i < p->n_kinds; i++)
                policy_kind_done(&p->kinds[i]);
        free(p->kinds);
        free(p->overrides);
        for (unsigned i = 0; i < p->n_rules; i++)
                policy_rule_done(&p->rules[i]);
        free(p->rules);
        policy_sources_free(p->sources);
        *p = (tune_policy){};
}

tune_policy *tune_policy_free(tune_policy *p) {
        if (!p)
                return NULL;
        policy_contents_done(p);
        free(p);
        return NULL;
}

static void sources_freep(struct tune_policy_sources **s) {
        policy_sources_free(*s);
}

/* Each file on its own: syntax, and (several files, or check_only) its values. */
static int check_each(struct tune_policy_sources *s, const tune_policy_load_params *params, bool values,
                      tune_policy_errors *errors) {
        policy_schema_opts o = {
                .fragment = true,
                .check_version = true,
                .host_warnings = params && params->host_warnings,
                .resolve_user = params ? params->resolve_user : NULL,
                .userdata = params ? params->userdata : NULL,
        };
        int r;

        for (unsigned i = 0; i < s->n; i++) {
                r = source_parse(&s->items[i], errors);
                if (r < 0)
                        return r;
        }
        for (unsigned i = 0; values && i < s->n; i++) {
                tune_policy_errors fe = {};
                tune_policy frag = {};
                if (!s->items[i].doc)
                        continue;
                o.file = s->items[i].name;
                r = policy_from_json(s->items[i].doc, &o, &frag, &fe);
                policy_contents_done(&frag); /* only its problems count */
                if (r >= 0)
                        r = policy_attribute_errors(s, &fe);
                if (r >= 0)
                        r = policy_errors_move(errors, &fe);
                tune_policy_errors_done(&fe);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int build(struct tune_policy_sources *sources_in, const tune_policy_load_params *params, tune_policy **ret,
                 tune_policy_errors *errors) {
        _cleanup_(sources_freep) struct tune_policy_sources *s = sources_in;
        _cleanup_(tune_policy_freep) tune_policy *p = NULL;
        tune_policy_errors local = {};
        policy_schema_opts o = {
                .host_warnings = params && params->host_warnings,
                .resolve_user = params ? params->resolve_user : NULL,
                .userdata = params ? params->userdata : NULL,
        };
        unsigned before = tune_policy_errors_count(errors);
        int r;

        /* One file: its syntax here, its values in the complete pass below. */
        r = check_each(s, params, s->n > 1, errors);
        if (r < 0)
                return r;
        if (tune_policy_errors_count(errors) > before)
                return -EINVAL;

        /* The whole: merged, complete, consistent. */
        if (s->n == 1)
                s->merged = s->items[0].doc;
        else {
                s->merged = json_object_new_object();
                if (!s->merged)
                        return -ENOMEM;
                for (unsigned i = 0; i < s->n; i++) {
                        if (!json_object_is_type(s->items[i].doc, json_type_object))
                                continue;
                        r = merge_patch(s->merged, s->items[i].doc, 0, NULL);
                        if (r < 0)
                                return r;
                }
        }
        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        o.file = NULL;
        o.fragment = false;
        o.check_version = s->n == 1; /* several: checked per file above */
        r = policy_from_json(s->merged, &o, p, &local);
        if (r >= 0)
                r = policy_check_consistency(p, &local);
        if (r >= 0)
                r = policy_attribute_errors(s, &local);
        if (r >= 0) {
                /* Errors without a file (whole-policy problems in a one-file policy) name it. */
                for (unsigned i = 0; r >= 0 && i < local.n; i++)
                        if (!local.items[i].file && s->n == 1 && !(local.items[i].file = strdup(s->items[0].name)))
                                r = -ENOMEM;
        }
        if (r >= 0)
                r = policy_errors_move(errors, &local);
        tune_policy_errors_done(&local);
        if (r < 0)
                return r;
        if (tune_policy_errors_count(errors) > before)
                return -EINVAL;
        r = policy_check_overrides(s, errors);
        if (r < 0)
                return r;

        /* Each rule names the file that defined it. */
        for (unsigned i = 0; i < p->n_rules; i++) {
                tune_policy_rule *rule = &p->rules[i];
                _cleanup_free_ char *mp = NULL;
                const char *file;
                char *path;
                int line, column;
                r = policy_rule_path(rule, NULL, &mp);
                if (r < 0)
                        return r;
                r = attribute(s, mp, true, &file, &path, &line, &column);
                if (r < 0)
                        return r;
                if (file) {
                        free(rule->file);
                        free(rule->key_path);
                        rule->key_path = path;
                        rule->file = strdup(file);
                        if (!rule->file)
                                return -ENOMEM;
                }
        }
        p->files = calloc(s->n ? s->n : 1, sizeof *p->files);
        if (!p->files)
                return -ENOMEM;
        for (unsigned i = 0; i < s->n; i++) {
                p->files[i] = strdup(s->items[i].name);
                if (!p->files[i])
                        return -ENOMEM;
                p->n_files++;
        }
        p->sources = TAKE_PTR(s);
        *ret = TAKE_PTR(p);
        return 0;
}

int policy_parse_texts(const char *const *names, const char *const *texts, const size_t *lens, unsigned n,
                       const tune_policy_load_params *params, tune_policy **ret, tune_policy_errors *errors) {
        struct tune_policy_sources *s;
        int r;

        if (!texts || !ret || !errors || n == 0)
                return -EINVAL;
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++) {
                const char *name = names && names[i] ? names[i] : "(policy)";
                char *text;
                if (lens[i] > TUNE_POLICY_FILE_MAX) {
                        r = policy_error_add(errors, name, "", 0, 0, false, "is %zu bytes; policy files are limited to 1 MiB",
                                             lens[i]);
                        policy_sources_free(s);
                        return r < 0 ? r : -EINVAL;
                }
                text = malloc(lens[i] + 1);
                if (!text) {
                        policy_sources_free(s);
                        return -ENOMEM;
                }
                memcpy(text, texts[i], lens[i]);
                text[lens[i]] = 0;
                r = sources_add(s, name, text, lens[i]);
                if (r < 0) {
                        free(text);
                        policy_sources_free(s);
                        return r;
                }
        }
        return build(s, params, ret, errors);
}

int tune_policy_parse_buffer(const char *json, size_t len, const char *filename, const tune_policy_load_params *params,
                             tune_policy **ret, tune_policy_errors *errors) {
        const char *names[] = { filename }, *texts[] = { json };
        const size_t lens[] = { len };

        if (!json)
                return -EINVAL;
        return policy_parse_texts(names, texts, lens, 1, params, ret, errors);
}

int tune_policy_parse_string(const char *json, const char *filename, tune_policy **ret, tune_policy_errors *errors) {
        if (!json)
                return -EINVAL;
        return tune_policy_parse_buffer(json, strlen(json), filename, NULL, ret, errors);
}

int tune_policy_load_embedded(tune_policy **ret, tune_policy_errors *errors) {
        int r = tune_policy_parse_string(tune_policy_default_json, EMBEDDED_NAME, ret, errors);
        if (r >= 0)
                (*ret)->embedded = true;
        return r;
}

/* --- files ------------------------------------------------------------------------- */

typedef struct entry {
        char *name; /* the basename, which decides order and replacement */
        char *path;
        unsigned dir; /* index of the directory (or path) it came from */
} entry;

static int cmp_entry(const void *a, const void *b) {
        return strcmp(((const entry *) a)->name, ((const entry *) b)->name);
}

static int entries_add(entry **list, unsigned *n, const char *name, const char *path, unsigned dir) {
        for (unsigned i = 0; i < *n; i++)
                if (streq((*list)[i].name, name)) {
                        /* A later directory replaces the earlier file of the same name. */
                        char *p = strdup(path);
                        if (!p)
                                return -ENOMEM;
                        free((*list)[i].path);
                        (*list)[i].path = p;
                        (*list)[i].dir = dir;
                        return 0;
                }
        if (*n >= FILES_MAX)
                return -E2BIG;
        entry *l = realloc(*list, (*n + 1) * sizeof *l);
        if (!l)
                return -ENOMEM;
        *list = l;
        l[*n] = (entry){ strdup(name), strdup(path), dir };
        if (!l[*n].name || !l[*n].path) {
                free(l[*n].name);
                free(l[*n].path);
                return -ENOMEM;
        }
        (*n)++;
        return 0;
}

/* Ownership and mode problems of a file or directory root reads policies from. */
static int check_trust(const tune_policy_load_params *params, const char *path, const struct stat *st, bool dir,
                       tune_policy_errors *errors, bool *refused) {
        bool warning = params->owner_warnings;
        int r;

        if (!params->check_owner)
                return 0;
        if (st->st_uid != 0) {
                r = policy_error_add(errors, path, "", 0, 0, warning,
                                     "owned by uid %u, not root: %s a policy %s that someone other than root could have "
                                     "written (chown root:root %s)",
                                     (unsigned) st->st_uid, warning ? "the daemon would refuse" : "refusing",
                                     dir ? "directory" : "file", path);
                if (r < 0)
                        return r;
                *refused = *refused || !warning;
        }
        if (st->st_mode & (S_IWGRP | S_IWOTH)) {
                r = policy_error_add(errors, path, "", 0, 0, warning,
                                     "writable by %s (mode %04o): %s it (chmod go-w %s)",
                                     (st->st_mode & S_IWGRP) && (st->st_mode & S_IWOTH) ? "group and others" :
                                     st->st_mode & S_IWGRP                              ? "group" :
                                                                                          "others",
                                     (unsigned) (st->st_mode & 07777), warning ? "the daemon would refuse" : "refusing", path);
                if (r < 0)
                        return r;
                *refused = *refused || !warning;
        }
        return 0;
}

static bool has_suffix(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && streq(s + a - b, suffix);
}

static int collect_dir(const tune_policy_load_params *params, const char *dir, unsigned dir_index, bool optional,
                       entry **list, unsigned *n, tune_policy_errors *errors) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        struct stat st;
        bool refused = false;
        int r;

        d = opendir(dir);
        if (!d) {
                if (errno == ENOENT && optional)
                        return 0;
                r = errno;
                r = policy_error_add(errors, dir, "", 0, 0, false, "cannot read directory: %s", strerror(r));
                return r < 0 ? r : 0;
        }
        if (fstat(dirfd(d), &st) < 0)
                return negative_errno();
        r = check_trust(params, dir, &st, true, errors, &refused);
        if (r < 0 || refused)
                return r;
        while ((errno = 0, de = readdir(d))) {
                _cleanup_free_ char *path = NULL;
                if (de->d_name[0] == '.' || !has_suffix(de->d_name, ".json"))
                        continue;
                if (asprintf(&path, "%s/%s", dir, de->d_name) < 0)
                        return -ENOMEM;
                r = entries_add(list, n, de->d_name, path, dir_index);
                if (r == -E2BIG) {
                        r = policy_error_add(errors, dir, "", 0, 0, false, "more than %d policy files", FILES_MAX);
                        return r < 0 ? r : 0;
                }
                if (r < 0)
                        return r;
        }
        if (errno != 0)
                return negative_errno();
        return 0;
}

/* A file of the package, whose values drop-ins are meant to override: in the package's
 * data directory (the shipped policies, or a link to one of the examples next to them),
 * or named as the shipped files are, "NN-name.json" with NN up to 50 (a copy of an
 * example keeps its name). Drop-ins take 60 and up, or no number (letters sort after
 * digits). */
static bool is_shipped_file(const char *path, const char *name) {
        _cleanup_free_ char *target = realpath(path, NULL);
        const char *slash = strrchr(POLICY_SHIPPED_DIR, '/');
        size_t n = slash ? (size_t) (slash - POLICY_SHIPPED_DIR) + 1 : 0; /* ".../npu-tuned/" */

        if (target && n > 1 && strncmp(target, POLICY_SHIPPED_DIR, n) == 0)
                return true;
        return name[0] >= '0' && name[0] <= '9' && name[1] >= '0' && name[1] <= '9' && name[2] == '-' &&
               (name[0] - '0') * 10 + (name[1] - '0') <= 50;
}

/* Reads one policy file. Returns 1 with *ret_text set, 0 when it is masked (empty, or a
 * link to /dev/null) or refused (problems in *errors), or a negative errno. */
static int read_policy_file(const tune_policy_load_params *params, const char *path, char **ret_text, size_t *ret_len,
                            tune_policy_errors *errors) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL, *target = NULL;
        struct stat st;
        bool refused = false;
        size_t len = 0;
        int r;

        target = realpath(path, NULL);
        if (target && streq(target, "/dev/null"))
                return 0;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                r = errno;
                r = policy_error_add(errors, path, "", 0, 0, false, "cannot open: %s", strerror(r));
                return r < 0 ? r : 0;
        }
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode)) {
                r = policy_error_add(errors, path, "", 0, 0, false, "not a regular file");
                return r < 0 ? r : 0;
        }
        r = check_trust(params, path, &st, false, errors, &refused);
        if (r < 0 || refused)
                return r;
        if (st.st_size > TUNE_POLICY_FILE_MAX) {
                r = policy_error_add(errors, path, "", 0, 0, false, "is %lld bytes; policy files are limited to 1 MiB",
                                     (long long) st.st_size);
                return r < 0 ? r : 0;
        }
        text = malloc(TUNE_POLICY_FILE_MAX + 2);
        if (!text)
                return -ENOMEM;
        for (;;) {
                ssize_t k = read(fd, text + len, TUNE_POLICY_FILE_MAX + 1 - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = errno;
                        r = policy_error_add(errors, path, "", 0, 0, false, "cannot read: %s", strerror(r));
                        return r < 0 ? r : 0;
                }
                if (k == 0)
                        break;
                len += (size_t) k;
                if (len > TUNE_POLICY_FILE_MAX) {
                        r = policy_error_add(errors, path, "", 0, 0, false,
                                             "is more than 1 MiB (it grew while being read); policy files are limited to 1 MiB");
                        return r < 0 ? r : 0;
                }
        }
        if (len == 0)
                return 0; /* masks a file of the same name in an earlier directory */
        text[len] = 0;
        *ret_text = TAKE_PTR(text);
        *ret_len = len;
        return 1;
}

int tune_policy_load(const tune_policy_load_params *params, tune_policy **ret, tune_policy_errors *errors) {
        static const char *const standard[] = { POLICY_SHIPPED_DIR, POLICY_ETC_DIR };
        tune_policy_load_params defaults = {};
        const char *const *dirs;
        unsigned n_dirs, n = 0, before;
        entry *list = NULL;
        struct tune_policy_sources *s = NULL;
        int r = 0;

        if (!ret || !errors)
                return -EINVAL;
        if (!params)
                params = &defaults;
        dirs = params->dirs ? params->dirs : standard;
        n_dirs = params->dirs ? params->n_dirs : ELEMENTSOF(standard);
        before = tune_policy_errors_count(errors);

        for (unsigned i = 0; r >= 0 && i < n_dirs; i++) {
                struct stat st;
                if (stat(dirs[i], &st) < 0 && params->dirs) {
                        r = errno;
                        r = policy_error_add(errors, dirs[i], "", 0, 0, false, "cannot open: %s", strerror(r));
                } else if (params->dirs && !S_ISDIR(st.st_mode)) {
                        /* A single file (--check-policy FILE). */
                        const char *base = strrchr(dirs[i], '/');
                        r = entries_add(&list, &n, base ? base + 1 : dirs[i], dirs[i], i);
                        if (r == -E2BIG)
                                r = policy_error_add(errors, dirs[i], "", 0, 0, false, "more than %d policy files", FILES_MAX);
                } else
                        r = collect_dir(params, dirs[i], i, !params->dirs, &list, &n, errors);
        }
        if (r < 0)
                goto out;
        if (n > 1)
                qsort(list, n, sizeof *list, cmp_entry);

        s = calloc(1, sizeof *s);
        if (!s) {
                r = -ENOMEM;
                goto out;
        }
        for (unsigned i = 0; i < n; i++) {
                char *text = NULL;
                size_t len = 0;
                r = read_policy_file(params, list[i].path, &text, &len, errors);
                if (r < 0)
                        goto out;
                if (r == 0)
                        continue;
                r = sources_add(s, list[i].path, text, len);
                if (r < 0) {
                        free(text);
                        goto out;
                }
                s->items[s->n - 1].shipped = (list[i].dir == 0 && n_dirs > 1) || is_shipped_file(list[i].path, list[i].name);
        }
        if (tune_policy_errors_count(errors) > before) {
                /* Some files were refused: still report the problems of the others. */
                r = check_each(s, params, true, errors);
                if (r >= 0)
                        r = -EINVAL;
                goto out;
        }
        if (s->n == 0) {
                r = -ENOENT;
                goto out;
        }
        r = build(TAKE_PTR(s), params, ret, errors);
out:
        policy_sources_free(s);
        for (unsigned i = 0; i < n; i++) {
                free(list[i].name);
                free(list[i].path);
        }
        free(list);
        return r;
}

/* --- accelerators and the daemon's steps ------------------------------------------- */

bool policy_kind_is_builtin(const char *name) {
        return streq(name, "ascend") || streq(name, "nvidia") || streq(name, "amd") || streq(name, "accel");
}

int tune_policy_accel_kinds(const tune_policy *p, tune_accel_kind **ret, unsigned *ret_n) {
        tune_accel_kind *k = NULL;

        if (p->n_kinds > 0) {
                k = calloc(p->n_kinds, sizeof *k);
                if (!k)
                        return -ENOMEM;
                for (unsigned i = 0; i < p->n_kinds; i++)
                        k[i] = p->kinds[i].kind;
        }
        *ret = k;
        *ret_n = p->n_kinds;
        return 0;
}

int tune_policy_apply_node_overrides(const tune_policy *p, const tune_topology *t, tune_accels *a, tune_policy_errors *errors) {
        int r;

        for (unsigned i = 0; i < p->n_overrides; i++) {
                const tune_policy_node_override *ov = &p->overrides[i];
                r = tune_accels_override_node(a, t, ov->pci, ov->node);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 && errors) {
                        /* tune_policy_validate_host() says the same, with the file and line */
                        tune_policy_errors tmp = {};
                        char path[64];
                        snprintf(path, sizeof path, "accelerators.numa_node_overrides[%u].%s", ov->merged_index,
                                 r == -ENODEV ? "pci" : "node");
                        r = r == -ENODEV ? policy_error_add(&tmp, NULL, path, 0, 0, false, "no accelerator at %s on this host", ov->pci)
                                         : policy_error_add(&tmp, NULL, path, 0, 0, false,
                                                            "NUMA node %d does not exist on this host", ov->node);
                        if (r >= 0)
                                r = policy_attribute_errors(p->sources, &tmp);
                        if (r >= 0)
                                r = policy_errors_move(errors, &tmp);
                        tune_policy_errors_done(&tmp);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int tune_policy_prepare(const tune_ctx *ctx, const tune_policy_load_params *params, const tune_topology *t,
                        tune_policy **ret_policy, tune_accels *ret_accels, tune_policy_errors *errors) {
        _cleanup_(tune_policy_freep) tune_policy *p = NULL;
        _cleanup_free_ tune_accel_kind *kinds = NULL;
        tune_accels a = {};
        unsigned n_kinds;
        int r;

        r = tune_policy_load(params, &p, errors);
        if (r == -ENOENT)
                r = tune_policy_load_embedded(&p, errors);
        if (r < 0)
                return r;
        r = tune_policy_accel_kinds(p, &kinds, &n_kinds);
        if (r < 0)
                return r;
        r = tune_accels_discover(ctx, kinds, n_kinds, &a);
        if (r < 0)
                return r;
        r = tune_policy_apply_node_overrides(p, t, &a, NULL);
        if (r >= 0)
                r = tune_policy_validate_host(p, t, &a, false, errors);
        if (r < 0) {
                tune_accels_done(&a);
                return r;
        }
        *ret_policy = TAKE_PTR(p);
        *ret_accels = a;
        return 0;
}

int tune_policy_reload(const tune_ctx *ctx, const tune_policy_load_params *params, const tune_topology *t,
                       tune_policy **policy, tune_accels *accels, tune_policy_errors *errors) {
        tune_policy *p = NULL;
        tune_accels a = {};
        int r;

        r = tune_policy_prepare(ctx, params, t, &p, &a, errors);
        if (r < 0)
                return r;
        tune_policy_free(*policy);
        tune_accels_done(accels);
        *policy = p;
        *accels = a;
        return 0;
}
