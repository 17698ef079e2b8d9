/* SPDX-License-Identifier: GPL-2.0-only */
/* IRQ affinity: /proc/irq/default_smp_affinity and /proc/irq/N/smp_affinity (hex masks).
 * Movable IRQs are kept off the inference CPUs (a mask that would keep no online CPU goes
 * to the housekeeping CPUs); an accelerator's IRQs (its msi_irqs/, and /proc/interrupts
 * lines that name its PCI address) go to the housekeeping CPUs of its node. Managed IRQs
 * (read-only smp_affinity, or EIO/EPERM on write) are skipped and reported. */
#include <ctype.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/knob.h"

#define IRQ_DIR "/proc/irq"
#define INTERRUPTS_MAX (16u * 1024u * 1024u)

/* ---- /proc/interrupts ---------------------------------------------------------------- */

int tune_irq_parse_interrupts(const char *text, tune_irq_desc **ret, unsigned *ret_n) {
        _cleanup_free_ tune_irq_desc *list = NULL;
        unsigned n = 0, cap = 0, ncpus = 0;
        const char *line = text;
        bool header = true;

        while (line && *line) {
                const char *eol = strchr(line, '\n');
                const char *end = eol ? eol : line + strlen(line);
                const char *p = line;

                if (header) {
                        /* "           CPU0       CPU1" */
                        header = false;
                        for (; p < end; p++)
                                if (p[0] == 'C' && end - p > 3 && p[1] == 'P' && p[2] == 'U' && isdigit((unsigned char) p[3]))
                                        ncpus++;
                        line = eol ? eol + 1 : NULL;
                        continue;
                }
                while (p < end && isspace((unsigned char) *p))
                        p++;
                if (p < end && isdigit((unsigned char) *p)) {
                        unsigned long irq = 0;
                        while (p < end && isdigit((unsigned char) *p) && irq < 1000000)
                                irq = irq * 10 + (unsigned long) (*p++ - '0');
                        if (p < end && *p == ':' && irq < 1000000) {
                                tune_irq_desc d = { .irq = (unsigned) irq };
                                size_t k = 0;
                                p++;
                                /* The per-CPU counts. */
                                for (unsigned c = 0; c < ncpus; c++) {
                                        while (p < end && isspace((unsigned char) *p))
                                                p++;
                                        if (p >= end || !isdigit((unsigned char) *p))
                                                break;
                                        while (p < end && isdigit((unsigned char) *p))
                                                p++;
                                }
                                /* The rest, blanks squeezed, printable only. */
                                while (p < end && k + 1 < sizeof d.desc) {
                                        unsigned char c = (unsigned char) *p++;
                                        if (isspace(c)) {
                                                if (k > 0 && d.desc[k - 1] != ' ')
                                                        d.desc[k++] = ' ';
                                        } else
                                                d.desc[k++] = isprint(c) ? (char) c : '?';
                                }
                                while (k > 0 && d.desc[k - 1] == ' ')
                                        k--;
                                d.desc[k] = 0;
                                if (TUNE_GROW(list, cap, n, 64) < 0)
                                        return -ENOMEM;
                                list[n++] = d;
                        }
                }
                line = eol ? eol + 1 : NULL;
        }
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

static const char *find_desc(const tune_irq_desc *d, unsigned n, unsigned irq) {
        for (unsigned i = 0; i < n; i++)
                if (d[i].irq == irq)
                        return d[i].desc;
        return NULL;
}

/* ---- irqbalance ---------------------------------------------------------------------- */

int tune_irqbalance_find(const tune_ctx *ctx, int *ret_pid) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r;

        *ret_pid = 0;
        r = tune_opendir(ctx, "/proc", &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                _cleanup_free_ char *comm = NULL;
                char path[64];
                size_t len;
                long pid;
                char *end;

                if (!isdigit((unsigned char) de->d_name[0]))
                        continue;
                errno = 0;
                pid = strtol(de->d_name, &end, 10);
                if (errno || *end || pid <= 0 || pid > 4194304)
                        continue;
                /* irqbalance runs as root; any user may name a process "irqbalance". One
                 * fstatat (a /proc/PID directory is owned by the process's euid) before
                 * reading the names of root's processes only. */
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || st.st_uid != 0)
                        continue;
                if (tune_path(path, sizeof path, "/proc/%ld/comm", pid) < 0)
                        continue;
                /* comm is at most 16 bytes; anything longer is not irqbalance. */
                if (tune_read_file(ctx, path, 64, &comm, &len) < 0)
                        continue;
                if (len > 0 && comm[len - 1] == '\n')
                        comm[--len] = 0;
                if (len == strlen(comm) && streq(comm, "irqbalance")) {
                        *ret_pid = (int) pid;
                        return 0;
                }
        }
        return 0;
}

/* ---- plan ---------------------------------------------------------------------------- */

typedef struct accel_irq {
        unsigned irq;
        const tune_accel *accel;
} accel_irq;

typedef struct irq_plan {
        const tune_ctx *ctx;
        const tune_knob_plan_input *in;
        tune_knob_plan *plan;
        tune_irq_desc *descs;
        unsigned n_descs;
        accel_irq *accel_irqs;
        unsigned n_accel_irqs, cap_accel_irqs;
} irq_plan;

static int add_accel_irq(irq_plan *ip, unsigned irq, const tune_accel *a) {
        for (unsigned i = 0; i < ip->n_accel_irqs; i++)
                if (ip->accel_irqs[i].irq == irq)
                        return 0;
        if (ip->n_accel_irqs == ip->cap_accel_irqs) {
                unsigned cap = ip->cap_accel_irqs ? ip->cap_accel_irqs * 2 : 64;
                accel_irq *n = realloc(ip->accel_irqs, cap * sizeof *n);
                if (!n)
                        return -ENOMEM;
                ip->accel_irqs = n;
                ip->cap_accel_irqs = cap;
        }
        ip->accel_irqs[ip->n_accel_irqs++] = (accel_irq){ irq, a };
        return 0;
}

static const tune_accel *accel_of_irq(const irq_plan *ip, unsigned irq) {
        for (unsigned i = 0; i < ip->n_accel_irqs; i++)
                if (ip->accel_irqs[i].irq == irq)
                        return ip->accel_irqs[i].accel;
        return NULL;
}

static bool parse_uint_name(const char *s, unsigned *ret) {
        unsigned long v = 0;

        if (!isdigit((unsigned char) *s))
                return false;
        for (; *s; s++) {
                if (!isdigit((unsigned char) *s) || v > 1000000)
                        return false;
                v = v * 10 + (unsigned long) (*s - '0');
        }
        *ret = (unsigned) v;
        return true;
}

/* The accelerators' vectors: msi_irqs/ of the PCI function, and /proc/interrupts lines
 * that name its address (e.g. "PCI-MSIX-0000:c1:00.0 0-edge sq_send_trigger_irq"). */
static int collect_accel_irqs(irq_plan *ip) {
        const tune_accels *accels = ip->in->accels;
        int r;

        for (unsigned i = 0; accels && i < accels->n; i++) {
                const tune_accel *a = &accels->items[i];
                _cleanup_closedir_ DIR *d = NULL;
                struct dirent *de;
                char path[128];

                r = tune_path(path, sizeof path, "/sys/bus/pci/devices/%s/msi_irqs", a->pci);
                if (r < 0)
                        return r;
                if (tune_opendir(ip->ctx, path, &d) >= 0)
                        while ((de = readdir(d))) {
                                unsigned irq;
                                if (parse_uint_name(de->d_name, &irq) && (r = add_accel_irq(ip, irq, a)) < 0)
                                        return r;
                        }
                for (unsigned k = 0; k < ip->n_descs; k++)
                        if (strstr(ip->descs[k].desc, a->pci) && (r = add_accel_irq(ip, ip->descs[k].irq, a)) < 0)
                                return r;
        }
        return 0;
}

static unsigned mask_bits(const char *text) {
        unsigned digits = 0;
        for (const char *p = text; *p; p++)
                if (isxdigit((unsigned char) *p))
                        digits++;
        return digits * 4;
}

/* The housekeeping CPUs of an accelerator's node (or of its local CPUs when the firmware
 * gives no node); all housekeeping CPUs when that leaves none. */
static int accel_housekeeping(const irq_plan *ip, const tune_accel *a, tune_cpuset *ret) {
        const tune_node *n = a->numa_node >= 0 ? tune_topology_node(ip->in->topology, a->numa_node) : NULL;
        int r;

        r = tune_cpuset_copy(ret, ip->in->housekeeping_cpus);
        if (r < 0)
                return r;
        if (n)
                tune_cpuset_and(ret, &n->cpus);
        else if (!tune_cpuset_is_empty(&a->local_cpus))
                tune_cpuset_and(ret, &a->local_cpus);
        if (tune_cpuset_is_empty(ret))
                return tune_cpuset_copy(ret, ip->in->housekeeping_cpus);
        return 0;
}

/* One mask knob: read it, compute what it should be, add the item. irq: the IRQ's number,
 * -1 for the default of new IRQs; accel: the accelerator whose vector it is, or NULL. */
static int plan_mask(irq_plan *ip, const char *id, const char *path, int irq, const tune_accel *accel,
                     const char *desc) {
        _cleanup_cpuset_ tune_cpuset cur = {};
        _cleanup_cpuset_ tune_cpuset want = {};
        _cleanup_cpuset_ tune_cpuset online_part = {};
        _cleanup_free_ char *raw = NULL;
        const tune_cpuset *hk = ip->in->housekeeping_cpus;
        tune_knob_item *it;
        unsigned bits;
        int r;

        r = tune_knob_plan_add(ip->plan, &tune_knob_irq, id, path, -1, TUNE_KNOB_CPUMASK, &it);
        if (r < 0)
                return r;
        /* Recorded here, where they are known: the daemon tells irqbalance which accelerator
         * IRQs to leave alone from these, not from the id or the label. */
        it->irq = irq;
        it->accel = accel ? (int) (accel - ip->in->accels->items) : -1;
        if (accel) {
                /* "PCI-MSIX-0000:c1:00.0 3-edge cq_update_irq": the vector's name is the last word. */
                const char *name = desc ? strrchr(desc, ' ') : NULL;
                name = name ? name + 1 : desc;
                if (asprintf(&it->label, "%s%s%s %d %s", name ? name : "", name ? " of " : "", accel->kind, accel->index,
                             accel->pci) < 0)
                        return -ENOMEM;
        }
        if (!accel && desc && !(it->label = strdup(desc)))
                return -ENOMEM;
        r = tune_read_string(ip->ctx, path, &raw);
        if (r == -ENOENT)
                return tune_knob_item_skip(it, r, "%s does not exist", path);
        if (r < 0)
                return tune_knob_item_skip(it, r, "cannot read %s: %s", path, strerror(-r));
        r = tune_knob_parse_value(TUNE_KNOB_CPUMASK, raw, &it->current);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || tune_cpuset_parse_mask(&cur, raw) < 0)
                return tune_knob_item_skip(it, -EBADMSG, "%s is not a CPU mask", path);

        if (accel) {
                r = accel_housekeeping(ip, accel, &want);
                if (r < 0)
                        return r;
        } else {
                r = tune_cpuset_copy(&want, &cur);
                if (r < 0)
                        return r;
                tune_cpuset_andnot(&want, ip->in->inference_cpus);
                r = tune_cpuset_copy(&online_part, &want);
                if (r < 0)
                        return r;
                tune_cpuset_and(&online_part, &ip->in->topology->online);
                if (tune_cpuset_is_empty(&online_part)) {
                        /* Only inference (or offline) CPUs were in it. */
                        r = tune_cpuset_copy(&want, hk);
                        if (r < 0)
                                return r;
                }
        }
        if (tune_cpuset_is_empty(&want))
                return tune_knob_item_skip(it, -ENXIO, "no housekeeping CPU to move it to");
        bits = mask_bits(raw);
        r = tune_cpuset_format_mask(&want, bits, &it->desired);
        if (r < 0)
                return r;
        r = tune_knob_check_writable(ip->ctx, path);
        if (r == -EROFS)
                return tune_knob_item_skip(it, r, "a managed IRQ (%s is read-only): the kernel places it", path);
        if (r < 0)
                return tune_knob_item_skip(it, r, "cannot inspect %s: %s", path, strerror(-r));
        return 0;
}

static int cmp_uint(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return x < y ? -1 : x > y;
}

static int list_irqs(const tune_ctx *ctx, unsigned **ret, unsigned *ret_n) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ unsigned *list = NULL;
        unsigned n = 0, cap = 0;
        struct dirent *de;
        int r;

        r = tune_opendir(ctx, IRQ_DIR, &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                unsigned irq;
                if (!parse_uint_name(de->d_name, &irq))
                        continue;
                if (TUNE_GROW(list, cap, n, 128) < 0)
                        return -ENOMEM;
                list[n++] = irq;
        }
        qsort(list, n, sizeof *list, cmp_uint);
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

static int irq_plan_run(irq_plan *ip) {
        const tune_policy_host *h = ip->in->host;
        _cleanup_free_ char *interrupts = NULL, *inference_list = NULL;
        _cleanup_free_ unsigned *irqs = NULL;
        unsigned n_irqs = 0;
        int pid, r;

        if (!tune_exists(ip->ctx, IRQ_DIR))
                return tune_knob_plan_note(ip->plan, "irq", TUNE_KNOB_NOTE_PLAIN, -ENOENT,
                                           "no " IRQ_DIR ": IRQ affinity left alone");
        r = tune_cpuset_format_list(ip->in->inference_cpus, &inference_list);
        if (r < 0)
                return r;
        if (tune_irqbalance_find(ip->ctx, &pid) >= 0 && pid > 0) {
                r = tune_knob_plan_note(ip->plan, "irq", TUNE_KNOB_NOTE_IRQBALANCE_RUNNING, 0,
                                        "irqbalance is running (pid %d): it will move IRQs back onto the inference CPUs. "
                                        "Make it cooperate: IRQBALANCE_BANNED_CPULIST=%s in its environment file "
                                        "(/etc/default/irqbalance or /etc/sysconfig/irqbalance), then restart it",
                                        pid, *inference_list ? inference_list : "<inference CPUs>");
                if (r < 0)
                        return r;
        }
        if (tune_read_file(ip->ctx, "/proc/interrupts", INTERRUPTS_MAX, &interrupts, NULL) >= 0) {
                r = tune_irq_parse_interrupts(interrupts, &ip->descs, &ip->n_descs);
                if (r < 0)
                        return r;
        }
        if (h->irq_steer_accelerator_irqs) {
                r = collect_accel_irqs(ip);
                if (r < 0)
                        return r;
        }
        if (h->irq_keep_off_inference_cpus) {
                r = plan_mask(ip, "irq/default", IRQ_DIR "/default_smp_affinity", -1, NULL, "default for new IRQs");
                if (r < 0)
                        return r;
        }
        r = list_irqs(ip->ctx, &irqs, &n_irqs);
        if (r < 0)
                return tune_knob_plan_note(ip->plan, "irq", TUNE_KNOB_NOTE_PLAIN, r, "cannot list " IRQ_DIR ": %s",
                                           strerror(-r));
        for (unsigned i = 0; i < n_irqs; i++) {
                const tune_accel *a = accel_of_irq(ip, irqs[i]);
                char id[32], path[64];

                if (!a && !h->irq_keep_off_inference_cpus)
                        continue;
                if ((r = tune_path(id, sizeof id, "irq/%u", irqs[i])) < 0 ||
                    (r = tune_path(path, sizeof path, IRQ_DIR "/%u/smp_affinity", irqs[i])) < 0)
                        return r;
                r = plan_mask(ip, id, path, (int) irqs[i], a, find_desc(ip->descs, ip->n_descs, irqs[i]));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int irq_plan_knobs(const tune_ctx *ctx, const tune_knob_plan_input *in, tune_knob_plan *plan) {
        irq_plan ip = { .ctx = ctx, .in = in, .plan = plan };
        int r;

        if (!in->host->irq_manage || (!in->host->irq_keep_off_inference_cpus && !in->host->irq_steer_accelerator_irqs))
                return 0;
        if (!in->inference_cpus || !in->housekeeping_cpus || !in->topology)
                return -EINVAL;
        r = irq_plan_run(&ip);
        free(ip.descs);
        free(ip.accel_irqs);
        return r;
}

/* "irq/default", or "irq/N" for /proc/irq/N/smp_affinity. */
static int irq_path_of(const char *id, char *buf, size_t size) {
        if (streq(id, "irq/default"))
                return tune_path(buf, size, IRQ_DIR "/default_smp_affinity");
        if (!startswith_lit(id, "irq/") || !tune_knob_id_is_number(id + strlen("irq/")))
                return -EINVAL;
        return tune_path(buf, size, IRQ_DIR "/%s/smp_affinity", id + strlen("irq/"));
}

const tune_knob_backend tune_knob_irq = {
        .name = "irq",
        .kind = TUNE_KNOB_KIND_IRQ,
        .plan = irq_plan_knobs,
        .read = tune_knob_file_read,
        .write = tune_knob_file_write,
        .path_of = irq_path_of,
};
