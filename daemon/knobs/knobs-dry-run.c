/* SPDX-License-Identifier: GPL-2.0-only */
/* npu-tuned --dry-run's host knobs: each as current -> desired, as people read them (a CPU
 * mask as its CPU list; a run of CPU governors that change the same way on one line). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knobs.h"
#include "npu-tuned/cpuset.h"

static const char *or_none(const char *s) {
        return s ? s : "?";
}

/* A value as people read it: a CPU mask as its CPU list ("ff" is "0-7"). */
static char *value_text(const tune_knob_item *it, const char *v) {
        _cleanup_(tune_cpuset_done) tune_cpuset set = {};
        char *list = NULL;

        if (!v)
                return strdup("-");
        if (it->format == TUNE_KNOB_CPUMASK && tune_cpuset_parse_mask(&set, v) >= 0 &&
            tune_cpuset_format_list(&set, &list) >= 0)
                return list;
        return strdup(v);
}

/* What an item's line says after its name: "skipped: why", "X (already)", "X -> Y". */
static char *dry_run_change(const tune_knob_item *it) {
        _cleanup_free_ char *cur = value_text(it, it->current), *want = value_text(it, it->desired);
        char *s = NULL;

        if (it->outcome == TUNE_KNOB_SKIPPED)
                return asprintf(&s, "skipped: %s", or_none(it->skip_reason)) < 0 ? NULL : s;
        if (tune_knob_value_equal(it->format, it->current, it->desired))
                return asprintf(&s, "%s (already)", cur ? cur : "-") < 0 ? NULL : s;
        return asprintf(&s, "%s -> %s", cur ? cur : "-", want ? want : "-") < 0 ? NULL : s;
}

void knobs_print_dry_run(const tune_knob_plan *plan, const tune_journal *previous) {
        printf("# npu-tuned --dry-run: host knobs, current -> desired. Nothing is changed.\n");
        if (previous)
                printf("# a journal of a previous run holds %u knob(s): their originals would come from it.\n",
                       previous->n);
        for (unsigned i = 0; i < plan->n_notes; i++)
                printf("# %s: %s\n", plan->notes[i].backend, plan->notes[i].message);
        for (unsigned i = 0; i < plan->n;) {
                const tune_knob_item *it = &plan->items[i];
                _cleanup_free_ char *change = dry_run_change(it);
                _cleanup_(tune_cpuset_done) tune_cpuset cpus = {};
                unsigned j = i + 1;

                /* One line for a run of CPU governors that change the same way (a host has
                 * a policy per CPU: 192 lines said one thing). */
                if (it->backend->kind == TUNE_KNOB_KIND_CPUFREQ && it->label && startswith_lit(it->label, "CPUs ") &&
                    tune_cpuset_parse_list(&cpus, it->label + strlen("CPUs ")) >= 0)
                        for (; j < plan->n; j++) {
                                const tune_knob_item *next = &plan->items[j];
                                _cleanup_free_ char *c = NULL;
                                _cleanup_(tune_cpuset_done) tune_cpuset more = {};
                                if (next->backend->kind != TUNE_KNOB_KIND_CPUFREQ || !next->label ||
                                    !startswith_lit(next->label, "CPUs ") ||
                                    tune_cpuset_parse_list(&more, next->label + strlen("CPUs ")) < 0)
                                        break;
                                c = dry_run_change(next);
                                if (!c || !change || !streq(c, change) || tune_cpuset_or(&cpus, &more) < 0)
                                        break;
                        }
                if (j > i + 1) {
                        _cleanup_free_ char *list = NULL;
                        (void) tune_cpuset_format_list(&cpus, &list);
                        printf("cpufreq (%u policies, CPUs %s): %s\n", j - i, list ? list : "?", change ? change : "?");
                } else
                        printf("%s%s%s%s: %s\n", it->id, it->label ? " (" : "", it->label ? it->label : "",
                               it->label ? ")" : "", change ? change : "?");
                i = j;
        }
        fflush(stdout);
}

