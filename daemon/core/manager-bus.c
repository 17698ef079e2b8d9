/* SPDX-License-Identifier: GPL-2.0-only */
/* org.nputuned1.Manager on sd-bus: a static vtable over the daemon's state. Reading is open
 * to every user; Reload, Rescan and Release are root's only, enforced twice: by the bus
 * policy (units/org.nputuned1.conf) and here, by the sender's effective uid, so that a bus
 * without that policy (the session bus, a direct connection) is no way around it. */
#include <errno.h>
#include <stdarg.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "config.h"
#include "knobs.h"
#include "log.h"
#include "manager.h"
#include "bus-names.h"
#include "explain-json.h"
#include "manager-bus.h"
#include "npu-tuned/policy.h"
#include "npu-tuned/thread-role.h"
#include "placement.h"
#include "print-topology.h"
#include "released-list.h"
#include "reaction-time.h"
#include "watcher.h"

/* Free memory for Nodes and GetTopology(), read at most once a second: any user may ask,
 * and asking in a loop must not make the daemon read /proc and sysfs in a loop. */
static void refresh_memory(Manager *m) {
        uint64_t now;

        if (sd_event_now(m->event, CLOCK_MONOTONIC, &now) < 0 ||
            (m->memory_read_usec && now < m->memory_read_usec + 1000000))
                return;
        m->memory_read_usec = now;
        (void) tune_topology_refresh_memory(m->ctx, m->topology);
}

static const char *manager_state(const Manager *m) {
        const tune_knob_plan *plan = knobs_get_plan(m->knobs);

        if (m->reloading)
                return "reloading";
        if (manager_dry_run(m))
                return "dry-run";
        /* A knob the kernel refused, or knobs left alone for want of a journal. */
        for (unsigned i = 0; i < plan->n; i++) {
                knob_status s = knobs_item_status(m->knobs, &plan->items[i], NULL);
                if (s == KNOB_STATUS_REFUSED || s == KNOB_STATUS_PLANNED)
                        return "degraded";
        }
        return "running";
}

/* ---- properties ---- */

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", PACKAGE_VERSION);
}

static int property_get_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", manager_state(userdata));
}

static int property_get_policy_files(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r = sd_bus_message_open_container(reply, 'a', "s");

        /* Empty: the embedded default policy. */
        for (unsigned i = 0; r >= 0 && m->policy && !m->policy->embedded && i < m->policy->n_files; i++)
                r = sd_bus_message_append(reply, "s", m->policy->files[i]);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int property_get_dry_run(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "b", (int) manager_dry_run(userdata));
}

static int property_get_nodes(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        refresh_memory(m);
        r = sd_bus_message_open_container(reply, 'a', "(istt)");
        for (unsigned i = 0; r >= 0 && i < m->topology->n_nodes; i++) {
                const tune_node *n = &m->topology->nodes[i];
                _cleanup_free_ char *cpus = NULL;
                r = tune_cpuset_format_list(&n->cpus, &cpus);
                if (r >= 0)
                        r = sd_bus_message_append(reply, "(istt)", (int32_t) n->id, cpus, n->mem_total_kib, n->mem_free_kib);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int property_get_accelerators(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r = sd_bus_message_open_container(reply, 'a', "(sisis)");

        for (unsigned i = 0; r >= 0 && i < m->accels.n; i++) {
                const tune_accel *a = &m->accels.items[i];
                r = sd_bus_message_append(reply, "(sisis)", a->kind, (int32_t) a->index, a->pci, (int32_t) a->numa_node,
                                          a->dev_path);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static const char *or_empty(const char *s) {
        return s ? s : "";
}

static int property_get_knobs(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const tune_knob_plan *plan = knobs_get_plan(m->knobs);
        int r = sd_bus_message_open_container(reply, 'a', "(ssssss)");

        for (unsigned i = 0; r >= 0 && i < plan->n; i++) {
                const tune_knob_item *it = &plan->items[i];
                const char *note;
                knob_status status = knobs_item_status(m->knobs, it, &note);
                /* original: what a restore writes back (before apply: the value found). */
                r = sd_bus_message_append(reply, "(ssssss)", it->id, or_empty(it->path),
                                          or_empty(it->original ? it->original : it->current), or_empty(it->desired),
                                          knob_status_to_string(status), note);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int property_get_managed(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        watcher_stats ws = {};

        if (m->watcher)
                watcher_get_stats(m->watcher, &ws);
        return sd_bus_message_append(reply, "u", ws.managed);
}

static int property_get_stats(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        watcher_stats ws = {};
        placement_stats ps = {};

        if (m->watcher)
                watcher_get_stats(m->watcher, &ws);
        if (m->placement)
                placement_get_stats(m->placement, &ps);
        return sd_bus_message_append(reply, "(ttttt)", ws.events, ws.resyncs, ws.overruns, ps.placements, ps.migrations);
}

/* CLOCK_REALTIME in usec; StartedAt is const, the others change on a reload, which
 * PolicyReloaded signals: not PropertiesChanged as well. */
static int property_get_started_at(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "t", ((Manager *) userdata)->started_at_usec);
}

/* (when, ok, message); when 0: no reload since the start. */
static int property_get_last_reload(sd_bus *bus, const char *path, const char *interface, const char *property,
                                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "(tbs)", m->last_reload_usec, (int) m->last_reload_ok,
                                     or_empty(m->last_reload_message));
}

static int property_get_policy_warnings(sd_bus *bus, const char *path, const char *interface, const char *property,
                                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "u", ((Manager *) userdata)->policy_warnings);
}

/* Per event kind: name, reactions, p50 and p99 (upper bounds from the histogram, at most
 * 1/8 above the true value) and the largest, in ns; then the histogram itself, its
 * non-empty buckets only, each as (limit, count): count reactions below limit ns and at or
 * above the previous bucket's limit (daemon/placement/reaction-time.h). ReactionTimes: from the
 * kernel's event; HandlingTimes: from the start of npu-tuned's handling of it. */
static int append_reaction_hists(sd_bus_message *reply, const reaction_hist *hists) {
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(stttta(tt))");
        for (int k = 0; r >= 0 && k < _REACTION_KIND_MAX; k++) {
                const reaction_hist *h = &hists[k];
                r = sd_bus_message_open_container(reply, 'r', "stttta(tt)");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "stttt", reaction_kind_to_string((reaction_kind) k), h->count,
                                                  reaction_hist_quantile(h, 0.5), reaction_hist_quantile(h, 0.99),
                                                  h->max_ns);
                if (r >= 0)
                        r = sd_bus_message_open_container(reply, 'a', "(tt)");
                for (unsigned i = 0; r >= 0 && i < REACTION_BUCKETS; i++)
                        if (h->buckets[i] > 0)
                                r = sd_bus_message_append(reply, "(tt)", reaction_bucket_limit(i), h->buckets[i]);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

static const reaction_stats *manager_reactions(const Manager *m) {
        static const reaction_stats none = {};
        return m->placement ? placement_get_reactions(m->placement) : &none;
}

static int property_get_reaction_times(sd_bus *bus, const char *path, const char *interface, const char *property,
                                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return append_reaction_hists(reply, manager_reactions(userdata)->kinds);
}

static int property_get_handling_times(sd_bus *bus, const char *path, const char *interface, const char *property,
                                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return append_reaction_hists(reply, manager_reactions(userdata)->handling);
}

/* ---- methods ---- */

/* Root only, by the sender's effective uid as the bus driver and /proc report it. */
static int check_privileged(sd_bus_message *msg, const char *what, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t euid;
        int r;

        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID | SD_BUS_CREDS_AUGMENT, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &euid);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "%s needs root, and the caller's user could not be determined: %s", what,
                                         strerror(-r));
        if (euid != 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "%s needs root (the caller is uid %u).", what,
                                         (unsigned) euid);
        return 0;
}

/* Who calls, and what /proc would show them of other users' processes (docs/trust.md):
 * root sees everything; anyone sees their own processes whole; of another user's, a
 * caller sees what /proc shows everyone (its pid, comm, CPUs), nothing taken from its
 * environment or its open files, and nothing at all when /proc hides it (hidepid=). */
typedef struct caller {
        uid_t euid;
        bool root;
        bool others_hidden; /* /proc is mounted hidepid= and the caller is not in its gid= */
} caller;

static void caller_of(Manager *m, sd_bus_message *msg, caller *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        tune_proc_visibility v;
        const gid_t *gids = NULL;
        gid_t egid;
        int n;

        /* Unknown: the least is shown. */
        *ret = (caller) { .euid = (uid_t) -1, .others_hidden = true };
        if (sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID | SD_BUS_CREDS_EGID | SD_BUS_CREDS_SUPPLEMENTARY_GIDS |
                                                   SD_BUS_CREDS_AUGMENT,
                                      &creds) < 0 ||
            sd_bus_creds_get_euid(creds, &ret->euid) < 0)
                return;
        ret->root = ret->euid == 0;
        if (ret->root || tune_proc_read_visibility(m->ctx, &v) < 0)
                return;
        ret->others_hidden = v.hidepid != TUNE_PROC_HIDEPID_OFF;
        if (!ret->others_hidden || !v.has_gid)
                return;
        if (sd_bus_creds_get_egid(creds, &egid) >= 0 && egid == v.gid)
                ret->others_hidden = false;
        n = sd_bus_creds_get_supplementary_gids(creds, &gids);
        for (int i = 0; i < n && ret->others_hidden; i++)
                if (gids[i] == v.gid)
                        ret->others_hidden = false;
}

static bool caller_owns(const caller *c, uid_t owner) {
        return c->root || c->euid == owner;
}

static int append_roles(sd_bus_message *reply, const tune_plan *pl) {
        int r = sd_bus_message_open_container(reply, 'a', "(ss)");

        for (tune_role role = 0; r >= 0 && pl && pl->action == TUNE_PLAN_PLACE && role < _TUNE_ROLE_MAX; role++) {
                _cleanup_free_ char *cpus = NULL;
                r = tune_cpuset_format_list(tune_plan_role_cpus(pl, role), &cpus);
                if (r >= 0)
                        r = sd_bus_message_append(reply, "(ss)", tune_role_to_string(role), cpus);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int append_process(sd_bus_message *reply, Manager *m, const managed_process *mp, const caller *c) {
        const tune_plan *pl = m->placement ? placement_get(m->placement, mp) : NULL;
        _cleanup_free_ char *accels = NULL, *mem = NULL, *comm = NULL;
        int r;

        /* The comm is the process's own choice: escaped, so that one name that is not
         * UTF-8 cannot fail the reply for every caller (docs/trust.md). */
        r = tune_escape_utf8(mp->comm, true, &comm);
        /* Accelerators named by the rule are the policy's; the others were read from the
         * process's environment or its open files, which /proc shows its owner only. */
        bool shown = caller_owns(c, mp->uid) || mp->attribution.source == TUNE_ATTRIBUTION_RULE ||
                     mp->attribution.source == TUNE_ATTRIBUTION_NONE;
        if (r >= 0 && shown)
                r = tune_attribution_format_accels(&mp->attribution, &accels);
        if (r >= 0 && pl)
                r = tune_cpuset_format_list(&pl->mem_nodes, &mem);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'r', "utssssa(ss)sd");
        if (r >= 0)
                r = sd_bus_message_append(reply, "utssss", (uint32_t) mp->pid, mp->start_time, comm, mp->rule->name,
                                          or_empty(accels),
                                          shown ? tune_attribution_source_to_string(mp->attribution.source) : "-");
        if (r >= 0)
                r = append_roles(reply, pl);
        if (r >= 0)
                r = sd_bus_message_append(reply, "sd", or_empty(mem), placement_locality(mp));
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int method_list_processes(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        Manager *m = userdata;
        size_t n = 0;
        caller c;
        int r;

        caller_of(m, msg, &c);
        if (m->watcher) {
                r = watcher_managed_pids(m->watcher, &pids, &n);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(utssssa(ss)sd)");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const managed_process *mp = watcher_find(m->watcher, pids[i]);
                if (mp && (!c.others_hidden || caller_owns(&c, mp->uid)))
                        r = append_process(reply, m, mp, &c);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* The pid argument of Explain() and Release(): a process id, or InvalidArgs. */
static int read_pid(sd_bus_message *msg, uint32_t *ret, sd_bus_error *error) {
        int r = sd_bus_message_read(msg, "u", ret);

        if (r < 0)
                return r;
        if (*ret == 0 || *ret > 4194304)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Not a process id: %u", *ret);
        return 0;
}

/* The explanation as JSON only, the one form npu-tuned --explain --json, npu-tunectl and
 * busctl users read: the fields are in it, not beside it again. */
static int method_explain(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(json_object_putp) json_object *j = NULL;
        Manager *m = userdata;
        uint32_t pid;
        caller c;
        int r;

        r = read_pid(msg, &pid, error);
        if (r < 0)
                return r;
        caller_of(m, msg, &c);
        r = manager_explain(m, (pid_t) pid, c.root ? 0 : c.euid, &j);
        if (r == -ESRCH)
                return sd_bus_error_setf(error, NPU_BUS_ERROR_NO_SUCH_PROCESS, "No process %u.", pid);
        if (r == -EACCES)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "Process %u is not yours: npu-tuned explains a process to root and to its "
                                         "owner only.",
                                         pid);
        if (r >= 0)
                r = explain_escape_strings(j);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "s", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
}

static int method_get_topology(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        json_object *j;
        int r;

        refresh_memory(m);
        j = topology_to_json(m->topology, &m->accels);
        if (!j)
                return -ENOMEM;
        r = sd_bus_reply_method_return(msg, "s", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
        json_object_put(j);
        return r;
}

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_free_ char *message = NULL;
        Manager *m = userdata;
        int r;

        r = check_privileged(msg, "Reload()", error);
        if (r < 0)
                return r;
        log_info("Reloading the policy (D-Bus Reload() from %s).", or_empty(sd_bus_message_get_sender(msg)));
        r = manager_reload_policy(m, &message);
        /* A message: the new policy was refused and the old one kept. Without one it was
         * taken, and what could not be applied is in the log and the Knobs property. */
        if (r < 0 && message && *message)
                return sd_bus_error_setf(error, NPU_BUS_ERROR_POLICY_INVALID, "%s", message);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_rescan(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        r = check_privileged(msg, "Rescan()", error);
        if (r < 0)
                return r;
        if (!m->watcher)
                return sd_bus_error_setf(error, NPU_BUS_ERROR_NOT_AVAILABLE,
                                         "The process watcher is off (--root or --no-watch): nothing to rescan.");
        log_info("Rescanning processes (D-Bus Rescan()).");
        watcher_rescan(m->watcher);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_release(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        uint32_t pid;
        int r;

        r = check_privileged(msg, "Release()", error);
        if (r < 0)
                return r;
        r = read_pid(msg, &pid, error);
        if (r < 0)
                return r;
        if (!m->watcher)
                return sd_bus_error_setf(error, NPU_BUS_ERROR_NOT_AVAILABLE,
                                         "The process watcher is off (--root or --no-watch): no process is managed.");
        if (!watcher_find(m->watcher, (pid_t) pid)) {
                tune_proc_stat st;
                if (tune_proc_read_stat(m->ctx, (pid_t) pid, &st) < 0)
                        return sd_bus_error_setf(error, NPU_BUS_ERROR_NO_SUCH_PROCESS, "No process %u.", pid);
                return sd_bus_error_setf(error, NPU_BUS_ERROR_NOT_MANAGED, "Process %u is not managed by npu-tuned.", pid);
        }
        log_info("Releasing pid %u (D-Bus Release()): its original CPU affinity back, not managed until it execs again.",
                 pid);
        uint64_t start_time = watcher_find(m->watcher, (pid_t) pid)->start_time;
        r = watcher_release_pid(m->watcher, (pid_t) pid);
        if (r < 0)
                return sd_bus_error_setf(error, NPU_BUS_ERROR_NOT_MANAGED, "Process %u is not managed by npu-tuned.", pid);
        /* Kept across a restart of the daemon, which is no exec of the process. */
        if (state_dir_locked(m->state_dir)) {
                r = released_list_add(state_dir_path(m->state_dir), (pid_t) pid, start_time);
                if (r < 0)
                        log_warning_errno(r, "Failed to keep pid %u's release in %s (a restart may manage it again): %m",
                                          pid, state_dir_path(m->state_dir));
        }
        return sd_bus_reply_method_return(msg, NULL);
}

/* Read-only methods are SD_BUS_VTABLE_UNPRIVILEGED; the others are left to sd-bus's own
 * check on the system bus (CAP_SYS_ADMIN) and to check_privileged() on any bus. */
const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("State", "s", property_get_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("PolicyFiles", "as", property_get_policy_files, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("DryRun", "b", property_get_dry_run, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        /* Free memory changes all the time: read, not signalled. */
        SD_BUS_PROPERTY("Nodes", "a(istt)", property_get_nodes, 0, 0),
        SD_BUS_PROPERTY("Accelerators", "a(sisis)", property_get_accelerators, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Knobs", "a(ssssss)", property_get_knobs, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ManagedProcesses", "u", property_get_managed, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        /* Counts every process event: read, not signalled. */
        SD_BUS_PROPERTY("Stats", "(ttttt)", property_get_stats, 0, 0),
        SD_BUS_PROPERTY("ReactionTimes", "a(stttta(tt))", property_get_reaction_times, 0, 0),
        SD_BUS_PROPERTY("HandlingTimes", "a(stttta(tt))", property_get_handling_times, 0, 0),
        SD_BUS_PROPERTY("StartedAt", "t", property_get_started_at, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("LastReload", "(tbs)", property_get_last_reload, 0, 0),
        SD_BUS_PROPERTY("PolicyWarnings", "u", property_get_policy_warnings, 0, 0),
        /* _WITH_NAMES where there is no argument: libsystemd's headers before 249 drop the
         * result's name after SD_BUS_NO_ARGS (systemd 247 on Debian 11, openEuler 22.03). */
        SD_BUS_METHOD_WITH_NAMES("ListProcesses", "", "", "a(utssssa(ss)sd)", SD_BUS_PARAM(processes),
                                 method_list_processes, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Explain", SD_BUS_ARGS("u", pid), SD_BUS_RESULT("s", json), method_explain,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("GetTopology", "", "", "s", SD_BUS_PARAM(json), method_get_topology,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Reload", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_reload, 0),
        SD_BUS_METHOD_WITH_ARGS("Rescan", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_rescan, 0),
        SD_BUS_METHOD_WITH_ARGS("Release", SD_BUS_ARGS("u", pid), SD_BUS_NO_RESULT, method_release, 0),
        SD_BUS_SIGNAL_WITH_ARGS("ProcessPlaced",
                                SD_BUS_ARGS("u", pid, "t", start_time, "s", rule, "s", accelerators, "s", cpus, "s",
                                            memory_nodes),
                                0),
        SD_BUS_SIGNAL_WITH_ARGS("ProcessReleased", SD_BUS_ARGS("u", pid, "t", start_time, "s", reason), 0),
        SD_BUS_SIGNAL_WITH_ARGS("KnobChanged", SD_BUS_ARGS("s", name, "s", path, "s", value), 0),
        SD_BUS_SIGNAL_WITH_ARGS("KnobDrift", SD_BUS_ARGS("s", name, "s", path, "s", expected, "s", found), 0),
        SD_BUS_SIGNAL_WITH_ARGS("PolicyReloaded", SD_BUS_ARGS("b", ok, "s", message), 0),
        SD_BUS_VTABLE_END,
};

