/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "npu-tuned/policy.h"
#include "options.h"

/* npu-tuned --check-policy PATH...: 0 valid, 1 problems. */
int run_check_policy(const daemon_options *o);
/* npu-tuned --print-policy: the merged effective policy as JSON; 0 or 1. */
int run_print_policy(const daemon_options *o);

/* The load parameters for the daemon's own policy: --policy-dir or the standard
 * directories, ownership checks when running as root. */
void policy_params_for_daemon(const daemon_options *o, tune_policy_load_params *ret);
/* One line per problem, as --check-policy prints them, to f. */
void policy_errors_print(const tune_policy_errors *errors, FILE *f);
