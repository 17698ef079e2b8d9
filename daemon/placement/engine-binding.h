/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Who binds a managed process's threads (the rule's "binding", include/npu-tuned/
 * engine-binding.h), as the daemon decides and checks it: one binder per task, never two.
 *   daemon: npu-tuned pins (as always);
 *   engine: npu-tuned does not narrow the mask at exec nor pin later; it watches, checks
 *           and reports what the engine did; it still moves memory and owns the knobs;
 *   auto:   the engine's switches decide at match; without one npu-tuned watches the
 *           threads for binding_watch_ms and steps back if they bind themselves, else pins;
 *           a process that re-binds itself after being pinned is left to itself too. */

#include <stdbool.h>
#include <sys/types.h>

#include "npu-tuned/affinity.h"
#include "npu-tuned/context.h"
#include "npu-tuned/cpuset.h"
#include "npu-tuned/plan.h"
#include "npu-tuned/process.h"

typedef enum binder {
        BINDER_DAEMON,
        BINDER_ENGINE,
        BINDER_WATCHING, /* auto, no switch: waiting to see whether it binds itself */
} binder;

/* At match: who binds, and why (for log and explain). */
binder binding_decide(const managed_process *mp, char *why, size_t size);

/* Whether any thread's mask now differs from start; *ret_tid/ret_mask (may be NULL) name
 * the first such thread. Bounded by the thread list /proc gives. The masks are read
 * through backend (NULL: the kernel), here and in binding_report(). */
bool binding_threads_moved(const tune_ctx *ctx, const tune_affinity_backend *backend, pid_t pid,
                           const tune_cpuset *start, pid_t *ret_tid, tune_cpuset *ret_mask);

/* Add "binding" ("daemon", "engine", "watching"), "binding_reason" and, when report is
 * not NULL, "engine_report" to an explanation (daemon/common/explain-json.h). */
struct json_object;
int binding_to_json(binder b, const char *why, const char *report, struct json_object *j);

/* What the engine did, checked against the plan: "bound by the engine: 5 thread(s) on
 * CPUs 4-5; all inside the planned pool 4-5" or "...; 2 outside its accelerators' CPUs".
 * Caller frees. */
int binding_report(const tune_ctx *ctx, const tune_affinity_backend *backend, pid_t pid, const tune_plan *pl,
                   const tune_cpuset *near_cpus, char **ret);
