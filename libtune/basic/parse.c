/* SPDX-License-Identifier: GPL-2.0-only */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/parse.h"

int tune_key_value(const char *p, size_t klen, const char **ret_value, size_t *ret_len) {
        const char *end = strchrnul(p, '\n');
        const char *q = p + klen;

        while (q < end && (*q == ' ' || *q == '\t'))
                q++;
        if (q >= end || *q != ':')
                return -ENOENT;
        q++;
        while (q < end && (*q == ' ' || *q == '\t'))
                q++;
        const char *vend = end;
        while (vend > q && isspace((unsigned char) vend[-1]))
                vend--;
        *ret_value = q;
        *ret_len = (size_t) (vend - q);
        return 0;
}

int tune_find_key(const char *text, const char *key, const char **ret_value, size_t *ret_len) {
        size_t klen = strlen(key);

        if (!text)
                return -EINVAL;
        /* Its first byte rules out most lines before a compare or a look for the line's
         * end (a /proc/PID/status of 60 lines is searched a few times per match). */
        for (const char *line = text; *line;) {
                const char *p = line, *eol;

                while (*p == ' ' || *p == '\t')
                        p++;
                if ((klen == 0 || *p == key[0]) && strncmp(p, key, klen) == 0 &&
                    tune_key_value(p, klen, ret_value, ret_len) >= 0)
                        return 0;
                eol = strchr(p, '\n');
                if (!eol)
                        break;
                line = eol + 1;
        }
        return -ENOENT;
}

static int parse_kib_value(const char *v, size_t len, uint64_t *ret) {
        uint64_t x = 0;
        size_t i = 0;

        if (len == 0 || !isdigit((unsigned char) v[0]))
                return -EBADMSG;
        for (; i < len && isdigit((unsigned char) v[i]); i++) {
                if (x > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                x = x * 10 + (uint64_t) (v[i] - '0');
        }
        while (i < len && v[i] == ' ')
                i++;
        if (i < len && strncmp(v + i, "kB", len - i) != 0)
                return -EBADMSG;
        *ret = x;
        return 0;
}

/* Node meminfo lines carry a "Node N " prefix: strip it per line by searching for the key
 * after the prefix. tune_find_key skips leading blanks only, so match both forms here. */
static int find_meminfo_key(const char *text, const char *key, uint64_t *ret) {
        size_t klen = strlen(key);

        for (const char *line = text; line && *line;) {
                const char *eol = strchr(line, '\n');
                const char *end = eol ? eol : line + strlen(line);
                const char *p = line;

                if (strncmp(p, "Node ", 5) == 0) {
                        p += 5;
                        while (p < end && isdigit((unsigned char) *p))
                                p++;
                        while (p < end && *p == ' ')
                                p++;
                }
                if ((size_t) (end - p) > klen && strncmp(p, key, klen) == 0 && p[klen] == ':') {
                        const char *v = p + klen + 1;
                        while (v < end && (*v == ' ' || *v == '\t'))
                                v++;
                        size_t vlen = (size_t) (end - v);
                        while (vlen > 0 && isspace((unsigned char) v[vlen - 1]))
                                vlen--;
                        return parse_kib_value(v, vlen, ret);
                }
                line = eol ? eol + 1 : NULL;
        }
        return -EBADMSG;
}

int tune_parse_meminfo(const char *text, uint64_t *ret_total_kib, uint64_t *ret_free_kib) {
        uint64_t total, free_;
        int r;

        if (!text)
                return -EINVAL;
        r = find_meminfo_key(text, "MemTotal", &total);
        if (r < 0)
                return r;
        r = find_meminfo_key(text, "MemFree", &free_);
        if (r < 0)
                return r;
        if (free_ > total)
                return -EBADMSG;
        *ret_total_kib = total;
        *ret_free_kib = free_;
        return 0;
}

static bool is_list_blank(char c) {
        return c == ' ' || c == '\t' || c == '\n';
}

int tune_parse_next_ulong(const char **text, unsigned long max, unsigned long *ret) {
        const char *p = *text;
        unsigned long v = 0;

        while (is_list_blank(*p))
                p++;
        if (!*p) {
                *text = p;
                return 0;
        }
        if (!isdigit((unsigned char) *p))
                return -EINVAL;
        while (isdigit((unsigned char) *p)) {
                v = v * 10 + (unsigned long) (*p++ - '0');
                if (v > max)
                        return -ERANGE;
        }
        if (*p && !is_list_blank(*p))
                return -EINVAL;
        *text = p;
        *ret = v;
        return 1;
}

int tune_parse_hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int tune_parse_distances(const char *text, int *ret, size_t max, size_t *ret_n) {
        size_t n = 0;
        const char *p = text;
        unsigned long v;
        int r;

        if (!text)
                return -EINVAL;
        /* A distance above 255 is garbage here, not a range error. */
        while ((r = tune_parse_next_ulong(&p, 255, &v)) > 0) {
                if (v < 1)
                        return -EINVAL;
                if (n >= max)
                        return -E2BIG;
                ret[n++] = (int) v;
        }
        if (r < 0)
                return -EINVAL;
        if (n == 0)
                return -EINVAL;
        *ret_n = n;
        return 0;
}

int tune_parse_int(const char *text, long min, long max, long *ret) {
        char *end;
        long v;

        if (!text)
                return -EINVAL;
        while (isspace((unsigned char) *text))
                text++;
        if (!*text)
                return -EINVAL;
        errno = 0;
        v = strtol(text, &end, 10);
        if (errno == ERANGE || v < min || v > max)
                return -ERANGE;
        if (end == text)
                return -EINVAL;
        while (isspace((unsigned char) *end))
                end++;
        if (*end)
                return -EINVAL;
        *ret = v;
        return 0;
}

int tune_parse_nvidia_minor(const char *text, int *ret_minor) {
        const char *v;
        size_t len;
        char buf[16];
        long m;
        int r;

        r = tune_find_key(text, "Device Minor", &v, &len);
        if (r < 0)
                return r;
        if (len == 0 || len >= sizeof buf)
                return -EBADMSG;
        memcpy(buf, v, len);
        buf[len] = 0;
        r = tune_parse_int(buf, 0, 255, &m);
        if (r < 0)
                return -EBADMSG;
        *ret_minor = (int) m;
        return 0;
}

int tune_parse_nvidia_uuid(const char *text, char *buf, size_t size) {
        const char *v;
        size_t len;
        int r;

        r = tune_find_key(text, "GPU UUID", &v, &len);
        if (r < 0)
                return r;
        if (len == 0 || len >= size)
                return -EBADMSG;
        for (size_t i = 0; i < len; i++)
                if (!isalnum((unsigned char) v[i]) && v[i] != '-')
                        return -EBADMSG;
        memcpy(buf, v, len);
        buf[len] = 0;
        return 0;
}

int tune_parse_hex_u32(const char *text, uint32_t max, uint32_t *ret) {
        unsigned long v;
        char *end;

        if (!text)
                return -EINVAL;
        while (isspace((unsigned char) *text))
                text++;
        if (strncmp(text, "0x", 2) == 0 || strncmp(text, "0X", 2) == 0)
                text += 2;
        if (!isxdigit((unsigned char) *text))
                return -EINVAL;
        errno = 0;
        v = strtoul(text, &end, 16);
        if (errno == ERANGE || v > max)
                return -ERANGE;
        while (isspace((unsigned char) *end))
                end++;
        if (*end)
                return -EINVAL;
        *ret = (uint32_t) v;
        return 0;
}

int tune_parse_pci_address(const char *text, char ret[static 13]) {
        /* dddd:bb:dd.f */
        static const char shape[] = "xxxx:xx:xx.x";

        if (!text || strlen(text) != 12)
                return -EINVAL;
        for (size_t i = 0; i < 12; i++) {
                char c = text[i];
                if (shape[i] == 'x') {
                        if (!isxdigit((unsigned char) c))
                                return -EINVAL;
                        ret[i] = (char) tolower((unsigned char) c);
                } else {
                        if (c != shape[i])
                                return -EINVAL;
                        ret[i] = c;
                }
        }
        if (ret[11] > '7')
                return -EINVAL;
        ret[12] = 0;
        return 0;
}
