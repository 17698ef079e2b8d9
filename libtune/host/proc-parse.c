/* SPDX-License-Identifier: GPL-2.0-only */
/* Pure parsers for /proc/PID files. No I/O; the input is hostile. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/parse.h"
#include "npu-tuned/proc.h"

/* One unsigned decimal field ending at a blank or the end; advances *p past it. */
static int next_u64(const char **p, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;

        while (*s == ' ')
                s++;
        if ((unsigned) (*s - '0') > 9)
                return -EBADMSG;
        for (; (unsigned) (*s - '0') <= 9; s++)
                if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t) (*s - '0'), &v))
                        return -ERANGE;
        if (*s && *s != ' ' && *s != '\n')
                return -EBADMSG;
        *p = s;
        *ret = v;
        return 0;
}

/* The bytes that end a field: the end of the text, a blank, the newline. */
static const bool field_end[256] = { [0] = true, [' '] = true, ['\n'] = true };

/* Skip n fields of anything but blanks (signed numbers, etc.), in one loop: the stat
 * parse skips 43 of its 52 fields, a byte at a time, and a call per field and three
 * comparisons per byte were most of its cost. */
static int skip_fields(const char **p, unsigned n) {
        const char *s = *p;

        for (; n > 0; n--) {
                while (*s == ' ')
                        s++;
                if (field_end[(unsigned char) *s])
                        return -EBADMSG;
                while (!field_end[(unsigned char) *++s])
                        ;
        }
        *p = s;
        return 0;
}

int tune_parse_proc_stat(const char *text, tune_proc_stat *ret) {
        const char *open, *close, *p;
        tune_proc_stat st = {};
        uint64_t v;
        long pid;
        int r;

        if (!text || !ret)
                return -EINVAL;
        open = strchr(text, '(');
        close = strrchr(text, ')');
        if (!open || !close || close < open || (size_t) (close - open - 1) >= TUNE_COMM_MAX)
                return -EBADMSG;
        {
                char num[24];
                size_t n = (size_t) (open - text);
                if (n == 0 || n >= sizeof num)
                        return -EBADMSG;
                memcpy(num, text, n);
                num[n] = 0;
                if (tune_parse_int(num, 1, INT_MAX, &pid) < 0)
                        return -EBADMSG;
        }
        st.pid = (pid_t) pid;
        memcpy(st.comm, open + 1, (size_t) (close - open - 1));
        st.comm[close - open - 1] = 0;
        p = close + 1;
        if (*p++ != ' ' || !*p || *p == ' ' || *p == '\n')
                return -EBADMSG;
        st.state = *p++; /* field 3 */
        if (*p != ' ')
                return -EBADMSG;
        /* field 4: ppid */
        r = next_u64(&p, &v);
        if (r < 0)
                return r;
        if (v > INT_MAX)
                return -ERANGE;
        st.ppid = (pid_t) v;
        /* fields 5..8: pgrp, session, tty_nr, tpgid (tpgid may be -1) */
        r = skip_fields(&p, 4);
        if (r < 0)
                return r;
        /* field 9: flags */
        r = next_u64(&p, &v);
        if (r < 0)
                return r;
        if (v > UINT32_MAX)
                return -ERANGE;
        st.flags = (unsigned) v;
        /* fields 10..21 */
        r = skip_fields(&p, 12);
        if (r < 0)
                return r;
        /* field 22: starttime */
        r = next_u64(&p, &st.start_time);
        if (r < 0)
                return r;
        /* fields 23..49, then 50, 51: env_start, env_end, when the line has them. */
        r = skip_fields(&p, 27);
        if (r >= 0 && next_u64(&p, &v) >= 0 && next_u64(&p, &st.env_end) >= 0)
                st.env_start = v;
        else
                st.env_end = 0;
        *ret = st;
        return 0;
}

/* The keys of /proc/PID/status the parsers below read, in the order the kernel prints them. */
enum { KEY_TGID, KEY_PPID, KEY_UID, KEY_GID, KEY_GROUPS, _KEY_MAX };
static const struct {
        const char *name;
        size_t len;
} status_keys[_KEY_MAX] = {
        [KEY_TGID] = { "Tgid", 4 }, [KEY_PPID] = { "PPid", 4 }, [KEY_UID] = { "Uid", 3 },
        [KEY_GID] = { "Gid", 3 },   [KEY_GROUPS] = { "Groups", 6 },
};

/* Where each wanted key's value starts and how long it is (as tune_find_key() gives it:
 * the first line with that key, blanks around the value trimmed); NULL when absent. */
typedef struct status_index {
        const char *value[_KEY_MAX];
        size_t len[_KEY_MAX];
} status_index;

/* One pass over the lines for every wanted key (1 << KEY_*), stopping once all are found:
 * they are among the first dozen lines, and a search per key went over them again each. */
static void status_index_find(const char *text, unsigned want, status_index *ret) {
        *ret = (status_index) {};
        for (const char *line = text; *line && want;) {
                const char *p = line, *eol;
                int k = -1;

                while (*p == ' ' || *p == '\t')
                        p++;
                switch (*p) {
                case 'T': k = KEY_TGID; break;
                case 'P': k = KEY_PPID; break;
                case 'U': k = KEY_UID; break;
                case 'G': k = p[1] == 'r' ? KEY_GROUPS : KEY_GID; break;
                }
                if (k >= 0 && (want & (1u << k)) && strncmp(p, status_keys[k].name, status_keys[k].len) == 0 &&
                    tune_key_value(p, status_keys[k].len, &ret->value[k], &ret->len[k]) >= 0)
                        want &= ~(1u << k);
                eol = strchr(p, '\n');
                if (!eol)
                        break;
                line = eol + 1;
        }
}

/* What strtol(s, &end, 10) makes of the text from *p to lim (as if a NUL were at lim) in
 * the C locale, taken only when it converts something without overflow and is 0..max;
 * advances *p past it. By hand: four numbers per status parse, and strtol's generality
 * (any base, the locale) was a fifth of the parse. */
static int parse_decimal(const char **p, const char *lim, long max, long *ret) {
        const char *s = *p;
        unsigned long v = 0;
        bool neg = false, big = false;

        while (s < lim && (*s == ' ' || (*s >= '\t' && *s <= '\r')))
                s++;
        if (s < lim && (*s == '+' || *s == '-'))
                neg = *s++ == '-';
        if (s >= lim || *s < '0' || *s > '9')
                return -EBADMSG; /* nothing converted */
        for (; s < lim && *s >= '0' && *s <= '9'; s++) {
                unsigned d = (unsigned) (*s - '0');
                if (v > ((unsigned long) LONG_MAX - d) / 10)
                        big = true; /* strtol: ERANGE */
                else
                        v = v * 10 + d;
        }
        if (big || (neg && v > 0) || v > (unsigned long) max)
                return -EBADMSG; /* past a long, or negative, or past max */
        *p = s;
        *ret = (long) v;
        return 0;
}

static int parse_id_field(const status_index *idx, int key, long max, long *ret_first, long *ret_second) {
        const char *v = idx->value[key];
        size_t len = idx->len[key];
        const char *lim = v + len;
        int r;

        /* The value's length bound of the copy strtol once read from. */
        if (!v || len == 0 || len >= 96)
                return -EBADMSG;
        r = parse_decimal(&v, lim, max, ret_first);
        if (r >= 0 && ret_second)
                r = parse_decimal(&v, lim, max, ret_second);
        return r;
}

static int status_from_index(const status_index *idx, tune_proc_status *ret) {
        long tgid, ppid, ruid, euid;
        int r;

        r = parse_id_field(idx, KEY_TGID, INT_MAX, &tgid, NULL);
        if (r < 0)
                return r;
        r = parse_id_field(idx, KEY_PPID, INT_MAX, &ppid, NULL);
        if (r < 0)
                return r;
        r = parse_id_field(idx, KEY_UID, (long) UINT32_MAX - 1, &ruid, &euid);
        if (r < 0)
                return r;
        *ret = (tune_proc_status){
                .tgid = (pid_t) tgid,
                .ppid = (pid_t) ppid,
                .ruid = (uid_t) ruid,
                .euid = (uid_t) euid,
        };
        return 0;
}

int tune_parse_proc_status(const char *text, tune_proc_status *ret) {
        status_index idx;

        if (!text || !ret)
                return -EINVAL;
        status_index_find(text, 1u << KEY_TGID | 1u << KEY_PPID | 1u << KEY_UID, &idx);
        return status_from_index(&idx, ret);
}

int tune_parse_proc_cgroup(const char *text, char **ret) {
        const char *line = text;

        if (!text || !ret)
                return -EINVAL;
        while (line && *line) {
                const char *eol = strchr(line, '\n');
                size_t len = eol ? (size_t) (eol - line) : strlen(line);

                if (len >= 3 && memcmp(line, "0::", 3) == 0) {
                        if (len == 3 || line[3] != '/')
                                return -EBADMSG;
                        char *s = strndup(line + 3, len - 3);
                        if (!s)
                                return -ENOMEM;
                        *ret = s;
                        return 0;
                }
                line = eol ? eol + 1 : NULL;
        }
        return -ENOENT;
}

int tune_cmdline_join(const char *buf, size_t len, char **ret) {
        char *s;

        if ((!buf && len > 0) || !ret)
                return -EINVAL;
        while (len > 0 && buf[len - 1] == 0)
                len--;
        s = malloc(len + 1);
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++)
                s[i] = buf[i] ? buf[i] : ' ';
        s[len] = 0;
        *ret = s;
        return 0;
}

int tune_parse_comm(const char *text, char ret[static TUNE_COMM_MAX]) {
        size_t len;

        if (!text)
                return -EINVAL;
        len = strlen(text);
        if (len > 0 && text[len - 1] == '\n')
                len--;
        if (len >= TUNE_COMM_MAX || memchr(text, '\n', len))
                return -EBADMSG;
        memcpy(ret, text, len);
        ret[len] = 0;
        return 0;
}

int tune_parse_pid_list(const char *text, size_t max, pid_t *ret, size_t *ret_n) {
        size_t n = 0;

        if (!text || (!ret && max > 0) || !ret_n)
                return -EINVAL;
        for (const char *p = text; *p;) {
                uint64_t v = 0;
                const char *start;

                if (*p == ' ' || *p == '\n') {
                        p++;
                        continue;
                }
                for (start = p; *p >= '0' && *p <= '9' && p - start < 10; p++)
                        v = v * 10 + (uint64_t) (*p - '0');
                if (p == start || (*p && *p != ' ' && *p != '\n') || v == 0 || v > INT32_MAX)
                        return -EBADMSG;
                if (n < max)
                        ret[n++] = (pid_t) v;
        }
        *ret_n = n;
        return 0;
}

void tune_escape(const char *s, char *buf, size_t size) {
        size_t o = 0;

        if (size == 0)
                return;
        if (!s)
                s = "(null)";
        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;
                size_t need = (c >= 0x20 && c < 0x7f && c != '\\') ? 1 : 4;

                if (o + need + 4 > size) { /* room for "..." and the NUL */
                        if (o + 4 <= size) {
                                memcpy(buf + o, "...", 3);
                                o += 3;
                        }
                        break;
                }
                if (need == 1)
                        buf[o++] = (char) c;
                else {
                        snprintf(buf + o, 5, "\\x%02x", c);
                        o += 4;
                }
        }
        buf[o < size ? o : size - 1] = 0;
}

/* Up to n whitespace-separated ids of one line. Returns how many, or -EBADMSG. */
static int parse_ids(const char *p, unsigned long *ids, unsigned n, bool *ret_truncated) {
        unsigned got = 0;

        *ret_truncated = false;
        for (;;) {
                char *end;
                unsigned long v;

                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == '\n' || *p == 0)
                        return (int) got;
                if (*p < '0' || *p > '9')
                        return -EBADMSG;
                /* By hand, not strtoul: 9 or more ids per status read, on every match. */
                v = 0;
                for (end = (char *) p; *end >= '0' && *end <= '9'; end++)
                        if (v <= UINT32_MAX) /* past it: too big, however many digits follow */
                                v = v * 10 + (unsigned long) (*end - '0');
                if (v > UINT32_MAX - 1 || (*end != ' ' && *end != '\t' && *end != '\n' && *end != 0))
                        return -EBADMSG;
                if (got < n)
                        ids[got++] = v;
                else
                        *ret_truncated = true;
                p = end;
        }
}

static int creds_from_index(const status_index *idx, tune_creds *ret) {
        unsigned long uids[4], gids[4], groups[TUNE_CREDS_GROUPS_MAX];
        const char *u = idx->value[KEY_UID], *g = idx->value[KEY_GID], *gr = idx->value[KEY_GROUPS];
        bool truncated;
        int nu, ng, ngr = 0;

        if (!u || !g)
                return -EBADMSG;
        nu = parse_ids(u, uids, 4, &truncated);
        ng = parse_ids(g, gids, 4, &truncated);
        if (nu != 4 || ng != 4)
                return -EBADMSG;
        *ret = (tune_creds) { .ruid = (uid_t) uids[0], .euid = (uid_t) uids[1], .fsuid = (uid_t) uids[3],
                              .fsgid = (gid_t) gids[3] };
        if (gr) {
                ngr = parse_ids(gr, groups, TUNE_CREDS_GROUPS_MAX, &ret->groups_truncated);
                if (ngr < 0)
                        return ngr;
        }
        for (int i = 0; i < ngr; i++)
                ret->groups[i] = (gid_t) groups[i];
        ret->n_groups = (unsigned) ngr;
        return 0;
}

int tune_parse_creds(const char *text, tune_creds *ret) {
        status_index idx;

        if (!text || !ret)
                return -EINVAL;
        status_index_find(text, 1u << KEY_UID | 1u << KEY_GID | 1u << KEY_GROUPS, &idx);
        return creds_from_index(&idx, ret);
}

int tune_parse_status_facts(const char *text, tune_status_facts *ret) {
        status_index idx;

        if (!text || !ret)
                return -EINVAL;
        status_index_find(text, (1u << _KEY_MAX) - 1, &idx);
        ret->status_r = status_from_index(&idx, &ret->status);
        ret->creds_r = creds_from_index(&idx, &ret->creds);
        return 0;
}

/* The length of the valid UTF-8 sequence at s (1-4), or 0 when s does not start one
 * (overlong forms, surrogates and code points past U+10FFFF are invalid, RFC 3629). */
static size_t utf8_sequence(const unsigned char *s) {
        unsigned char c = s[0];
        size_t n;
        uint32_t cp;

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                n = 2, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
                n = 3, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
                n = 4, cp = c & 0x07;
        else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

/* Whether the valid sequence of n bytes at s is a control character: C0, DEL, C1. */
static bool utf8_control(const unsigned char *s, size_t n) {
        return (n == 1 && (s[0] < 0x20 || s[0] == 0x7f)) || (n == 2 && s[0] == 0xc2 && s[1] < 0xa0);
}

int tune_escape_utf8(const char *s, bool escape_backslash, char **ret) {
        const unsigned char *u = (const unsigned char *) (s ? s : "");
        size_t len = strlen((const char *) u), o = 0;
        char *buf = malloc(len * 4 + 1); /* at most 4 bytes out per byte in */

        if (!buf)
                return -ENOMEM;
        for (size_t i = 0; i < len;) {
                size_t n = utf8_sequence(u + i);
                if (n == 0 || utf8_control(u + i, n) || (escape_backslash && u[i] == '\\')) {
                        /* An invalid sequence is escaped a byte at a time, so that what
                         * follows it is read afresh. */
                        size_t k = n ? n : 1;
                        for (size_t j = 0; j < k; j++)
                                o += (size_t) sprintf(buf + o, "\\x%02x", u[i + j]);
                        i += k;
                        continue;
                }
                memcpy(buf + o, u + i, n);
                o += n;
                i += n;
        }
        buf[o] = 0;
        *ret = buf;
        return 0;
}

bool tune_utf8_clean(const char *s) {
        const unsigned char *u = (const unsigned char *) s;

        for (size_t i = 0; u[i];) {
                size_t n = utf8_sequence(u + i);
                if (n == 0 || utf8_control(u + i, n))
                        return false;
                i += n;
        }
        return true;
}

int tune_parse_proc_visibility(const char *mountinfo, tune_proc_visibility *ret) {
        tune_proc_visibility v = { .hidepid = TUNE_PROC_HIDEPID_OFF };

        /* "36 25 0:21 / /proc rw,nosuid - proc proc rw,hidepid=invisible,gid=4": the mount
         * point is the fifth field; the super block's options follow the fs type and
         * source after " - ". The last mount on /proc is the one that shows. */
        for (const char *line = mountinfo; line && *line;) {
                const char *eol = strchrnul(line, '\n'), *sep = NULL;
                char mnt[16] = "", type[16] = "", opts[256] = "";

                for (const char *p = line; p + 3 <= eol; p++)
                        if (memcmp(p, " - ", 3) == 0) {
                                sep = p;
                                break;
                        }
                if (sep && sscanf(line, "%*s %*s %*s %*s %15s", mnt) == 1 && streq(mnt, "/proc") &&
                    sscanf(sep + 3, "%15s %*s %255s", type, opts) == 2 && streq(type, "proc")) {
                        v = (tune_proc_visibility) { .hidepid = TUNE_PROC_HIDEPID_OFF };
                        for (char *o = opts, *next; o; o = next) {
                                next = strchr(o, ',');
                                if (next)
                                        *next++ = 0;
                                if (startswith_lit(o, "hidepid=")) {
                                        const char *h = o + strlen("hidepid=");
                                        if (streq(h, "1") || streq(h, "noaccess"))
                                                v.hidepid = TUNE_PROC_HIDEPID_NOACCESS;
                                        else if (streq(h, "2") || streq(h, "invisible"))
                                                v.hidepid = TUNE_PROC_HIDEPID_INVISIBLE;
                                        else if (streq(h, "4") || streq(h, "ptraceable"))
                                                v.hidepid = TUNE_PROC_HIDEPID_PTRACEABLE;
                                } else if (startswith_lit(o, "gid=")) {
                                        long g;
                                        if (tune_parse_int(o + strlen("gid="), 0, UINT32_MAX - 1, &g) >= 0) {
                                                v.has_gid = true;
                                                v.gid = (gid_t) g;
                                        }
                                }
                        }
                }
                line = *eol ? eol + 1 : eol;
        }
        *ret = v;
        return 0;
}

int tune_parse_proc_locks_holder(const char *text, dev_t dev, ino_t ino, pid_t *ret) {
        for (const char *line = text; line && *line;) {
                const char *eol = strchrnul(line, '\n');
                char kind[16], l[256];
                unsigned maj, min;
                unsigned long long inode;
                int pid;
                size_t n = (size_t) (eol - line) < sizeof l ? (size_t) (eol - line) : sizeof l - 1;

                memcpy(l, line, n);
                l[n] = 0;
                /* "ID: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE START END"; a blocked waiter
                 * ("ID: -> FLOCK ...") holds nothing. */
                if (sscanf(l, "%*d: %15s %*s %*s %d %x:%x:%llu", kind, &pid, &maj, &min, &inode) == 5 &&
                    streq(kind, "FLOCK") && pid > 0 && makedev(maj, min) == dev && inode == (unsigned long long) ino) {
                        *ret = (pid_t) pid;
                        return 0;
                }
                line = *eol ? eol + 1 : eol;
        }
        return -ENOENT;
}
