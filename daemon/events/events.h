/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The daemon's events as users see them: one call per event, which writes the journal
 * entry with its structured fields and MESSAGE_ID (common/log.c) and hands the event to the
 * sink the part was given. The manager wires that sink to the D-Bus signals
 * (bus/bus-server.c); events/ includes nothing above common/, so a part that reports an
 * event does not depend on the bus. The sink may be NULL (npu-tuned --restore,
 * --bus=none, tests) or not connected: then the event is only logged. */

#include <stdbool.h>

/* MESSAGE_IDs of the journal entries, one per kind of event (man npu-tuned(8), JOURNAL):
 * journalctl MESSAGE_ID=... finds every event of a kind. Never change one. */
#define NPU_MESSAGE_PROCESS_PLACED "792882e4ff9b463395fb46d8744098d5"
#define NPU_MESSAGE_PROCESS_RELEASED "f24bbb5a2f604a84b17188efba620dba"
#define NPU_MESSAGE_KNOB_APPLIED "9acfd90424f54d0685bfa50ab3a72b4f"
#define NPU_MESSAGE_KNOB_CHANGED_BY_OTHER "5f3dc8aa2576446f9047b52299dd3d60"
#define NPU_MESSAGE_POLICY_RELOADED "ce4d4d6e5a9c4a40bd901f3a61327f8a"

#include "npu-tuned/knob.h"
#include "npu-tuned/plan.h"
#include "npu-tuned/process.h"

/* Where events go besides the log. Every callback may be NULL. */
typedef struct event_sink {
        void *userdata;
        void (*process_placed)(void *userdata, const managed_process *mp, const tune_plan *pl);
        void (*process_released)(void *userdata, const managed_process *mp, const char *reason);
        void (*knob_changed)(void *userdata, const char *id, const char *path, const char *value, bool restored);
        void (*knob_drift)(void *userdata, const char *id, const char *path, const char *expected, const char *found);
        void (*policy_reloaded)(void *userdata, bool ok, const char *message);
} event_sink;

/* container: "pod UID container RUNTIME://ID" (daemon/placement/process-cpuset.h), "" or NULL: none. */
void event_process_placed(const event_sink *sink, const managed_process *mp, const tune_plan *pl, const char *container);
void event_process_released(const event_sink *sink, const managed_process *mp, const char *reason);
/* A knob now holds to because npu-tuned wrote it: applied (from: the value before, label:
 * may be NULL) or restored (its original). backend: the knob's (NULL: unknown); IRQs are
 * logged at debug level: they come by the hundred (knobs.c sums them up). */
void event_knob_changed(const event_sink *sink, const tune_knob_backend *backend, const char *id, const char *label,
                                const char *path, const char *from, const char *to, bool restored);
/* Someone else wrote a knob npu-tuned owns; reassert: the policy says write ours again. */
void event_knob_drift(const event_sink *sink, const char *id, const char *path, const char *expected,
                              const char *found, bool reassert);
/* message: one line, for the log, the signal and the D-Bus error. */
void event_policy_reloaded(const event_sink *sink, bool ok, const char *message);
