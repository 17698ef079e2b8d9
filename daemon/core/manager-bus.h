/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* org.nputuned1.Manager as the manager answers it: the vtable over the daemon's state
 * (properties, methods; documented in man/npu-tuned.8), with the Manager as userdata. The
 * connection and the signals are bus/bus-server.c's. */

#include <systemd/sd-bus.h>

extern const sd_bus_vtable manager_vtable[];
