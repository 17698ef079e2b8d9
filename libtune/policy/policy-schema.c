/* SPDX-License-Identifier: GPL-2.0-only */
/* Schema v1: one JSON document -> struct tune_policy, with a precise message for every
 * problem (unknown key, wrong type, value out of range, bad glob or regex, a rule that can
 * never match). The key path of each problem is kept ("processes[2].threads.control.cpus")
 * so that the loader can add the file, line and column. */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npu-tuned/parse.h"
#include "policy-internal.h"

#define NAME_MAX_LEN 64
#define PATTERN_MAX_LEN 1024   /* globs and regular expressions */
#define REGEX_COST_MAX 10000   /* states a regular expression may expand to */
#define CGROUP_MAX_LEN 4096
#define COMM_MAX_LEN 15        /* TASK_COMM_LEN - 1 */
#define LIST_MAX 64            /* globs per role, users per rule */
#define RULES_MAX 1024
#define KINDS_MAX 64
#define OVERRIDES_MAX 1024
#define ACCELS_MAX 256
#define ROLE_CPUS_MAX 4096
#define NODE_MAX 1023          /* MAX_NUMNODES is at most 1024 */
#define INDEX_MAX 1023

typedef struct sctx {
        const policy_schema_opts *o;
        tune_policy_errors *errors;
        char path[1024];
        size_t path_len;
        int r; /* -ENOMEM once allocation failed */
} sctx;

/* --- messages --------------------------------------------------------------------- */

static void vreport(sctx *c, bool warning, const char *fmt, va_list ap) _printf_(3, 0);
static void vreport(sctx *c, bool warning, const char *fmt, va_list ap) {
        _cleanup_free_ char *msg = NULL;
        int r;

        if (vasprintf(&msg, fmt, ap) < 0) {
                c->r = -ENOMEM;
                return;
        }
        r = policy_error_add(c->errors, c->o->file, c->path, 0, 0, warning, "%s", msg);
        if (r < 0)
                c->r = r;
}

static void schema_error(sctx *c, const char *fmt, ...) _printf_(2, 3);
static void schema_error(sctx *c, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vreport(c, false, fmt, ap);
        va_end(ap);
}

static void schema_warning(sctx *c, const char *fmt, ...) _printf_(2, 3);
static void schema_warning(sctx *c, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vreport(c, true, fmt, ap);
        va_end(ap);
}

/* Key path handling: push returns the length to pop back to. Keys from the file are
 * escaped (they end up in messages); a path that would not fit is cut with "...". */
static size_t push_key(sctx *c, const char *key) {
        size_t saved = c->path_len;
        _cleanup_free_ char *q = NULL;
        const char *k = key;
        int n;

        if (key[strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")]) {
                q = policy_quote(key, strlen(key), 64);
                if (!q) {
                        c->r = -ENOMEM;
                        k = "?";
                } else
                        k = q;
        }
        n = snprintf(c->path + c->path_len, sizeof c->path - c->path_len, "%s%s", c->path_len ? "." : "", k);
        if (n < 0 || (size_t) n >= sizeof c->path - c->path_len)
                memcpy(c->path + sizeof c->path - 4, "...", 4);
        c->path_len = strlen(c->path);
        return saved;
}

static size_t push_index(sctx *c, size_t i) {
        size_t saved = c->path_len;
        int n = snprintf(c->path + c->path_len, sizeof c->path - c->path_len, "[%zu]", i);
        if (n < 0 || (size_t) n >= sizeof c->path - c->path_len)
                memcpy(c->path + sizeof c->path - 4, "...", 4);
        c->path_len = strlen(c->path);
        return saved;
}

static void pop(sctx *c, size_t saved) {
        c->path_len = saved;
        c->path[saved] = 0;
}

static const char *type_name(json_object *v) {
        switch (json_object_get_type(v)) {
        case json_type_null:
                return "null";
        case json_type_boolean:
                return json_object_get_boolean(v) ? "true" : "false";
        case json_type_double:
                return "a number with a fraction or exponent";
        case json_type_int:
                return "a number";
        case json_type_object:
                return "an object";
        case json_type_array:
                return "an array";
        case json_type_string:
                return "a string";
        }
        return "something else";
}

/* --- unknown keys ----------------------------------------------------------------- */

static size_t edit_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

        if (la >= 63 || lb >= 63)
                return SIZE_MAX;
        for (size_t j = 0; j <= lb; j++)
                prev[j] = j;
        for (size_t i = 1; i <= la; i++) {
                cur[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
                        size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
                        cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
                }
                memcpy(prev, cur, (lb + 1) * sizeof *prev);
        }
        return prev[lb];
}

static bool key_in(const char *key, const char *const *allowed) {
        for (size_t i = 0; allowed[i]; i++)
                if (streq(key, allowed[i]))
                        return true;
        return false;
}

/* Report every key of o that is not in allowed (NULL-terminated) nor in quiet (keys the
 * caller reports itself). "comment" is allowed everywhere, as a string. */
static void check_keys_ex(sctx *c, json_object *o, const char *const *allowed, const char *const *quiet) {
        json_object_object_foreach(o, key, val) {
                if (streq(key, "comment")) {
                        if (val && !json_object_is_type(val, json_type_string)) {
                                size_t saved = push_key(c, key);
                                schema_error(c, "expected a string, got %s", type_name(val));
                                pop(c, saved);
                        }
                        continue;
                }
                if (key_in(key, allowed) || (quiet && key_in(key, quiet)))
                        continue;

                const char *best = NULL;
                size_t best_d = SIZE_MAX, saved = push_key(c, key);
                for (size_t i = 0; allowed[i]; i++) {
                        size_t d = edit_distance(key, allowed[i]);
                        if (d < best_d) {
                                best_d = d;
                                best = allowed[i];
                        }
                }
                if (best && best_d <= 2 && best_d < strlen(best))
                        schema_error(c, "unknown key (did you mean \"%s\"?)", best);
                else {
                        char list[512] = "";
                        size_t n = 0;
                        for (size_t i = 0; allowed[i]; i++) {
                                int w = snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", allowed[i]);
                                if (w < 0 || (size_t) w >= sizeof list - n)
                                        break;
                                n += (size_t) w;
                        }
                        schema_error(c, "unknown key; known keys here: %s", list);
                }
                pop(c, saved);
        }
}

static void check_keys(sctx *c, json_object *o, const char *const *allowed) {
        check_keys_ex(c, o, allowed, NULL);
}

/* --- typed getters: each returns true when the key is present, not null and valid ---- */

static json_object *member(json_object *o, const char *key) {
        json_object *v = NULL;
        if (!json_object_object_get_ex(o, key, &v))
                return NULL;
        return v; /* json-c represents null as NULL */
}

static bool get_object(sctx *c, json_object *o, const char *key, json_object **ret) {
        json_object *v = member(o, key);
        if (!v)
                return false;
        if (!json_object_is_type(v, json_type_object)) {
                size_t saved = push_key(c, key);
                schema_error(c, "expected an object ({ ... }), got %s", type_name(v));
                pop(c, saved);
                return false;
        }
        *ret = v;
        return true;
}

static bool get_bool(sctx *c, json_object *o, const char *key, bool *ret) {
        json_object *v = member(o, key);
        if (!v)
                return false;
        if (!json_object_is_type(v, json_type_boolean)) {
                size_t saved = push_key(c, key);
                schema_error(c, "expected true or false, got %s", type_name(v));
                pop(c, saved);
                return false;
        }
        *ret = json_object_get_boolean(v);
        return true;
}

/* The value v (at the current path) as an integer in [min, max]. */
static bool int_value(sctx *c, json_object *v, int64_t min, int64_t max, const char *unit, int64_t *ret) {
        if (!json_object_is_type(v, json_type_int)) {
                if (json_object_is_type(v, json_type_string) && min >= 0) {
                        _cleanup_free_ char *q = policy_quote(json_object_get_string(v), (size_t) json_object_get_string_len(v), 32);
                        schema_error(c, "expected a number%s%s, got the string %s (write it without quotes)", unit ? " of " : "",
                            unit ? unit : "", q ? q : "");
                } else
                        schema_error(c, "expected a whole number, got %s", type_name(v));
                return false;
        }
        int64_t x = json_object_get_int64(v);
        /* json-c keeps numbers above INT64_MAX as unsigned and clamps them here. */
        if (x < min || x > max || (x == INT64_MAX && json_object_get_uint64(v) != (uint64_t) INT64_MAX)) {
                schema_error(c, "must be between %lld and %lld, got %s", (long long) min, (long long) max, json_object_to_json_string(v));
                return false;
        }
        *ret = x;
        return true;
}

static bool get_int(sctx *c, json_object *o, const char *key, int64_t min, int64_t max, const char *unit, int64_t *ret) {
        json_object *v = member(o, key);
        bool ok;
        if (!v)
                return false;
        size_t saved = push_key(c, key);
        ok = int_value(c, v, min, max, unit, ret);
        pop(c, saved);
        return ok;
}

static bool get_unsigned(sctx *c, json_object *o, const char *key, unsigned min, unsigned max, const char *unit, unsigned *ret) {
        int64_t x;
        if (!get_int(c, o, key, min, max, unit, &x))
                return false;
        *ret = (unsigned) x;
        return true;
}

/* A kernel 0/1 switch: true/false or 0/1. */
static bool get_switch(sctx *c, json_object *o, const char *key, int *ret) {
        json_object *v = member(o, key);
        if (!v)
                return false;
        if (json_object_is_type(v, json_type_boolean)) {
                *ret = json_object_get_boolean(v);
                return true;
        }
        if (json_object_is_type(v, json_type_int) && (json_object_get_int64(v) == 0 || json_object_get_int64(v) == 1)) {
                *ret = (int) json_object_get_int64(v);
                return true;
        }
        size_t saved = push_key(c, key);
        if (json_object_is_type(v, json_type_int))
                schema_error(c, "must be 0 or 1 (or false or true), got %s", json_object_to_json_string(v));
        else
                schema_error(c, "expected 0 or 1 (or false or true), got %s", type_name(v));
        pop(c, saved);
        return false;
}

/* The string value v at the current path: no NUL, at most max bytes, not empty. */
static bool string_value(sctx *c, json_object *v, size_t max, const char **ret) {
        if (!json_object_is_type(v, json_type_string)) {
                schema_error(c, "expected a string, got %s", type_name(v));
                return false;
        }
        const char *s = json_object_get_string(v);
        size_t len = (size_t) json_object_get_string_len(v);
        if (strlen(s) != len) {
                schema_error(c, "contains a NUL character (\\u0000)");
                return false;
        }
        if (len == 0) {
                schema_error(c, "is empty");
                return false;
        }
        if (len > max) {
                schema_error(c, "is %zu bytes long; the limit is %zu", len, max);
                return false;
        }
        *ret = s;
        return true;
}

static bool get_string(sctx *c, json_object *o, const char *key, size_t max, const char **ret) {
        json_object *v = member(o, key);
        bool ok;
        if (!v)
                return false;
        size_t saved = push_key(c, key);
        ok = string_value(c, v, max, ret);
        pop(c, saved);
        return ok;
}

static bool get_enum(sctx *c, json_object *o, const char *key, const char *const *choices, int *ret) {
        const char *s;
        json_object *v = member(o, key);
        if (!v)
                return false;
        size_t saved = push_key(c, key);
        if (!json_object_is_type(v, json_type_string)) {
                char list[256] = "";
                size_t n = 0;
                for (size_t i = 0; choices[i]; i++) {
                        int w = snprintf(list + n, sizeof list - n, "%s\"%s\"", i ? ", " : "", choices[i]);
                        if (w < 0 || (size_t) w >= sizeof list - n)
                                break;
                        n += (size_t) w;
                }
                schema_error(c, "expected one of %s, got %s", list, type_name(v));
                pop(c, saved);
                return false;
        }
        s = json_object_get_string(v);
        for (size_t i = 0; choices[i]; i++)
                if (strlen(choices[i]) == (size_t) json_object_get_string_len(v) && streq(s, choices[i])) {
                        *ret = (int) i;
                        pop(c, saved);
                        return true;
                }
        {
                char list[256] = "";
                size_t n = 0;
                _cleanup_free_ char *q = policy_quote(s, (size_t) json_object_get_string_len(v), 32);
                for (size_t i = 0; choices[i]; i++) {
                        int w = snprintf(list + n, sizeof list - n, "%s\"%s\"", i ? ", " : "", choices[i]);
                        if (w < 0 || (size_t) w >= sizeof list - n)
                                break;
                        n += (size_t) w;
                }
                schema_error(c, "must be one of %s, got %s", list, q ? q : "");
        }
        pop(c, saved);
        return false;
}

static bool only_chars(const char *s, const char *set) {
        return s[strspn(s, set)] == 0;
}

#define LOWER "abcdefghijklmnopqrstuvwxyz"
#define UPPER "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define DIGIT "0123456789"

static bool dup_string(sctx *c, const char *s, char **ret) {
        char *d = strdup(s);
        if (!d) {
                c->r = -ENOMEM;
                return false;
        }
        free(*ret);
        *ret = d;
        return true;
}

/* A list in the kernel's list format ("0-3,8"). */
static bool get_cpuset(sctx *c, json_object *o, const char *key, unsigned max, const char *what, tune_cpuset *ret) {
        const char *s;
        int r;

        if (!get_string(c, o, key, 4096, &s))
                return false;
        size_t saved = push_key(c, key);
        tune_cpuset_clear(ret);
        r = tune_cpuset_parse_list(ret, s);
        if (r == -ENOMEM)
                c->r = r;
        else if (r == -ERANGE || (r >= 0 && tune_cpuset_next(ret, max + 1) >= 0))
                schema_error(c, "%s numbers stop at %u", what, max);
        else if (r < 0) {
                _cleanup_free_ char *q = policy_quote(s, strlen(s), 32);
                schema_error(c, "expected a %s list like \"0-3,8\", got %s", what, q ? q : "");
        } else if (tune_cpuset_is_empty(ret))
                schema_error(c, "is an empty %s list", what);
        pop(c, saved);
        return r >= 0 && !tune_cpuset_is_empty(ret) && tune_cpuset_next(ret, max + 1) < 0;
}

/* --- globs and regular expressions -------------------------------------------------- */

/* Checks an fnmatch(3) pattern; *ret_min is the fewest bytes a string it matches has. */
static const char *glob_problem(const char *g, size_t *ret_min) {
        static const char *const classes[] = { "alnum", "alpha", "blank", "cntrl", "digit", "graph",
                                               "lower", "print", "punct", "space", "upper", "xdigit", NULL };
        size_t min = 0;

        for (size_t i = 0; g[i]; i++) {
                switch (g[i]) {
                case '\\':
                        if (!g[i + 1])
                                return "ends in a lone backslash";
                        i++;
                        min++;
                        break;
                case '*':
                        break;
                case '[': {
                        size_t j = i + 1;
                        if (g[j] == '!' || g[j] == '^')
                                j++;
                        if (g[j] == ']')
                                j++;
                        while (g[j] && g[j] != ']') {
                                if (g[j] == '[' && (g[j + 1] == ':' || g[j + 1] == '=' || g[j + 1] == '.')) {
                                        char kind = g[j + 1];
                                        const char *end = g + j + 2;
                                        while (*end && !(end[0] == kind && end[1] == ']'))
                                                end++;
                                        if (!*end)
                                                return "has an unterminated \"[:\" class in a bracket expression";
                                        if (kind == ':') {
                                                char name[16];
                                                size_t n = (size_t) (end - (g + j + 2));
                                                bool ok = false;
                                                if (n < sizeof name) {
                                                        memcpy(name, g + j + 2, n);
                                                        name[n] = 0;
                                                        for (size_t k = 0; classes[k]; k++)
                                                                ok = ok || streq(classes[k], name);
                                                }
                                                if (!ok)
                                                        return "has an unknown character class (known: [:alnum:], [:alpha:], "
                                                               "[:digit:], [:lower:], [:upper:], [:space:], ...)";
                                        }
                                        j = (size_t) (end - g) + 2;
                                        continue;
                                }
                                j++;
                        }
                        if (!g[j])
                                return "has an unterminated '[' (write \\\\[ for a literal bracket)";
                        i = j;
                        min++;
                        break;
                }
                default:
                        min++;
                }
        }
        *ret_min = min;
        return NULL;
}

/* An upper bound of the states glibc's regcomp() builds (it copies a repeated group once
 * per repetition): "(a{1,100}){1,100}" is 10000. Also refuses what makes regcomp() take
 * exponential time whatever the size (found by fuzzing): repetition operators in a row
 * ("a++", undefined in POSIX anyway) and anchors inside a repeated group ("( |$)+").
 * Returns NULL or the problem. */
static const char *regex_problem(const char *re, unsigned long *ret_cost) {
        enum { DEPTH = 32 };
        unsigned long sum[DEPTH + 1], last[DEPTH + 1];
        bool anchor[DEPTH + 1], last_anchor[DEPTH + 1];
        unsigned depth = 0;
        bool after_repeat = false;
        const unsigned long cap = 1UL << 40;

        sum[0] = last[0] = 0;
        anchor[0] = last_anchor[0] = false;
        for (size_t i = 0; re[i]; i++) {
                unsigned long atom = 0, factor = 0;
                bool is_anchor = false;
                switch (re[i]) {
                case '\\':
                        if (!re[i + 1])
                                return "ends in a lone backslash";
                        i++;
                        atom = 1;
                        /* GNU extensions: word boundaries are anchors too */
                        is_anchor = strchr("bB<>`'", re[i]) != NULL;
                        break;
                case '^':
                case '$':
                        atom = 1;
                        is_anchor = true;
                        break;
                case '[': {
                        size_t j = i + 1;
                        if (re[j] == '^')
                                j++;
                        if (re[j] == ']')
                                j++;
                        while (re[j] && re[j] != ']') {
                                if (re[j] == '[' && (re[j + 1] == ':' || re[j + 1] == '=' || re[j + 1] == '.')) {
                                        const char *end = strstr(re + j + 2, (char[]){ re[j + 1], ']', 0 });
                                        if (!end)
                                                return "has an unterminated \"[:\" class in a bracket expression";
                                        j = (size_t) (end - re) + 2;
                                        continue;
                                }
                                j++;
                        }
                        if (!re[j])
                                return "has an unterminated '['";
                        i = j;
                        atom = 1;
                        break;
                }
                case '(':
                        if (depth >= DEPTH)
                                return "nests groups deeper than 32";
                        depth++;
                        sum[depth] = last[depth] = 0;
                        anchor[depth] = last_anchor[depth] = false;
                        after_repeat = false;
                        continue;
                case ')':
                        if (depth == 0)
                                return "has a ')' without '('";
                        atom = sum[depth] ? sum[depth] : 1;
                        is_anchor = anchor[depth];
                        depth--;
                        break;
                case '*':
                case '?':
                        factor = 1;
                        break;
                case '+':
                        factor = 2;
                        break;
                case '{': {
                        char *end;
                        unsigned long lo = strtoul(re + i + 1, &end, 10), hi = lo;
                        if (end == re + i + 1)
                                return "has a '{' that is not a repetition count like {2} or {1,3}";
                        if (*end == ',') {
                                const char *p = end + 1;
                                hi = *p == '}' ? lo + 1 : strtoul(p, &end, 10);
                                if (*p == '}')
                                        end = (char *) p;
                        }
                        if (*end != '}')
                                return "has a '{' that is not a repetition count like {2} or {1,3}";
                        if (lo > 255 || hi > 255)
                                return "repeats more than 255 times";
                        factor = (hi > lo ? hi : lo) + 1;
                        i = (size_t) (end - re);
                        break;
                }
                default:
                        atom = 1;
                }
                if (factor) {
                        if (after_repeat)
                                return "!has two repetition operators in a row (like \"a+*\"; undefined in POSIX)";
                        if (last_anchor[depth])
                                return "!repeats an anchor (^, $ or \\b) or a group with one (regcomp() can take minutes "
                                       "over that); match it once instead";
                        unsigned long l = last[depth] ? last[depth] : 1;
                        sum[depth] -= last[depth] <= sum[depth] ? last[depth] : sum[depth];
                        last[depth] = l * factor > cap ? cap : l * factor;
                        sum[depth] = sum[depth] + last[depth] > cap ? cap : sum[depth] + last[depth];
                        after_repeat = true;
                } else {
                        last[depth] = atom;
                        last_anchor[depth] = is_anchor;
                        anchor[depth] = anchor[depth] || is_anchor;
                        sum[depth] = sum[depth] + atom > cap ? cap : sum[depth] + atom;
                        after_repeat = false;
                }
        }
        if (depth > 0)
                return "has a '(' without ')'";
        *ret_cost = sum[0];
        return NULL;
}

/* Compiles the regular expression at the current path. */
static bool compile_regex(sctx *c, const char *src, int flags, regex_t *ret) {
        unsigned long cost = 0;
        const char *why = regex_problem(src, &cost);
        int r;

        if (why && why[0] == '!') {
                schema_error(c, "regular expression refused: it %s", why + 1);
                return false;
        }
        if (why) {
                schema_error(c, "not a valid POSIX extended regular expression: it %s", why);
                return false;
        }
        if (cost > REGEX_COST_MAX) {
                schema_error(c, "regular expression too complex (expands to about %lu states; the limit is %d)", cost, REGEX_COST_MAX);
                return false;
        }
        r = regcomp(ret, src, REG_EXTENDED | flags);
        if (r != 0) {
                char buf[128];
                regerror(r, ret, buf, sizeof buf);
                if (r == REG_ESPACE)
                        c->r = -ENOMEM;
                schema_error(c, "not a valid POSIX extended regular expression: %s", buf);
                return false;
        }
        return true;
}

/* An ERE that is only text: printable ASCII with none of ERE's special characters, which
 * matches exactly where it occurs as a substring (the cmdline criterion's fast path). */
static bool regex_is_literal(const char *src) {
        for (const char *p = src; *p; p++)
                if (*p < 0x20 || *p > 0x7e || strchr(".[]()*+?{}|^$\\", *p))
                        return false;
        return true;
}

/* A glob; for comm and thread names (15 bytes at most) also whether it can match at all. */
static bool glob_value(sctx *c, json_object *v, bool comm, const char **ret) {
        const char *g, *why;
        size_t min = 0;

        if (!string_value(c, v, PATTERN_MAX_LEN, &g))
                return false;
        why = glob_problem(g, &min);
        if (why) {
                schema_error(c, "not a valid glob: it %s", why);
                return false;
        }
        if (comm && min > COMM_MAX_LEN) {
                schema_error(c, "can never match: a comm is at most %d bytes and this glob needs %zu (the kernel cuts names "
                       "to 15 bytes: match the start, e.g. with a trailing '*', or match the title with cmdline)",
                    COMM_MAX_LEN, min);
                return false;
        }
        *ret = g;
        return true;
}

static bool get_glob(sctx *c, json_object *o, const char *key, bool comm, char **ret) {
        const char *g;
        json_object *v = member(o, key);
        bool ok;
        if (!v)
                return false;
        size_t saved = push_key(c, key);
        ok = glob_value(c, v, comm, &g) && dup_string(c, g, ret);
        pop(c, saved);
        return ok;
}

/* A string or an array of strings: globs on comm. */
static bool get_glob_list(sctx *c, json_object *o, const char *key, char ***ret) {
        json_object *v = member(o, key);
        char **list;
        size_t n;
        bool ok = true;

        if (!v)
                return false;
        size_t saved = push_key(c, key);
        if (json_object_is_type(v, json_type_string))
                n = 1;
        else if (json_object_is_type(v, json_type_array))
                n = json_object_array_length(v);
        else {
                schema_error(c, "expected a glob or an array of globs, got %s", type_name(v));
                pop(c, saved);
                return false;
        }
        if (n > LIST_MAX) {
                schema_error(c, "has %zu entries; the limit is %d", n, LIST_MAX);
                pop(c, saved);
                return false;
        }
        list = calloc(n + 1, sizeof *list);
        if (!list) {
                c->r = -ENOMEM;
                pop(c, saved);
                return false;
        }
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_is_type(v, json_type_string) ? v : json_object_array_get_idx(v, i);
                const char *g;
                size_t s2 = json_object_is_type(v, json_type_array) ? push_index(c, i) : c->path_len;
                if (!e) {
                        schema_error(c, "expected a glob, got null");
                        ok = false;
                } else if (glob_value(c, e, true, &g)) {
                        list[i] = strdup(g);
                        if (!list[i])
                                c->r = -ENOMEM;
                } else
                        ok = false;
                pop(c, s2);
        }
        pop(c, saved);
        if (!ok || c->r < 0) {
                for (size_t i = 0; i < n; i++)
                        free(list[i]);
                free(list);
                return false;
        }
        for (size_t i = 0; (*ret) && (*ret)[i]; i++)
                free((*ret)[i]);
        free(*ret);
        *ret = list;
        return true;
}

/* --- sections ---------------------------------------------------------------------- */

void policy_set_defaults(tune_policy *p) {
        p->version = TUNE_POLICY_VERSION;
        p->options = (tune_policy_options){
                .dry_run = false,
                .reconcile_interval_ms = 10000,
                .max_managed_processes = 4096,
                .proc_connector_rcvbuf_kib = 4096,
        };
        p->host = (tune_policy_host){
                .governor_scope = TUNE_GOVERNOR_ALL_CPUS,
                .khugepaged_defrag = -1,
                .irq_manage = false,
                .irq_housekeeping_cpus_per_node = 1,
                .irq_keep_off_inference_cpus = true,
                .irq_steer_accelerator_irqs = true,
                .aspm_accelerator_link = TUNE_ASPM_LINK_UNCHANGED,
                .numa_balancing = -1,
                .reassert = false,
        };
}

static void parse_options(sctx *c, json_object *o, tune_policy_options *opt) {
        static const char *const keys[] = { "dry_run", "reconcile_interval_ms", "max_managed_processes",
                                            "proc_connector_rcvbuf_kib", "metrics_textfile", NULL };
        const char *s;

        check_keys(c, o, keys);
        (void) get_bool(c, o, "dry_run", &opt->dry_run);
        (void) get_unsigned(c, o, "reconcile_interval_ms", 100, 3600000, "milliseconds", &opt->reconcile_interval_ms);
        (void) get_unsigned(c, o, "max_managed_processes", 1, 1048576, "processes", &opt->max_managed_processes);
        (void) get_unsigned(c, o, "proc_connector_rcvbuf_kib", 64, 262144, "KiB", &opt->proc_connector_rcvbuf_kib);
        /* node_exporter's textfile collector reads only *.prom files of its directory; the
         * daemon writes a temporary file beside it and renames it over. "" turns it off
         * (a drop-in undoing a shipped setting). */
        if (get_string(c, o, "metrics_textfile", 4096, &s) && *s) {
                size_t saved = push_key(c, "metrics_textfile");
                size_t n = strlen(s);
                if (s[0] != '/' || n < 7 || !streq(s + n - 5, ".prom") || s[n - 6] == '/' || strstr(s, "/../") ||
                    strstr(s, "/./") || strstr(s, "//"))
                        schema_error(c, "not an absolute path to a file named *.prom, e.g. "
                                        "\"/var/lib/prometheus/node-exporter/npu-tuned.prom\"");
                else
                        (void) dup_string(c, s, &opt->metrics_textfile);
                pop(c, saved);
        }
}

static void parse_host(sctx *c, json_object *o, tune_policy_host *h) {
        static const char *const keys[] = { "cpufreq", "thp", "irq", "pcie_aspm", "numa_balancing", "reassert", NULL };
        json_object *sub;
        size_t saved;

        check_keys(c, o, keys);
        if (get_object(c, o, "cpufreq", &sub)) {
                static const char *const k[] = { "governor", "cpus", NULL };
                static const char *const scopes[] = { "all", "inference", NULL };
                const char *g;
                int scope;
                saved = push_key(c, "cpufreq");
                check_keys(c, sub, k);
                if (get_string(c, sub, "governor", 15, &g)) {
                        if (!only_chars(g, LOWER DIGIT "_-")) {
                                size_t s2 = push_key(c, "governor");
                                schema_error(c, "not a cpufreq governor name (lower-case letters, digits, '_', '-'), e.g. \"performance\"");
                                pop(c, s2);
                        } else
                                (void) dup_string(c, g, &h->governor);
                }
                if (get_enum(c, sub, "cpus", scopes, &scope))
                        h->governor_scope = scope == 0 ? TUNE_GOVERNOR_ALL_CPUS : TUNE_GOVERNOR_INFERENCE_CPUS;
                pop(c, saved);
        }
        if (get_object(c, o, "thp", &sub)) {
                static const char *const k[] = { "enabled", "defrag", "khugepaged_defrag", NULL };
                static const char *const enabled[] = { "always", "madvise", "never", NULL };
                static const char *const defrag[] = { "always", "defer", "defer+madvise", "madvise", "never", NULL };
                int i;
                saved = push_key(c, "thp");
                check_keys(c, sub, k);
                if (get_enum(c, sub, "enabled", enabled, &i))
                        (void) dup_string(c, enabled[i], &h->thp_enabled);
                if (get_enum(c, sub, "defrag", defrag, &i))
                        (void) dup_string(c, defrag[i], &h->thp_defrag);
                (void) get_switch(c, sub, "khugepaged_defrag", &h->khugepaged_defrag);
                pop(c, saved);
        }
        if (get_object(c, o, "irq", &sub)) {
                static const char *const k[] = { "manage", "housekeeping_cpus_per_node", "keep_off_inference_cpus",
                                                 "steer_accelerator_irqs", NULL };
                saved = push_key(c, "irq");
                check_keys(c, sub, k);
                h->irq_manage = true; /* a section that is there means: manage, unless it says not to */
                (void) get_bool(c, sub, "manage", &h->irq_manage);
                (void) get_unsigned(c, sub, "housekeeping_cpus_per_node", 0, ROLE_CPUS_MAX, "CPUs",
                                    &h->irq_housekeeping_cpus_per_node);
                (void) get_bool(c, sub, "keep_off_inference_cpus", &h->irq_keep_off_inference_cpus);
                (void) get_bool(c, sub, "steer_accelerator_irqs", &h->irq_steer_accelerator_irqs);
                if (!c->o->fragment && h->irq_manage && h->irq_steer_accelerator_irqs && h->irq_housekeeping_cpus_per_node == 0) {
                        size_t s2 = push_key(c, "housekeeping_cpus_per_node");
                        schema_error(c, "must be at least 1 when steer_accelerator_irqs is true (accelerator IRQs go to the "
                               "housekeeping CPUs of their node)");
                        pop(c, s2);
                }
                pop(c, saved);
        }
        if (get_object(c, o, "pcie_aspm", &sub)) {
                static const char *const k[] = { "policy", "accelerator_link", NULL };
                static const char *const policies[] = { "default", "performance", "powersave", "powersupersave", NULL };
                static const char *const links[] = { "unchanged", "l1_only", "off", NULL };
                int i;
                saved = push_key(c, "pcie_aspm");
                check_keys(c, sub, k);
                if (get_enum(c, sub, "policy", policies, &i))
                        (void) dup_string(c, policies[i], &h->aspm_policy);
                if (get_enum(c, sub, "accelerator_link", links, &i))
                        h->aspm_accelerator_link = i == 0 ? TUNE_ASPM_LINK_UNCHANGED :
                                                   i == 1 ? TUNE_ASPM_LINK_L1_ONLY :
                                                            TUNE_ASPM_LINK_OFF;
                pop(c, saved);
        }
        (void) get_switch(c, o, "numa_balancing", &h->numa_balancing);
        (void) get_bool(c, o, "reassert", &h->reassert);
}

static bool parse_pci_id(sctx *c, const char *s, uint32_t *vendor, uint32_t *device) {
        char v[5], d[5];
        const char *colon = strchr(s, ':');
        uint32_t x;

        if (!colon || colon - s != 4 || !only_chars(colon + 1, "0123456789abcdefABCDEF*") ||
            !(streq(colon + 1, "*") || strlen(colon + 1) == 4))
                goto bad;
        memcpy(v, s, 4);
        v[4] = 0;
        if (!only_chars(v, "0123456789abcdefABCDEF") || tune_parse_hex_u32(v, 0xffff, &x) < 0)
                goto bad;
        *vendor = x;
        if (streq(colon + 1, "*"))
                *device = TUNE_PCI_ANY_DEVICE;
        else {
                memcpy(d, colon + 1, 5);
                if (tune_parse_hex_u32(d, 0xffff, &x) < 0)
                        goto bad;
                *device = x;
        }
        return true;
bad:
        schema_error(c, "expected a PCI vendor:device id as lspci -nn prints it, like \"19e5:d802\" or \"19e5:*\"");
        return false;
}

void policy_kind_done(tune_policy_kind *k) {
        free((char *) k->kind.device_pattern);
        free(k->visible_env);
        *k = (tune_policy_kind){};
}

static void parse_kind(sctx *c, json_object *o, tune_policy_kind *k) {
        static const char *const keys[] = { "name", "pci_id", "device_node", "visible_devices_env", "visible_ids", NULL };
        static const char *const ids[] = { "logical", "physical", NULL };
        const char *s;
        int i;

        check_keys(c, o, keys);
        if (get_string(c, o, "name", TUNE_ACCEL_KIND_MAX - 1, &s)) {
                if (!only_chars(s, LOWER DIGIT "_-")) {
                        size_t saved = push_key(c, "name");
                        schema_error(c, "a kind name has lower-case letters, digits, '_' and '-' only");
                        pop(c, saved);
                } else
                        snprintf(k->kind.name, sizeof k->kind.name, "%s", s);
        } else if (!member(o, "name")) {
                schema_error(c, "missing \"name\": every accelerator kind needs one (rules refer to it, drop-ins merge by it)");
        }
        if (get_string(c, o, "pci_id", 16, &s)) {
                size_t saved = push_key(c, "pci_id");
                (void) parse_pci_id(c, s, &k->kind.vendor, &k->kind.device);
                pop(c, saved);
        } else if (!c->o->fragment && !member(o, "pci_id"))
                schema_error(c, "missing \"pci_id\": which PCI vendor:device this kind is, like \"1234:11e8\"");
        if (get_string(c, o, "device_node", 48, &s)) {
                size_t saved = push_key(c, "device_node");
                const char *n = strstr(s, "%N");
                if (!startswith_lit(s, "/dev/") || !n || strchr(n + 2, '%') || strchr(s, '%') != n || strstr(s, "/../") ||
                    strstr(s, "/./") || !only_chars(s, LOWER UPPER DIGIT "/_-.%:"))
                        schema_error(c, "expected a device path below /dev with one %%N for the index, like \"/dev/edu%%N\"");
                else
                        (void) dup_string(c, s, (char **) &k->kind.device_pattern);
                pop(c, saved);
        }
        if (get_string(c, o, "visible_devices_env", 128, &s)) {
                if (!only_chars(s, LOWER UPPER DIGIT "_") || strchr(DIGIT, s[0])) {
                        size_t saved = push_key(c, "visible_devices_env");
                        schema_error(c, "not an environment variable name (letters, digits, '_'; not starting with a digit)");
                        pop(c, saved);
                } else
                        (void) dup_string(c, s, &k->visible_env);
        }
        if (get_enum(c, o, "visible_ids", ids, &i))
                k->visible_ids = i == 0 ? TUNE_VISIBLE_IDS_LOGICAL : TUNE_VISIBLE_IDS_PHYSICAL;
}

static void parse_override(sctx *c, json_object *o, tune_policy_node_override *ov) {
        static const char *const keys[] = { "pci", "node", NULL };
        const char *s;
        int64_t node;

        check_keys(c, o, keys);
        if (get_string(c, o, "pci", 16, &s)) {
                if (policy_parse_pci(s, ov->pci) < 0) {
                        size_t saved = push_key(c, "pci");
                        schema_error(c, "expected a PCI address like \"0000:c1:00.0\"");
                        pop(c, saved);
                }
        } else if (!member(o, "pci"))
                schema_error(c, "missing \"pci\": the PCI address of the device, like \"0000:c1:00.0\"");
        if (get_int(c, o, "node", 0, NODE_MAX, NULL, &node))
                ov->node = (int) node;
        else if (!c->o->fragment && !member(o, "node"))
                schema_error(c, "missing \"node\": the NUMA node the device is attached to");
}

/* Runs f over each element of the array at key, with the path set. */
static bool get_array(sctx *c, json_object *o, const char *key, size_t max, json_object **ret, size_t *ret_n) {
        json_object *v = member(o, key);
        if (!v)
                return false;
        if (!json_object_is_type(v, json_type_array)) {
                size_t saved = push_key(c, key);
                schema_error(c, "expected an array ([ ... ]), got %s", type_name(v));
                pop(c, saved);
                return false;
        }
        if (json_object_array_length(v) > max) {
                size_t saved = push_key(c, key);
                schema_error(c, "has %zu entries; the limit is %zu", json_object_array_length(v), max);
                pop(c, saved);
                return false;
        }
        *ret = v;
        *ret_n = json_object_array_length(v);
        return true;
}

static void parse_accelerators(sctx *c, json_object *o, tune_policy *p) {
        static const char *const keys[] = { "kinds", "numa_node_overrides", NULL };
        json_object *a;
        size_t n;

        check_keys(c, o, keys);
        if (get_array(c, o, "kinds", KINDS_MAX, &a, &n) && n > 0) {
                size_t saved = push_key(c, "kinds");
                p->kinds = calloc(n, sizeof *p->kinds);
                if (!p->kinds)
                        c->r = -ENOMEM;
                for (size_t i = 0; p->kinds && i < n; i++) {
                        json_object *e = json_object_array_get_idx(a, i);
                        size_t s2 = push_index(c, i);
                        tune_policy_kind *k = &p->kinds[p->n_kinds++];
                        k->merged_index = (unsigned) i;
                        if (!e || !json_object_is_type(e, json_type_object))
                                schema_error(c, "expected an object, got %s", e ? type_name(e) : "null");
                        else
                                parse_kind(c, e, k);
                        for (unsigned j = 0; j + 1 < p->n_kinds && k->kind.name[0]; j++)
                                if (streq(p->kinds[j].kind.name, k->kind.name)) {
                                        size_t s3 = push_key(c, "name");
                                        schema_error(c, "kind \"%s\" is already declared by accelerators.kinds[%u]", k->kind.name, j);
                                        pop(c, s3);
                                }
                        pop(c, s2);
                }
                pop(c, saved);
        }
        if (get_array(c, o, "numa_node_overrides", OVERRIDES_MAX, &a, &n) && n > 0) {
                size_t saved = push_key(c, "numa_node_overrides");
                p->overrides = calloc(n, sizeof *p->overrides);
                if (!p->overrides)
                        c->r = -ENOMEM;
                for (size_t i = 0; p->overrides && i < n; i++) {
                        json_object *e = json_object_array_get_idx(a, i);
                        size_t s2 = push_index(c, i);
                        tune_policy_node_override *ov = &p->overrides[p->n_overrides++];
                        ov->merged_index = (unsigned) i;
                        ov->node = -1;
                        if (!e || !json_object_is_type(e, json_type_object))
                                schema_error(c, "expected an object, got %s", e ? type_name(e) : "null");
                        else
                                parse_override(c, e, ov);
                        for (unsigned j = 0; j + 1 < p->n_overrides && ov->pci[0]; j++)
                                if (streq(p->overrides[j].pci, ov->pci)) {
                                        size_t s3 = push_key(c, "pci");
                                        schema_error(c, "device %s already has an override in accelerators.numa_node_overrides[%u]", ov->pci, j);
                                        pop(c, s3);
                                }
                        pop(c, s2);
                }
                pop(c, saved);
        }
}

/* --- process rules --------------------------------------------------------------- */

void policy_rule_done(tune_policy_rule *r) {
        free(r->name);
        free(r->file);
        free(r->key_path);
        free(r->match_comm);
        free(r->match_exe);
        free(r->match_cmdline_src);
        if (r->has_match_cmdline)
                regfree(&r->match_cmdline);
        free(r->match_uids);
        free(r->match_cgroup);
        free(r->accels);
        if (r->rank_regex_src) {
                regfree(&r->rank_regex);
                free(r->rank_regex_src);
        }
        free(r->rank_env);
        for (size_t i = 0; r->control.name_globs && r->control.name_globs[i]; i++)
                free(r->control.name_globs[i]);
        free(r->control.name_globs);
        for (size_t i = 0; r->compute.name_globs && r->compute.name_globs[i]; i++)
                free(r->compute.name_globs[i]);
        free(r->compute.name_globs);
        tune_cpuset_done(&r->unattributed_cpus);
        tune_cpuset_done(&r->unattributed_nodes);
        *r = (tune_policy_rule){};
}

static int resolve_user(sctx *c, const char *name, uid_t *ret) {
        if (c->o->resolve_user)
                return c->o->resolve_user(name, ret, c->o->userdata);

        struct passwd pw, *res = NULL;
        long size = sysconf(_SC_GETPW_R_SIZE_MAX);
        _cleanup_free_ char *buf = NULL;
        int r;

        if (size <= 0 || size > 1 << 20)
                size = 16384;
        buf = malloc((size_t) size);
        if (!buf)
                return -ENOMEM;
        r = getpwnam_r(name, &pw, buf, (size_t) size, &res);
        if (r != 0)
                return -r;
        if (!res)
                return -ESRCH;
        *ret = pw.pw_uid;
        return 0;
}

static void parse_users(sctx *c, json_object *v, tune_policy_rule *r) {
        size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 1;

        if (!json_object_is_type(v, json_type_array) && !json_object_is_type(v, json_type_string) &&
            !json_object_is_type(v, json_type_int)) {
                schema_error(c, "expected a user name, a uid or an array of them, got %s", type_name(v));
                return;
        }
        if (n == 0) {
                schema_error(c, "can never match: the list of users is empty");
                return;
        }
        if (n > LIST_MAX) {
                schema_error(c, "has %zu entries; the limit is %d", n, LIST_MAX);
                return;
        }
        free(r->match_uids);
        r->n_match_uids = 0;
        r->match_uids = calloc(n, sizeof *r->match_uids);
        if (!r->match_uids) {
                c->r = -ENOMEM;
                return;
        }
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_is_type(v, json_type_array) ? json_object_array_get_idx(v, i) : v;
                size_t saved = json_object_is_type(v, json_type_array) ? push_index(c, i) : c->path_len;
                const char *name;
                int64_t uid;

                if (e && json_object_is_type(e, json_type_int)) {
                        if (int_value(c, e, 0, (int64_t) UINT32_MAX - 1, NULL, &uid))
                                r->match_uids[r->n_match_uids++] = (uid_t) uid;
                } else if (!e || !json_object_is_type(e, json_type_string))
                        schema_error(c, "expected a user name or a uid, got %s", e ? type_name(e) : "null");
                else if (string_value(c, e, 32, &name)) {
                        if (!only_chars(name, LOWER UPPER DIGIT "_.-$") || name[0] == '-') {
                                _cleanup_free_ char *q = policy_quote(name, strlen(name), 32);
                                schema_error(c, "%s is not a user name", q ? q : "");
                        } else if (!c->o->fragment) {
                                uid_t u;
                                int k = resolve_user(c, name, &u);
                                if (k == -ENOMEM)
                                        c->r = k;
                                else if (k < 0 && c->o->host_warnings)
                                        schema_warning(c, "unknown user \"%s\" on this host", name);
                                else if (k < 0)
                                        schema_error(c, "unknown user \"%s\"", name);
                                else
                                        r->match_uids[r->n_match_uids++] = u;
                        }
                }
                pop(c, saved);
        }
}

static void parse_match(sctx *c, json_object *o, tune_policy_rule *r) {
        static const char *const keys[] = { "comm", "exe", "cmdline", "user", "cgroup", NULL };
        const char *s;
        json_object *v;

        check_keys(c, o, keys);
        (void) get_glob(c, o, "comm", true, &r->match_comm);
        if (get_glob(c, o, "exe", false, &r->match_exe)) {
                size_t saved = push_key(c, "exe");
                const char *e = r->match_exe;
                if (!strchr("/*?[", e[0]))
                        schema_error(c, "can never match: executable paths are absolute (the resolved /proc/PID/exe); start the "
                               "glob with '/' or '*'");
                else if (strstr(e, "//") || strstr(e, "/./") || strstr(e, "/../"))
                        schema_error(c, "can never match: the executable path is resolved (no \"//\", \"/./\" or \"/../\" in it)");
                pop(c, saved);
        }
        if (get_string(c, o, "cmdline", PATTERN_MAX_LEN, &s)) {
                size_t saved = push_key(c, "cmdline");
                if (compile_regex(c, s, REG_NOSUB, &r->match_cmdline)) {
                        r->has_match_cmdline = true;
                        r->match_cmdline_literal = regex_is_literal(s);
                        (void) dup_string(c, s, &r->match_cmdline_src);
                        if (s[0] != '^' && strstr(s, ".*"))
                                schema_warning(c, "is not anchored with '^' and has \".*\": on a long command line (any user "
                                        "writes their own) every start position runs \".*\" to the end, costing ms "
                                        "on each rename; anchor it, e.g. \"^([^ ]*/)?prog .*\" (docs/trust.md)");
                }
                pop(c, saved);
        }
        if ((v = member(o, "user"))) {
                size_t saved = push_key(c, "user");
                parse_users(c, v, r);
                pop(c, saved);
        }
        if (get_string(c, o, "cgroup", CGROUP_MAX_LEN, &s)) {
                size_t saved = push_key(c, "cgroup");
                size_t len = strlen(s);
                if (s[0] != '/')
                        schema_error(c, "can never match: cgroup paths start with '/', like \"/system.slice/vllm.service\"");
                else if (strstr(s, "//") || strstr(s, "/./") || strstr(s, "/../") || (len > 1 && s[len - 1] == '/') ||
                         (len >= 2 && streq(s + len - 2, "/.")) || (len >= 3 && streq(s + len - 3, "/..")) || strchr(s, '\n'))
                        schema_error(c, "can never match: write the cgroup path as /proc/PID/cgroup shows it (no \"//\", \".\", "
                               "\"..\" or trailing '/')");
                else
                        (void) dup_string(c, s, &r->match_cgroup);
                pop(c, saved);
        }
}

static int parse_accel_ref(const char *s, tune_accel_ref *ret) {
        const char *colon = strrchr(s, ':');
        char *end;
        long idx;

        if (!colon || colon == s || (size_t) (colon - s) >= TUNE_ACCEL_KIND_MAX)
                return -EINVAL;
        errno = 0;
        idx = strtol(colon + 1, &end, 10);
        if (errno || end == colon + 1 || *end || idx < 0 || idx > INDEX_MAX || !strchr(DIGIT, colon[1]))
                return -EINVAL;
        memcpy(ret->kind, s, (size_t) (colon - s));
        ret->kind[colon - s] = 0;
        if (!only_chars(ret->kind, LOWER DIGIT "_-"))
                return -EINVAL;
        ret->index = (int) idx;
        return 0;
}

static void parse_rule_accelerators(sctx *c, json_object *v, tune_policy_rule *r) {
        if (json_object_is_type(v, json_type_string)) {
                const char *s = json_object_get_string(v);
                if (streq(s, "auto") && json_object_get_string_len(v) == 4)
                        r->accel_mode = TUNE_ACCEL_AUTO;
                else if (streq(s, "none") && json_object_get_string_len(v) == 4)
                        r->accel_mode = TUNE_ACCEL_NONE;
                else {
                        _cleanup_free_ char *q = policy_quote(s, (size_t) json_object_get_string_len(v), 32);
                        schema_error(c, "must be \"auto\", \"none\" or an array like [\"ascend:0\", \"ascend:1\"], got %s", q ? q : "");
                }
                return;
        }
        if (!json_object_is_type(v, json_type_array)) {
                schema_error(c, "expected \"auto\", \"none\" or an array like [\"ascend:0\", \"ascend:1\"], got %s", type_name(v));
                return;
        }
        size_t n = json_object_array_length(v);
        if (n == 0) {
                schema_error(c, "is an empty list: write \"none\" for processes that use no accelerator");
                return;
        }
        if (n > ACCELS_MAX) {
                schema_error(c, "has %zu entries; the limit is %d", n, ACCELS_MAX);
                return;
        }
        tune_accel_ref *refs = calloc(n, sizeof *refs);
        if (!refs) {
                c->r = -ENOMEM;
                return;
        }
        bool ok = true;
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(v, i);
                size_t saved = push_index(c, i);
                if (!e || !json_object_is_type(e, json_type_string)) {
                        schema_error(c, "expected \"KIND:INDEX\" like \"ascend:0\", got %s", e ? type_name(e) : "null");
                        ok = false;
                } else if (strlen(json_object_get_string(e)) != (size_t) json_object_get_string_len(e) ||
                           parse_accel_ref(json_object_get_string(e), &refs[i]) < 0) {
                        _cleanup_free_ char *q = policy_quote(json_object_get_string(e), (size_t) json_object_get_string_len(e), 32);
                        schema_error(c, "expected \"KIND:INDEX\" like \"ascend:0\" (index 0-%d), got %s", INDEX_MAX, q ? q : "");
                        ok = false;
                } else
                        for (size_t j = 0; j < i; j++)
                                if (streq(refs[j].kind, refs[i].kind) && refs[j].index == refs[i].index) {
                                        schema_error(c, "%s:%d is already listed", refs[i].kind, refs[i].index);
                                        ok = false;
                                }
                pop(c, saved);
        }
        if (!ok) {
                free(refs);
                return;
        }
        free(r->accels);
        r->accels = refs;
        r->n_accels = (unsigned) n;
        r->accel_mode = TUNE_ACCEL_EXPLICIT;
}

static void parse_rank(sctx *c, json_object *o, tune_policy_rule *r) {
        static const char *const keys[] = { "from", "regex", "env", NULL };
        static const char *const froms[] = { "cmdline", "comm", "env", NULL };
        const char *s;
        int from = -1;

        check_keys(c, o, keys);
        if (get_enum(c, o, "from", froms, &from))
                r->rank_source = from == 0 ? TUNE_RANK_CMDLINE : from == 1 ? TUNE_RANK_COMM : TUNE_RANK_ENV;
        else if (!c->o->fragment && !member(o, "from"))
                schema_error(c, "missing \"from\": where the rank is read, \"cmdline\", \"comm\" or \"env\"");
        if (get_string(c, o, "regex", PATTERN_MAX_LEN, &s)) {
                size_t saved = push_key(c, "regex");
                regex_t re;
                if (compile_regex(c, s, 0, &re)) {
                        if (re.re_nsub < 1) {
                                schema_error(c, "needs a capture group around the rank's digits, like \"_TP([0-9]+)\"");
                                regfree(&re);
                        } else {
                                char *src = strdup(s);
                                if (!src) {
                                        c->r = -ENOMEM;
                                        regfree(&re);
                                } else {
                                        if (r->rank_regex_src) {
                                                regfree(&r->rank_regex);
                                                free(r->rank_regex_src);
                                        }
                                        r->rank_regex = re;
                                        r->rank_regex_src = src;
                                }
                        }
                }
                pop(c, saved);
        }
        if (get_string(c, o, "env", 128, &s)) {
                if (!only_chars(s, LOWER UPPER DIGIT "_") || strchr(DIGIT, s[0])) {
                        size_t saved = push_key(c, "env");
                        schema_error(c, "not an environment variable name (letters, digits, '_'; not starting with a digit)");
                        pop(c, saved);
                } else
                        (void) dup_string(c, s, &r->rank_env);
        }
        if (c->o->fragment)
                return;
        if ((r->rank_source == TUNE_RANK_CMDLINE || r->rank_source == TUNE_RANK_COMM) && !member(o, "regex"))
                schema_error(c, "missing \"regex\": rank from %s needs a regular expression with one capture group, like "
                       "\"_TP([0-9]+)\"", r->rank_source == TUNE_RANK_CMDLINE ? "cmdline" : "comm");
        if (r->rank_source == TUNE_RANK_ENV && !member(o, "env"))
                schema_error(c, "missing \"env\": rank from env needs the variable's name, like \"RANK\"");
        if (r->rank_source == TUNE_RANK_ENV && member(o, "regex")) {
                size_t saved = push_key(c, "regex");
                schema_error(c, "has no use with \"from\": \"env\" (the variable's value is the rank)");
                pop(c, saved);
        }
        if ((r->rank_source == TUNE_RANK_CMDLINE || r->rank_source == TUNE_RANK_COMM) && member(o, "env")) {
                size_t saved = push_key(c, "env");
                schema_error(c, "has no use with \"from\": \"%s\"", r->rank_source == TUNE_RANK_CMDLINE ? "cmdline" : "comm");
                pop(c, saved);
        }
}

static void parse_threads(sctx *c, json_object *o, tune_policy_rule *r) {
        static const char *const keys[] = { "control", "compute", NULL };
        json_object *sub;

        check_keys(c, o, keys);
        if (get_object(c, o, "control", &sub)) {
                static const char *const k[] = { "names", "main_thread", "cpus", NULL };
                size_t saved = push_key(c, "control");
                check_keys(c, sub, k);
                (void) get_glob_list(c, sub, "names", &r->control.name_globs);
                (void) get_bool(c, sub, "main_thread", &r->control.main_thread);
                (void) get_unsigned(c, sub, "cpus", 1, ROLE_CPUS_MAX, "CPUs", &r->control.cpus);
                if (!c->o->fragment) {
                        bool members = r->control.main_thread || (r->control.name_globs && r->control.name_globs[0]);
                        if (!members && !member(sub, "names") && !member(sub, "main_thread"))
                                schema_error(c, "has no members: give \"names\" (globs on thread names) or \"main_thread\": true");
                        else if (!members && member(sub, "main_thread") && !member(sub, "names"))
                                schema_error(c, "has no members: \"main_thread\" is false and there are no \"names\"");
                        else if (members && !member(sub, "cpus"))
                                schema_error(c, "missing \"cpus\": how many CPUs the control threads get, e.g. \"cpus\": 2");
                }
                pop(c, saved);
        }
        if (get_object(c, o, "compute", &sub)) {
                /* names and main_thread pass the unknown-key check to get a better message. */
                static const char *const k[] = { "cpus", NULL }, *const quiet[] = { "names", "main_thread", NULL };
                size_t saved = push_key(c, "compute");
                check_keys_ex(c, sub, k, quiet);
                for (size_t i = 0; i < 2; i++) {
                        const char *key = i ? "main_thread" : "names";
                        json_object *v;
                        if (json_object_object_get_ex(sub, key, &v)) {
                                size_t s2 = push_key(c, key);
                                schema_error(c, "compute takes every thread that is not control; it has no \"%s\" (put them in "
                                       "control, or leave them out)", key);
                                pop(c, s2);
                        }
                }
                (void) get_unsigned(c, sub, "cpus", 0, ROLE_CPUS_MAX, "CPUs", &r->compute.cpus);
                pop(c, saved);
        }
}

static void parse_memory(sctx *c, json_object *o, tune_policy_rule *r) {
        static const char *const keys[] = { "migrate", "settle_delay_ms", "min_free_mib", "rate_mib_s", "shared", NULL };
        int64_t mib;

        check_keys(c, o, keys);
        (void) get_bool(c, o, "migrate", &r->memory_migrate);
        (void) get_unsigned(c, o, "settle_delay_ms", 0, 3600000, "milliseconds", &r->memory_settle_delay_ms);
        if (get_int(c, o, "min_free_mib", 0, INT64_C(1) << 30, "MiB", &mib))
                r->memory_min_free_kib = (uint64_t) mib * 1024;
        (void) get_unsigned(c, o, "rate_mib_s", 0, 1048576, "MiB/s", &r->memory_rate_mib_s);
        (void) get_bool(c, o, "shared", &r->memory_shared);
}

static void parse_unattributed(sctx *c, json_object *o, tune_policy_rule *r) {
        static const char *const keys[] = { "action", "cpus", "nodes", NULL };
        static const char *const actions[] = { "leave", "place", NULL };
        int a;

        check_keys(c, o, keys);
        if (get_enum(c, o, "action", actions, &a))
                r->unattributed = a == 0 ? TUNE_UNATTRIBUTED_LEAVE : TUNE_UNATTRIBUTED_PLACE;
        (void) get_cpuset(c, o, "cpus", TUNE_CPU_MAX - 1, "CPU", &r->unattributed_cpus);
        (void) get_cpuset(c, o, "nodes", NODE_MAX, "NUMA node", &r->unattributed_nodes);
        if (c->o->fragment)
                return;
        if (r->unattributed == TUNE_UNATTRIBUTED_PLACE && !member(o, "cpus") && !member(o, "nodes"))
                schema_error(c, "\"action\": \"place\" needs \"cpus\" (a CPU list like \"96-119\") or \"nodes\" (like \"4,6\")");
        if (r->unattributed == TUNE_UNATTRIBUTED_LEAVE)
                for (size_t i = 0; i < 2; i++) {
                        const char *key = i ? "nodes" : "cpus";
                        if (member(o, key)) {
                                size_t saved = push_key(c, key);
                                schema_error(c, "has no effect: \"action\" is \"leave\" (write \"action\": \"place\" to use it)");
                                pop(c, saved);
                        }
                }
}

static bool valid_rule_name(const char *s) {
        return strchr(LOWER UPPER DIGIT, s[0]) && only_chars(s, LOWER UPPER DIGIT "_.-");
}

/* Returns whether the rule is enabled (and so belongs in the policy). */
static bool parse_rule(sctx *c, json_object *o, tune_policy_rule *r) {
        static const char *const keys[] = { "name", "enabled", "priority", "match", "accelerators", "rank", "threads",
                                            "memory", "claims", "restore_on_stop", "reassert_affinity", "binding",
                                            "binding_watch_ms", "unattributed", NULL };
        static const char *const claims[] = { "verified", "any", NULL };
        static const char *const bindings[] = { "daemon", "engine", "auto", NULL };
        int binding;
        int64_t watch;
        json_object *sub, *v;
        const char *s;
        bool enabled = true;
        int64_t prio;
        int a;

        *r = (tune_policy_rule){
                .accel_mode = TUNE_ACCEL_AUTO,
                .rank_source = TUNE_RANK_NONE,
                .memory_settle_delay_ms = 30000,
                .restore_on_stop = true,
                .binding = TUNE_BINDING_DAEMON,
                .binding_watch_ms = 2000,
                .unattributed = TUNE_UNATTRIBUTED_LEAVE,
        };
        check_keys(c, o, keys);
        if (get_string(c, o, "name", NAME_MAX_LEN, &s)) {
                if (!valid_rule_name(s)) {
                        size_t saved = push_key(c, "name");
                        schema_error(c, "a rule name has letters, digits, '_', '.' and '-' only, and starts with a letter or digit");
                        pop(c, saved);
                } else
                        (void) dup_string(c, s, &r->name);
        } else if (!member(o, "name"))
                schema_error(c, "missing \"name\": every rule needs one (logs name it, drop-ins merge by it)");
        (void) get_bool(c, o, "enabled", &enabled);
        if (get_int(c, o, "priority", -1000, 1000, NULL, &prio))
                r->priority = (int) prio;
        if (get_object(c, o, "match", &sub)) {
                size_t saved = push_key(c, "match");
                parse_match(c, sub, r);
                pop(c, saved);
        }
        if ((v = member(o, "accelerators"))) {
                size_t saved = push_key(c, "accelerators");
                parse_rule_accelerators(c, v, r);
                pop(c, saved);
        }
        if (get_object(c, o, "rank", &sub)) {
                size_t saved = push_key(c, "rank");
                parse_rank(c, sub, r);
                pop(c, saved);
        }
        if (get_object(c, o, "threads", &sub)) {
                size_t saved = push_key(c, "threads");
                parse_threads(c, sub, r);
                pop(c, saved);
        }
        if (get_object(c, o, "memory", &sub)) {
                size_t saved = push_key(c, "memory");
                parse_memory(c, sub, r);
                pop(c, saved);
        }
        if (get_enum(c, o, "claims", claims, &a))
                r->claims_any = a == 1;
        (void) get_bool(c, o, "restore_on_stop", &r->restore_on_stop);
        (void) get_bool(c, o, "reassert_affinity", &r->reassert_affinity);
        if (get_enum(c, o, "binding", bindings, &binding))
                r->binding = (tune_binding) binding;
        if (get_int(c, o, "binding_watch_ms", 0, 600000, "milliseconds", &watch))
                r->binding_watch_ms = (unsigned) watch;
        if (get_object(c, o, "unattributed", &sub)) {
                size_t saved = push_key(c, "unattributed");
                parse_unattributed(c, sub, r);
                pop(c, saved);
        }

        if (c->o->fragment || !enabled)
                return enabled;

        /* Completeness: only on the whole (merged) policy. */
        json_object *m = member(o, "match");
        bool any = r->match_comm || r->match_exe || r->has_match_cmdline || r->match_uids || r->match_cgroup;
        /* A member that failed to parse was reported already; a null one (a drop-in's
         * "remove this key") is no criterion. */
        bool tried = false;
        if (m && json_object_is_type(m, json_type_object)) {
                json_object_object_foreach(m, mkey, mval) {
                        (void) mkey;
                        if (mval)
                                tried = true;
                }
        }
        if (!m) {
                schema_error(c, "missing \"match\": a rule needs at least one of comm, exe, cmdline, user, cgroup");
        } else if (!any && !tried && json_object_is_type(m, json_type_object)) {
                size_t saved = push_key(c, "match");
                schema_error(c, "is empty: a rule needs at least one of comm, exe, cmdline, user, cgroup");
                pop(c, saved);
        } else if (r->match_comm && !r->match_exe && !r->has_match_cmdline && !r->match_uids && !r->match_cgroup) {
                size_t saved = push_key(c, "match");
                schema_warning(c, "matches on comm only: any user can name a process that way; add exe, cmdline, user or cgroup");
                pop(c, saved);
        }
        if (r->memory_migrate && r->memory_shared && !r->match_uids && !r->match_cgroup) {
                size_t saved = push_key(c, "memory");
                schema_warning(c, "moves shared pages (shared: true) and the rule names no user or cgroup: any user's "
                        "look-alike could drag pages others share (model files' page cache) to its node, so only "
                        "root's processes get them moved, the others their own pages; add match.user or "
                        "match.cgroup to move a service account's (docs/trust.md)");
                pop(c, saved);
        }
        if (r->claims_any && !r->match_uids && !r->match_cgroup) {
                size_t saved = push_key(c, "claims");
                schema_warning(c, "is \"any\" and the rule names no user or cgroup: any user can start a process it matches and "
                        "take CPUs next to an accelerator; add match.user or match.cgroup, or leave claims \"verified\" "
                        "(docs/trust.md)");
                pop(c, saved);
        }
        if (r->rank_source != TUNE_RANK_NONE && r->accel_mode == TUNE_ACCEL_NONE) {
                size_t saved = push_key(c, "rank");
                schema_error(c, "has no use with \"accelerators\": \"none\" (the rank picks one of the rule's accelerators)");
                pop(c, saved);
        }
        if (r->accel_mode == TUNE_ACCEL_NONE && r->unattributed == TUNE_UNATTRIBUTED_LEAVE) {
                size_t saved = push_key(c, "accelerators");
                schema_error(c, "is \"none\" but unattributed.action is \"leave\": this rule would never place anything "
                       "(give \"unattributed\": {\"action\": \"place\", \"cpus\": ...})");
                pop(c, saved);
        }
        return true;
}

static void parse_processes(sctx *c, json_object *a, size_t n, tune_policy *p) {
        size_t saved = push_key(c, "processes");

        p->rules = calloc(n ? n : 1, sizeof *p->rules);
        if (!p->rules) {
                c->r = -ENOMEM;
                pop(c, saved);
                return;
        }
        for (size_t i = 0; i < n && c->r >= 0; i++) {
                json_object *e = json_object_array_get_idx(a, i);
                tune_policy_rule *r = &p->rules[p->n_rules];
                size_t s2 = push_index(c, i);

                if (!e || !json_object_is_type(e, json_type_object)) {
                        schema_error(c, "expected an object (a rule), got %s", e ? type_name(e) : "null");
                        pop(c, s2);
                        continue;
                }
                bool keep = parse_rule(c, e, r);
                r->merged_index = (unsigned) i;
                /* Names are unique within a document (across files, equal names merge). */
                if (r->name)
                        for (size_t j = 0; j < i; j++) {
                                json_object *f = json_object_array_get_idx(a, j), *fn;
                                if (f && json_object_is_type(f, json_type_object) && json_object_object_get_ex(f, "name", &fn) &&
                                    json_object_is_type(fn, json_type_string) && streq(json_object_get_string(fn), r->name)) {
                                        size_t s3 = push_key(c, "name");
                                        schema_error(c, "rule \"%s\" is already defined by processes[%zu] (in one file, names are unique)",
                                            r->name, j);
                                        pop(c, s3);
                                        break;
                                }
                        }
                if (keep && c->r >= 0) {
                        char kp[32];
                        snprintf(kp, sizeof kp, "processes[%zu]", i);
                        r->key_path = strdup(kp);
                        if (!r->key_path || (c->o->file && !(r->file = strdup(c->o->file))))
                                c->r = -ENOMEM;
                        p->n_rules++;
                } else
                        policy_rule_done(r);
                pop(c, s2);
        }
        pop(c, saved);
}

static int cmp_rule_priority(const void *a, const void *b) {
        const tune_policy_rule *x = a, *y = b;
        if (x->priority != y->priority)
                return x->priority > y->priority ? -1 : 1;
        return x->merged_index < y->merged_index ? -1 : x->merged_index > y->merged_index;
}

int policy_from_json(json_object *doc, const policy_schema_opts *o, tune_policy *p, tune_policy_errors *errors) {
        static const char *const keys[] = { "version", "options", "host", "accelerators", "processes", NULL };
        sctx c = { .o = o, .errors = errors };
        json_object *sub, *v;
        size_t n;

        policy_set_defaults(p);
        if (!doc || !json_object_is_type(doc, json_type_object)) {
                schema_error(&c, "the top level must be a JSON object ({ \"version\": 1, ... }), not %s", doc ? type_name(doc) : "null");
                return c.r;
        }
        check_keys(&c, doc, keys);
        if (o->check_version) {
                if (!json_object_object_get_ex(doc, "version", &v))
                        schema_error(&c, "missing \"version\": every policy file starts with \"version\": 1");
                else {
                        size_t saved = push_key(&c, "version");
                        if (!v || !json_object_is_type(v, json_type_int))
                                schema_error(&c, "expected the number 1, got %s", v ? type_name(v) : "null");
                        else if (json_object_get_int64(v) != TUNE_POLICY_VERSION)
                                schema_error(&c, "unsupported version %s: this npu-tuned reads version %d",
                                    json_object_to_json_string(v), TUNE_POLICY_VERSION);
                        pop(&c, saved);
                }
        }
        if (get_object(&c, doc, "options", &sub)) {
                size_t saved = push_key(&c, "options");
                parse_options(&c, sub, &p->options);
                pop(&c, saved);
        }
        if (get_object(&c, doc, "host", &sub)) {
                size_t saved = push_key(&c, "host");
                parse_host(&c, sub, &p->host);
                pop(&c, saved);
        }
        if (get_object(&c, doc, "accelerators", &sub)) {
                size_t saved = push_key(&c, "accelerators");
                parse_accelerators(&c, sub, p);
                pop(&c, saved);
        }
        if (get_array(&c, doc, "processes", RULES_MAX, &v, &n))
                parse_processes(&c, v, n, p);
        if (c.r >= 0 && p->n_rules > 1)
                qsort(p->rules, p->n_rules, sizeof *p->rules, cmp_rule_priority);
        return c.r;
}
