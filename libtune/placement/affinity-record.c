/* SPDX-License-Identifier: GPL-2.0-only */
/* The affinity record (see include/npu-tuned/affinity-record.h). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npu-tuned/affinity-record.h"
#include "npu-tuned/state-dir.h"
#include "npu-tuned/state-file.h"
#include "npu-tuned/text.h"

void tune_affinity_record_done(tune_affinity_record *rec) {
        free(rec->boot_id);
        free(rec->attribution);
        tune_affinity_originals_done(&rec->originals);
        *rec = (tune_affinity_record){};
}

int tune_affinity_originals_copy(tune_affinity_originals *dst, const tune_affinity_originals *src) {
        tune_affinity_originals j = { .pid = src->pid, .start_time = src->start_time };
        int r = 0;

        if (src->n > 0) {
                j.entries = tune_alloc0(src->n, sizeof *j.entries);
                if (!j.entries)
                        return -ENOMEM;
                j.cap = src->n;
        }
        for (unsigned i = 0; i < src->n && r >= 0; i++) {
                j.entries[i].tid = src->entries[i].tid;
                j.n++;
                r = tune_cpuset_copy(&j.entries[i].original, &src->entries[i].original);
                if (r >= 0)
                        r = tune_cpuset_copy(&j.entries[i].applied, &src->entries[i].applied);
        }
        for (unsigned i = 0; i < src->n_sets && r >= 0; i++) {
                j.n_sets++;
                r = tune_cpuset_copy(&j.sets[i], &src->sets[i]);
        }
        if (r < 0) {
                tune_affinity_originals_done(&j);
                return r;
        }
        tune_affinity_originals_done(dst);
        *dst = j;
        return 0;
}

/* The record is written before the first pin of every placed process: formatted by hand
 * into one buffer (a json-c tree and its serialiser cost ten times as much), in exactly
 * the layout json-c writes with JSON_C_TO_STRING_PLAIN, and parsed back with json-c. */

/* A JSON string, escaped as json-c escapes it (so that what json-c reads back is the same
 * bytes): every byte from ' ' up as it is but '"', '\\' and '/', the control characters
 * json-c names by letter so, the others as \u00XX. */
static bool plain_json(unsigned char c) {
        return c >= ' ' && c != '"' && c != '\\' && c != '/';
}

static void put_quoted(tune_text *t, const char *s) {
        tune_text_put(t, "\"", 1);
        while (*s) {
                size_t n = 0;
                while (s[n] && plain_json((unsigned char) s[n]))
                        n++;
                tune_text_put(t, s, n); /* a run of plain bytes in one copy */
                s += n;
                if (!*s)
                        break;
                unsigned char c = (unsigned char) *s++;
                const char *named = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '/' ? "\\/" : c == '\n' ? "\\n" :
                                    c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
                if (named)
                        tune_text_put(t, named, 2);
                else {
                        char esc[8];
                        snprintf(esc, sizeof esc, "\\u%04x", c);
                        tune_text_put(t, esc, 6);
                }
        }
        tune_text_put(t, "\"", 1);
}

static void put_set(tune_text *t, const tune_cpuset *set) {
        bool first = true;

        tune_text_put(t, "\"", 1);
        for (int cpu = tune_cpuset_next(set, 0); cpu >= 0;) {
                int last = (int) tune_cpuset_next_absent(set, (unsigned) cpu + 1) - 1;
                if (!first)
                        tune_text_put(t, ",", 1);
                tune_text_put_u64(t, (uint64_t) cpu);
                if (last > cpu) {
                        tune_text_put(t, "-", 1);
                        tune_text_put_u64(t, (uint64_t) last);
                }
                first = false;
                cpu = tune_cpuset_next(set, (unsigned) last + 1);
        }
        tune_text_put(t, "\"", 1);
}

int tune_affinity_record_format(const tune_affinity_record *rec, char **ret) {
        tune_text t = {};

        if (rec->originals.pid < 0)
                return -EINVAL;
        tune_text_put_str(&t, "{\"version\":");
        tune_text_put_u64(&t, TUNE_AFFINITY_RECORD_VERSION);
        tune_text_put_str(&t, ",\"boot_id\":");
        put_quoted(&t, rec->boot_id ? rec->boot_id : "");
        tune_text_put_str(&t, ",\"pid\":");
        tune_text_put_u64(&t, (uint64_t) rec->originals.pid);
        tune_text_put_str(&t, ",\"start_time\":");
        tune_text_put_u64(&t, rec->originals.start_time);
        tune_text_put_str(&t, rec->restore_on_stop ? ",\"restore_on_stop\":true,\"threads\":[" : ",\"restore_on_stop\":false,\"threads\":[");
        for (unsigned i = 0; i < rec->originals.n; i++) {
                const tune_affinity_entry *e = &rec->originals.entries[i];
                tune_text_put_str(&t, i ? ",{\"tid\":" : "{\"tid\":");
                tune_text_put_u64(&t, (uint64_t) (e->tid < 0 ? 0 : e->tid));
                tune_text_put_str(&t, ",\"original\":");
                put_set(&t, &e->original);
                tune_text_put_str(&t, ",\"applied\":");
                put_set(&t, &e->applied);
                tune_text_put(&t, "}", 1);
        }
        tune_text_put_str(&t, "],\"sets\":[");
        for (unsigned i = 0; i < rec->originals.n_sets; i++) {
                if (i)
                        tune_text_put(&t, ",", 1);
                put_set(&t, &rec->originals.sets[i]);
        }
        tune_text_put(&t, "]", 1);
        if (rec->attribution) {
                tune_text_put_str(&t, ",\"attribution\":");
                put_quoted(&t, rec->attribution);
        }
        tune_text_put_str(&t, "}\n");
        return tune_text_take(&t, ret);
}

static json_object *get(json_object *o, const char *key, json_type type) {
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type))
                return NULL;
        return v;
}

static int get_pid(json_object *o, const char *key, pid_t *ret) {
        json_object *v = get(o, key, json_type_int);
        int64_t x;

        if (!v)
                return -EBADMSG;
        x = json_object_get_int64(v);
        if (x <= 0 || x > INT32_MAX)
                return -EBADMSG;
        *ret = (pid_t) x;
        return 0;
}

static int get_set(json_object *o, const char *key, tune_cpuset *ret) {
        json_object *v = get(o, key, json_type_string);
        return v && tune_cpuset_parse_list(ret, json_object_get_string(v)) >= 0 ? 0 : -EBADMSG;
}

static int cmp_entry(const void *a, const void *b) {
        pid_t x = ((const tune_affinity_entry *) a)->tid, y = ((const tune_affinity_entry *) b)->tid;
        return x < y ? -1 : x > y;
}

static int parse_object(json_object *o, tune_affinity_record *rec) {
        json_object *v, *threads;
        size_t n;
        int r;

        if (!json_object_is_type(o, json_type_object) || !(v = get(o, "version", json_type_int)))
                return -EBADMSG;
        if (json_object_get_int64(v) < 1)
                return -EBADMSG;
        if (json_object_get_int64(v) > TUNE_AFFINITY_RECORD_VERSION)
                return -EPROTONOSUPPORT;
        if (!(v = get(o, "boot_id", json_type_string)))
                return -EBADMSG;
        rec->boot_id = strdup(json_object_get_string(v));
        if (!rec->boot_id)
                return -ENOMEM;
        r = get_pid(o, "pid", &rec->originals.pid);
        if (r < 0)
                return r;
        if (!(v = get(o, "start_time", json_type_int)))
                return -EBADMSG;
        rec->originals.start_time = json_object_get_uint64(v);
        if (rec->originals.start_time == 0)
                return -EBADMSG; /* without it the pid alone would be trusted */
        if (!(v = get(o, "restore_on_stop", json_type_boolean)))
                return -EBADMSG;
        rec->restore_on_stop = json_object_get_boolean(v);
        if (!(threads = get(o, "threads", json_type_array)))
                return -EBADMSG;
        n = json_object_array_length(threads);
        if (n > 0) {
                rec->originals.entries = tune_alloc0(n, sizeof(tune_affinity_entry));
                if (!rec->originals.entries)
                        return -ENOMEM;
                rec->originals.cap = (unsigned) n;
        }
        for (size_t i = 0; i < n; i++) {
                json_object *t = json_object_array_get_idx(threads, i);
                tune_affinity_entry *e = &rec->originals.entries[i];
                rec->originals.n++;
                if (!json_object_is_type(t, json_type_object))
                        return -EBADMSG;
                r = get_pid(t, "tid", &e->tid);
                if (r >= 0)
                        r = get_set(t, "original", &e->original);
                if (r >= 0)
                        r = get_set(t, "applied", &e->applied);
                if (r < 0)
                        return r;
                if (tune_cpuset_is_empty(&e->original))
                        return -EBADMSG; /* never restore a thread to no CPU */
        }
        /* Optional: records written before the sets were listed have none. */
        json_object *sets;
        if (json_object_object_get_ex(o, "sets", &sets)) {
                if (!json_object_is_type(sets, json_type_array))
                        return -EBADMSG;
                n = json_object_array_length(sets);
                if (n > TUNE_AFFINITY_SETS_MAX)
                        return -EBADMSG;
                for (size_t i = 0; i < n; i++) {
                        json_object *set = json_object_array_get_idx(sets, i);
                        if (!json_object_is_type(set, json_type_string))
                                return -EBADMSG;
                        rec->originals.n_sets++;
                        r = tune_cpuset_parse_list(&rec->originals.sets[i], json_object_get_string(set));
                        if (r < 0)
                                return -EBADMSG;
                }
        }
        /* Optional: the daemon's text, when it kept what the process was attributed from here. */
        json_object *attribution;
        if (json_object_object_get_ex(o, "attribution", &attribution)) {
                if (!json_object_is_type(attribution, json_type_string))
                        return -EBADMSG;
                rec->attribution = strdup(json_object_get_string(attribution));
                if (!rec->attribution)
                        return -ENOMEM;
        }
        if (rec->originals.n > 1)
                qsort(rec->originals.entries, rec->originals.n, sizeof(tune_affinity_entry), cmp_entry);
        for (unsigned i = 1; i < rec->originals.n; i++)
                if (rec->originals.entries[i].tid == rec->originals.entries[i - 1].tid)
                        return -EBADMSG;
        return 0;
}

int tune_affinity_record_parse(const char *text, size_t len, tune_affinity_record *ret) {
        tune_affinity_record rec = {};
        json_tokener *tok;
        json_object *o;
        int r;

        if (len > TUNE_AFFINITY_RECORD_SIZE_MAX || memchr(text, 0, len))
                return -EBADMSG;
        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        o = json_tokener_parse_ex(tok, text, (int) len);
        /* Trailing whitespace only; a truncated file never completes an object. */
        if (!o || json_tokener_get_error(tok) != json_tokener_success ||
            strspn(text + json_tokener_get_parse_end(tok), " \t\n") != len - json_tokener_get_parse_end(tok))
                r = -EBADMSG;
        else
                r = parse_object(o, &rec);
        json_object_put(o);
        json_tokener_free(tok);
        if (r < 0) {
                tune_affinity_record_done(&rec);
                return r;
        }
        *ret = rec;
        return 0;
}

int tune_affinity_record_name_pid(const char *name, pid_t *ret) {
        const size_t plen = strlen(TUNE_AFFINITY_RECORD_PREFIX), slen = strlen(TUNE_AFFINITY_RECORD_SUFFIX);
        size_t len = strlen(name);
        long v = 0;

        if (len <= plen + slen || strncmp(name, TUNE_AFFINITY_RECORD_PREFIX, plen) != 0 ||
            !streq(name + len - slen, TUNE_AFFINITY_RECORD_SUFFIX) || len - plen - slen > 10)
                return -EINVAL;
        for (const char *p = name + plen; p < name + len - slen; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                v = v * 10 + (*p - '0');
        }
        if (v <= 0 || v > INT32_MAX)
                return -EINVAL;
        *ret = (pid_t) v;
        return 0;
}

static void record_name(pid_t pid, char buf[static 64]) {
        char d[TUNE_DECIMAL_MAX + 1];

        tune_concat(buf, 64, TUNE_AFFINITY_RECORD_PREFIX, tune_format_signed(d, pid), TUNE_AFFINITY_RECORD_SUFFIX, NULL);
}

int tune_affinity_record_save(const char *state_dir, const tune_affinity_record *rec) {
        _cleanup_close_ int dfd = tune_state_dir_open(state_dir, true);

        if (dfd < 0)
                return dfd;
        return tune_affinity_record_save_at(dfd, rec, false);
}

/* The text of a record that names a process. */
static int format_named(const tune_affinity_record *rec, char **ret) {
        if (rec->originals.pid <= 0)
                return -EINVAL;
        return tune_affinity_record_format(rec, ret);
}

int tune_affinity_record_save_at(int dfd, const tune_affinity_record *rec, bool first) {
        _cleanup_free_ char *text = NULL;
        char name[64];
        int r;

        r = format_named(rec, &text);
        if (r < 0)
                return r;
        record_name(rec->originals.pid, name);
        return first ? tune_state_file_create_at(dfd, name, text) : tune_state_file_replace_at(dfd, name, text);
}

int tune_affinity_record_ready_at(int dfd) {
        return tune_state_file_ready_at(dfd, TUNE_AFFINITY_RECORD_READY_NAME);
}

int tune_affinity_record_fill_ready(int fd, const tune_affinity_record *rec) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = format_named(rec, &text);
        if (r < 0)
                return r;
        return tune_state_file_fill(fd, text);
}

int tune_affinity_record_commit_ready_at(int dfd, pid_t pid) {
        char name[64];

        record_name(pid, name);
        if (renameat(dfd, TUNE_AFFINITY_RECORD_READY_NAME, dfd, name) < 0)
                return negative_errno();
        return 0;
}

int tune_affinity_record_drop_ready_at(int dfd) {
        return tune_state_file_remove_at(dfd, TUNE_AFFINITY_RECORD_READY_NAME);
}

int tune_affinity_record_adopt_ready(const char *state_dir, pid_t *ret_pid) {
        _cleanup_(tune_affinity_record_done) tune_affinity_record rec = {};
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        *ret_pid = 0;
        r = tune_state_file_read(state_dir, TUNE_AFFINITY_RECORD_READY_NAME, TUNE_AFFINITY_RECORD_SIZE_MAX, &text, &len);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        dfd = tune_state_dir_open(state_dir, false);
        if (dfd < 0)
                return dfd;
        if (len == 0 || tune_affinity_record_parse(text, len, &rec) < 0 || rec.originals.pid <= 0)
                return tune_state_file_remove_at(dfd, TUNE_AFFINITY_RECORD_READY_NAME);
        r = tune_affinity_record_commit_ready_at(dfd, rec.originals.pid);
        if (r < 0)
                return r;
        *ret_pid = rec.originals.pid;
        return 1;
}

int tune_affinity_record_delete_at(int dfd, pid_t pid) {
        char name[64];

        record_name(pid, name);
        return tune_state_file_remove_at(dfd, name);
}

int tune_affinity_record_load(const char *state_dir, pid_t pid, tune_affinity_record *ret) {
        _cleanup_free_ char *text = NULL;
        char name[64];
        size_t len;
        int r;

        record_name(pid, name);
        r = tune_state_file_read(state_dir, name, TUNE_AFFINITY_RECORD_SIZE_MAX, &text, &len);
        if (r < 0)
                return r;
        if (len == 0)
                return -ENODATA;
        r = tune_affinity_record_parse(text, len, ret);
        if (r >= 0 && ret->originals.pid != pid) {
                tune_affinity_record_done(ret);
                return -EBADMSG;
        }
        return r;
}

int tune_affinity_record_delete(const char *state_dir, pid_t pid) {
        char name[64];

        record_name(pid, name);
        return tune_state_file_delete_unsynced(state_dir, name);
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return x < y ? -1 : x > y;
}

/* The state directory as a listing: 1 and *ret, 0 when there is no directory, or < 0. */
static int open_state_dir_listing(const char *state_dir, DIR **ret) {
        int dfd = tune_state_dir_open(state_dir, false);

        if (dfd == -ENOENT)
                return 0;
        if (dfd < 0)
                return dfd;
        *ret = fdopendir(dfd);
        if (!*ret) {
                close(dfd);
                return negative_errno();
        }
        return 1;
}

int tune_affinity_record_list(const char *state_dir, pid_t **ret, unsigned *ret_n) {
        _cleanup_free_ pid_t *pids = NULL;
        unsigned n = 0, cap = 0;
        struct dirent *de;
        DIR *d;
        int r;

        *ret = NULL;
        *ret_n = 0;
        r = open_state_dir_listing(state_dir, &d);
        if (r <= 0)
                return r;
        while ((de = readdir(d))) {
                pid_t pid;
                if (tune_affinity_record_name_pid(de->d_name, &pid) < 0)
                        continue;
                if (TUNE_GROW(pids, cap, n, 16) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
                pids[n++] = pid;
        }
        closedir(d);
        if (n > 1)
                qsort(pids, n, sizeof *pids, cmp_pid);
        *ret = TAKE_PTR(pids);
        *ret_n = n;
        return 0;
}

int tune_affinity_record_clear_temps(const char *state_dir) {
        const size_t tlen = strlen(".tmp");
        struct dirent *de;
        DIR *d;
        int r;

        r = open_state_dir_listing(state_dir, &d);
        if (r <= 0)
                return r;
        r = 0;
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);
                char name[NAME_MAX + 1];
                pid_t pid;

                if (len <= tlen || !streq(de->d_name + len - tlen, ".tmp"))
                        continue;
                memcpy(name, de->d_name, len - tlen);
                name[len - tlen] = 0;
                if (tune_affinity_record_name_pid(name, &pid) < 0)
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT && r == 0)
                        r = negative_errno();
        }
        closedir(d);
        return r;
}
