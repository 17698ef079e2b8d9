/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "watcher-registry.h"

typedef struct slot {
        pid_t pid; /* 0: empty */
        void *entry;
} slot;

struct Registry {
        slot *slots;
        size_t cap; /* a power of two */
        size_t n;
};

static size_t hash_pid(pid_t pid, size_t cap) {
        uint32_t h = (uint32_t) pid * 2654435761u; /* Knuth's multiplicative hash */
        return (size_t) h & (cap - 1);
}

int registry_new(Registry **ret) {
        Registry *r = calloc(1, sizeof *r);

        if (!r)
                return -ENOMEM;
        r->cap = 64;
        r->slots = calloc(r->cap, sizeof *r->slots);
        if (!r->slots) {
                free(r);
                return -ENOMEM;
        }
        *ret = r;
        return 0;
}

Registry *registry_free(Registry *r) {
        if (!r)
                return NULL;
        free(r->slots);
        free(r);
        return NULL;
}

static slot *find(const Registry *r, pid_t pid) {
        for (size_t i = hash_pid(pid, r->cap);; i = (i + 1) & (r->cap - 1)) {
                if (r->slots[i].pid == pid)
                        return &r->slots[i];
                if (r->slots[i].pid == 0)
                        return NULL;
        }
}

void *registry_get(const Registry *r, pid_t pid) {
        slot *s;

        if (pid <= 0)
                return NULL;
        s = find(r, pid);
        return s ? s->entry : NULL;
}

static void insert(slot *slots, size_t cap, pid_t pid, void *entry) {
        size_t i = hash_pid(pid, cap);

        while (slots[i].pid != 0)
                i = (i + 1) & (cap - 1);
        slots[i] = (slot){ pid, entry };
}

int registry_put(Registry *r, pid_t pid, void *entry) {
        if (pid <= 0)
                return -EINVAL;
        if (find(r, pid))
                return -EEXIST;
        if ((r->n + 1) * 4 > r->cap * 3) { /* keep the load under 3/4 */
                size_t ncap = r->cap * 2;
                slot *ns = calloc(ncap, sizeof *ns);
                if (!ns)
                        return -ENOMEM;
                for (size_t i = 0; i < r->cap; i++)
                        if (r->slots[i].pid != 0)
                                insert(ns, ncap, r->slots[i].pid, r->slots[i].entry);
                free(r->slots);
                r->slots = ns;
                r->cap = ncap;
        }
        insert(r->slots, r->cap, pid, entry);
        r->n++;
        return 0;
}

void *registry_remove(Registry *r, pid_t pid) {
        slot *s;
        void *entry;
        size_t i, j;

        if (pid <= 0 || !(s = find(r, pid)))
                return NULL;
        entry = s->entry;
        /* Backward-shift deletion: no tombstones, lookups stay short. */
        i = (size_t) (s - r->slots);
        j = i;
        for (;;) {
                j = (j + 1) & (r->cap - 1);
                if (r->slots[j].pid == 0)
                        break;
                size_t home = hash_pid(r->slots[j].pid, r->cap);
                /* Move j into the hole at i unless its home lies cyclically in (i, j]. */
                if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
                        r->slots[i] = r->slots[j];
                        i = j;
                }
        }
        r->slots[i] = (slot){};
        r->n--;
        return entry;
}

size_t registry_size(const Registry *r) {
        return r->n;
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return x < y ? -1 : x > y;
}

int registry_pids(const Registry *r, pid_t **ret, size_t *ret_n) {
        pid_t *l = malloc((r->n ? r->n : 1) * sizeof *l);
        size_t n = 0;

        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < r->cap; i++)
                if (r->slots[i].pid != 0)
                        l[n++] = r->slots[i].pid;
        qsort(l, n, sizeof *l, cmp_pid);
        *ret = l;
        *ret_n = n;
        return 0;
}
