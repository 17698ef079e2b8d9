/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "options.h"

/* npu-tuned --explain PID [--json]: the plan for one process and why. */
int run_explain(const daemon_options *o);
