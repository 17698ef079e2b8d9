/* SPDX-License-Identifier: GPL-2.0-only */
/* Positions in a policy's JSON text. json-c reports a position only for syntax errors and
 * silently keeps the last of two equal keys; this small scanner over the text (which
 * json-c has already accepted, so it is well formed) finds duplicate keys and the line
 * and column of any key path, so that every message can point at its line. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/parse.h"
#include "policy-internal.h"

typedef struct scanner {
        const char *text;
        size_t len;
        size_t pos;
} scanner;

static void skip_ws(scanner *s) {
        while (s->pos < s->len && strchr(" \t\r\n", s->text[s->pos]) && s->text[s->pos])
                s->pos++;
}

static size_t put_utf8(char *out, uint32_t cp) {
        if (cp < 0x80) {
                out[0] = (char) cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char) (0xc0 | (cp >> 6));
                out[1] = (char) (0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp < 0x10000) {
                out[0] = (char) (0xe0 | (cp >> 12));
                out[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
                out[2] = (char) (0x80 | (cp & 0x3f));
                return 3;
        }
        out[0] = (char) (0xf0 | (cp >> 18));
        out[1] = (char) (0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char) (0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char) (0x80 | (cp & 0x3f));
        return 4;
}

static int read_hex4(scanner *s, uint32_t *ret) {
        uint32_t v = 0;
        if (s->pos + 4 > s->len)
                return -EBADMSG;
        for (unsigned i = 0; i < 4; i++) {
                int h = tune_parse_hex_digit(s->text[s->pos + i]);
                if (h < 0)
                        return -EBADMSG;
                v = v << 4 | (uint32_t) h;
        }
        s->pos += 4;
        *ret = v;
        return 0;
}

/* At a '"': decode the string (when ret is not NULL) and move past it. A decoded string
 * is never longer than its source, so a buffer of the source length suffices. */
static int scan_string(scanner *s, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t start, n = 0;

        if (s->pos >= s->len || s->text[s->pos] != '"')
                return -EBADMSG;
        start = ++s->pos;
        if (ret) {
                buf = malloc(s->len - start + 1);
                if (!buf)
                        return -ENOMEM;
        }
        while (s->pos < s->len) {
                char c = s->text[s->pos++];
                if (c == '"') {
                        if (ret) {
                                buf[n] = 0;
                                *ret = TAKE_PTR(buf);
                                *ret_len = n;
                        }
                        return 0;
                }
                if (c != '\\') {
                        if (buf)
                                buf[n++] = c;
                        continue;
                }
                if (s->pos >= s->len)
                        return -EBADMSG;
                c = s->text[s->pos++];
                if (c == 'u') {
                        uint32_t cp, lo;
                        if (read_hex4(s, &cp) < 0)
                                return -EBADMSG;
                        if (cp >= 0xd800 && cp < 0xdc00 && s->pos + 6 <= s->len && s->text[s->pos] == '\\' &&
                            s->text[s->pos + 1] == 'u') {
                                size_t save = s->pos;
                                s->pos += 2;
                                if (read_hex4(s, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000)
                                        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                                else
                                        s->pos = save;
                        }
                        /* A \uXXXX escape takes 6 source bytes and at most 4 decoded ones;
                         * a surrogate pair 12 and 4. */
                        if (buf)
                                n += put_utf8(buf + n, cp);
                        continue;
                }
                if (buf) {
                        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
                        const char *p = strchr(from, c);
                        buf[n++] = p && c ? to[p - from] : c;
                }
        }
        return -EBADMSG;
}

typedef struct key_pos {
        char *key;
        size_t key_len;
        size_t offset;
} key_pos;

static int cmp_key_pos(const void *a, const void *b) {
        const key_pos *x = a, *y = b;
        size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
        int c = memcmp(x->key, y->key, n);
        if (c)
                return c;
        if (x->key_len != y->key_len)
                return x->key_len < y->key_len ? -1 : 1;
        return x->offset < y->offset ? -1 : x->offset > y->offset;
}

typedef struct scan_state {
        scanner s;
        const char *file;
        tune_policy_errors *errors;
        char *path; /* growing key path of the value being scanned */
        size_t path_len, path_cap;
} scan_state;

static int path_append(scan_state *st, const char *piece, size_t n) {
        if (st->path_len + n + 1 > st->path_cap) {
                size_t cap = (st->path_len + n + 1) * 2;
                char *p = realloc(st->path, cap);
                if (!p)
                        return -ENOMEM;
                st->path = p;
                st->path_cap = cap;
        }
        memcpy(st->path + st->path_len, piece, n);
        st->path_len += n;
        st->path[st->path_len] = 0;
        return 0;
}

static int scan_value(scan_state *st, unsigned depth);

static int report(scan_state *st, size_t offset, const char *msg) {
        int line, column;
        if (!st->errors)
                return 0;
        policy_offset_position(st->s.text, st->s.len, offset, &line, &column);
        return policy_error_add(st->errors, st->file, st->path ? st->path : "", line, column, false, "%s", msg);
}

/* After a member of an object or an element of an array, whose scan returned r: the path
 * back to the container's (saved), then 1 when a ',' says another follows, 0 at the
 * closing character, or r (< 0) or -EBADMSG. */
static int after_value(scan_state *st, size_t saved, int r, char close) {
        scanner *s = &st->s;

        st->path_len = saved;
        if (st->path)
                st->path[saved] = 0;
        if (r < 0)
                return r;
        skip_ws(s);
        if (s->pos < s->len && s->text[s->pos] == ',') {
                s->pos++;
                return 1;
        }
        if (s->pos < s->len && s->text[s->pos] == close) {
                s->pos++;
                return 0;
        }
        return -EBADMSG;
}

static int scan_object(scan_state *st, unsigned depth) {
        scanner *s = &st->s;
        bool track = st->errors; /* false: only skip over the object */
        key_pos *keys = NULL;
        size_t n = 0, cap = 0;
        int r = 0;

        s->pos++; /* '{' */
        skip_ws(s);
        if (s->pos < s->len && s->text[s->pos] == '}') {
                s->pos++;
                return 0;
        }
        for (;;) {
                size_t saved = st->path_len, key_offset;
                char *key = NULL;
                size_t key_len = 0;

                skip_ws(s);
                key_offset = s->pos;
                if (s->pos < s->len && s->text[s->pos] == '\'') {
                        r = report(st, s->pos, "keys and strings take double quotes in JSON, not single quotes");
                        if (r >= 0)
                                r = -EBADMSG;
                        goto out;
                }
                r = scan_string(s, track ? &key : NULL, &key_len);
                if (r < 0)
                        goto out;
                if (track && TUNE_GROW(keys, cap, n, 16) < 0) {
                        free(key);
                        r = -ENOMEM;
                        goto out;
                }
                if (track) {
                        keys[n++] = (key_pos){ key, key_len, key_offset };
                        if ((st->path_len > 0 && (r = path_append(st, ".", 1)) < 0) ||
                            (r = path_append(st, key, strnlen(key, key_len))) < 0)
                                goto out;
                }
                skip_ws(s);
                if (s->pos >= s->len || s->text[s->pos] != ':') {
                        r = -EBADMSG;
                        goto out;
                }
                s->pos++;
                r = after_value(st, saved, scan_value(st, depth + 1), '}');
                if (r < 0)
                        goto out;
                if (r == 0)
                        break;
        }
        if (n > 1) {
                qsort(keys, n, sizeof *keys, cmp_key_pos);
                for (size_t i = 1; i < n; i++) {
                        if (keys[i].key_len != keys[i - 1].key_len || memcmp(keys[i].key, keys[i - 1].key, keys[i].key_len))
                                continue;
                        _cleanup_free_ char *q = policy_quote(keys[i].key, keys[i].key_len, 64);
                        size_t saved = st->path_len;
                        int line, column, first_line, first_column;
                        if (!q) {
                                r = -ENOMEM;
                                goto out;
                        }
                        if ((st->path_len > 0 && (r = path_append(st, ".", 1)) < 0) ||
                            (r = path_append(st, keys[i].key, strnlen(keys[i].key, keys[i].key_len))) < 0)
                                goto out;
                        policy_offset_position(s->text, s->len, keys[i].offset, &line, &column);
                        policy_offset_position(s->text, s->len, keys[i - 1].offset, &first_line, &first_column);
                        r = policy_error_add(st->errors, st->file, st->path, line, column, false,
                                             "key %s given twice (first on line %d): only the last one would count",
                                             q, first_line);
                        st->path_len = saved;
                        st->path[saved] = 0;
                        if (r < 0)
                                goto out;
                }
        }
out:
        for (size_t i = 0; i < n; i++)
                free(keys[i].key);
        free(keys);
        return r;
}

static int scan_array(scan_state *st, unsigned depth) {
        scanner *s = &st->s;
        unsigned index = 0;

        s->pos++; /* '[' */
        skip_ws(s);
        if (s->pos < s->len && s->text[s->pos] == ']') {
                s->pos++;
                return 0;
        }
        for (;; index++) {
                size_t saved = st->path_len;
                char piece[16];
                int n = snprintf(piece, sizeof piece, "[%u]", index), r;

                if (st->errors) {
                        r = path_append(st, piece, (size_t) n);
                        if (r < 0)
                                return r;
                }
                r = after_value(st, saved, scan_value(st, depth + 1), ']');
                if (r <= 0)
                        return r;
        }
}

static int scan_value(scan_state *st, unsigned depth) {
        scanner *s = &st->s;

        /* json-c enforced the depth limit already; this only guards the recursion. */
        if (depth > TUNE_POLICY_DEPTH_MAX + 1)
                return -EBADMSG;
        skip_ws(s);
        if (s->pos >= s->len)
                return -EBADMSG;
        switch (s->text[s->pos]) {
        case '{':
                return scan_object(st, depth);
        case '[':
                return scan_array(st, depth);
        case '"':
                return scan_string(s, NULL, NULL);
        case '\'': {
                int r = report(st, s->pos, "keys and strings take double quotes in JSON, not single quotes");
                return r < 0 ? r : -EBADMSG;
        }
        default:
                /* number, true, false, null (json-c also takes NaN/Infinity: the schema
                 * rejects non-integers later) */
                while (s->pos < s->len && !strchr(",]} \t\r\n", s->text[s->pos]))
                        s->pos++;
                return 0;
        }
}

int policy_scan_text(const char *text, size_t len, const char *file, tune_policy_errors *errors) {
        scan_state st = { .s = { text, len, 0 }, .file = file, .errors = errors };
        int r;

        r = path_append(&st, "", 0);
        if (r >= 0)
                r = scan_value(&st, 1);
        free(st.path);
        /* -EBADMSG: the scanner gave up on something json-c accepted; what it reported so
         * far stands, the rest is json-c's business. */
        return r == -ENOMEM ? r : 0;
}

void policy_offset_position(const char *text, size_t len, size_t offset, int *ret_line, int *ret_column) {
        int line = 1, column = 1;

        if (offset > len)
                offset = len;
        for (size_t i = 0; i < offset; i++) {
                unsigned char c = (unsigned char) text[i];
                if (c == '\n') {
                        line++;
                        column = 1;
                } else if ((c & 0xc0) != 0x80 && line < INT32_MAX && column < INT32_MAX)
                        column++;
        }
        *ret_line = line;
        *ret_column = column;
}

/* One component of a key path: a key, or an index (key == NULL). */
static const char *next_component(const char *p, char *key, size_t key_size, long *ret_index, bool *ret_is_index) {
        if (*p == '.')
                p++;
        if (*p == '[') {
                char *end;
                long v = strtol(p + 1, &end, 10);
                if (end == p + 1 || *end != ']' || v < 0)
                        return NULL;
                *ret_index = v;
                *ret_is_index = true;
                return end + 1;
        }
        size_t n = strcspn(p, ".[");
        if (n == 0 || n >= key_size)
                return NULL;
        memcpy(key, p, n);
        key[n] = 0;
        *ret_is_index = false;
        return p + n;
}

/* Past one value, as scan_value() with no errors to report: false if it is not one. */
static bool skip_value(scanner *s) {
        scan_state st = { .s = *s };
        int r = scan_value(&st, 1);

        free(st.path);
        s->pos = st.s.pos;
        return r >= 0;
}

bool policy_locate(const char *text, size_t len, const char *key_path, int *ret_line, int *ret_column) {
        scanner s = { text, len, 0 };
        const char *p = key_path;
        size_t found = 0;

        if (!text || !key_path)
                return false;
        skip_ws(&s);
        found = s.pos;
        while (*p) {
                char key[256];
                long index = -1;
                bool is_index = false;

                p = next_component(p, key, sizeof key, &index, &is_index);
                if (!p)
                        return false;
                skip_ws(&s);
                if (s.pos >= s.len)
                        return false;
                if (!is_index) {
                        size_t value_at = 0, key_at = 0;
                        bool hit = false;
                        if (s.text[s.pos] != '{')
                                return false;
                        s.pos++;
                        skip_ws(&s);
                        if (s.pos < s.len && s.text[s.pos] == '}')
                                return false;
                        /* Walk every member: with duplicates json-c keeps the last one. */
                        for (;;) {
                                _cleanup_free_ char *k = NULL;
                                size_t klen, at;
                                skip_ws(&s);
                                at = s.pos;
                                if (scan_string(&s, &k, &klen) < 0)
                                        return false;
                                skip_ws(&s);
                                if (s.pos >= s.len || s.text[s.pos] != ':')
                                        return false;
                                s.pos++;
                                skip_ws(&s);
                                if (klen == strlen(key) && memcmp(k, key, klen) == 0) {
                                        hit = true;
                                        key_at = at;
                                        value_at = s.pos;
                                }
                                if (!skip_value(&s))
                                        return false;
                                skip_ws(&s);
                                if (s.pos < s.len && s.text[s.pos] == ',') {
                                        s.pos++;
                                        continue;
                                }
                                break;
                        }
                        if (!hit)
                                return false;
                        found = key_at;
                        s.pos = value_at;
                } else {
                        if (s.text[s.pos] != '[')
                                return false;
                        s.pos++;
                        for (long i = 0;; i++) {
                                skip_ws(&s);
                                if (s.pos >= s.len || s.text[s.pos] == ']')
                                        return false;
                                if (i == index)
                                        break;
                                if (!skip_value(&s))
                                        return false;
                                skip_ws(&s);
                                if (s.pos >= s.len || s.text[s.pos] != ',')
                                        return false;
                                s.pos++;
                        }
                        found = s.pos;
                }
        }
        policy_offset_position(text, len, found, ret_line, ret_column);
        return true;
}
