/* SPDX-License-Identifier: GPL-2.0-only */
/* TEST-ONLY hard-wired rule: see watcher-stub-policy.h. */
#include <regex.h>
#include <stdlib.h>

#include "watcher-stub-policy.h"

const tune_policy *watcher_stub_policy(void) {
        static tune_policy policy;
        static tune_policy_rule rule;
        const char *exe = getenv("NPU_TUNED_STUB_RULE_EXE");
        const char *cmdline = getenv("NPU_TUNED_STUB_RULE_CMDLINE");
        const char *rank = getenv("NPU_TUNED_STUB_RULE_RANK");

        if (!exe)
                return NULL;
        rule.name = (char *) "stub";
        rule.match_exe = (char *) exe;
        if (cmdline && regcomp(&rule.match_cmdline, cmdline, REG_EXTENDED | REG_NOSUB) == 0)
                rule.has_match_cmdline = true;
        if (rank && regcomp(&rule.rank_regex, rank, REG_EXTENDED) == 0) {
                rule.rank_source = TUNE_RANK_CMDLINE;
                rule.rank_regex_src = (char *) rank;
        }
        rule.accel_mode = TUNE_ACCEL_AUTO;
        policy.version = TUNE_POLICY_VERSION;
        policy.rules = &rule;
        policy.n_rules = 1;
        policy.options.reconcile_interval_ms = 2000;
        return &policy;
}
