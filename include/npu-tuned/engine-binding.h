/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Who binds a managed process's threads: npu-tuned, or the inference engine itself.
 *
 * Current engines bind by default: vllm-ascend (additional_config.enable_cpu_binding, on
 * since v0.18), SGLang (SGLANG_NUMA_BIND_V2, on), vLLM with --numa-bind, torch_npu with
 * CPU_AFFINITY_CONF=1|2, TensorRT-LLM with TLLM_NUMA_BIND=1, torchrun --numa-binding.
 * Each plans inside the mask it finds, so npu-tuned narrowing it at exec changes the
 * engine's plan, and re-pinning afterwards fights it. A rule says who binds
 * (tune_binding, policy key "binding"); under "auto" this file reads the engine's own
 * switches from its environment (captured at exec) and command line. */

#include <stdbool.h>
#include <stddef.h>

#include "npu-tuned/attribution.h"
#include "npu-tuned/cpuset.h"
#include "npu-tuned/policy.h"

typedef enum tune_engine_binds {
        TUNE_ENGINE_BINDS_UNKNOWN, /* no switch seen: watch what its threads do */
        TUNE_ENGINE_BINDS_YES,     /* a switch (or an engine's default) says it binds */
        TUNE_ENGINE_BINDS_NO,      /* a switch turns its binding off */
} tune_engine_binds;

/* The environment variables the detection reads (NULL-terminated): capture them at exec. */
extern const char *const tune_engine_binding_env_names[];

/* Decide from the switches. cmdline: NULs as spaces (may be NULL); env: the capture (may
 * be NULL); accel_kind: the kind of its first attributed accelerator ("ascend", ...; may be
 * NULL). why (size bytes) says which switch decided, e.g. "SGLANG_NUMA_BIND_V2=1 in its
 * environment". Pure. */
tune_engine_binds tune_engine_binding_detect(const char *cmdline, const tune_env_capture *env, const char *accel_kind,
                                             char *why, size_t size);

/* Did the threads bind themselves? masks: each thread's current affinity; start: the
 * mask the process had when it was matched (before anyone placed it). True when some
 * thread's mask differs from start. */
bool tune_engine_binding_observed(const tune_cpuset *masks, unsigned n, const tune_cpuset *start) _pure_;
