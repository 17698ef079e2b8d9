/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "options.h"

int run_print_topology(const daemon_options *o);
