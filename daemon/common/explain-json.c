/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <string.h>

#include "explain-json.h"
#include "npu-tuned/proc.h"
#include "npu-tuned/thread-role.h"

int explain_process_to_json(const managed_process *mp, const tune_plan *pl, double locality, const char *source,
                            json_object **ret) {
        _cleanup_free_ char *accels = NULL;
        json_object *j = NULL;
        int r;

        if (pl)
                r = tune_plan_to_json(pl, &j);
        else {
                j = json_object_new_object();
                r = j ? tune_json_add(j, "action", json_object_new_string("none")) : -ENOMEM;
        }
        if (r < 0) {
                json_object_put(j);
                return r;
        }
        r = tune_attribution_format_accels(&mp->attribution, &accels);
        if (r >= 0)
                r = tune_json_add(j, "pid", json_object_new_int(mp->pid));
        if (r >= 0)
                r = tune_json_add(j, "start_time", json_object_new_uint64(mp->start_time));
        if (r >= 0)
                r = tune_json_add(j, "comm", json_object_new_string(mp->comm));
        if (r >= 0)
                r = tune_json_add(j, "managed", json_object_new_boolean(true));
        if (r >= 0)
                r = tune_json_add(j, "source", json_object_new_string(source));
        if (r >= 0)
                r = tune_json_add(j, "rule", json_object_new_string(mp->rule->name));
        if (r >= 0)
                r = tune_json_add(j, "rule_file", json_object_new_string(mp->rule->file ? mp->rule->file : "embedded"));
        if (r >= 0)
                r = tune_json_add(j, "accelerators", json_object_new_string(accels));
        if (r >= 0)
                r = tune_json_add(j, "accelerator_source",
                        json_object_new_string(tune_attribution_source_to_string(mp->attribution.source)));
        if (r >= 0)
                r = tune_json_add(j, "accelerator_variable", json_object_new_string(mp->attribution.variable));
        if (r >= 0)
                r = tune_json_add(j, "rank", json_object_new_int(mp->rank));
        if (r >= 0)
                r = tune_json_add(j, "rank_refused", json_object_new_boolean(mp->attribution.rank_refused));
        if (r >= 0)
                r = tune_json_add(j, "environment", json_object_new_string(tune_env_state_to_string(mp->env.state)));
        if (r >= 0 && mp->env.inherited && mp->env.from_pid > 0 && mp->env.from_pid != mp->pid)
                r = tune_json_add(j, "environment_from_pid", json_object_new_int(mp->env.from_pid));
        if (r >= 0)
                r = tune_json_add(j, "attributed_before_restart",
                                  json_object_new_boolean(tune_attribution_restored(&mp->attribution, &mp->env)));
        if (r >= 0)
                r = json_object_object_add(j, "locality_pct", locality >= 0 ? json_object_new_double(locality) : NULL);
        if (r < 0) {
                json_object_put(j);
                return -ENOMEM;
        }
        *ret = j;
        return 0;
}

int explain_unmanaged_to_json(pid_t pid, const char *source, const char *reason, json_object **ret) {
        json_object *j = json_object_new_object();
        int r = j ? 0 : -ENOMEM;

        if (r >= 0)
                r = tune_json_add(j, "pid", json_object_new_int(pid));
        if (r >= 0)
                r = tune_json_add(j, "managed", json_object_new_boolean(false));
        if (r >= 0)
                r = tune_json_add(j, "source", json_object_new_string(source));
        if (r >= 0)
                r = tune_json_add(j, "reason", json_object_new_string(reason));
        if (r < 0) {
                json_object_put(j);
                return r;
        }
        *ret = j;
        return 0;
}

static const char *str(json_object *j, const char *key) {
        json_object *v;
        const char *s;

        if (!json_object_object_get_ex(j, key, &v) || !v)
                return "";
        s = json_object_get_string(v);
        return s ? s : "";
}

int explain_escape_strings(json_object *j) {
        int r = 0;

        if (json_object_is_type(j, json_type_string)) {
                _cleanup_free_ char *e = NULL;
                if (tune_utf8_clean(json_object_get_string(j)))
                        return 0;
                r = tune_escape_utf8(json_object_get_string(j), true, &e);
                return r < 0 ? r : json_object_set_string(j, e) ? 0 : -ENOMEM;
        }
        if (json_object_is_type(j, json_type_object)) {
                struct json_object_iterator it = json_object_iter_begin(j), end = json_object_iter_end(j);
                for (; r >= 0 && !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
                        r = explain_escape_strings(json_object_iter_peek_value(&it));
        } else if (json_object_is_type(j, json_type_array))
                for (size_t i = 0; r >= 0 && i < json_object_array_length(j); i++)
                        r = explain_escape_strings(json_object_array_get_idx(j, i));
        return r;
}

static const char *or_dash(const char *s) {
        return s && *s ? s : "-";
}

/* What came from the process (its name, its environment's variable names, reasons that
 * quote them) is escaped for the terminal: a comm with ESC in it must not write control
 * sequences or fake lines (docs/trust.md); valid UTF-8 shows as written. */
static const char *esc(const char *s, char *buf, size_t size) {
        _cleanup_free_ char *e = NULL;

        /* Not the backslash: a daemon's JSON comes escaped already (explain_escape_strings()),
         * and must read the same as the one computed here. */
        if (tune_escape_utf8(s, false, &e) < 0)
                snprintf(buf, size, "%s", "(out of memory)");
        else if (snprintf(buf, size, "%s", e) >= (int) size && size > 4)
                memcpy(buf + size - 4, "...", 4);
        return buf;
}

/* daemon/placement/engine-binding.c's "binding" values in words. */
static const char *binding_text(const char *binding) {
        return streq(binding, "engine") ? "bound by the engine" : streq(binding, "daemon") ? "npu-tuned binds" : "not bound yet";
}

void explain_print_text(json_object *j, FILE *f) {
        json_object *v, *roles, *reasons;
        char e1[1024], e2[1024], e3[1024];

        if (!json_object_object_get_ex(j, "managed", &v) || !json_object_get_boolean(v)) {
                fprintf(f, "Process %s: not managed: %s\n", str(j, "pid"), esc(str(j, "reason"), e1, sizeof e1));
                return;
        }
        fprintf(f, "Process %s (%s)%s\n", str(j, "pid"), esc(str(j, "comm"), e1, sizeof e1),
                streq(str(j, "source"), EXPLAIN_SOURCE_DAEMON) ? ", as the running npu-tuned placed it"
                                                               : ", as npu-tuned would place it");
        if (*str(j, "container"))
                fprintf(f, "  container:     %s\n", esc(str(j, "container"), e1, sizeof e1));
        if (*str(j, "cgroup"))
                fprintf(f, "  cgroup cpuset: CPUs %s, memory nodes %s (%s)\n", *str(j, "cgroup_cpus") ? str(j, "cgroup_cpus") : "any",
                        *str(j, "cgroup_mems") ? str(j, "cgroup_mems") : "any", esc(str(j, "cgroup"), e1, sizeof e1));
        fprintf(f, "  rule:          %s (%s)\n", esc(str(j, "rule"), e1, sizeof e1), esc(str(j, "rule_file"), e2, sizeof e2));
        if (streq(str(j, "accelerator_source"), "driver"))
                fprintf(f, "  accelerators:  %s (from the driver (%s): it lists this process on them)\n",
                        *str(j, "accelerators") ? str(j, "accelerators") : "none",
                        esc(str(j, "accelerator_variable"), e3, sizeof e3));
        else
                fprintf(f, "  accelerators:  %s (source: %s%s%s)\n", *str(j, "accelerators") ? str(j, "accelerators") : "none",
                        str(j, "accelerator_source"), *str(j, "accelerator_variable") ? ", " : "",
                        esc(str(j, "accelerator_variable"), e3, sizeof e3));
        if (*str(j, "binding")) {
                fprintf(f, "  binding:       %s (%s)\n", binding_text(str(j, "binding")), esc(str(j, "binding_reason"), e1, sizeof e1));
                if (*str(j, "engine_report"))
                        fprintf(f, "                 %s\n", esc(str(j, "engine_report"), e1, sizeof e1));
        }
        if (json_object_object_get_ex(j, "rank", &v) && json_object_get_int(v) >= 0) {
                json_object *refused;
                fprintf(f, "  rank:          %d%s\n", json_object_get_int(v),
                        json_object_object_get_ex(j, "rank_refused", &refused) && json_object_get_boolean(refused)
                                ? " (not used as a device index: the visible-devices list is unknown)"
                                : "");
        }
        if (*str(j, "environment")) {
                fprintf(f, "  environment:   %s", str(j, "environment"));
                if (json_object_object_get_ex(j, "attributed_before_restart", &v) && json_object_get_boolean(v))
                        fprintf(f, " (attributed before the restart (from %s): what npu-tuned captured%s%s before it "
                                   "restarted, kept in its state directory)",
                                str(j, "accelerator_source"), *str(j, "environment_from_pid") ? " from pid " : " at its exec",
                                str(j, "environment_from_pid"));
                else if (*str(j, "environment_from_pid"))
                        fprintf(f, " (its launcher's, as pid %s holds it: an ancestor, or a child of the launcher "
                                   "that kept it; its own being unusable)",
                                str(j, "environment_from_pid"));
                else if (!streq(str(j, "environment"), "read") && !streq(str(j, "accelerator_source"), "driver"))
                        fprintf(f, " (and no launcher's environment stands in: npu-tuned does not guess its devices)");
                fprintf(f, "\n");
        }
        fprintf(f, "  action:        %s\n", str(j, "action"));
        if (streq(str(j, "action"), "place")) {
                fprintf(f, "  CPU pool:      %s\n", or_dash(str(j, "pool")));
                if (json_object_object_get_ex(j, "roles", &roles))
                        for (tune_role r = 0; r < _TUNE_ROLE_MAX; r++)
                                fprintf(f, "  %-14s %s\n", tune_role_to_string(r), or_dash(str(roles, tune_role_to_string(r))));
                fprintf(f, "  memory nodes:  %s\n", *str(j, "mem_nodes") ? str(j, "mem_nodes") : "left where it is");
                if (json_object_object_get_ex(j, "locality_pct", &v) && v)
                        fprintf(f, "  locality:      %.1f%% of its memory on its memory node(s)\n", json_object_get_double(v));
        }
        fprintf(f, "  why:\n");
        if (json_object_object_get_ex(j, "reasons", &reasons))
                for (size_t i = 0; i < json_object_array_length(reasons); i++)
                        fprintf(f, "    - %s\n", esc(json_object_get_string(json_object_array_get_idx(reasons, i)), e1,
                                                        sizeof e1));
}
