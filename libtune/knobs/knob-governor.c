/* SPDX-License-Identifier: GPL-2.0-only */
/* The CPU governor of each cpufreq policy covering the CPUs the policy names (all online
 * CPUs, or those given to inference work). One logic, two paths behind tune_cpufreq_ops:
 * libcpupower on the live host; the root resolver's files
 * (/sys/devices/system/cpu/cpufreq/policyN/{scaling_governor,scaling_available_governors,
 * affected_cpus}) below a test root. */
#include <cpufreq.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/knob.h"
#include "npu-tuned/parse.h"

#define CPUFREQ_DIR "/sys/devices/system/cpu/cpufreq"

int tune_cpufreq_parse_cpus(const char *text, tune_cpuset *ret) {
        _cleanup_cpuset_ tune_cpuset s = {};
        const char *p = text;
        unsigned long v;
        int r;

        if (!text)
                return -EINVAL;
        while ((r = tune_parse_next_ulong(&p, TUNE_CPU_MAX - 1, &v)) > 0) {
                r = tune_cpuset_add(&s, (unsigned) v);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        tune_cpuset_done(ret);
        *ret = s;
        s = (tune_cpuset){};
        return 0;
}

void tune_cpufreq_policies_free(tune_cpufreq_policy *p, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                tune_cpuset_done(&p[i].cpus);
        free(p);
}

/* The policies a list path has found so far: freed whole when it fails, handed over
 * sorted when it is done (policy_list_finish()). Both paths build one the same way. */
typedef struct policy_list {
        tune_cpufreq_policy *items;
        unsigned n, cap;
} policy_list;

static void policy_list_done(policy_list *l) {
        tune_cpufreq_policies_free(l->items, l->n);
        *l = (policy_list){};
}
#define _cleanup_policy_list_ _cleanup_(policy_list_done)

/* Moves *p into the list; on failure *p's CPUs are freed, so the caller has nothing left
 * to undo but the list. */
static int push_policy(policy_list *l, tune_cpufreq_policy *p) {
        if (TUNE_GROW(l->items, l->cap, l->n, 16) < 0) {
                tune_cpuset_done(&p->cpus);
                return -ENOMEM;
        }
        l->items[l->n++] = *p;
        *p = (tune_cpufreq_policy){};
        return 0;
}

static int cmp_policy(const void *a, const void *b) {
        const tune_cpufreq_policy *x = a, *y = b;
        return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

/* -ENOENT when no policy was found: no cpufreq on this host (or below this root). */
static int policy_list_finish(policy_list *l, tune_cpufreq_policy **ret, unsigned *ret_n) {
        if (l->n == 0)
                return -ENOENT;
        qsort(l->items, l->n, sizeof *l->items, cmp_policy);
        *ret = l->items;
        *ret_n = l->n;
        *l = (policy_list){};
        return 0;
}

/* ---- the sysfs path (below the root) ------------------------------------------------- */

static int policy_file(const tune_cpufreq_policy *p, const char *file, char *buf, size_t size) {
        return tune_path(buf, size, CPUFREQ_DIR "/%s/%s", p->name, file);
}

static int sysfs_list(const tune_ctx *ctx, const tune_topology *t, tune_cpufreq_policy **ret, unsigned *ret_n) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_policy_list_ policy_list list = {};
        struct dirent *de;
        int r;

        r = tune_opendir(ctx, CPUFREQ_DIR, &d);
        if (r < 0)
                return r == -ENOTDIR ? -ENOENT : r;
        while ((de = readdir(d))) {
                _cleanup_free_ char *text = NULL;
                tune_cpufreq_policy p = {};
                char path[160];
                const char *s;
                unsigned long num = 0;

                if (strncmp(de->d_name, "policy", 6) != 0 || !isdigit((unsigned char) de->d_name[6]))
                        continue;
                for (s = de->d_name + 6; isdigit((unsigned char) *s) && num < TUNE_CPU_MAX; s++)
                        num = num * 10 + (unsigned long) (*s - '0');
                if (*s || num >= TUNE_CPU_MAX || strlen(de->d_name) >= sizeof p.name)
                        continue;
                snprintf(p.name, sizeof p.name, "%s", de->d_name);
                p.cpu = (unsigned) num;
                r = policy_file(&p, "affected_cpus", path, sizeof path);
                if (r >= 0)
                        r = tune_read_string(ctx, path, &text);
                if (r >= 0)
                        r = tune_cpufreq_parse_cpus(text, &p.cpus);
                if (r == -ENOMEM)
                        return r;
                /* Without affected_cpus the policy's own number is its CPU. */
                if (r < 0 && (r = tune_cpuset_add(&p.cpus, p.cpu)) < 0)
                        return r;
                tune_cpuset_and(&p.cpus, &t->online);
                if (!tune_cpuset_is_empty(&p.cpus))
                        p.cpu = (unsigned) tune_cpuset_next(&p.cpus, 0);
                r = push_policy(&list, &p);
                if (r < 0)
                        return r;
        }
        return policy_list_finish(&list, ret, ret_n);
}

static int sysfs_read(const tune_ctx *ctx, const tune_cpufreq_policy *p, const char *file, char **ret) {
        char path[160];
        int r = policy_file(p, file, path, sizeof path);
        if (r < 0)
                return r;
        return tune_read_string(ctx, path, ret);
}

static int sysfs_available(const tune_ctx *ctx, const tune_cpufreq_policy *p, char **ret) {
        return sysfs_read(ctx, p, "scaling_available_governors", ret);
}

static int sysfs_get(const tune_ctx *ctx, const tune_cpufreq_policy *p, char **ret) {
        return sysfs_read(ctx, p, "scaling_governor", ret);
}

static int sysfs_set(const tune_ctx *ctx, const tune_cpufreq_policy *p, const char *governor) {
        char path[160];
        int r = policy_file(p, "scaling_governor", path, sizeof path);
        if (r < 0)
                return r;
        return tune_write_string(ctx, path, governor);
}

const tune_cpufreq_ops tune_cpufreq_sysfs = {
        .name = "sysfs",
        .list = sysfs_list,
        .available = sysfs_available,
        .get = sysfs_get,
        .set = sysfs_set,
};

/* ---- the live path: libcpupower ------------------------------------------------------ */

static int errno_or(int fallback) {
        return errno > 0 ? -errno : fallback;
}

static int cpupower_list(const tune_ctx *ctx, const tune_topology *t, tune_cpufreq_policy **ret, unsigned *ret_n) {
        _cleanup_cpuset_ tune_cpuset seen = {};
        _cleanup_policy_list_ policy_list list = {};
        int r;

        TUNE_CPUSET_FOREACH(cpu, &t->online) {
                struct cpufreq_affected_cpus *cpus, *c;
                tune_cpufreq_policy p = {};

                if (tune_cpuset_has(&seen, (unsigned) cpu))
                        continue;
                cpus = cpufreq_get_affected_cpus((unsigned) cpu);
                if (!cpus)
                        continue; /* no cpufreq for this CPU */
                r = 0;
                for (c = cpus->first; c && r >= 0; c = c->next)
                        r = tune_cpuset_add(&p.cpus, c->cpu);
                cpufreq_put_affected_cpus(cpus);
                if (r >= 0)
                        r = tune_cpuset_add(&p.cpus, (unsigned) cpu);
                if (r >= 0)
                        r = tune_cpuset_or(&seen, &p.cpus);
                if (r < 0) {
                        tune_cpuset_done(&p.cpus);
                        return r;
                }
                tune_cpuset_and(&p.cpus, &t->online);
                p.cpu = (unsigned) tune_cpuset_next(&p.cpus, 0);
                /* libcpupower does not name policies; the kernel names each after the CPU
                 * it was created for, normally its lowest. */
                snprintf(p.name, sizeof p.name, "policy%u", p.cpu);
                r = push_policy(&list, &p);
                if (r < 0)
                        return r;
        }
        return policy_list_finish(&list, ret, ret_n);
}

static int cpupower_available(const tune_ctx *ctx, const tune_cpufreq_policy *p, char **ret) {
        struct cpufreq_available_governors *govs, *g;
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        errno = 0;
        govs = cpufreq_get_available_governors(p->cpu);
        if (!govs)
                return errno_or(-ENOENT);
        f = open_memstream(&buf, &size);
        if (!f) {
                cpufreq_put_available_governors(govs);
                return -ENOMEM;
        }
        for (g = govs->first; g; g = g->next)
                fprintf(f, "%s%s", g == govs->first ? "" : " ", g->governor);
        cpufreq_put_available_governors(govs);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}

static int cpupower_get(const tune_ctx *ctx, const tune_cpufreq_policy *p, char **ret) {
        struct cpufreq_policy *pol;
        char *s;

        errno = 0;
        pol = cpufreq_get_policy(p->cpu);
        if (!pol)
                return errno_or(-ENOENT);
        s = pol->governor ? strdup(pol->governor) : NULL;
        cpufreq_put_policy(pol);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int cpupower_set(const tune_ctx *ctx, const tune_cpufreq_policy *p, const char *governor) {
        _cleanup_free_ char *copy = strdup(governor);
        int r;

        if (!copy)
                return -ENOMEM;
        errno = 0;
        r = cpufreq_modify_policy_governor(p->cpu, copy);
        if (r < 0)
                return errno > 0 ? -errno : (r < -1 ? r : -EIO);
        return 0;
}

const tune_cpufreq_ops tune_cpufreq_libcpupower = {
        .name = "libcpupower",
        .list = cpupower_list,
        .available = cpupower_available,
        .get = cpupower_get,
        .set = cpupower_set,
};

const tune_cpufreq_ops *tune_cpufreq_ops_for(const tune_ctx *ctx) {
        return tune_ctx_is_live(ctx) ? &tune_cpufreq_libcpupower : &tune_cpufreq_sysfs;
}

/* ---- the knob ------------------------------------------------------------------------ */

/* The journal keeps the policy's file path and CPU; the path names the policy. */
static int policy_from_path(const char *path, int cpu, tune_cpufreq_policy *ret) {
        const char *start, *end;

        if (strncmp(path, CPUFREQ_DIR "/", strlen(CPUFREQ_DIR "/")) != 0 || cpu < 0)
                return -EINVAL;
        start = path + strlen(CPUFREQ_DIR "/");
        end = strchr(start, '/');
        if (!end || (size_t) (end - start) >= sizeof ret->name || !streq(end, "/scaling_governor"))
                return -EINVAL;
        *ret = (tune_cpufreq_policy){ .cpu = (unsigned) cpu };
        memcpy(ret->name, start, (size_t) (end - start));
        ret->name[end - start] = 0;
        return 0;
}

static int governor_read(const tune_ctx *ctx, const char *path, int cpu, tune_knob_format format, char **ret) {
        _cleanup_free_ char *raw = NULL;
        tune_cpufreq_policy p;
        int r;

        r = policy_from_path(path, cpu, &p);
        if (r < 0)
                return r;
        r = tune_cpufreq_ops_for(ctx)->get(ctx, &p, &raw);
        if (r < 0)
                return r;
        return tune_knob_parse_value(TUNE_KNOB_PLAIN, raw, ret);
}

static int governor_write(const tune_ctx *ctx, const char *path, int cpu, const char *value) {
        tune_cpufreq_policy p;
        int r;

        r = policy_from_path(path, cpu, &p);
        if (r < 0)
                return r;
        return tune_cpufreq_ops_for(ctx)->set(ctx, &p, value);
}

/* Whether word is one of the blank-separated words of list. */
static bool word_in(const char *list, const char *word) {
        size_t wlen = strlen(word);

        for (const char *p = list; *p;) {
                size_t n;
                while (*p && isspace((unsigned char) *p))
                        p++;
                n = 0;
                while (p[n] && !isspace((unsigned char) p[n]))
                        n++;
                if (n > 0 && n == wlen && memcmp(p, word, n) == 0)
                        return true;
                p += n;
        }
        return false;
}

static int governor_plan(const tune_ctx *ctx, const tune_knob_plan_input *in, tune_knob_plan *plan) {
        const tune_policy_host *h = in->host;
        const tune_cpufreq_ops *ops = tune_cpufreq_ops_for(ctx);
        tune_cpufreq_policy *pols = NULL;
        const tune_cpuset *scope;
        unsigned n = 0;
        int r;

        if (!h->governor)
                return 0;
        scope = h->governor_scope == TUNE_GOVERNOR_INFERENCE_CPUS ? in->inference_cpus : &in->topology->online;
        if (!scope)
                return -EINVAL;
        if (h->governor_scope == TUNE_GOVERNOR_INFERENCE_CPUS && tune_cpuset_is_empty(scope))
                return tune_knob_plan_note(plan, "cpufreq", TUNE_KNOB_NOTE_PLAIN, 0,
                                           "no CPUs are given to inference work: governor left alone");
        r = ops->list(ctx, in->topology, &pols, &n);
        if (r == -ENOENT)
                return tune_knob_plan_note(plan, "cpufreq", TUNE_KNOB_NOTE_PLAIN, r,
                                           "no cpufreq driver on this system (%s finds no cpufreq policy): CPU governor "
                                           "left alone",
                                           ops == &tune_cpufreq_libcpupower ? "libcpupower" : CPUFREQ_DIR);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < n && r >= 0; i++) {
                const tune_cpufreq_policy *p = &pols[i];
                _cleanup_free_ char *available = NULL, *raw = NULL;
                char id[64], path[160];
                tune_knob_item *it;

                if (!tune_cpuset_is_empty(&p->cpus) && !tune_cpuset_overlaps(&p->cpus, scope))
                        continue;
                if ((r = tune_path(id, sizeof id, "cpufreq/%s", p->name)) < 0 ||
                    (r = tune_path(path, sizeof path, CPUFREQ_DIR "/%s/scaling_governor", p->name)) < 0)
                        break;
                r = tune_knob_plan_add(plan, &tune_knob_cpufreq, id, path, (int) p->cpu, TUNE_KNOB_PLAIN, &it);
                if (r < 0)
                        break;
                if (!(it->desired = strdup(h->governor))) {
                        r = -ENOMEM;
                        break;
                }
                {
                        _cleanup_free_ char *list = NULL;
                        if (!tune_cpuset_is_empty(&p->cpus) && tune_cpuset_format_list(&p->cpus, &list) >= 0 &&
                            asprintf(&it->label, "CPUs %s", list) < 0) {
                                r = -ENOMEM;
                                break;
                        }
                }
                if (tune_cpuset_is_empty(&p->cpus)) {
                        r = tune_knob_item_skip(it, -ENODEV, "every CPU of %s is offline (inactive policy)", p->name);
                        continue;
                }
                r = ops->get(ctx, p, &raw);
                if (r == -ENOMEM)
                        break;
                if (r < 0) {
                        r = tune_knob_item_skip(it, r, "cannot read the governor of %s: %s", p->name, strerror(-r));
                        continue;
                }
                r = tune_knob_parse_value(TUNE_KNOB_PLAIN, raw, &it->current);
                if (r < 0)
                        break;
                r = ops->available(ctx, p, &available);
                if (r == -ENOMEM)
                        break;
                if (r < 0) {
                        r = tune_knob_item_skip(it, r, "cannot read the governors %s offers: %s", p->name, strerror(-r));
                        continue;
                }
                if (!word_in(available, h->governor)) {
                        r = tune_knob_item_skip(it, -EOPNOTSUPP, "the cpufreq driver does not offer \"%s\" for %s (offers: %s)",
                                                h->governor, p->name, available);
                        continue;
                }
                if (ops == &tune_cpufreq_sysfs) {
                        r = tune_knob_check_writable(ctx, path);
                        if (r == -EROFS) {
                                r = tune_knob_item_skip(it, r, "%s is read-only", path);
                                continue;
                        }
                        r = 0;
                }
        }
        tune_cpufreq_policies_free(pols, n);
        return r;
}

/* "cpufreq/policyN" for its scaling_governor. */
static int governor_path_of(const char *id, char *buf, size_t size) {
        if (!startswith_lit(id, "cpufreq/policy") || !tune_knob_id_is_number(id + strlen("cpufreq/policy")))
                return -EINVAL;
        return tune_path(buf, size, CPUFREQ_DIR "/%s/scaling_governor", id + strlen("cpufreq/"));
}

const tune_knob_backend tune_knob_cpufreq = {
        .name = "cpufreq",
        .kind = TUNE_KNOB_KIND_CPUFREQ,
        .plan = governor_plan,
        .read = governor_read,
        .write = governor_write,
        .path_of = governor_path_of,
};
