/* SPDX-License-Identifier: GPL-2.0-only */
#include "npu-tuned/match.h"
#include "npu-tuned/thread-role.h"

static const char *const role_names[_TUNE_ROLE_MAX] = {
        [TUNE_ROLE_CONTROL] = "control",
        [TUNE_ROLE_COMPUTE] = "compute",
        [TUNE_ROLE_OTHER] = "other",
};

const char *tune_role_to_string(tune_role r) {
        return (unsigned) r < _TUNE_ROLE_MAX ? role_names[r] : NULL;
}

static bool role_has_globs(const tune_policy_role *role) {
        return role->name_globs && role->name_globs[0];
}

static bool role_matches(const tune_policy_role *role, const char *comm) {
        if (!comm || !role->name_globs)
                return false;
        for (char **g = role->name_globs; *g; g++)
                if (tune_glob_match(*g, comm))
                        return true;
        return false;
}

static bool role_is_catch_all(const tune_policy_role *role) {
        return !role_has_globs(role) && !role->main_thread;
}

bool tune_rule_has_role_selectors(const tune_policy_rule *rule) {
        return !role_is_catch_all(&rule->control) || !role_is_catch_all(&rule->compute);
}

bool tune_rule_picks_threads_by_name(const tune_policy_rule *rule) {
        return rule && (role_has_globs(&rule->control) || role_has_globs(&rule->compute));
}

bool tune_thread_role_needs_name(const tune_policy_rule *rule, pid_t pid, pid_t tid) {
        if (!tune_rule_picks_threads_by_name(rule))
                return false;
        return !(tid == pid && (rule->control.main_thread || rule->compute.main_thread));
}

tune_role tune_thread_classify(const tune_policy_rule *rule, pid_t pid, pid_t tid, const char *comm) {
        bool control_all, compute_all;

        if (!tune_rule_has_role_selectors(rule))
                return TUNE_ROLE_OTHER;
        if (tid == pid) {
                if (rule->control.main_thread)
                        return TUNE_ROLE_CONTROL;
                if (rule->compute.main_thread)
                        return TUNE_ROLE_COMPUTE;
        }
        if (role_matches(&rule->control, comm))
                return TUNE_ROLE_CONTROL;
        if (role_matches(&rule->compute, comm))
                return TUNE_ROLE_COMPUTE;
        control_all = role_is_catch_all(&rule->control);
        compute_all = role_is_catch_all(&rule->compute);
        if (control_all && !compute_all)
                return TUNE_ROLE_CONTROL;
        if (compute_all && !control_all)
                return TUNE_ROLE_COMPUTE;
        return TUNE_ROLE_OTHER;
}
