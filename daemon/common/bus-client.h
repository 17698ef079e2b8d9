/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The client side of org.nputuned1.Manager, shared by `npu-tuned --explain` and
 * npu-tunectl: connect, and tell "no daemon" apart from a real error. */

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "options.h"

/* Connect to the bus (system or session). < 0: no such bus. */
int bus_client_open(daemon_bus which, sd_bus **ret);
/* Whether an error of a call means that no npu-tuned is on the bus (not started, or
 * there is no bus at all), as opposed to an answer of the daemon. */
bool bus_client_error_is_absent(const sd_bus_error *e, int r);
/* Explain(pid): the daemon's JSON explanation. -ESRCH: no such process (the daemon says). */
int bus_client_explain(sd_bus *bus, pid_t pid, json_object **ret, sd_bus_error *error);
