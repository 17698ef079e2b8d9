/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The D-Bus API: org.nputuned1 on the system bus (or the session bus, or none: --bus=),
 * object /org/nputuned1, interface org.nputuned1.Manager (units/org.nputuned1.Manager.xml,
 * documented in man/npu-tuned.8). Everything here is a no-op without a bus: the daemon
 * works the same without one. */

#include <stdbool.h>
#include <stdio.h>

#include "npu-tuned/plan.h"
#include "npu-tuned/process.h"

struct Manager;
typedef struct Bus Bus;

#define NPU_BUS_NAME "org.nputuned1"
#define NPU_BUS_PATH "/org/nputuned1"
#define NPU_BUS_INTERFACE "org.nputuned1.Manager"
#define NPU_BUS_ERROR_NO_SUCH_PROCESS "org.nputuned1.Error.NoSuchProcess"
#define NPU_BUS_ERROR_NOT_MANAGED "org.nputuned1.Error.NotManaged"
#define NPU_BUS_ERROR_POLICY_INVALID "org.nputuned1.Error.PolicyInvalid"
#define NPU_BUS_ERROR_NOT_AVAILABLE "org.nputuned1.Error.NotAvailable"

/* The Bus of m, not connected yet: the parts get it at their start and signal through it
 * once manager_bus_open() has connected. */
int manager_bus_new(struct Manager *m, Bus **ret);
/* Connect, publish the object and take the name. No bus, or the name refused: said once,
 * and the daemon goes on without D-Bus (returns 0). */
int manager_bus_open(Bus *b);
/* Flush what is queued (the last signals of a stop), disconnect and free. */
Bus *manager_bus_free(Bus *b);

/* npu-tuned --bus-introspect: the interface XML that is installed to
 * /usr/share/dbus-1/interfaces/ (compiled in from units/org.nputuned1.Manager.xml). */
int manager_bus_print_introspection(FILE *f);

/* Signals, with the PropertiesChanged that go with them (called by events.c). */
void manager_bus_emit_process_placed(Bus *b, const managed_process *mp, const tune_plan *pl);
void manager_bus_emit_process_released(Bus *b, const managed_process *mp, const char *reason);
void manager_bus_emit_knob_changed(Bus *b, const char *id, const char *path, const char *value);
void manager_bus_emit_knob_drift(Bus *b, const char *id, const char *path, const char *expected,
                                 const char *found);
void manager_bus_emit_policy_reloaded(Bus *b, bool ok, const char *message);
/* State changed (reloading starts or ends). */
void manager_bus_emit_state(Bus *b);
