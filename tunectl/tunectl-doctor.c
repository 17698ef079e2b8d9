/* SPDX-License-Identifier: GPL-2.0-only */
/* npu-tunectl doctor: the host's facts (doctor-facts.c) and, when a daemon runs, what it
 * says over the bus, judged by doctor-checks.c; printed one check a line with its fix, or
 * as a JSON list. Exit 1 when a check fails. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "bus-names.h"
#include "doctor.h"
#include "npu-tuned/macro.h"
#include "proc-guard.h"
#include "tunectl.h"

#define MANAGED_MAX 4096u

static int read_knobs(doctor_facts *f) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        const char *id, *path, *orig, *applied, *status, *note;
        int r;

        r = sd_bus_get_property(bus, NPU_BUS_NAME, NPU_BUS_PATH, NPU_BUS_INTERFACE, "Knobs", NULL, &m, "a(ssssss)");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', "(ssssss)");
        while (r >= 0 && (r = sd_bus_message_read(m, "(ssssss)", &id, &path, &orig, &applied, &status, &note)) > 0) {
                f->knobs++;
                if (streq(status, "changed-by-other") && f->knobs_drifted++ == 0)
                        f->drifted = strdup(id);
                f->knobs_refused += streq(status, "refused");
        }
        return r;
}

static int read_processes(const tune_ctx *ctx, doctor_facts *f) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_call_method(bus, NPU_BUS_NAME, NPU_BUS_PATH, NPU_BUS_INTERFACE, "ListProcesses", NULL, &m, NULL);
        if (r < 0)
                return r;
        f->managed = calloc(MANAGED_MAX, sizeof *f->managed);
        if (!f->managed)
                return -ENOMEM;
        r = sd_bus_message_enter_container(m, 'a', "(utssssa(ss)sd)");
        while (r >= 0 && f->n_managed < MANAGED_MAX && (r = sd_bus_message_enter_container(m, 'r', "utssssa(ss)sd")) > 0) {
                doctor_managed *d = &f->managed[f->n_managed];
                const char *comm, *rule, *accels, *source, *role, *cpus, *mem;
                uint32_t pid;
                uint64_t start;

                r = sd_bus_message_read(m, "utssss", &pid, &start, &comm, &rule, &accels, &source);
                if (r >= 0)
                        r = sd_bus_message_enter_container(m, 'a', "(ss)");
                while (r >= 0 && (r = sd_bus_message_read(m, "(ss)", &role, &cpus)) > 0) {
                        _cleanup_cpuset_ tune_cpuset s = {};
                        if (tune_cpuset_parse_list(&s, cpus) >= 0)
                                (void) tune_cpuset_or(&d->plan_cpus, &s);
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r >= 0)
                        r = sd_bus_message_read(m, "sd", &mem, &d->locality);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                d->pid = (pid_t) pid;
                d->comm = strdup(comm ? comm : "");
                d->rule = strdup(rule ? rule : "");
                d->accelerators = strdup(accels ? accels : "");
                f->n_managed++;
                if (r < 0)
                        break;
                if (!d->comm || !d->rule || !d->accelerators)
                        return -ENOMEM;
                (void) doctor_managed_read(ctx, f, d);
        }
        return r;
}

/* What the daemon says; nothing (f->daemon false) when none answers. */
static void read_daemon(const tune_ctx *ctx, doctor_facts *f) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *state = NULL, *reload = NULL;
        const char *s, *message;
        int ok;

        if (!bus || sd_bus_get_property(bus, NPU_BUS_NAME, NPU_BUS_PATH, NPU_BUS_INTERFACE, "State", NULL, &state, "s") < 0 ||
            sd_bus_message_read(state, "s", &s) < 0)
                return;
        f->daemon = true;
        f->daemon_state = strdup(s);
        if (get_optional(&reload, "LastReload", "(tbs)", &f->reload_usec, &ok, &message)) {
                f->reload_ok = ok;
                f->reload_message = strdup(message);
        }
        (void) read_knobs(f);
        (void) read_processes(ctx, f);
}

static void print_text(const doctor_report *rep) {
        for (unsigned i = 0; i < rep->n; i++) {
                const doctor_result *it = &rep->items[i];
                const char *color = !arg.color              ? ""
                                    : it->status == DOCTOR_FAIL ? "\033[1;31m"
                                    : it->status == DOCTOR_WARN ? "\033[1;33m"
                                                                : "\033[32m";
                const char *word = it->status == DOCTOR_FAIL ? "FAIL" : it->status == DOCTOR_WARN ? "WARN" : "OK";

                printf("%s%-4s%s %-18s %s\n", color, word, arg.color ? "\033[0m" : "", it->id, it->evidence);
                if (it->fix && it->status != DOCTOR_OK)
                        printf("%-23s fix: %s\n", "", it->fix);
        }
}

static void print_json_report(const doctor_report *rep) {
        json_object *all = json_object_new_array();

        for (unsigned i = 0; i < rep->n; i++) {
                const doctor_result *it = &rep->items[i];
                json_object *j = json_object_new_object();
                json_object_object_add(j, "id", json_object_new_string(it->id));
                json_object_object_add(j, "status", json_object_new_string(doctor_status_to_string(it->status)));
                json_object_object_add(j, "evidence", json_object_new_string(it->evidence));
                json_object_object_add(j, "fix", it->fix ? json_object_new_string(it->fix) : NULL);
                json_object_array_add(all, j);
        }
        print_json(all);
        json_object_put(all);
}

int cmd_doctor(int argc, char **argv) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(proc_guard_freep) ProcGuard *guard = NULL;
        doctor_facts f = {};
        doctor_report rep = {};
        int r;

        r = tune_ctx_new(arg.root, &ctx);
        if (r < 0) {
                fprintf(stderr, "npu-tunectl doctor: cannot open the root %s: %s\n", arg.root, strerror(-r));
                return EXIT_FAILED;
        }
        /* A process holding its mmap_lock must not stop doctor at its cmdline. */
        if (proc_guard_new(ctx, &guard) >= 0)
                proc_guard_install(guard, ctx);
        r = doctor_facts_read(ctx, arg.policy_dirs, arg.n_policy_dirs, arg.state_dir, &f);
        if (r < 0) {
                fprintf(stderr, "npu-tunectl doctor: cannot read the host below %s: %s\n", arg.root, strerror(-r));
                doctor_facts_done(&f);
                return EXIT_FAILED;
        }
        read_daemon(ctx, &f);
        doctor_check_all(&f, &rep);
        if (arg.json)
                print_json_report(&rep);
        else
                print_text(&rep);
        r = doctor_report_worst(&rep) == DOCTOR_FAIL ? EXIT_FAILED : EXIT_OK;
        doctor_report_done(&rep);
        doctor_facts_done(&f);
        return r;
}
