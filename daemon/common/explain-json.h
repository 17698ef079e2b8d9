/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* One process's explanation as data: the JSON object that `npu-tuned --explain --json`
 * prints, that the D-Bus Explain() call returns and that npu-tunectl prints, and its text
 * form. Pure: no I/O but the FILE given. */

#include <stdio.h>
#include <json-c/json.h>

#include "npu-tuned/plan.h"
#include "npu-tuned/process.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(json_object *, json_object_put);

/* Where the explanation comes from: the running daemon's own state, or a computation in
 * this process (no daemon to ask). */
#define EXPLAIN_SOURCE_DAEMON "daemon"
#define EXPLAIN_SOURCE_COMPUTED "computed"

/* {"pid", "start_time", "comm", "managed": true, "source", "rule", "rule_file",
 *  "accelerators", "accelerator_source", "accelerator_variable", "rank", "locality_pct",
 *  and tune_plan_to_json()'s keys ("action", "pool", "roles", "mem_nodes", "reasons"
 *  ...)}. pl may be NULL (not planned: action "none"). locality < 0: not measured (null). */
int explain_process_to_json(const managed_process *mp, const tune_plan *pl, double locality, const char *source,
                            json_object **ret);
/* {"pid", "managed": false, "source", "reason"} for a process npu-tuned leaves alone. */
int explain_unmanaged_to_json(pid_t pid, const char *source, const char *reason, json_object **ret);
/* Every string value in j (nested too) that is not valid UTF-8 free of control
 * characters replaced by its tune_escape_utf8() form: what came from a process (its comm,
 * an environment value quoted in a reason) then cannot break a D-Bus reply, which must be
 * valid UTF-8, nor a terminal. -ENOMEM. */
int explain_escape_strings(json_object *j);
/* The text `npu-tuned --explain PID` prints. */
void explain_print_text(json_object *j, FILE *f);
