/* SPDX-License-Identifier: GPL-2.0-only */
/* The lines of npu-tuned-driver-query: which pid uses which device, by the driver's
 * word. Strict and bounded: the values are the driver's, and a pid means nothing until
 * the caller has checked it is still the process it knows. Pure. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/driver-procs.h"
#include "npu-tuned/macro.h"

void tune_driver_procs_done(tune_driver_procs *d) {
        if (!d)
                return;
        free(d->items);
        *d = (tune_driver_procs){};
}

static bool is_lower_hex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* "dddd:bb:dd.f" exactly, as the kernel names a PCI function in sysfs. */
static bool parse_pci(const char *s, size_t len, char ret[13]) {
        static const char form[] = "xxxx:xx:xx.f";

        if (len != sizeof form - 1)
                return false;
        for (size_t i = 0; i < len; i++) {
                if (form[i] == 'x' ? !is_lower_hex(s[i]) : form[i] == 'f' ? !(s[i] >= '0' && s[i] <= '7') : s[i] != form[i])
                        return false;
        }
        /* The device number is 5 bits. */
        if (((unsigned) strtoul((char[3]){ s[8], s[9], 0 }, NULL, 16)) > 0x1f)
                return false;
        memcpy(ret, s, len);
        ret[len] = 0;
        return true;
}

/* 1..TUNE_DRIVER_PID_MAX, decimal, no sign, no leading zero. */
static bool parse_pid(const char *s, size_t len, pid_t *ret) {
        unsigned long v = 0;

        if (len == 0 || len > 7 || s[0] == '0')
                return false;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (unsigned long) (s[i] - '0');
        }
        if (v > TUNE_DRIVER_PID_MAX)
                return false;
        *ret = (pid_t) v;
        return true;
}

static bool parse_source(const char *s, size_t len) {
        if (len == 0 || len >= TUNE_DRIVER_SOURCE_MAX)
                return false;
        for (size_t i = 0; i < len; i++)
                if (s[i] < 'a' || s[i] > 'z')
                        return false;
        return true;
}

static int add_source(tune_driver_procs *d, const char *s, size_t len, int *current) {
        for (unsigned i = 0; i < d->n_sources; i++)
                if (strlen(d->sources[i]) == len && memcmp(d->sources[i], s, len) == 0) {
                        *current = (int) i;
                        return 0;
                }
        if (d->n_sources >= ELEMENTSOF(d->sources))
                return -ENOSPC;
        memcpy(d->sources[d->n_sources], s, len);
        d->sources[d->n_sources][len] = 0;
        *current = (int) d->n_sources++;
        return 0;
}

static bool have(const tune_driver_procs *d, const tune_driver_proc *p) {
        for (size_t i = 0; i < d->n; i++)
                if (d->items[i].pid == p->pid && streq(d->items[i].pci, p->pci))
                        return true;
        return false;
}

int tune_driver_procs_parse(const char *buf, size_t len, tune_driver_procs *ret) {
        tune_driver_procs d = {};
        size_t pos = 0, lines = 0;
        int current = -1;

        if ((!buf && len > 0) || !ret)
                return -EINVAL;
        if (len > TUNE_DRIVER_OUTPUT_MAX) {
                len = TUNE_DRIVER_OUTPUT_MAX;
                d.truncated = true;
        }
        while (pos < len) {
                const char *s = buf + pos;
                const char *nl = memchr(s, '\n', len - pos);
                size_t l;
                tune_driver_proc p = {};
                const char *sp;

                if (!nl) { /* a last line cut short: never taken */
                        d.n_rejected++;
                        break;
                }
                l = (size_t) (nl - s);
                pos += l + 1;
                if (++lines > TUNE_DRIVER_LINES_MAX) {
                        d.truncated = true;
                        break;
                }
                sp = memchr(s, ' ', l);
                if (l + 1 > TUNE_DRIVER_LINE_MAX || !sp) {
                        d.n_rejected++;
                        continue;
                }
                if (sp - s == 3 && memcmp(s, "via", 3) == 0) {
                        if (!parse_source(sp + 1, l - 4) || add_source(&d, sp + 1, l - 4, &current) < 0) {
                                d.n_rejected++;
                                current = -1; /* what follows is no known library's */
                        }
                        continue;
                }
                if (current < 0 || !parse_pid(s, (size_t) (sp - s), &p.pid) ||
                    !parse_pci(sp + 1, l - (size_t) (sp - s) - 1, p.pci)) {
                        d.n_rejected++;
                        continue;
                }
                p.source = (unsigned) current;
                if (have(&d, &p))
                        continue;
                if (d.n % 64 == 0) {
                        tune_driver_proc *n = reallocarray(d.items, d.n + 64, sizeof *n);
                        if (!n) {
                                tune_driver_procs_done(&d);
                                return -ENOMEM;
                        }
                        d.items = n;
                }
                d.items[d.n++] = p;
        }
        *ret = d;
        return 0;
}

unsigned tune_driver_procs_lookup(const tune_driver_procs *d, pid_t pid, const tune_accels *accels, unsigned *ret,
                                  const char **ret_source) {
        const char *source = NULL;
        unsigned n = 0;

        if (ret_source)
                *ret_source = NULL;
        if (!d || !accels || pid <= 0)
                return 0;
        for (unsigned i = 0; i < accels->n; i++)
                for (size_t j = 0; j < d->n; j++)
                        if (d->items[j].pid == pid && streq(d->items[j].pci, accels->items[i].pci)) {
                                if (!source)
                                        source = d->sources[d->items[j].source];
                                ret[n++] = i;
                                break;
                        }
        if (ret_source)
                *ret_source = source;
        return n;
}
