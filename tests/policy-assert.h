/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Assertions the policy tests share (cmocka must be included before this header). */

#include "npu-tuned/policy.h"

/* No host knob set: what a policy that says nothing about the host (and the embedded
 * default, safe on any host) must come to. */
static inline void assert_host_untouched(const tune_policy_host *h) {
        assert_null(h->governor);
        assert_null(h->thp_enabled);
        assert_null(h->thp_defrag);
        assert_int_equal(h->khugepaged_defrag, -1);
        assert_false(h->irq_manage);
        assert_null(h->aspm_policy);
        assert_int_equal(h->aspm_accelerator_link, TUNE_ASPM_LINK_UNCHANGED);
        assert_int_equal(h->numa_balancing, -1);
}
