/* SPDX-License-Identifier: GPL-2.0-only */
/* The knob journal (see include/npu-tuned/journal.h and docs/journal.md).
 *
 * Format, version 1. UTF-8/ASCII text, lines ending in '\n':
 *
 *   # npu-tuned knob journal ...               comment lines (only before the header)
 *   npu-tuned-journal 1                        header: the format version
 *   boot_id f0c62e8c-0e62-4b75-a031-2163bfff8c37   boot the knobs were changed in ("" unknown)
 *   root /                                     the root the knob paths are below
 *   knob seq=1 backend=thp id=thp/enabled path=/sys/kernel/mm/transparent_hugepage/enabled
 *        cpu=-1 format=selected state=applied error=0 original=madvise desired=never prior=
 *                                              (one line) zero or more, seq ascending
 *   end entries=1 fnv1a64=89abcdef01234567     count and checksum of every byte before "end"
 *
 * Every value is percent-encoded: bytes other than [A-Za-z0-9._,:+/@[]-] are written as
 * %XX, so a value never holds a space or a newline and "" is an empty value. Every key of
 * a knob line is required, in this order; an unknown key, a missing end line (a truncated
 * file), a count or checksum that does not match, or anything after the end line makes
 * the whole journal invalid (-EBADMSG): the caller then leaves the knobs alone. A version
 * above TUNE_JOURNAL_VERSION is -EPROTONOSUPPORT (written by a newer npu-tuned). A new
 * field means a new version. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npu-tuned/journal.h"
#include "npu-tuned/parse.h"

static const char *const format_names[_TUNE_KNOB_FORMAT_MAX] = {
        [TUNE_KNOB_PLAIN] = "plain",
        [TUNE_KNOB_SELECTED] = "selected",
        [TUNE_KNOB_CPUMASK] = "cpumask",
};

static const char *const state_names[_TUNE_JOURNAL_STATE_MAX] = {
        [TUNE_JOURNAL_PENDING] = "pending",
        [TUNE_JOURNAL_APPLIED] = "applied",
        [TUNE_JOURNAL_REFUSED] = "refused",
};

const char *tune_knob_format_to_string(tune_knob_format f) {
        return (unsigned) f < _TUNE_KNOB_FORMAT_MAX ? format_names[f] : NULL;
}

int tune_knob_format_from_string(const char *s) {
        for (int i = 0; i < _TUNE_KNOB_FORMAT_MAX; i++)
                if (s && streq(s, format_names[i]))
                        return i;
        return -EINVAL;
}

const char *tune_journal_state_to_string(tune_journal_state s) {
        return (unsigned) s < _TUNE_JOURNAL_STATE_MAX ? state_names[s] : NULL;
}

int tune_journal_state_from_string(const char *s) {
        for (int i = 0; i < _TUNE_JOURNAL_STATE_MAX; i++)
                if (s && streq(s, state_names[i]))
                        return i;
        return -EINVAL;
}

/* ---- the in-memory journal ----------------------------------------------------------- */

static void entry_done(tune_journal_entry *e) {
        free(e->backend);
        free(e->id);
        free(e->path);
        free(e->original);
        free(e->desired);
        free(e->prior);
        *e = (tune_journal_entry){};
}

int tune_journal_new(const char *root, const char *boot_id, tune_journal **ret) {
        tune_journal *j = calloc(1, sizeof *j);

        if (!j)
                return -ENOMEM;
        j->version = TUNE_JOURNAL_VERSION;
        j->next_seq = 1;
        j->root = strdup(root ? root : "/");
        j->boot_id = strdup(boot_id ? boot_id : "");
        if (!j->root || !j->boot_id) {
                tune_journal_free(j);
                return -ENOMEM;
        }
        *ret = j;
        return 0;
}

tune_journal *tune_journal_free(tune_journal *j) {
        if (!j)
                return NULL;
        for (unsigned i = 0; i < j->n; i++)
                entry_done(&j->entries[i]);
        free(j->entries);
        free(j->boot_id);
        free(j->root);
        free(j);
        return NULL;
}

tune_journal_entry *tune_journal_find(const tune_journal *j, const char *id) {
        for (unsigned i = 0; i < j->n; i++)
                if (streq(j->entries[i].id, id))
                        return &j->entries[i];
        return NULL;
}

static char *strdup_or_empty(const char *s) {
        return strdup(s ? s : "");
}

int tune_journal_add(tune_journal *j, const tune_journal_entry *e) {
        tune_journal_entry n = {};
        unsigned pos;

        if (!e->backend || !e->id || !e->path || (unsigned) e->format >= _TUNE_KNOB_FORMAT_MAX ||
            (unsigned) e->state >= _TUNE_JOURNAL_STATE_MAX)
                return -EINVAL;
        if (tune_journal_find(j, e->id))
                return -EEXIST;
        if (TUNE_GROW(j->entries, j->cap, j->n, 16) < 0)
                return -ENOMEM;
        n.seq = e->seq ? e->seq : j->next_seq;
        n.cpu = e->cpu;
        n.format = e->format;
        n.state = e->state;
        n.error = e->error;
        n.backend = strdup(e->backend);
        n.id = strdup(e->id);
        n.path = strdup(e->path);
        n.original = strdup_or_empty(e->original);
        n.desired = strdup_or_empty(e->desired);
        n.prior = strdup_or_empty(e->prior);
        if (!n.backend || !n.id || !n.path || !n.original || !n.desired || !n.prior) {
                entry_done(&n);
                return -ENOMEM;
        }
        if (n.seq >= j->next_seq)
                j->next_seq = n.seq + 1;
        /* Keep seq order (adopted entries keep their old seq). */
        for (pos = j->n; pos > 0 && j->entries[pos - 1].seq > n.seq; pos--)
                ;
        memmove(j->entries + pos + 1, j->entries + pos, (j->n - pos) * sizeof *j->entries);
        j->entries[pos] = n;
        j->n++;
        return 0;
}

void tune_journal_remove(tune_journal *j, unsigned index) {
        if (index >= j->n)
                return;
        entry_done(&j->entries[index]);
        memmove(j->entries + index, j->entries + index + 1, (j->n - index - 1) * sizeof *j->entries);
        j->n--;
}

/* ---- text form ----------------------------------------------------------------------- */

static uint64_t fnv1a64(const char *p, size_t len) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char) p[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

static bool safe_byte(unsigned char c) {
        return isalnum(c) || strchr("._,:+/@[]-", c);
}

static int encode_value(FILE *f, const char *value) {
        for (const unsigned char *p = (const unsigned char *) value; *p; p++)
                if (safe_byte(*p) ? fputc(*p, f) == EOF : fprintf(f, "%%%02X", *p) < 0)
                        return -EIO;
        return 0;
}

static int encode(FILE *f, const char *key, const char *value) {
        if (fprintf(f, " %s=", key) < 0)
                return -EIO;
        return encode_value(f, value);
}

int tune_journal_format(const tune_journal *j, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;
        int r = 0;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fprintf(f, "# npu-tuned knob journal: the values host knobs had before npu-tuned changed them.\n"
                   "# Written by npu-tuned, read by npu-tuned --restore. Do not edit (see docs/journal.md).\n"
                   "npu-tuned-journal %d\n",
                TUNE_JOURNAL_VERSION);
        fputs("boot_id ", f);
        r = encode_value(f, j->boot_id);
        fputs("\nroot ", f);
        if (r >= 0)
                r = encode_value(f, j->root);
        fputc('\n', f);
        for (unsigned i = 0; i < j->n && r >= 0; i++) {
                const tune_journal_entry *e = &j->entries[i];
                char num[32];

                fprintf(f, "knob seq=%u", e->seq);
                r = encode(f, "backend", e->backend);
                if (r >= 0)
                        r = encode(f, "id", e->id);
                if (r >= 0)
                        r = encode(f, "path", e->path);
                snprintf(num, sizeof num, "%d", e->cpu);
                if (r >= 0)
                        r = encode(f, "cpu", num);
                if (r >= 0)
                        r = encode(f, "format", tune_knob_format_to_string(e->format));
                if (r >= 0)
                        r = encode(f, "state", tune_journal_state_to_string(e->state));
                snprintf(num, sizeof num, "%d", e->error);
                if (r >= 0)
                        r = encode(f, "error", num);
                if (r >= 0)
                        r = encode(f, "original", e->original);
                if (r >= 0)
                        r = encode(f, "desired", e->desired);
                if (r >= 0)
                        r = encode(f, "prior", e->prior);
                fputc('\n', f);
        }
        if (fflush(f) != 0 || ferror(f))
                r = -ENOMEM;
        if (r < 0) {
                fclose(f);
                return r;
        }
        fprintf(f, "end entries=%u fnv1a64=%016" PRIx64 "\n", j->n, fnv1a64(buf, size));
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

static int decode(const char *s, size_t len, char **ret) {
        _cleanup_free_ char *out = malloc(len + 1);
        size_t n = 0;

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c == '%') {
                        int hi, lo;
                        if (len - i < 3)
                                return -EBADMSG;
                        hi = tune_parse_hex_digit(s[i + 1]);
                        lo = tune_parse_hex_digit(s[i + 2]);
                        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                                return -EBADMSG;
                        out[n++] = (char) (hi * 16 + lo);
                        i += 2;
                } else if (safe_byte(c))
                        out[n++] = (char) c;
                else
                        return -EBADMSG;
        }
        out[n] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

/* The value of " key=value" at *cursor (key NULL: " value"); *cursor moves past it. */
static int take_field(char **cursor, const char *key, char **ret) {
        char *p = *cursor, *end;

        if (*p != ' ')
                return -EBADMSG;
        p++;
        if (key) {
                size_t klen = strlen(key);
                if (strncmp(p, key, klen) != 0 || p[klen] != '=')
                        return -EBADMSG;
                p += klen + 1;
        }
        end = strchr(p, ' ');
        if (!end)
                end = p + strlen(p);
        *cursor = end;
        return decode(p, (size_t) (end - p), ret);
}

static int parse_int_field(char **cursor, const char *key, long min, long max, long *ret) {
        _cleanup_free_ char *s = NULL;
        char *end;
        long v;
        int r;

        r = take_field(cursor, key, &s);
        if (r < 0)
                return r;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < min || v > max)
                return -EBADMSG;
        *ret = v;
        return 0;
}

static int parse_knob_line(char *line, tune_journal *j) {
        _cleanup_free_ char *format = NULL, *state = NULL;
        tune_journal_entry e = {};
        char *cursor = line;
        long v;
        int r;

        /* "knob seq=N ..." : the first field follows "knob". */
        r = parse_int_field(&cursor, "seq", 1, INT32_MAX, &v);
        if (r < 0)
                return r;
        e.seq = (unsigned) v;
        if (j->n > 0 && j->entries[j->n - 1].seq >= e.seq)
                return -EBADMSG;
        r = take_field(&cursor, "backend", &e.backend);
        if (r >= 0)
                r = take_field(&cursor, "id", &e.id);
        if (r >= 0)
                r = take_field(&cursor, "path", &e.path);
        if (r >= 0 && (r = parse_int_field(&cursor, "cpu", -1, 65535, &v)) >= 0)
                e.cpu = (int) v;
        if (r >= 0)
                r = take_field(&cursor, "format", &format);
        if (r >= 0 && (r = tune_knob_format_from_string(format)) >= 0)
                e.format = (tune_knob_format) r;
        if (r >= 0)
                r = take_field(&cursor, "state", &state);
        if (r >= 0 && (r = tune_journal_state_from_string(state)) >= 0)
                e.state = (tune_journal_state) r;
        if (r >= 0 && (r = parse_int_field(&cursor, "error", -4095, 0, &v)) >= 0)
                e.error = (int) v;
        if (r >= 0)
                r = take_field(&cursor, "original", &e.original);
        if (r >= 0)
                r = take_field(&cursor, "desired", &e.desired);
        if (r >= 0)
                r = take_field(&cursor, "prior", &e.prior);
        if (r >= 0 && *cursor)
                r = -EBADMSG; /* an unknown field */
        if (r >= 0 && (!*e.backend || !*e.id || e.path[0] != '/'))
                r = -EBADMSG;
        if (r >= 0) {
                r = tune_journal_add(j, &e);
                if (r == -EEXIST || r == -EINVAL)
                        r = -EBADMSG;
        }
        free(e.backend);
        free(e.id);
        free(e.path);
        free(e.original);
        free(e.desired);
        free(e.prior);
        return r == -ENOMEM ? r : r < 0 ? -EBADMSG : 0;
}

int tune_journal_parse(const char *text, size_t len, tune_journal **ret, unsigned *ret_line) {
        _cleanup_(tune_journal_freep) tune_journal *j = NULL;
        _cleanup_free_ char *copy = NULL;
        enum { HEADER, BOOT, ROOT, KNOBS } expect = HEADER;
        unsigned lineno = 0;
        char *p;
        int r;

        if (ret_line)
                *ret_line = 0;
        if (len > TUNE_JOURNAL_SIZE_MAX || memchr(text, 0, len))
                return -EBADMSG;
        copy = strndup(text, len);
        if (!copy)
                return -ENOMEM;
        r = tune_journal_new("/", "", &j);
        if (r < 0)
                return r;
        for (p = copy; *p;) {
                char *eol = strchr(p, '\n');
                size_t offset = (size_t) (p - copy);

                lineno++;
                if (ret_line)
                        *ret_line = lineno;
                if (!eol)
                        return -EBADMSG; /* a line cut short: truncated */
                *eol = 0;
                if (expect == HEADER && p[0] == '#') {
                        p = eol + 1;
                        continue;
                }
                switch (expect) {
                case HEADER: {
                        char *end;
                        long v;
                        if (!startswith_lit(p, "npu-tuned-journal "))
                                return -EBADMSG;
                        errno = 0;
                        v = strtol(p + strlen("npu-tuned-journal "), &end, 10);
                        if (errno || *end || v < 1)
                                return -EBADMSG;
                        if (v > TUNE_JOURNAL_VERSION)
                                return -EPROTONOSUPPORT;
                        j->version = (int) v;
                        expect = BOOT;
                        break;
                }
                case BOOT:
                case ROOT: {
                        char *cursor, *value = NULL;
                        const char *key = expect == BOOT ? "boot_id" : "root";
                        size_t klen = strlen(key);
                        if (strncmp(p, key, klen) != 0)
                                return -EBADMSG;
                        cursor = p + klen;
                        r = take_field(&cursor, NULL, &value);
                        if (r < 0)
                                return r == -ENOMEM ? r : -EBADMSG;
                        if (*cursor) {
                                free(value);
                                return -EBADMSG;
                        }
                        if (expect == BOOT) {
                                free(j->boot_id);
                                j->boot_id = value;
                                expect = ROOT;
                        } else {
                                free(j->root);
                                j->root = value;
                                if (j->root[0] != '/')
                                        return -EBADMSG;
                                expect = KNOBS;
                        }
                        break;
                }
                case KNOBS:
                        if (startswith_lit(p, "knob ")) {
                                r = parse_knob_line(p + strlen("knob"), j);
                                if (r < 0)
                                        return r;
                                break;
                        }
                        if (startswith_lit(p, "end ")) {
                                char expected[96];
                                /* Count and checksum of every byte before this line. */
                                snprintf(expected, sizeof expected, "end entries=%u fnv1a64=%016" PRIx64, j->n,
                                         fnv1a64(text, offset));
                                if (!streq(p, expected) || (size_t) (eol + 1 - copy) != len) {
                                        if (ret_line)
                                                *ret_line = 0; /* the damage can be anywhere */
                                        return -EBADMSG;
                                }
                                if (ret_line)
                                        *ret_line = 0;
                                *ret = TAKE_PTR(j);
                                return 0;
                        }
                        return -EBADMSG;
                }
                p = eol + 1;
        }
        /* No end line: truncated. */
        if (ret_line)
                *ret_line = lineno + 1;
        return -EBADMSG;
}

/* ---- the file ------------------------------------------------------------------------ */

int tune_journal_load(const char *state_dir, tune_journal **ret, unsigned *ret_line) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r;

        if (ret_line)
                *ret_line = 0;
        r = tune_state_file_read(state_dir, TUNE_JOURNAL_FILE, TUNE_JOURNAL_SIZE_MAX, &buf, &len);
        if (r < 0)
                return r;
        return tune_journal_parse(buf, len, ret, ret_line);
}

int tune_journal_save(const char *state_dir, const tune_journal *j, tune_step_fn step_fn, void *userdata) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = tune_journal_format(j, &text);
        if (r < 0)
                return r;
        return tune_state_file_write(state_dir, TUNE_JOURNAL_FILE, text, step_fn, userdata);
}

int tune_journal_delete(const char *state_dir) {
        return tune_state_file_delete(state_dir, TUNE_JOURNAL_FILE);
}
