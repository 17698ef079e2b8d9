/* SPDX-License-Identifier: GPL-2.0-only */
/* Each event: one log line (a structured journal entry under systemd), then the sink (the
 * D-Bus signal). The line is the event's only report, so the parts do not log it themselves. */
#include <stdbool.h>

#include "events.h"
#include "log.h"
#include "npu-tuned/text.h"

static const char *or_none(const char *s) {
        return s && *s ? s : "-";
}

/* s in the kernel's list format, or none when s is empty: straight into the message, not
 * through a string of its own. */
static void put_cpus(log_message *m, const tune_cpuset *s, const char *none) {
        size_t room = m->end - m->len;

        if (tune_cpuset_is_empty(s)) {
                log_message_put_str(m, none);
                return;
        }
        m->len += MIN(tune_cpuset_format_list_into(s, m->buf + m->len, room + 1), room);
}

/* Made for every placed process: put together without printf, only when the line is
 * wanted, and its journal fields only when it goes to the journal (log.c). */
void event_process_placed(const event_sink *sink, const managed_process *mp, const tune_plan *pl, const char *container) {
        if (log_wants(LOG_INFO)) {
                _cleanup_free_ char *accels = NULL;
                char origin[96], d[TUNE_DECIMAL_MAX + 1];
                bool in_container = container && *container;
                log_message m;

                (void) tune_attribution_format_accels(&mp->attribution, &accels);
                tune_attribution_describe_source(&mp->attribution, &mp->env, origin, sizeof origin);
                const char *pid = tune_format_signed(d, mp->pid);
                const log_field fields[] = {
                        { "NPU_TUNED_PID=", pid, 32 },
                        { "NPU_TUNED_RULE=", mp->rule->name, 160 },
                        { "NPU_TUNED_ACCEL=", accels, 256 },
                        { in_container ? "NPU_TUNED_CONTAINER=" : NULL, container, 192 },
                        {},
                };
                log_message_init(&m, 2048);
                log_message_put_str(&m, "Placed pid ");
                log_message_put_str(&m, pid);
                if (in_container) {
                        log_message_put_str(&m, " (");
                        log_message_put_str(&m, container);
                        log_message_put_str(&m, ")");
                }
                log_message_put_str(&m, " (rule \"");
                log_message_put_str(&m, mp->rule->name);
                log_message_put_str(&m, "\", accelerators ");
                log_message_put_str(&m, or_none(accels));
                log_message_put_str(&m, " ");
                log_message_put_str(&m, origin);
                log_message_put_str(&m, "): CPUs ");
                put_cpus(&m, &pl->pool, "-");
                log_message_put_str(&m, ", control ");
                put_cpus(&m, tune_plan_role_cpus(pl, TUNE_ROLE_CONTROL), "-");
                log_message_put_str(&m, ", compute ");
                put_cpus(&m, tune_plan_role_cpus(pl, TUNE_ROLE_COMPUTE), "-");
                log_message_put_str(&m, ", memory ");
                put_cpus(&m, &pl->mem_nodes, "left where it is");
                log_message_put_str(&m, ".");
                log_struct_text(LOG_INFO, NPU_MESSAGE_PROCESS_PLACED, fields, &m);
        }
        if (sink && sink->process_placed)
                sink->process_placed(sink->userdata, mp, pl);
}

void event_process_released(const event_sink *sink, const managed_process *mp, const char *reason) {
        if (log_wants(LOG_INFO)) {
                char d[TUNE_DECIMAL_MAX + 1];
                log_message m;

                const char *pid = tune_format_signed(d, mp->pid);
                const log_field fields[] = {
                        { "NPU_TUNED_PID=", pid, 32 },
                        { "NPU_TUNED_RULE=", mp->rule ? mp->rule->name : NULL, 160 },
                        {},
                };
                log_message_init(&m, 1024);
                log_message_put_str(&m, "pid ");
                log_message_put_str(&m, pid);
                log_message_put_str(&m, " (rule \"");
                log_message_put_str(&m, mp->rule ? mp->rule->name : "?");
                log_message_put_str(&m, "\") is no longer managed (");
                if (reason) { /* (none: the text stops there, as it always did) */
                        log_message_put_str(&m, reason);
                        log_message_put_str(&m, ").");
                }
                log_struct_text(LOG_INFO, NPU_MESSAGE_PROCESS_RELEASED, fields, &m);
        }
        if (sink && sink->process_released)
                sink->process_released(sink->userdata, mp, reason);
}

void event_knob_changed(const event_sink *sink, const tune_knob_backend *backend, const char *id, const char *label,
                                const char *path, const char *from, const char *to, bool restored) {
        const log_field fields[] = { { "NPU_TUNED_KNOB=", id, 160 }, {} };
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
        const log_field fields[] = { { "NPU_TUNED_KNOB=", id, 160 }, {} };
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
