/* SPDX-License-Identifier: GPL-2.0-only */
/* The real kernel: THP enabled and khugepaged/defrag, and /proc/irq/default_smp_affinity,
 * written on the LIVE system through the engine (journal in a temporary state directory)
 * and restored; the read-back is the kernel's own ("always [never] madvise", padded
 * masks). Then every IRQ's affinity is written back unchanged to see which the kernel
 * refuses (managed IRQs): reported, never fatal.
 *
 * Exit 77 (skip) with the reason when THP is absent or read-only here (not root, a
 * container, ProtectKernelTunables=...). The original values are always written back,
 * also when a check fails (atexit). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knobs/fake-tree.h"
#include "npu-tuned/knob.h"

#define THP_ENABLED "/sys/kernel/mm/transparent_hugepage/enabled"
#define KHUGEPAGED_DEFRAG "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag"
#define DEFAULT_AFFINITY "/proc/irq/default_smp_affinity"

static tune_ctx *live;
static char *saved_enabled, *saved_enabled_word, *saved_khugepaged, *saved_default_affinity;
static int failures;

#define CHECK(cond, ...)                                        \
        do {                                                    \
                if (!(cond)) {                                  \
                        fprintf(stderr, "FAIL: " __VA_ARGS__);  \
                        fputc('\n', stderr);                    \
                        failures++;                             \
                }                                               \
        } while (0)

/* Whatever happens, the host gets its values back. */
static void put_back(void) {
        if (!live)
                return;
        if (saved_enabled_word)
                (void) tune_write_string(live, THP_ENABLED, saved_enabled_word);
        if (saved_khugepaged)
                (void) tune_write_string(live, KHUGEPAGED_DEFRAG, saved_khugepaged);
        if (saved_default_affinity)
                (void) tune_write_string(live, DEFAULT_AFFINITY, saved_default_affinity);
}

static char *read_raw(const char *path) {
        char *s = NULL;
        int r = tune_read_string(live, path, &s);
        if (r < 0) {
                fprintf(stderr, "cannot read %s: %s\n", path, strerror(-r));
                exit(1);
        }
        return s;
}

static void on_restored(const tune_journal_entry *e, tune_restore_outcome o, int error, const char *current, void *u) {
        (void) u;
        printf("  restore %s: %s (now %s)%s%s\n", e->id, tune_restore_outcome_to_string(o), current ? current : "?",
               error ? " " : "", error ? strerror(-error) : "");
        CHECK(o == TUNE_RESTORE_WRITTEN, "%s: restore outcome %s", e->id, tune_restore_outcome_to_string(o));
}

/* THP and khugepaged through the whole engine. */
static void thp_roundtrip(const char *state_dir) {
        _cleanup_free_ char *orig = NULL, *orig_khp = NULL, *after = NULL, *after_khp = NULL, *back = NULL;
        _cleanup_(tune_topology_freep) tune_topology *topo = NULL;
        tune_cpuset none = {};
        tune_policy_host host = { .khugepaged_defrag = -1, .numa_balancing = -1 };
        tune_knob_plan plan = {};
        tune_journal *j = NULL;
        tune_knob_hooks hooks = { .restored = on_restored };
        char want[32], want_khp[8];

        CHECK(tune_topology_load(live, &topo) == 0, "topology");
        CHECK(tune_knob_parse_value(TUNE_KNOB_SELECTED, saved_enabled, &orig) == 0, "parse %s", saved_enabled);
        snprintf(want, sizeof want, "%s", streq(orig, "never") ? "madvise" : "never");
        CHECK(tune_knob_selected_offers(saved_enabled, want), "kernel does not offer %s", want);
        host.thp_enabled = want;
        if (saved_khugepaged) {
                orig_khp = strdup(saved_khugepaged);
                snprintf(want_khp, sizeof want_khp, "%s", streq(orig_khp, "0") ? "1" : "0");
                host.khugepaged_defrag = streq(want_khp, "1");
        }
        tune_knob_plan_input in = { .host = &host, .topology = topo, .inference_cpus = &none, .housekeeping_cpus = &none };
        CHECK(tune_knobs_plan(live, &in, &plan) == 0, "plan");
        CHECK(tune_knobs_apply(live, &plan, state_dir, NULL, &hooks, &j) == 0, "apply");
        for (unsigned i = 0; i < plan.n; i++)
                CHECK(plan.items[i].outcome == TUNE_KNOB_APPLIED, "%s: %s (%s)", plan.items[i].id,
                      tune_knob_outcome_to_string(plan.items[i].outcome),
                      plan.items[i].skip_reason ? plan.items[i].skip_reason : strerror(-plan.items[i].error));
        after = read_raw(THP_ENABLED);
        printf("  live %s: \"%s\" -> \"%s\"\n", THP_ENABLED, saved_enabled, after);
        char bracketed[40];
        snprintf(bracketed, sizeof bracketed, "[%s]", want);
        CHECK(strstr(after, bracketed), "the kernel shows \"%s\", expected %s selected", after, want);
        if (saved_khugepaged) {
                after_khp = read_raw(KHUGEPAGED_DEFRAG);
                printf("  live %s: \"%s\" -> \"%s\"\n", KHUGEPAGED_DEFRAG, saved_khugepaged, after_khp);
                CHECK(streq(after_khp, want_khp), "khugepaged/defrag shows %s", after_khp);
        }
        CHECK(j && tune_knobs_restore(live, j, state_dir, &hooks) == 0, "restore");
        back = read_raw(THP_ENABLED);
        CHECK(streq(back, saved_enabled), "after restore the kernel shows \"%s\", not \"%s\"", back, saved_enabled);
        printf("  live %s restored: \"%s\"\n", THP_ENABLED, back);
        if (saved_khugepaged) {
                free(back);
                back = read_raw(KHUGEPAGED_DEFRAG);
                CHECK(streq(back, saved_khugepaged), "khugepaged/defrag back to %s, not %s", back, saved_khugepaged);
        }
        tune_journal_free(j);
        host.thp_enabled = NULL;
        tune_knob_plan_done(&plan);
}

/* default_smp_affinity through the engine with a hand-made one-item plan: the kernel
 * pads masks, so the comparison is as masks. */
static void default_affinity_roundtrip(const char *state_dir) {
        _cleanup_cpuset_ tune_cpuset cur = {};
        _cleanup_free_ char *after = NULL, *back = NULL;
        tune_knob_hooks hooks = { .restored = on_restored };
        tune_knob_plan plan = {};
        tune_knob_item *it;
        tune_journal *j = NULL;
        int last = -1;

        if (tune_cpuset_parse_mask(&cur, saved_default_affinity) < 0 || tune_cpuset_count(&cur) < 2) {
                printf("  %s = %s: fewer than 2 CPUs in it, not changed\n", DEFAULT_AFFINITY, saved_default_affinity);
                return;
        }
        TUNE_CPUSET_FOREACH(c, &cur)
                last = c;
        tune_cpuset_remove(&cur, (unsigned) last);
        CHECK(tune_knob_plan_add(&plan, &tune_knob_irq, "irq/default", DEFAULT_AFFINITY, -1, TUNE_KNOB_CPUMASK, &it) == 0,
              "plan add");
        CHECK(tune_knob_parse_value(TUNE_KNOB_CPUMASK, saved_default_affinity, &it->current) == 0, "parse mask");
        CHECK(tune_cpuset_format_mask(&cur, 1, &it->desired) == 0, "format mask"); /* short: the kernel pads */
        CHECK(tune_knobs_apply(live, &plan, state_dir, NULL, &hooks, &j) == 0, "apply");
        CHECK(plan.items[0].outcome == TUNE_KNOB_APPLIED, "default_smp_affinity: %s",
              strerror(-plan.items[0].error));
        after = read_raw(DEFAULT_AFFINITY);
        printf("  live %s: \"%s\" -> wrote \"%s\", kernel shows \"%s\"\n", DEFAULT_AFFINITY, saved_default_affinity,
               plan.items[0].desired, after);
        CHECK(tune_knob_value_equal(TUNE_KNOB_CPUMASK, after, plan.items[0].desired), "mask read back differs");
        CHECK(j && tune_knobs_restore(live, j, state_dir, &hooks) == 0, "restore");
        back = read_raw(DEFAULT_AFFINITY);
        CHECK(tune_knob_value_equal(TUNE_KNOB_CPUMASK, back, saved_default_affinity), "restored mask %s", back);
        tune_journal_free(j);
        tune_knob_plan_done(&plan);
}

/* Which IRQs refuse an affinity write (the same mask written back). */
static void managed_irq_probe(void) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        unsigned ok = 0, refused = 0;
        char list[1024] = "";
        size_t len = 0;

        if (tune_opendir(live, "/proc/irq", &d) < 0)
                return;
        while ((de = readdir(d))) {
                _cleanup_free_ char *mask = NULL;
                char path[300];
                int r;
                if (de->d_name[0] < '0' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof path, "/proc/irq/%s/smp_affinity", de->d_name);
                if (tune_read_string(live, path, &mask) < 0)
                        continue;
                r = tune_write_string(live, path, mask);
                if (r >= 0) {
                        ok++;
                        continue;
                }
                refused++;
                if (len + 40 < sizeof list)
                        len += (size_t) snprintf(list + len, sizeof list - len, "%s%s (%s)", len ? ", " : "", de->d_name, strerror(-r));
                CHECK(r == -EIO || r == -EPERM || r == -EACCES || r == -EINVAL, "IRQ %s: unexpected %s", de->d_name,
                      strerror(-r));
        }
        printf("  /proc/irq: %u IRQ(s) take affinity writes, %u refuse them%s%s\n", ok, refused, len ? ": " : "", list);
}

int main(void) {
        _cleanup_free_ char *state_dir = NULL;
        int r;

        if (geteuid() != 0) {
                printf("SKIP: not root: the live THP files cannot be written\n");
                return 77;
        }
        r = tune_ctx_new("/", &live);
        if (r < 0)
                return 1;
        if (!tune_exists(live, THP_ENABLED)) {
                printf("SKIP: %s is absent: this kernel has no transparent hugepages\n", THP_ENABLED);
                return 77;
        }
        saved_enabled = read_raw(THP_ENABLED);
        if (tune_knob_parse_value(TUNE_KNOB_SELECTED, saved_enabled, &saved_enabled_word) < 0) {
                printf("FAIL: %s shows \"%s\": no selected value\n", THP_ENABLED, saved_enabled);
                return 1;
        }
        /* Probe with the value it already has: a no-op where writable. */
        r = tune_knob_check_writable(live, THP_ENABLED);
        if (r == 0)
                r = tune_write_string(live, THP_ENABLED, saved_enabled_word);
        if (r < 0) {
                printf("SKIP: %s is read-only here (%s): a container, no CAP_SYS_ADMIN, or a read-only /sys\n",
                       THP_ENABLED, strerror(-r));
                return 77;
        }
        if (tune_exists(live, KHUGEPAGED_DEFRAG))
                saved_khugepaged = read_raw(KHUGEPAGED_DEFRAG);
        if (tune_exists(live, DEFAULT_AFFINITY))
                saved_default_affinity = read_raw(DEFAULT_AFFINITY);
        atexit(put_back);

        state_dir = fake_root_new("live-state");
        printf("THP on the live kernel:\n");
        thp_roundtrip(state_dir);
        if (saved_default_affinity && tune_knob_check_writable(live, DEFAULT_AFFINITY) == 0) {
                printf("IRQ default affinity on the live kernel:\n");
                default_affinity_roundtrip(state_dir);
        }
        printf("Managed IRQs on the live kernel:\n");
        managed_irq_probe();
        put_back();
        fake_rm(TAKE_PTR(state_dir));
        if (failures) {
                printf("%d check(s) failed\n", failures);
                return 1;
        }
        printf("live knobs written and restored: ok\n");
        return 0;
}
