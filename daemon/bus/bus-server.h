/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The daemon's end of D-Bus: org.nputuned1 on the system bus (or the session bus, or none:
 * --bus=), the object /org/nputuned1 with the vtable it is given (core/manager-bus.c), and
 * the signals of the events (events/events.h) with the PropertiesChanged that go with them.
 * Everything here is a no-op without a bus: the daemon works the same without one. */

#include <stdbool.h>
#include <stdio.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus-names.h"
#include "events.h"
#include "options.h"

typedef struct BusServer BusServer;

/* Not connected yet: the parts get its event sink at their start and signal through it
 * once bus_server_open() has connected. */
int bus_server_new(BusServer **ret);
/* Connect to the bus which, publish vtable with userdata at NPU_BUS_PATH, take the name and
 * attach to e. No bus, or the name refused: said once, and the daemon goes on without
 * D-Bus (returns 0). */
int bus_server_open(BusServer *b, daemon_bus which, sd_event *e, const sd_bus_vtable *vtable, void *userdata);
/* Flush what is queued (the last signals of a stop), disconnect and free. */
BusServer *bus_server_free(BusServer *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(BusServer *, bus_server_free);

/* The sink that turns events into signals (userdata: b). */
event_sink bus_server_event_sink(BusServer *b);
/* The daemon's state changed (a reload starts or ends): PropertiesChanged of State. */
void bus_server_emit_state(BusServer *b);

/* npu-tuned --bus-introspect: the interface XML that is installed to
 * /usr/share/dbus-1/interfaces/ (compiled in from units/org.nputuned1.Manager.xml). */
int bus_server_print_introspection(FILE *f);
