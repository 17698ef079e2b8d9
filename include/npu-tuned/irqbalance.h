/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* irqbalance's control socket protocol, the text side (the socket is the daemon's,
 * daemon/knobs/irqbalance-client.c). irqbalance (1.x) accepts one command per connection from a root
 * peer (SCM_CREDENTIALS), reads at most 500 bytes and answers "setup" and "stats":
 *   "setup"                       -> "SLEEP <s> [IRQ <n> LOAD <l> DIFF <d> CLASS <c> ]... BANNED <hex mask>"
 *   "settings ban irqs <n> <n>..." the IRQs it must leave alone (replaces the list,
 *                                  --banirq ones included); "settings ban irqs NONE" clears it
 *   "settings cpus <cpulist>"     the CPUs it must not put IRQs on (replaces its own ban:
 *                                  IRQBALANCE_BANNED_CPULIST, isolated, nohz_full);
 *                                  "settings cpus NULL" gives it back its own
 * Changes take effect at its next rescan (its --interval). */

#include <stddef.h>

#include "npu-tuned/cpuset.h"

#define TUNE_IRQBALANCE_MSG_MAX 500 /* irqbalance's receive buffer */

typedef struct tune_irqbalance_setup {
        unsigned sleep_s;
        unsigned *banned_irqs; /* sorted */
        unsigned n_banned_irqs;
        tune_cpuset banned_cpus;
} tune_irqbalance_setup;

void tune_irqbalance_setup_done(tune_irqbalance_setup *s);
/* Parse a "setup" reply; -EBADMSG on anything else (the peer may not be irqbalance). */
int tune_irqbalance_parse_setup(const char *text, size_t len, tune_irqbalance_setup *ret);
/* "settings ban irqs A B ..." for the union of a and b (IRQ 0 cannot be said: irqbalance's
 * parser stops at a 0), or "settings ban irqs NONE" when both are empty. -E2BIG when it
 * does not fit in TUNE_IRQBALANCE_MSG_MAX. Caller frees. */
int tune_irqbalance_format_ban_irqs(const unsigned *a, unsigned n_a, const unsigned *b, unsigned n_b, char **ret);
/* "settings cpus LIST", or "settings cpus NULL" for NULL / an empty set. */
int tune_irqbalance_format_ban_cpus(const tune_cpuset *cpus, char **ret);
