/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <json-c/json.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/topology.h"
#include "options.h"

int run_print_topology(const daemon_options *o);
/* The topology as --print-topology --json prints it (and D-Bus GetTopology() returns). */
json_object *topology_to_json(const tune_topology *t, const tune_accels *a);
/* The table --print-topology prints, from that JSON (so npu-tunectl prints the daemon's
 * the same way). */
void topology_print_table(json_object *j, FILE *f);
