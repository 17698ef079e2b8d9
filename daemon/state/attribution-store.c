/* SPDX-License-Identifier: GPL-2.0-only */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attribution-store.h"
#include "npu-tuned/macro.h"
#include "npu-tuned/state-dir.h"
#include "npu-tuned/state-file.h"
#include "npu-tuned/text.h"

#define HEADER "npu-tuned-attribution 1"

void attribution_saved_done(attribution_saved *s) {
        if (!s)
                return;
        tune_env_capture_done(&s->env);
        *s = (attribution_saved) {};
}

void attribution_saved_free_all(attribution_saved *l, size_t n) {
        for (size_t i = 0; l && i < n; i++)
                attribution_saved_done(&l[i]);
        free(l);
}

/* Printable ASCII, no space: a value that cannot break a line or a field. */
static bool plain(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (*s <= ' ' || *s > '~')
                        return false;
        return true;
}

static bool valid_name(const char *s, size_t len) {
        if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
                return false;
        for (size_t i = 0; i < len; i++)
                if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
                      (s[i] >= '0' && s[i] <= '9')))
                        return false;
        return true;
}

/* Whether t's text from byte from on is plain() and shorter than n: what the reader takes. */
static bool plain_tail(const tune_text *t, size_t from, size_t n) {
        if (t->oom || t->len <= from || t->len - from >= n)
                return false;
        for (size_t i = from; i < t->len; i++)
                if (t->buf[i] <= ' ' || t->buf[i] > '~')
                        return false;
        return true;
}

int attribution_saved_format(const attribution_saved *s, const tune_attribution *a, char **ret) {
        const tune_env_capture *env = s ? &s->env : NULL;
        _cleanup_free_ char *text = NULL;
        tune_text t = {};
        size_t mark;
        int r;

        if (!s || s->pid <= 0 || !a || !ret)
                return -EINVAL;
        tune_text_put_str(&t, HEADER "\npid ");
        tune_text_put_i64(&t, s->pid);
        tune_text_put_str(&t, "\nstart_time ");
        tune_text_put_u64(&t, s->start_time);
        tune_text_put_str(&t, "\nexec_env ");
        tune_text_put_u64(&t, s->env_start);
        tune_text_put(&t, ",", 1);
        tune_text_put_u64(&t, s->env_end);
        tune_text_put_str(&t, "\nsource ");
        tune_text_put_str(&t, tune_attribution_source_to_string(a->source));
        tune_text_put(&t, "\n", 1);
        /* The list put in place (no allocation of its own), and taken back unless the
         * reader would take it. */
        mark = t.len;
        tune_text_put_str(&t, "accelerators ");
        tune_attribution_put_accels(&t, a);
        if (plain_tail(&t, mark + strlen("accelerators "), sizeof s->accels))
                tune_text_put(&t, "\n", 1);
        else if (!t.oom) {
                t.len = mark;
                t.buf[mark] = 0;
        }
        tune_text_put_str(&t, "from_pid ");
        tune_text_put_i64(&t, env->from_pid);
        tune_text_put_str(&t, "\ninherited ");
        tune_text_put_i64(&t, env->inherited);
        tune_text_put(&t, "\n", 1);
        for (unsigned i = 0, n = 0; i < env->n && n < ATTRIBUTION_VARS_MAX; i++) {
                const char *eq = strchr(env->vars[i], '=');
                if (!eq || !valid_name(env->vars[i], (size_t) (eq - env->vars[i])) || !plain(eq + 1))
                        continue;
                tune_text_put_str(&t, "env ");
                tune_text_put_str(&t, env->vars[i]);
                tune_text_put(&t, "\n", 1);
                n++;
        }
        if (!t.oom && t.len >= ATTRIBUTION_FILE_MAX) {
                tune_text_done(&t);
                return -E2BIG;
        }
        r = tune_text_take(&t, &text);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(text);
        return 0;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;

        if (!*s)
                return -EBADMSG;
        for (; *s; s++) {
                if (*s < '0' || *s > '9' || v > (max - (uint64_t) (*s - '0')) / 10)
                        return -EBADMSG;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        *ret = v;
        return 0;
}

/* One "key value" line (value: the rest of the line). */
static int parse_line(const char *line, attribution_saved *s, unsigned *seen) {
        const char *sp = strchr(line, ' ');
        const char *v = sp ? sp + 1 : "";
        size_t klen = sp ? (size_t) (sp - line) : strlen(line);
        uint64_t u;

#define KEY(k) (klen == strlen(k) && strncmp(line, k, klen) == 0)
        if (!sp || !plain(v))
                return -EBADMSG;
        if (KEY("pid")) {
                if (parse_u64(v, INT32_MAX, &u) < 0 || u == 0)
                        return -EBADMSG;
                s->pid = (pid_t) u;
                *seen |= 1;
        } else if (KEY("start_time")) {
                if (parse_u64(v, UINT64_MAX, &s->start_time) < 0)
                        return -EBADMSG;
                *seen |= 2;
        } else if (KEY("exec_env")) {
                char a[24], b[24], tail;
                if (sscanf(v, "%23[0-9],%23[0-9]%c", a, b, &tail) != 2 || parse_u64(a, UINT64_MAX, &s->env_start) < 0 ||
                    parse_u64(b, UINT64_MAX, &s->env_end) < 0)
                        return -EBADMSG;
                *seen |= 4;
        } else if (KEY("source")) {
                if (strlen(v) >= sizeof s->source)
                        return -EBADMSG;
                strcpy(s->source, v);
        } else if (KEY("accelerators")) {
                if (strlen(v) >= sizeof s->accels)
                        return -EBADMSG;
                strcpy(s->accels, v);
        } else if (KEY("from_pid")) {
                if (parse_u64(v, INT32_MAX, &u) < 0)
                        return -EBADMSG;
                s->env.from_pid = (pid_t) u;
        } else if (KEY("inherited")) {
                if (!streq(v, "0") && !streq(v, "1"))
                        return -EBADMSG;
                s->env.inherited = streq(v, "1");
        } else if (KEY("env")) {
                const char *eq = strchr(v, '=');
                char **l;

                if (!eq || !valid_name(v, (size_t) (eq - v)) || s->env.n >= ATTRIBUTION_VARS_MAX)
                        return -EBADMSG;
                l = reallocarray(s->env.vars, s->env.n + 1, sizeof *l);
                if (!l)
                        return -ENOMEM;
                s->env.vars = l;
                l[s->env.n] = strdup(v);
                if (!l[s->env.n])
                        return -ENOMEM;
                s->env.n++;
        } else
                return -EBADMSG;
#undef KEY
        return 0;
}

int attribution_saved_parse(const char *text, attribution_saved *ret) {
        attribution_saved s = { .env = { .state = TUNE_ENV_READ, .restored = true } };
        unsigned seen = 0;
        size_t hlen = strlen(HEADER);
        int r = 0;

        if (!text || !ret)
                return -EINVAL;
        if (strncmp(text, HEADER, hlen) != 0 || text[hlen] != '\n')
                return -EBADMSG;
        for (const char *line = text + hlen + 1; *line && r >= 0;) {
                const char *eol = strchrnul(line, '\n');
                char buf[ATTRIBUTION_FILE_MAX];
                size_t len = (size_t) (eol - line);

                if (len >= sizeof buf)
                        r = -EBADMSG;
                else {
                        memcpy(buf, line, len);
                        buf[len] = 0;
                        r = parse_line(buf, &s, &seen);
                }
                line = *eol ? eol + 1 : eol;
        }
        if (r >= 0 && seen != 7)
                r = -EBADMSG;
        if (r < 0) {
                attribution_saved_done(&s);
                return r;
        }
        *ret = s;
        return 0;
}

int attribution_saved_name_pid(const char *name, pid_t *ret) {
        const size_t plen = strlen(ATTRIBUTION_FILE_PREFIX);
        uint64_t v;

        if (strncmp(name, ATTRIBUTION_FILE_PREFIX, plen) != 0 || strlen(name + plen) > 10 ||
            parse_u64(name + plen, INT32_MAX, &v) < 0 || v == 0)
                return -EINVAL;
        *ret = (pid_t) v;
        return 0;
}

/* "attribution-PID", at each match and exit. */
static void file_name(pid_t pid, char buf[static 64]) {
        char d[TUNE_DECIMAL_MAX + 1];

        tune_concat(buf, 64, ATTRIBUTION_FILE_PREFIX, tune_format_signed(d, pid), NULL);
}

int attribution_store_save_at(int dfd, const attribution_saved *s, const tune_attribution *a) {
        _cleanup_free_ char *text = NULL;
        char name[64];
        int r;

        r = attribution_saved_format(s, a, &text);
        if (r < 0)
                return r;
        file_name(s->pid, name);
        return tune_state_file_replace_at(dfd, name, text);
}

int attribution_store_adopt(const char *state_dir, pid_t pid, const char *text) {
        _cleanup_(attribution_saved_done) attribution_saved saved = {};
        char name[64];
        struct stat st;
        int dfd, r;

        r = attribution_saved_parse(text, &saved);
        if (r < 0)
                return r;
        if (saved.pid != pid)
                return -EBADMSG;
        dfd = tune_state_dir_open(state_dir, true);
        if (dfd < 0)
                return dfd;
        file_name(pid, name);
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0)
                r = 0; /* written after the record: newer */
        else if (errno != ENOENT)
                r = -errno;
        else
                r = tune_state_file_create_at(dfd, name, text);
        close(dfd);
        return r;
}

int attribution_store_remove_at(int dfd, pid_t pid) {
        char name[64];

        file_name(pid, name);
        return tune_state_file_remove_at(dfd, name);
}

int attribution_store_remove(const char *state_dir, pid_t pid) {
        char name[64];

        file_name(pid, name);
        return tune_state_file_delete_unsynced(state_dir, name);
}

int attribution_store_load(const char *state_dir, bool prune, attribution_saved **ret, size_t *ret_n) {
        _cleanup_free_ pid_t *pids = NULL;
        attribution_saved *l = NULL;
        size_t n = 0, n_pids = 0, cap = 0;
        struct dirent *de;
        DIR *d;
        int dfd;

        *ret = NULL;
        *ret_n = 0;
        dfd = tune_state_dir_open(state_dir, false);
        if (dfd == -ENOENT)
                return 0;
        if (dfd < 0)
                return dfd;
        d = fdopendir(dfd);
        if (!d) {
                int r = -errno;
                close(dfd);
                return r;
        }
        /* The names first: the directory is not read while files in it are removed. */
        while ((de = readdir(d))) {
                pid_t pid;
                if (attribution_saved_name_pid(de->d_name, &pid) < 0)
                        continue;
                if (TUNE_GROW(pids, cap, n_pids, 16) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
                pids[n_pids++] = pid;
        }
        closedir(d);
        if (n_pids > 0) {
                l = calloc(n_pids < ATTRIBUTION_STORE_MAX ? n_pids : ATTRIBUTION_STORE_MAX, sizeof *l);
                if (!l)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n_pids; i++) {
                _cleanup_free_ char *text = NULL;
                char name[64];
                size_t len;

                file_name(pids[i], name);
                if (n < ATTRIBUTION_STORE_MAX &&
                    tune_state_file_read(state_dir, name, ATTRIBUTION_FILE_MAX, &text, &len) >= 0 &&
                    attribution_saved_parse(text, &l[n]) >= 0) {
                        if (l[n].pid == pids[i]) {
                                n++;
                                continue;
                        }
                        attribution_saved_done(&l[n]);
                }
                if (prune)
                        (void) attribution_store_remove(state_dir, pids[i]);
        }
        *ret = l;
        *ret_n = n;
        return 0;
}
