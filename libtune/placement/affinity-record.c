/* SPDX-License-Identifier: GPL-2.0-only */
/* The affinity record (see include/npu-tuned/affinity-record.h). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npu-tuned/affinity-record.h"
#include "npu-tuned/state-dir.h"
#include "npu-tuned/state-file.h"

void tune_affinity_record_done(tune_affinity_record *rec) {
        free(rec->boot_id);
        tune_affinity_originals_done(&rec->originals);
        *rec = (tune_affinity_record){};
}

int tune_affinity_originals_copy(tune_affinity_originals *dst, const tune_affinity_originals *src) {
        tune_affinity_originals j = { .pid = src->pid, .start_time = src->start_time };
        int r = 0;

        if (src->n > 0) {
                j.entries = calloc(src->n, sizeof *j.entries);
                if (!j.entries)
                        return -ENOMEM;
        }
        for (unsigned i = 0; i < src->n && r >= 0; i++) {
                j.entries[i].tid = src->entries[i].tid;
                j.n++;
                r = tune_cpuset_copy(&j.entries[i].original, &src->entries[i].original);
                if (r >= 0)
                        r = tune_cpuset_copy(&j.entries[i].applied, &src->entries[i].applied);
        }
        if (r < 0) {
                tune_affinity_originals_done(&j);
                return r;
        }
        tune_affinity_originals_done(dst);
        *dst = j;
        return 0;
}

static int add_set(json_object *o, const char *key, const tune_cpuset *s) {
        _cleanup_free_ char *text = NULL;
        json_object *v;
        int r;

        r = tune_cpuset_format_list(s, &text);
        if (r < 0)
                return r;
        v = json_object_new_string(text);
        if (!v || json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int add(json_object *o, const char *key, json_object *v) {
        if (!v || json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int tune_affinity_record_format(const tune_affinity_record *rec, char **ret) {
        json_object *o = json_object_new_object(), *threads = NULL;
        const char *text;
        int r;

        if (!o)
                return -ENOMEM;
        r = add(o, "version", json_object_new_int(TUNE_AFFINITY_RECORD_VERSION));
        if (r >= 0)
                r = add(o, "boot_id", json_object_new_string(rec->boot_id ? rec->boot_id : ""));
        if (r >= 0)
                r = add(o, "pid", json_object_new_int(rec->originals.pid));
        if (r >= 0)
                r = add(o, "start_time", json_object_new_uint64(rec->originals.start_time));
        if (r >= 0)
                r = add(o, "restore_on_stop", json_object_new_boolean(rec->restore_on_stop));
        if (r >= 0) {
                threads = json_object_new_array();
                r = add(o, "threads", threads);
        }
        for (unsigned i = 0; r >= 0 && i < rec->originals.n; i++) {
                const tune_affinity_entry *e = &rec->originals.entries[i];
                json_object *t = json_object_new_object();
                if (!t || json_object_array_add(threads, t) < 0) {
                        json_object_put(t);
                        r = -ENOMEM;
                        break;
                }
                r = add(t, "tid", json_object_new_int(e->tid));
                if (r >= 0)
                        r = add_set(t, "original", &e->original);
                if (r >= 0)
                        r = add_set(t, "applied", &e->applied);
        }
        if (r >= 0) {
                text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
                if (!text || !(*ret = malloc(strlen(text) + 2)))
                        r = -ENOMEM;
                else
                        sprintf(*ret, "%s\n", text);
        }
        json_object_put(o);
        return r;
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
                rec->originals.entries = calloc(n, sizeof(tune_affinity_entry));
                if (!rec->originals.entries)
                        return -ENOMEM;
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
        snprintf(buf, 64, TUNE_AFFINITY_RECORD_PREFIX "%d" TUNE_AFFINITY_RECORD_SUFFIX, (int) pid);
}

int tune_affinity_record_save(const char *state_dir, const tune_affinity_record *rec) {
        _cleanup_free_ char *text = NULL;
        char name[64];
        int r;

        if (rec->originals.pid <= 0)
                return -EINVAL;
        r = tune_affinity_record_format(rec, &text);
        if (r < 0)
                return r;
        record_name(rec->originals.pid, name);
        return tune_state_file_write_unsynced(state_dir, name, text);
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
        return tune_state_file_delete(state_dir, name);
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return x < y ? -1 : x > y;
}

int tune_affinity_record_list(const char *state_dir, pid_t **ret, unsigned *ret_n) {
        _cleanup_free_ pid_t *pids = NULL;
        unsigned n = 0, cap = 0;
        struct dirent *de;
        int dfd;
        DIR *d;

        *ret = NULL;
        *ret_n = 0;
        dfd = tune_state_dir_open(state_dir, false);
        if (dfd == -ENOENT)
                return 0;
        if (dfd < 0)
                return dfd;
        d = fdopendir(dfd);
        if (!d) {
                close(dfd);
                return negative_errno();
        }
        while ((de = readdir(d))) {
                pid_t pid;
                if (tune_affinity_record_name_pid(de->d_name, &pid) < 0)
                        continue;
                if (n == cap) {
                        pid_t *a = realloc(pids, (cap = cap ? cap * 2 : 16) * sizeof *a);
                        if (!a) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        pids = a;
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
