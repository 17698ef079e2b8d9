/* SPDX-License-Identifier: GPL-2.0-only */
/* The connection, the name and the signals of org.nputuned1 (bus-server.h). What the
 * object answers is the manager's (core/manager-bus.c): this file knows no Manager. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

#include "bus-server.h"
#include "log.h"
#include "npu-tuned/cpuset.h"

extern const char npu_bus_introspection_xml[];

struct BusServer {
        sd_bus *bus; /* NULL: not connected */
};

static sd_bus *bus_of(const BusServer *b) {
        return b ? b->bus : NULL;
}

static const char *or_empty(const char *s) {
        return s ? s : "";
}

/* ---- signals ---- */

static void emit_changed(BusServer *b, const char *first, ...) __attribute__((__sentinel__));
static void emit_changed(BusServer *b, const char *first, ...) {
        sd_bus *bus = bus_of(b);
        char *names[8];
        unsigned n = 0;
        va_list ap;

        if (!bus)
                return;
        va_start(ap, first);
        for (const char *s = first; s && n < ELEMENTSOF(names) - 1; s = va_arg(ap, const char *))
                names[n++] = (char *) s;
        va_end(ap);
        names[n] = NULL;
        (void) sd_bus_emit_properties_changed_strv(bus, NPU_BUS_PATH, NPU_BUS_INTERFACE, names);
}

static void emit_process_placed(void *userdata, const managed_process *mp, const tune_plan *pl) {
        _cleanup_free_ char *accels = NULL, *cpus = NULL, *mem = NULL;
        BusServer *b = userdata;
        sd_bus *bus = bus_of(b);

        if (!bus)
                return;
        (void) tune_attribution_format_accels(&mp->attribution, &accels);
        (void) tune_cpuset_format_list(&pl->pool, &cpus);
        (void) tune_cpuset_format_list(&pl->mem_nodes, &mem);
        (void) sd_bus_emit_signal(bus, NPU_BUS_PATH, NPU_BUS_INTERFACE, "ProcessPlaced", "utssss", (uint32_t) mp->pid,
                                  mp->start_time, mp->rule->name, or_empty(accels), or_empty(cpus), or_empty(mem));
        emit_changed(b, "ManagedProcesses", NULL);
}

static void emit_process_released(void *userdata, const managed_process *mp, const char *reason) {
        BusServer *b = userdata;
        sd_bus *bus = bus_of(b);

        if (!bus)
                return;
        (void) sd_bus_emit_signal(bus, NPU_BUS_PATH, NPU_BUS_INTERFACE, "ProcessReleased", "uts", (uint32_t) mp->pid,
                                  mp->start_time, or_empty(reason));
        emit_changed(b, "ManagedProcesses", NULL);
}

static void emit_knob_changed(void *userdata, const char *id, const char *path, const char *value, bool restored) {
        BusServer *b = userdata;
        sd_bus *bus = bus_of(b);

        if (!bus)
                return;
        (void) sd_bus_emit_signal(bus, NPU_BUS_PATH, NPU_BUS_INTERFACE, "KnobChanged", "sss", id, or_empty(path),
                                  or_empty(value));
        emit_changed(b, "Knobs", "State", NULL);
}

static void emit_knob_drift(void *userdata, const char *id, const char *path, const char *expected, const char *found) {
        BusServer *b = userdata;
        sd_bus *bus = bus_of(b);

        if (!bus)
                return;
        (void) sd_bus_emit_signal(bus, NPU_BUS_PATH, NPU_BUS_INTERFACE, "KnobDrift", "ssss", id, or_empty(path),
                                  or_empty(expected), or_empty(found));
        emit_changed(b, "Knobs", NULL);
}

static void emit_policy_reloaded(void *userdata, bool ok, const char *message) {
        BusServer *b = userdata;
        sd_bus *bus = bus_of(b);

        if (!bus)
                return;
        (void) sd_bus_emit_signal(bus, NPU_BUS_PATH, NPU_BUS_INTERFACE, "PolicyReloaded", "bs", (int) ok, or_empty(message));
        emit_changed(b, "State", "PolicyFiles", "DryRun", "Accelerators", "Knobs", "ManagedProcesses", NULL);
}

void bus_server_emit_state(BusServer *b) {
        emit_changed(b, "State", NULL);
}

event_sink bus_server_event_sink(BusServer *b) {
        return (event_sink) {
                .userdata = b,
                .process_placed = emit_process_placed,
                .process_released = emit_process_released,
                .knob_changed = emit_knob_changed,
                .knob_drift = emit_knob_drift,
                .policy_reloaded = emit_policy_reloaded,
        };
}

/* ---- connection ---- */

int bus_server_new(BusServer **ret) {
        BusServer *b = calloc(1, sizeof *b);

        if (!b)
                return -ENOMEM;
        *ret = b;
        return 0;
}

int bus_server_open(BusServer *b, daemon_bus which_bus, sd_event *e, const sd_bus_vtable *vtable, void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        const char *which = which_bus == DAEMON_BUS_SESSION ? "session" : "system";
        int r;

        if (which_bus == DAEMON_BUS_NONE)
                return 0;
        r = which_bus == DAEMON_BUS_SESSION ? sd_bus_open_user(&bus) : sd_bus_open_system(&bus);
        if (r < 0) {
                log_notice_errno(r, "No D-Bus %s bus (%m): running without D-Bus; npu-tunectl cannot reach this daemon "
                                    "(--bus=none silences this).", which);
                return 0;
        }
        (void) sd_bus_set_description(bus, "npu-tuned");
        r = sd_bus_add_object_vtable(bus, NULL, NPU_BUS_PATH, NPU_BUS_INTERFACE, vtable, userdata);
        if (r < 0)
                return log_error_errno(r, "Failed to publish %s on the %s bus: %m", NPU_BUS_PATH, which);
        r = sd_bus_request_name(bus, NPU_BUS_NAME, 0);
        if (r < 0) {
                if (r == -EEXIST)
                        log_warning("%s is already taken on the %s bus (another npu-tuned?): running without D-Bus.",
                                    NPU_BUS_NAME, which);
                else
                        log_warning_errno(r, "The %s bus refused the name %s (%m; is the bus policy "
                                             "/usr/share/dbus-1/system.d/org.nputuned1.conf installed, and was the bus "
                                             "reloaded since?): running without D-Bus.",
                                          which, NPU_BUS_NAME);
                return 0;
        }
        r = sd_bus_attach_event(bus, e, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the %s bus to the event loop: %m", which);
        b->bus = TAKE_PTR(bus);
        log_info("On the %s bus as %s.", which, NPU_BUS_NAME);
        return 0;
}

BusServer *bus_server_free(BusServer *b) {
        if (!b)
                return NULL;
        sd_bus_flush_close_unref(b->bus);
        free(b);
        return NULL;
}

int bus_server_print_introspection(FILE *f) {
        return fputs(npu_bus_introspection_xml, f) < 0 ? -EIO : 0;
}
