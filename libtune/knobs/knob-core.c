/* SPDX-License-Identifier: GPL-2.0-only */
/* The knob engine: value formats, the backend registry, plan helpers, and the one
 * apply/restore path every knob goes through (originals journaled before the first write,
 * restored newest first, a value someone else set after us left alone). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "npu-tuned/knob.h"

/* ---- values -------------------------------------------------------------------------- */

static char *strip(const char *text, size_t *ret_len) {
        const char *end;

        while (isspace((unsigned char) *text))
                text++;
        end = text + strlen(text);
        while (end > text && isspace((unsigned char) end[-1]))
                end--;
        *ret_len = (size_t) (end - text);
        return (char *) text;
}

static bool has_space(const char *p, size_t len) {
        for (size_t i = 0; i < len; i++)
                if (isspace((unsigned char) p[i]))
                        return true;
        return false;
}

int tune_knob_parse_value(tune_knob_format f, const char *text, char **ret) {
        const char *p, *open, *close;
        size_t len;
        char *s;

        if (!text)
                return -EINVAL;
        p = strip(text, &len);
        switch (f) {
        case TUNE_KNOB_PLAIN:
                if (memchr(p, '\n', len))
                        return -EBADMSG;
                s = strndup(p, len);
                break;
        case TUNE_KNOB_SELECTED:
                open = memchr(p, '[', len);
                if (!open) {
                        /* A single bare word: what a plain file holds after a write. */
                        if (len == 0 || has_space(p, len) || memchr(p, ']', len))
                                return -EBADMSG;
                        s = strndup(p, len);
                        break;
                }
                close = memchr(open, ']', len - (size_t) (open - p));
                if (!close || close == open + 1 || has_space(open + 1, (size_t) (close - open - 1)) ||
                    memchr(close + 1, '[', len - (size_t) (close + 1 - p)) || memchr(p, ']', (size_t) (open - p)))
                        return -EBADMSG;
                s = strndup(open + 1, (size_t) (close - open - 1));
                break;
        case TUNE_KNOB_CPUMASK: {
                _cleanup_cpuset_ tune_cpuset set = {};
                s = strndup(p, len);
                if (s && tune_cpuset_parse_mask(&set, s) < 0) {
                        free(s);
                        return -EBADMSG;
                }
                break;
        }
        default:
                return -EINVAL;
        }
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

bool tune_knob_value_equal(tune_knob_format f, const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        if (f == TUNE_KNOB_CPUMASK) {
                _cleanup_cpuset_ tune_cpuset x = {};
                _cleanup_cpuset_ tune_cpuset y = {};
                if (tune_cpuset_parse_mask(&x, a) >= 0 && tune_cpuset_parse_mask(&y, b) >= 0)
                        return tune_cpuset_equal(&x, &y);
        }
        return streq(a, b);
}

bool tune_knob_selected_offers(const char *text, const char *word) {
        size_t wlen = strlen(word);
        const char *p = text;

        if (wlen == 0 || strchr(word, ' ') || strchr(word, '[') || strchr(word, ']'))
                return false;
        if (!strchr(text, '['))
                return true; /* no list of choices to check against: the write decides */
        while (*p) {
                const char *start, *end;
                while (isspace((unsigned char) *p))
                        p++;
                if (!*p)
                        break;
                start = p;
                while (*p && !isspace((unsigned char) *p))
                        p++;
                end = p;
                if (*start == '[' && end > start + 1 && end[-1] == ']') {
                        start++;
                        end--;
                }
                if ((size_t) (end - start) == wlen && memcmp(start, word, wlen) == 0)
                        return true;
        }
        return false;
}

/* ---- registry ------------------------------------------------------------------------ */

/* Plan order is write order; restore goes the other way. */
static const tune_knob_backend *const backends[] = {
        &tune_knob_cpufreq, &tune_knob_thp, &tune_knob_numa_balancing, &tune_knob_aspm, &tune_knob_irq,
};

const tune_knob_backend *tune_knob_backend_by_name(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(backends); i++)
                if (name && streq(backends[i]->name, name))
                        return backends[i];
        return NULL;
}

const char *tune_knob_refusal_reason(const tune_knob_backend *b, const char *id, int error) {
        const tune_knob_kind kind = b ? b->kind : _TUNE_KNOB_KIND_MAX; /* unknown: no kind matches */

        if (error == -EACCES)
                return "permission denied (missing capability, or a mount or unit setting such as "
                       "ProtectKernelTunables= keeps it read-only)";
        if (error == -EROFS)
                return "read-only file system (ProtectSystem=/ProtectKernelTunables= or a read-only mount)";
        if (kind == TUNE_KNOB_KIND_IRQ && (error == -EIO || error == -EPERM))
                return "a managed IRQ: the kernel places it, affinity cannot be changed";
        if (kind == TUNE_KNOB_KIND_IRQ && error == -EINVAL)
                return "the kernel rejected the mask (no usable online CPU in it for this IRQ)";
        if (kind == TUNE_KNOB_KIND_ASPM && id && streq(id, "aspm/policy") && error == -EPERM)
                return "the firmware keeps ASPM control (the kernel refuses policy changes)";
        if (kind == TUNE_KNOB_KIND_CPUFREQ && (error == -EINVAL || error == -ENODEV))
                return "the cpufreq driver rejected the governor";
        return strerror(-error);
}

const char *tune_knob_outcome_to_string(tune_knob_outcome o) {
        switch (o) {
        case TUNE_KNOB_PLANNED:
                return "planned";
        case TUNE_KNOB_SKIPPED:
                return "skipped";
        case TUNE_KNOB_ALREADY:
                return "already";
        case TUNE_KNOB_APPLIED:
                return "applied";
        case TUNE_KNOB_REFUSED:
                return "refused";
        }
        return "unknown";
}

const char *tune_restore_outcome_to_string(tune_restore_outcome o) {
        switch (o) {
        case TUNE_RESTORE_WRITTEN:
                return "restored";
        case TUNE_RESTORE_UNCHANGED:
                return "unchanged";
        case TUNE_RESTORE_LEFT_ALONE:
                return "left alone";
        case TUNE_RESTORE_GONE:
                return "gone";
        case TUNE_RESTORE_FAILED:
                return "failed";
        case TUNE_RESTORE_REFUSED:
                return "refused";
        }
        return "unknown";
}

/* ---- plan ---------------------------------------------------------------------------- */

static void item_done(tune_knob_item *it) {
        free(it->id);
        free(it->path);
        free(it->label);
        free(it->current);
        free(it->desired);
        free(it->skip_reason);
        free(it->original);
}

void tune_knob_plan_done(tune_knob_plan *p) {
        for (unsigned i = 0; i < p->n; i++)
                item_done(&p->items[i]);
        free(p->items);
        for (unsigned i = 0; i < p->n_notes; i++)
                free(p->notes[i].message);
        free(p->notes);
        *p = (tune_knob_plan){};
}

int tune_knob_plan_add(tune_knob_plan *p, const tune_knob_backend *b, const char *id, const char *path, int cpu,
                       tune_knob_format format, tune_knob_item **ret) {
        tune_knob_item *it;

        for (unsigned i = 0; i < p->n; i++)
                if (streq(p->items[i].id, id))
                        return -EEXIST;
        if (TUNE_GROW(p->items, p->cap, p->n, 32) < 0)
                return -ENOMEM;
        it = &p->items[p->n];
        *it = (tune_knob_item){
                .backend = b, .cpu = cpu, .format = format, .irq = -1, .accel = -1, .outcome = TUNE_KNOB_PLANNED
        };
        it->id = strdup(id);
        it->path = strdup(path);
        if (!it->id || !it->path) {
                item_done(it);
                return -ENOMEM;
        }
        p->n++;
        if (ret)
                *ret = it; /* valid until the next add */
        return 0;
}

static int vformat(char **ret, const char *fmt, va_list ap) _printf_(2, 0);
static int vformat(char **ret, const char *fmt, va_list ap) {
        char *s;
        if (vasprintf(&s, fmt, ap) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int tune_knob_item_skip(tune_knob_item *item, int error, const char *fmt, ...) {
        va_list ap;
        char *s;
        int r;

        va_start(ap, fmt);
        r = vformat(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return r;
        free(item->skip_reason);
        item->skip_reason = s;
        item->skip = error < 0 ? error : -EINVAL;
        item->outcome = TUNE_KNOB_SKIPPED;
        return 0;
}

int tune_knob_plan_note(tune_knob_plan *p, const char *backend, tune_knob_note_kind kind, int error, const char *fmt,
                        ...) {
        va_list ap;
        char *s;
        int r;

        if (p->n_notes == p->cap_notes) {
                unsigned cap = p->cap_notes ? p->cap_notes * 2 : 8;
                tune_knob_note *n = realloc(p->notes, cap * sizeof *n);
                if (!n)
                        return -ENOMEM;
                p->notes = n;
                p->cap_notes = cap;
        }
        va_start(ap, fmt);
        r = vformat(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return r;
        p->notes[p->n_notes++] = (tune_knob_note){ .backend = backend, .kind = kind, .error = error, .message = s };
        return 0;
}

int tune_knob_file_read(const tune_ctx *ctx, const char *path, int cpu, tune_knob_format format, char **ret) {
        _cleanup_free_ char *raw = NULL;
        int r;

        r = tune_read_string(ctx, path, &raw);
        if (r < 0)
                return r;
        return tune_knob_parse_value(format, raw, ret);
}

int tune_knob_file_write(const tune_ctx *ctx, const char *path, int cpu, const char *value) {
        return tune_write_string(ctx, path, value);
}

/* A decimal number without sign or leading zero, as the kernel names IRQs and policies. */
bool tune_knob_id_is_number(const char *s) {
        size_t n = strspn(s, "0123456789");
        return n > 0 && n <= 9 && !s[n] && (s[0] != '0' || n == 1);
}

int tune_knob_path_from_table(const char *id, const char *const *ids, const char *const *paths, size_t n, char *buf,
                              size_t size) {
        for (size_t i = 0; i < n; i++)
                if (streq(id, ids[i]))
                        return tune_path(buf, size, "%s", paths[i]);
        return -EINVAL;
}

int tune_knob_check_kernel_file(const tune_ctx *ctx, const char *path) {
        _cleanup_close_ int fd = -EBADF;
        struct statfs sfs;

        if (!tune_ctx_is_live(ctx))
                return 0;
        fd = tune_open(ctx, path, O_PATH | O_NOFOLLOW, 0);
        if (fd < 0)
                return fd;
        if (fstatfs(fd, &sfs) < 0)
                return negative_errno();
        return (unsigned long) sfs.f_type == SYSFS_MAGIC || (unsigned long) sfs.f_type == PROC_SUPER_MAGIC ? 0 : -EXDEV;
}

int tune_knob_check_writable(const tune_ctx *ctx, const char *path) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        fd = tune_open(ctx, path, O_PATH, 0);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        return st.st_mode & 0222 ? 0 : -EROFS;
}

int tune_knob_plan_file(const tune_ctx *ctx, tune_knob_plan *p, const tune_knob_backend *b, const char *id,
                        const char *path, tune_knob_format format, const char *desired, tune_knob_item **ret) {
        _cleanup_free_ char *raw = NULL;
        tune_knob_item *it;
        int r;

        r = tune_knob_plan_add(p, b, id, path, -1, format, &it);
        if (r < 0)
                return r;
        if (ret)
                *ret = it;
        it->desired = strdup(desired);
        if (!it->desired)
                return -ENOMEM;
        r = tune_read_string(ctx, path, &raw);
        if (r == -ENOENT)
                return tune_knob_item_skip(it, r, "%s does not exist (kernel or device without this feature)", path);
        if (r < 0)
                return tune_knob_item_skip(it, r, "cannot read %s: %s", path, strerror(-r));
        r = tune_knob_parse_value(format, raw, &it->current);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return tune_knob_item_skip(it, r, "%s holds unexpected text for a %s value", path,
                                           tune_knob_format_to_string(format));
        if (format == TUNE_KNOB_SELECTED && !tune_knob_selected_offers(raw, desired))
                return tune_knob_item_skip(it, -EOPNOTSUPP, "%s does not offer \"%s\" (it shows: %s)", path, desired, raw);
        r = tune_knob_check_writable(ctx, path);
        if (r == -EROFS)
                return tune_knob_item_skip(it, r, "%s is read-only", path);
        if (r < 0)
                return tune_knob_item_skip(it, r, "cannot inspect %s: %s", path, strerror(-r));
        return 0;
}

int tune_knob_item_read(const tune_ctx *ctx, const tune_knob_item *item, char **ret) {
        return item->backend->read(ctx, item->path, item->cpu, item->format, ret);
}

int tune_knob_item_write(const tune_ctx *ctx, const tune_knob_item *item, const char *value) {
        return item->backend->write(ctx, item->path, item->cpu, value);
}

int tune_knobs_plan(const tune_ctx *ctx, const tune_knob_plan_input *in, tune_knob_plan *ret) {
        tune_knob_plan p = {};
        int r;

        if (!in->host) {
                *ret = p;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(backends); i++) {
                r = backends[i]->plan(ctx, in, &p);
                if (r == -ENOMEM) {
                        tune_knob_plan_done(&p);
                        return r;
                }
                if (r < 0 && tune_knob_plan_note(&p, backends[i]->name, TUNE_KNOB_NOTE_PLAIN, r, "cannot plan: %s",
                                                     strerror(-r)) < 0) {
                        tune_knob_plan_done(&p);
                        return -ENOMEM;
                }
        }
        *ret = p;
        return 0;
}

/* ---- CPU sets for the plan ----------------------------------------------------------- */

int tune_knob_housekeeping_cpus(const tune_topology *t, unsigned per_node, tune_cpuset *ret) {
        _cleanup_cpuset_ tune_cpuset hk = {};
        int r;

        for (unsigned i = 0; i < t->n_nodes; i++) {
                unsigned taken = 0;
                TUNE_CPUSET_FOREACH(c, &t->nodes[i].cpus) {
                        if (taken >= per_node)
                                break;
                        if (!tune_cpuset_has(&t->usable, (unsigned) c))
                                continue;
                        r = tune_cpuset_add(&hk, (unsigned) c);
                        if (r < 0)
                                return r;
                        taken++;
                }
        }
        tune_cpuset_done(ret);
        *ret = hk;
        hk = (tune_cpuset){};
        return 0;
}

int tune_knob_default_inference_cpus(const tune_topology *t, const tune_accels *a, const tune_cpuset *housekeeping,
                                     tune_cpuset *ret) {
        _cleanup_cpuset_ tune_cpuset cpus = {};
        int r;

        for (unsigned i = 0; i < a->n; i++) {
                const tune_node *n = a->items[i].numa_node >= 0 ? tune_topology_node(t, a->items[i].numa_node) : NULL;
                r = tune_cpuset_or(&cpus, n ? &n->cpus : &a->items[i].local_cpus);
                if (r < 0)
                        return r;
        }
        tune_cpuset_and(&cpus, &t->usable);
        tune_cpuset_andnot(&cpus, housekeeping);
        tune_cpuset_done(ret);
        *ret = cpus;
        cpus = (tune_cpuset){};
        return 0;
}

/* ---- apply and restore --------------------------------------------------------------- */

static void step(const tune_knob_hooks *h, const char *what, const char *id) {
        char buf[256];

        if (!h || !h->step)
                return;
        if (id) {
                snprintf(buf, sizeof buf, "%s %s", what, id);
                what = buf;
        }
        h->step(what, h->userdata);
}

static tune_restore_outcome restore_one(const tune_ctx *ctx, const tune_journal_entry *e, const tune_knob_hooks *h,
                                        int *ret_error, char **ret_current) {
        const tune_knob_backend *b = tune_knob_backend_by_name(e->backend);
        _cleanup_free_ char *cur = NULL, *after = NULL;
        char path[256];
        int r;

        *ret_error = 0;
        *ret_current = NULL;
        if (!b) {
                *ret_error = -EPROTO;
                return TUNE_RESTORE_FAILED;
        }
        /* Where to write comes from the backend, never from the journal's text. */
        r = b->path_of ? b->path_of(e->id, path, sizeof path) : -EINVAL;
        if (r < 0 || !streq(path, e->path)) {
                *ret_error = -EBADMSG;
                return TUNE_RESTORE_REFUSED;
        }
        r = tune_knob_check_kernel_file(ctx, path);
        if (r == -EXDEV || r == -ELOOP) {
                *ret_error = r;
                return TUNE_RESTORE_REFUSED;
        }
        r = b->read(ctx, e->path, e->cpu, e->format, &cur);
        if (r == -ENOENT || r == -ENODEV) {
                *ret_error = r;
                return TUNE_RESTORE_GONE;
        }
        if (r < 0) {
                *ret_error = r;
                return TUNE_RESTORE_FAILED;
        }
        if (tune_knob_value_equal(e->format, cur, e->original)) {
                *ret_current = TAKE_PTR(cur);
                return TUNE_RESTORE_UNCHANGED;
        }
        if (!tune_knob_value_equal(e->format, cur, e->desired) &&
            !(e->prior && *e->prior && tune_knob_value_equal(e->format, cur, e->prior))) {
                *ret_current = TAKE_PTR(cur);
                return TUNE_RESTORE_LEFT_ALONE;
        }
        step(h, "before-restore", e->id);
        r = b->write(ctx, e->path, e->cpu, e->original);
        step(h, "after-restore", e->id);
        if (r < 0) {
                *ret_error = r;
                *ret_current = TAKE_PTR(cur);
                return TUNE_RESTORE_FAILED;
        }
        /* The kernel may take a write and keep another value: look. */
        r = b->read(ctx, e->path, e->cpu, e->format, &after);
        if (r < 0 || !tune_knob_value_equal(e->format, after, e->original)) {
                *ret_error = r < 0 ? r : -EIO;
                *ret_current = r < 0 ? TAKE_PTR(cur) : TAKE_PTR(after);
                return TUNE_RESTORE_FAILED;
        }
        *ret_current = TAKE_PTR(after);
        return TUNE_RESTORE_WRITTEN;
}

static tune_restore_outcome restore_and_report(const tune_ctx *ctx, const tune_journal_entry *e,
                                               const tune_knob_hooks *h, int *ret_error) {
        _cleanup_free_ char *cur = NULL;
        tune_restore_outcome o = restore_one(ctx, e, h, ret_error, &cur);

        if (h && h->restored)
                h->restored(e, o, *ret_error, cur, h->userdata);
        return o;
}

/* The entry stays in the journal (a later restore tries again, or a person looks). */
static bool restore_kept(tune_restore_outcome o) {
        return o == TUNE_RESTORE_FAILED || o == TUNE_RESTORE_REFUSED;
}

static bool item_is_planned(const tune_knob_item *it) {
        return it->outcome == TUNE_KNOB_PLANNED && it->skip == 0 && it->desired && it->current;
}

int tune_knobs_apply(const tune_ctx *ctx, tune_knob_plan *plan, const char *state_dir, const tune_journal *previous,
                     const tune_knob_hooks *hooks, tune_journal **ret_journal) {
        _cleanup_(tune_journal_freep) tune_journal *j = NULL;
        _cleanup_free_ bool *consumed = NULL;
        _cleanup_free_ char *boot_id = NULL;
        bool pending = false;
        int r;

        *ret_journal = NULL;
        r = tune_boot_id(ctx, &boot_id);
        if (r < 0)
                return r;
        r = tune_journal_new(tune_ctx_root(ctx), boot_id, &j);
        if (r < 0)
                return r;
        if (previous) {
                j->next_seq = previous->next_seq;
                consumed = calloc(previous->n + 1, sizeof(bool));
                if (!consumed)
                        return -ENOMEM;
        }

        /* 1. Originals: a previous run's journal wins over what the knob shows now. */
        for (unsigned i = 0; i < plan->n; i++) {
                tune_knob_item *it = &plan->items[i];
                const tune_journal_entry *pe = NULL;
                const char *original = it->current, *prior = NULL;

                if (!item_is_planned(it))
                        continue;
                if (previous) {
                        pe = tune_journal_find(previous, it->id);
                        if (pe && (!streq(pe->backend, it->backend->name) || pe->format != it->format))
                                pe = NULL; /* not the same knob: restored below as stale */
                }
                if (pe) {
                        consumed[pe - previous->entries] = true;
                        it->adopted = true;
                        if (tune_knob_value_equal(it->format, it->current, pe->original))
                                original = pe->original;
                        else if (tune_knob_value_equal(it->format, it->current, pe->desired) ||
                                 (*pe->prior && tune_knob_value_equal(it->format, it->current, pe->prior))) {
                                /* It shows a value of ours: until the new one is written, a
                                 * restore must recognise that one too. */
                                original = pe->original;
                                prior = it->current;
                        } else
                                it->adopted_changed = true; /* someone else's value since: theirs is the original now */
                }
                it->original = strdup(original);
                if (!it->original)
                        return -ENOMEM;
                tune_journal_entry e = {
                        .seq = pe ? pe->seq : 0,
                        .backend = (char *) it->backend->name,
                        .id = it->id,
                        .path = it->path,
                        .cpu = it->cpu,
                        .format = it->format,
                        .state = TUNE_JOURNAL_PENDING,
                        .original = it->original,
                        .desired = it->desired,
                        .prior = (char *) prior,
                };
                if (tune_knob_value_equal(it->format, it->current, it->desired)) {
                        it->outcome = TUNE_KNOB_ALREADY;
                        if (tune_knob_value_equal(it->format, it->original, it->desired))
                                continue; /* nothing of ours to give back */
                        e.state = TUNE_JOURNAL_APPLIED;
                } else
                        pending = true;
                r = tune_journal_add(j, &e);
                if (r < 0)
                        return r;
        }

        /* 2. What the previous run owned and this plan does not cover: give it back now,
         * while the previous journal still holds it on disk. */
        if (previous)
                for (unsigned i = previous->n; i-- > 0;) {
                        int error;
                        if (consumed[i])
                                continue;
                        if (restore_kept(restore_and_report(ctx, &previous->entries[i], hooks, &error))) {
                                r = tune_journal_add(j, &previous->entries[i]); /* try again at stop */
                                if (r < 0 && r != -EEXIST)
                                        return r;
                        }
                }

        /* 3. Persist before the first write. */
        if (j->n > 0) {
                r = tune_journal_save(state_dir, j, hooks ? hooks->step : NULL, hooks ? hooks->userdata : NULL);
                if (r < 0) {
                        for (unsigned i = 0; i < plan->n; i++)
                                if (plan->items[i].outcome == TUNE_KNOB_PLANNED)
                                        plan->items[i].outcome = TUNE_KNOB_SKIPPED;
                        return r;
                }
        } else if (previous) {
                r = tune_journal_delete(state_dir);
                if (r < 0)
                        return r;
        }

        /* 4. Write. */
        for (unsigned i = 0; i < plan->n; i++) {
                tune_knob_item *it = &plan->items[i];
                tune_journal_entry *e;

                if (!item_is_planned(it))
                        continue;
                e = tune_journal_find(j, it->id);
                step(hooks, "before-write", it->id);
                r = tune_knob_item_write(ctx, it, it->desired);
                step(hooks, "after-write", it->id);
                if (r < 0) {
                        it->outcome = TUNE_KNOB_REFUSED;
                        it->error = r;
                        e->state = TUNE_JOURNAL_REFUSED;
                        e->error = r;
                } else {
                        it->outcome = TUNE_KNOB_APPLIED;
                        e->state = TUNE_JOURNAL_APPLIED;
                        e->prior[0] = 0; /* the earlier run's value is gone */
                }
        }

        /* 5. Record the outcomes. Failing here is harmless: a PENDING entry restores the
         * same way as an APPLIED one (by comparing what the knob shows). */
        if (pending)
                (void) tune_journal_save(state_dir, j, hooks ? hooks->step : NULL, hooks ? hooks->userdata : NULL);

        if (j->n > 0)
                *ret_journal = TAKE_PTR(j);
        return 0;
}

int tune_knobs_restore(const tune_ctx *ctx, tune_journal *j, const char *state_dir, const tune_knob_hooks *hooks) {
        int first_error = 0, r;

        for (unsigned i = j->n; i-- > 0;) {
                int error;
                if (restore_kept(restore_and_report(ctx, &j->entries[i], hooks, &error))) {
                        if (first_error == 0)
                                first_error = error < 0 ? error : -EIO;
                        continue;
                }
                tune_journal_remove(j, i);
        }
        /* Killed before this point, the journal still lists restored knobs: they then read
         * as their original and are settled as "unchanged" by the next restore. */
        if (j->n == 0)
                r = tune_journal_delete(state_dir);
        else
                r = tune_journal_save(state_dir, j, hooks ? hooks->step : NULL, hooks ? hooks->userdata : NULL);
        if (r < 0 && first_error == 0)
                first_error = r;
        return first_error;
}
