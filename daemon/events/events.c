/* SPDX-License-Identifier: GPL-2.0-only */
/* Each event: one log line (a structured journal entry under systemd), then the sink (the
 * D-Bus signal). The line is the event's only report, so the parts do not log it themselves. */
#include <stdio.h>
#include <string.h>

#include "events.h"
#include "log.h"
#include "npu-tuned/text.h"

static const char *or_none(const char *s) {
        return s && *s ? s : "-";
}

void event_process_placed(const event_sink *sink, const managed_process *mp, const tune_plan *pl, const char *container) {
        _cleanup_free_ char *pool = NULL, *control = NULL, *compute = NULL, *mem = NULL, *accels = NULL;
        char f_pid[32], f_rule[160], f_accel[256], f_container[192], origin[96], d[TUNE_DECIMAL_MAX + 1];

        (void) tune_attribution_format_accels(&mp->attribution, &accels);
        tune_attribution_describe_source(&mp->attribution, &mp->env, origin, sizeof origin);
        (void) tune_cpuset_format_list(&pl->pool, &pool);
        (void) tune_cpuset_format_list(tune_plan_role_cpus(pl, TUNE_ROLE_CONTROL), &control);
        (void) tune_cpuset_format_list(tune_plan_role_cpus(pl, TUNE_ROLE_COMPUTE), &compute);
        (void) tune_cpuset_format_list(&pl->mem_nodes, &mem);
        const char *pid = tune_format_signed(d, mp->pid);
        tune_concat(f_pid, sizeof f_pid, "NPU_TUNED_PID=", pid, NULL);
        tune_concat(f_rule, sizeof f_rule, "NPU_TUNED_RULE=", mp->rule->name, NULL);
        tune_concat(f_accel, sizeof f_accel, "NPU_TUNED_ACCEL=", accels ? accels : "", NULL);
        tune_concat(f_container, sizeof f_container, "NPU_TUNED_CONTAINER=", container ? container : "", NULL);
        const char *const fields[] = { f_pid, f_rule, f_accel, container && *container ? f_container : NULL, NULL };
        /* Made for every placed process: put together without printf. */
        char text[2048];
        bool in_container = container && *container;
        tune_concat(text, sizeof text, "Placed pid ", pid, in_container ? " (" : "",
                    in_container ? container : "", in_container ? ")" : "", " (rule \"", mp->rule->name,
                    "\", accelerators ", or_none(accels), " ", origin, "): CPUs ", or_none(pool), ", control ",
                    or_none(control), ", compute ", or_none(compute), ", memory ", mem && *mem ? mem : "left where it is",
                    ".", NULL);
        log_struct_text(LOG_INFO, NPU_MESSAGE_PROCESS_PLACED, fields, text);
        if (sink && sink->process_placed)
                sink->process_placed(sink->userdata, mp, pl);
}

void event_process_released(const event_sink *sink, const managed_process *mp, const char *reason) {
        char f_pid[32], f_rule[160], d[TUNE_DECIMAL_MAX + 1];

        const char *pid = tune_format_signed(d, mp->pid);
        tune_concat(f_pid, sizeof f_pid, "NPU_TUNED_PID=", pid, NULL);
        tune_concat(f_rule, sizeof f_rule, "NPU_TUNED_RULE=", mp->rule ? mp->rule->name : "", NULL);
        const char *const fields[] = { f_pid, f_rule, NULL };
        char text[1024];
        tune_concat(text, sizeof text, "pid ", pid, " (rule \"",
                    mp->rule ? mp->rule->name : "?", "\") is no longer managed (", reason, ").", NULL);
        log_struct_text(LOG_INFO, NPU_MESSAGE_PROCESS_RELEASED, fields, text);
        if (sink && sink->process_released)
                sink->process_released(sink->userdata, mp, reason);
}

void event_knob_changed(const event_sink *sink, const tune_knob_backend *backend, const char *id, const char *label,
                                const char *path, const char *from, const char *to, bool restored) {
        char f_knob[160];

        snprintf(f_knob, sizeof f_knob, "NPU_TUNED_KNOB=%s", id);
        const char *const fields[] = { f_knob, NULL };
        int level = backend && backend->kind == TUNE_KNOB_KIND_IRQ ? LOG_DEBUG : LOG_INFO;
        if (restored)
                log_struct(level, NPU_MESSAGE_KNOB_APPLIED, fields, "%s: restored \"%s\".", id, to);
        else
                log_struct(level, NPU_MESSAGE_KNOB_APPLIED, fields, "%s%s%s%s: %s -> %s", id, label ? " (" : "",
                           label ? label : "", label ? ")" : "", from ? from : "?", to);
        if (sink && sink->knob_changed)
                sink->knob_changed(sink->userdata, id, path, to, restored);
}

void event_knob_drift(const event_sink *sink, const char *id, const char *path, const char *expected, const char *found,
                              bool reassert) {
        char f_knob[160];

        snprintf(f_knob, sizeof f_knob, "NPU_TUNED_KNOB=%s", id);
        const char *const fields[] = { f_knob, NULL };
        log_struct(LOG_NOTICE, NPU_MESSAGE_KNOB_CHANGED_BY_OTHER, fields,
                   "%s: changed by someone else to \"%s\" (npu-tuned set \"%s\")%s", id, found, expected,
                   reassert ? "; re-asserting (policy: reassert)."
                            : "; left as it is (policy: no reassert); it stays theirs on stop.");
        if (sink && sink->knob_drift)
                sink->knob_drift(sink->userdata, id, path, expected, found);
}

void event_policy_reloaded(const event_sink *sink, bool ok, const char *message) {
        log_struct(ok ? LOG_INFO : LOG_ERR, NPU_MESSAGE_POLICY_RELOADED, NULL, "%s", message);
        if (sink && sink->policy_reloaded)
                sink->policy_reloaded(sink->userdata, ok, message);
}
