/* SPDX-License-Identifier: GPL-2.0-only */
/* npu-tunectl status: the daemon's state, PID, uptime, last reload, policy and counters,
 * from its properties and, for the PID, from the bus driver. */
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus-names.h"
#include "explain-json.h"
#include "npu-tuned/macro.h"
#include "npu-tuned/proc.h"
#include "tunectl.h"

/* How many elements an array property of structs of type element has. */
static int count_items(const char *name, const char *element, unsigned *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        char type[32];
        int r;

        snprintf(type, sizeof type, "a%s", element);
        if ((r = get_property(name, type, &m)) != EXIT_OK)
                return r;
        *ret = 0;
        if (sd_bus_message_enter_container(m, 'a', element) >= 0)
                while (sd_bus_message_skip(m, element) > 0)
                        (*ret)++;
        return EXIT_OK;
}

/* A property that an older daemon may not have: false when it could not be read. */
bool get_optional(sd_bus_message **keep, const char *name, const char *type, ...) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        va_list ap;
        int r;

        *keep = sd_bus_message_unref(*keep);
        r = sd_bus_get_property(bus, NPU_BUS_NAME, NPU_BUS_PATH, NPU_BUS_INTERFACE, name, &e, keep, type);
        if (r < 0)
                return false;
        va_start(ap, type);
        r = sd_bus_message_readv(*keep, type, ap);
        va_end(ap);
        return r > 0;
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static void format_time(uint64_t usec, char *buf, size_t size) {
        time_t t = (time_t) (usec / 1000000);
        struct tm tm;
        if (!localtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S %Z", &tm) == 0)
                snprintf(buf, size, "@%llu", (unsigned long long) (usec / 1000000));
}

static void format_span(uint64_t sec, char *buf, size_t size) {
        if (sec >= 86400)
                snprintf(buf, size, "%llud %lluh %llumin", (unsigned long long) (sec / 86400),
                         (unsigned long long) (sec % 86400 / 3600), (unsigned long long) (sec % 3600 / 60));
        else if (sec >= 3600)
                snprintf(buf, size, "%lluh %llumin", (unsigned long long) (sec / 3600), (unsigned long long) (sec % 3600 / 60));
        else if (sec >= 60)
                snprintf(buf, size, "%llumin %llus", (unsigned long long) (sec / 60), (unsigned long long) (sec % 60));
        else
                snprintf(buf, size, "%llus", (unsigned long long) sec);
}

/* The daemon's pid, from the bus driver (who owns the name), not from the daemon. 0: unknown. */
static uint32_t daemon_pid(void) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *c = NULL;
        pid_t pid;

        if (sd_bus_get_name_creds(bus, NPU_BUS_NAME, SD_BUS_CREDS_PID, &c) < 0 || sd_bus_creds_get_pid(c, &pid) < 0)
                return 0;
        return (uint32_t) pid;
}

int cmd_status(int argc, char **argv) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        const char *version, *state, *s;
        uint64_t events, resyncs, overruns, placements, migrations;
        unsigned managed, n_nodes = 0, n_accels = 0, n_knobs = 0, n_owned = 0, n_already = 0;
        _cleanup_(json_object_putp) json_object *files = json_object_new_array();
        int dry_run, r, reload_ok = 0;
        uint64_t started = 0, reload_usec = 0;
        unsigned warnings = 0;
        const char *reload_message = "";
        bool has_started, has_reload, has_warnings;
        uint32_t pid;
        char *v;

#define GET(name, type, ...)                                                     \
        do {                                                                     \
                m = sd_bus_message_unref(m);                                     \
                r = get_property(name, type, &m);                                \
                if (r != EXIT_OK)                                                \
                        return r;                                                \
                r = sd_bus_message_read(m, type, __VA_ARGS__);                   \
                if (r < 0)                                                       \
                        return bad_reply(r);                                     \
        } while (0)
        GET("Version", "s", &v);
        version = strdupa(v);
        GET("State", "s", &v);
        state = strdupa(v);
        GET("DryRun", "b", &dry_run);
        GET("ManagedProcesses", "u", &managed);
        GET("Stats", "(ttttt)", &events, &resyncs, &overruns, &placements, &migrations);
#undef GET
        m = sd_bus_message_unref(m);
        has_started = get_optional(&m, "StartedAt", "t", &started) && started > 0;
        has_reload = get_optional(&m, "LastReload", "(tbs)", &reload_usec, &reload_ok, &v);
        if (has_reload)
                reload_message = strdupa(v);
        has_warnings = get_optional(&m, "PolicyWarnings", "u", &warnings);
        m = sd_bus_message_unref(m);
        pid = daemon_pid();
        if ((r = get_property("PolicyFiles", "as", &m)) != EXIT_OK)
                return r;
        if (sd_bus_message_enter_container(m, 'a', "s") >= 0)
                while (sd_bus_message_read(m, "s", &s) > 0)
                        json_object_array_add(files, json_object_new_string(s));
        if ((r = count_items("Nodes", "(istt)", &n_nodes)) != EXIT_OK ||
            (r = count_items("Accelerators", "(sisis)", &n_accels)) != EXIT_OK)
                return r;
        m = sd_bus_message_unref(m);
        if ((r = get_property("Knobs", "a(ssssss)", &m)) != EXIT_OK)
                return r;
        if (sd_bus_message_enter_container(m, 'a', "(ssssss)") >= 0) {
                const char *id, *path, *orig, *applied, *status, *note;
                while (sd_bus_message_read(m, "(ssssss)", &id, &path, &orig, &applied, &status, &note) > 0) {
                        n_knobs++;
                        if (streq(status, "applied") || streq(status, "changed-by-other"))
                                n_owned++;
                        else if (streq(status, "already"))
                                n_already++;
                }
        }
        if (arg.json) {
                json_object *j = json_object_new_object();
                json_object_object_add(j, "version", json_object_new_string(version));
                json_object_object_add(j, "state", json_object_new_string(state));
                json_object_object_add(j, "pid", pid ? json_object_new_int64(pid) : NULL);
                json_object_object_add(j, "started_at_usec", has_started ? json_object_new_uint64(started) : NULL);
                json_object_object_add(j, "uptime_sec",
                                       has_started ? json_object_new_uint64((now_usec() - started) / 1000000) : NULL);
                if (has_reload && reload_usec > 0) {
                        json_object *lr = json_object_new_object();
                        json_object_object_add(lr, "time_usec", json_object_new_uint64(reload_usec));
                        json_object_object_add(lr, "ok", json_object_new_boolean(reload_ok));
                        json_object_object_add(lr, "message", json_object_new_string(reload_message));
                        json_object_object_add(j, "last_reload", lr);
                } else
                        json_object_object_add(j, "last_reload", NULL);
                json_object_object_add(j, "policy_warnings", has_warnings ? json_object_new_int64(warnings) : NULL);
                json_object_object_add(j, "dry_run", json_object_new_boolean(dry_run));
                json_object_object_add(j, "policy_files", TAKE_PTR(files));
                json_object_object_add(j, "nodes", json_object_new_int((int) n_nodes));
                json_object_object_add(j, "accelerators", json_object_new_int((int) n_accels));
                json_object_object_add(j, "managed_processes", json_object_new_int((int) managed));
                json_object_object_add(j, "knobs", json_object_new_int((int) n_knobs));
                json_object_object_add(j, "knobs_owned", json_object_new_int((int) n_owned));
                json_object_object_add(j, "knobs_already", json_object_new_int((int) n_already));
                json_object *st = json_object_new_object();
                json_object_object_add(st, "events", json_object_new_uint64(events));
                json_object_object_add(st, "resyncs", json_object_new_uint64(resyncs));
                json_object_object_add(st, "overruns", json_object_new_uint64(overruns));
                json_object_object_add(st, "placements", json_object_new_uint64(placements));
                json_object_object_add(st, "migrations", json_object_new_uint64(migrations));
                json_object_object_add(j, "stats", st);
                print_json(j);
                json_object_put(j);
                return EXIT_OK;
        }
        printf("npu-tuned %s on the %s bus\n", version, bus_name());
        printf("       State: %s%s%s\n", arg.color && !streq(state, "running") ? "\033[1m" : "", state,
               arg.color && !streq(state, "running") ? "\033[0m" : "");
        if (pid)
                printf("         PID: %u\n", pid);
        if (has_started) {
                char when[64], span[64];
                uint64_t now = now_usec();
                format_time(started, when, sizeof when);
                format_span(now > started ? (now - started) / 1000000 : 0, span, sizeof span);
                printf("      Uptime: %s (since %s)\n", span, when);
        }
        if (has_reload && reload_usec == 0)
                printf(" Last reload: none since the start\n");
        else if (has_reload) {
                char when[64];
                _cleanup_free_ char *msg = NULL;
                format_time(reload_usec, when, sizeof when);
                if (tune_escape_utf8(reload_message, false, &msg) < 0)
                        return EXIT_FAILED;
                printf(" Last reload: %s, %s: %s\n", when, reload_ok ? "taken" : "refused", msg);
        }
        if (has_warnings)
                printf("    Warnings: %u policy warning(s)%s\n", warnings,
                       warnings ? " (npu-tunectl check-policy FILE... lists them)" : "");
        if (json_object_array_length(files) == 0)
                printf("      Policy: the embedded default\n");
        for (size_t i = 0; i < json_object_array_length(files); i++)
                printf("%s%s\n", i == 0 ? "      Policy: " : "              ",
                       json_object_get_string(json_object_array_get_idx(files, i)));
        printf("    Topology: %u NUMA node(s), %u accelerator(s)\n", n_nodes, n_accels);
        printf("   Processes: %u managed (%llu placement(s), %llu memory migration(s))\n", managed,
               (unsigned long long) placements, (unsigned long long) migrations);
        printf("  Host knobs: %u set by npu-tuned, %u already right, %u left alone (npu-tunectl knobs)\n", n_owned,
               n_already, n_knobs - n_owned - n_already);
        printf("      Events: %llu process event(s), %llu overrun(s), %llu resync(s)\n", (unsigned long long) events,
               (unsigned long long) overruns, (unsigned long long) resyncs);
        return EXIT_OK;
}

