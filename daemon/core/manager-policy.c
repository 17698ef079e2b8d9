/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's policy: loaded at start (refusing to run with a bad one), reloaded on
 * request (keeping the previous one when the new one is bad). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "events.h"
#include "log.h"
#include "manager.h"
#include "npu-tuned/policy.h"
#include "policy-cli.h"

/* quiet: the embedded default's warnings (its role sizes are meant for large hosts; on a
 * small one the planner shares CPUs) go to debug, with one line saying so. */
static void log_problems(const tune_policy_errors *errors, bool quiet) {
        unsigned quieted = 0;

        for (unsigned i = 0; i < errors->n; i++) {
                _cleanup_free_ char *line = NULL;
                if (tune_policy_error_format(&errors->items[i], &line) < 0) {
                        (void) log_oom();
                        return;
                }
                if (errors->items[i].warning && quiet) {
                        log_debug("Policy: %s", line);
                        quieted++;
                } else if (errors->items[i].warning)
                        log_warning("Policy: %s", line);
                else
                        log_error("Policy: %s", line);
        }
        if (quieted > 0)
                log_info("The embedded default policy has %u warning(s) for this host (-v shows them): it is written "
                         "for larger hosts; here the planner shares the CPUs it has.", quieted);
}

static void log_loaded(const Manager *m, const char *verb) {
        const tune_policy *p = m->policy;

        if (p->embedded) {
                if (m->options->n_policy_dirs > 0)
                        /* Asked for a directory and given the default: not what was meant, most
                         * likely (a typo, files not named *.json). */
                        log_warning("%s the embedded default policy: no *.json policy file in the --policy-dir "
                                    "directories.", verb);
                else
                        log_info("%s the embedded default policy: no *.json policy file in %s or %s.", verb,
                                 POLICY_SHIPPED_DIR, POLICY_ETC_DIR);
        } else
                for (unsigned i = 0; i < p->n_files; i++)
                        log_info("%s policy file %s.", verb, p->files[i]);
        log_info("Policy: %u process rule(s), %u accelerator kind(s), %u NUMA override(s).", p->n_rules, p->n_kinds,
                 p->n_overrides);
}

int manager_load_policy(Manager *m) {
        tune_policy_errors errors = {};
        tune_policy_load_params params;
        int r;

        policy_params_for_daemon(m->options, &params);
        r = tune_policy_prepare(m->ctx, &params, m->topology, &m->policy, &m->accels, &errors);
        log_problems(&errors, r >= 0 && m->policy && m->policy->embedded);
        m->policy_warnings = errors.n - tune_policy_errors_count(&errors);
        tune_policy_errors_done(&errors);
        if (r == -EINVAL)
                return log_error_errno(r, "Refusing to start with an invalid policy (problems above); check it with "
                                          "npu-tuned --check-policy.");
        if (r < 0)
                return log_error_errno(r, "Failed to load the policy: %m");
        log_loaded(m, "Using");
        return 0;
}

/* The first error of a failed load, as one line for the bus; NULL when none. */
static char *first_problem(const tune_policy_errors *errors) {
        for (unsigned i = 0; i < errors->n; i++) {
                char *line = NULL;
                if (!errors->items[i].warning && tune_policy_error_format(&errors->items[i], &line) >= 0)
                        return line;
        }
        return NULL;
}

/* What LastReload says: when, whether the new policy was taken, the PolicyReloaded message. */
static void note_reload(Manager *m, bool ok, const char *message) {
        struct timespec ts;

        if (clock_gettime(CLOCK_REALTIME, &ts) >= 0)
                m->last_reload_usec = (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
        m->last_reload_ok = ok;
        m->reloads++;
        m->reload_failures += !ok;
        manager_metrics_changed(m);
        free(m->last_reload_message);
        m->last_reload_message = strdup(message); /* NULL (out of memory): read as "" */
}

static int reload_failed(Manager *m, int r, const tune_policy_errors *errors, char **ret_message) {
        _cleanup_free_ char *first = first_problem(errors), *message = NULL;
        unsigned n = tune_policy_errors_count(errors);

        if (first && asprintf(&message, "Policy reload failed, previous policy kept: %s%s", first,
                              n > 1 ? " (and more above; npu-tuned --check-policy lists them)" : "") < 0)
                message = NULL;
        else if (!first && asprintf(&message, "Policy reload failed, previous policy kept: %s", strerror(-r)) < 0)
                message = NULL;
        note_reload(m, false, message ? message : "Policy reload failed, previous policy kept.");
        event_policy_reloaded(&m->events, false, message ? message : "Policy reload failed, previous policy kept.");
        if (ret_message)
                *ret_message = TAKE_PTR(message);
        return r;
}

static int reload(Manager *m, char **ret_message);

int manager_reload_policy(Manager *m, char **ret_message) {
        int r;

        if (ret_message)
                *ret_message = NULL;
        m->reloading = true;
        bus_server_emit_state(m->bus);
        r = reload(m, ret_message);
        m->reloading = false;
        bus_server_emit_state(m->bus);
        return r;
}

static int reload(Manager *m, char **ret_message) {
        _cleanup_(tune_policy_freep) tune_policy *policy = NULL;
        tune_policy_errors errors = {};
        tune_policy_load_params params;
        tune_accels accels = {}, old_accels;
        int r;

        /* The new policy is prepared beside the old one: a bad one changes nothing. */
        policy_params_for_daemon(m->options, &params);
        r = tune_policy_prepare(m->ctx, &params, m->topology, &policy, &accels, &errors);
        log_problems(&errors, r >= 0 && policy && policy->embedded);
        if (r < 0) {
                r = reload_failed(m, r, &errors, ret_message);
                tune_policy_errors_done(&errors);
                return r;
        }
        unsigned warnings = errors.n - tune_policy_errors_count(&errors);
        tune_policy_errors_done(&errors);

        /* Managed processes and knobs point into the old policy: it is freed only when
         * this returns, after the watcher and the placer have moved to the new rules. */
        bool keep = manager_reload_keeps_placements(m, policy);
        if (!keep)
                manager_release_processes(m);
        old_accels = m->accels;
        m->accels = accels;
        tune_policy *old = m->policy;
        m->policy = TAKE_PTR(policy);
        policy = old;
        m->policy_warnings = warnings;
        log_loaded(m, "Reloaded");
        r = manager_reapply(m, keep);
        tune_accels_done(&old_accels);
        const char *done = r < 0 ? "Policy reloaded; some of it could not be applied (see above)." : "Policy reloaded.";
        (void) manager_metrics_start(m); /* its path may have changed */
        note_reload(m, true, done);
        event_policy_reloaded(&m->events, true, done);
        if (ret_message)
                *ret_message = strdup("");
        return r;
}
