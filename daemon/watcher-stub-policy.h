/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* TEST-ONLY. INTEGRATOR: delete this file and watcher-stub-policy.c once the JSON policy
 * parser lands; tests/watcher/watcher-live.py (daemon-e2e) then writes a policy file instead. Built
 * only into the uninstalled npu-tuned-stubpolicy binary. */

#include "npu-tuned/policy.h"

/* One rule from the environment: NPU_TUNED_STUB_RULE_EXE (glob on the executable) and
 * optionally NPU_TUNED_STUB_RULE_CMDLINE (ERE), NPU_TUNED_STUB_RULE_RANK (ERE with one
 * group over the cmdline). NULL when NPU_TUNED_STUB_RULE_EXE is unset. */
const tune_policy *watcher_stub_policy(void);
