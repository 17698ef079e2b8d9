/* SPDX-License-Identifier: GPL-2.0-only */
/* npu-tunectl monitor: the daemon's signals as they come, one line each (one JSON object a
 * line with --json), until SIGINT or SIGTERM, or until the daemon leaves the bus. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus-names.h"
#include "explain-json.h"
#include "npu-tuned/macro.h"
#include "npu-tuned/proc.h"
#include "tunectl.h"

static volatile sig_atomic_t stop;

static void on_stop(int sig) {
        stop = 1;
}

/* Text that came from the bus can hold what a process or a file chose: escaped for a
 * terminal (docs/trust.md). */
static void put_escaped(const char *s) {
        _cleanup_free_ char *e = NULL;
        fputs(tune_escape_utf8(s, false, &e) < 0 ? "?" : e, stdout);
}

static void text_line(const char *member, const char *fmt, const char *const *values, unsigned n) {
        char when[32];
        time_t t = time(NULL);
        struct tm tm;
        unsigned v = 0;

        if (!localtime_r(&t, &tm) || strftime(when, sizeof when, "%H:%M:%S", &tm) == 0)
                when[0] = 0;
        printf("%s %s", when, member);
        /* fmt: literal text, each %s a value in turn (escaped). */
        for (const char *p = fmt; *p; p++)
                if (p[0] == '%' && p[1] == 's' && v < n) {
                        put_escaped(values[v++]);
                        p++;
                } else
                        putchar(*p);
        putchar('\n');
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(json_object_putp) json_object *j = json_object_new_object();
        const char *member = sd_bus_message_get_member(m);
        const char *s1 = "", *s2 = "", *s3 = "", *s4 = "";
        char pid_s[16] = "";
        uint32_t pid = 0;
        uint64_t start = 0;
        int ok = 0, r;

        if (!member)
                return 0;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        json_object_object_add(j, "time_usec",
                               json_object_new_uint64((uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000));
        json_object_object_add(j, "event", json_object_new_string(member));
        if (streq(member, "ProcessPlaced")) {
                const char *rule, *accels, *cpus, *mem;
                r = sd_bus_message_read(m, "utssss", &pid, &start, &rule, &accels, &cpus, &mem);
                if (r < 0)
                        return 0;
                snprintf(pid_s, sizeof pid_s, "%u", pid);
                json_object_object_add(j, "pid", json_object_new_int64(pid));
                json_object_object_add(j, "start_time", json_object_new_uint64(start));
                json_object_object_add(j, "rule", json_object_new_string(rule));
                json_object_object_add(j, "accelerators", json_object_new_string(accels));
                json_object_object_add(j, "cpus", json_object_new_string(cpus));
                json_object_object_add(j, "memory_nodes", json_object_new_string(mem));
                if (!arg.json)
                        text_line(member, " pid %s rule %s accelerators %s cpus %s memory nodes %s",
                                  (const char *const[]) { pid_s, rule, *accels ? accels : "-", cpus, *mem ? mem : "-" }, 5);
        } else if (streq(member, "ProcessReleased")) {
                r = sd_bus_message_read(m, "uts", &pid, &start, &s1);
                if (r < 0)
                        return 0;
                snprintf(pid_s, sizeof pid_s, "%u", pid);
                json_object_object_add(j, "pid", json_object_new_int64(pid));
                json_object_object_add(j, "start_time", json_object_new_uint64(start));
                json_object_object_add(j, "reason", json_object_new_string(s1));
                if (!arg.json)
                        text_line(member, " pid %s: %s", (const char *const[]) { pid_s, s1 }, 2);
        } else if (streq(member, "KnobChanged")) {
                r = sd_bus_message_read(m, "sss", &s1, &s2, &s3);
                if (r < 0)
                        return 0;
                json_object_object_add(j, "name", json_object_new_string(s1));
                json_object_object_add(j, "path", json_object_new_string(s2));
                json_object_object_add(j, "value", json_object_new_string(s3));
                if (!arg.json)
                        text_line(member, " %s = %s (%s)", (const char *const[]) { s1, s3, s2 }, 3);
        } else if (streq(member, "KnobDrift")) {
                r = sd_bus_message_read(m, "ssss", &s1, &s2, &s3, &s4);
                if (r < 0)
                        return 0;
                json_object_object_add(j, "name", json_object_new_string(s1));
                json_object_object_add(j, "path", json_object_new_string(s2));
                json_object_object_add(j, "expected", json_object_new_string(s3));
                json_object_object_add(j, "found", json_object_new_string(s4));
                if (!arg.json)
                        text_line(member, " %s: expected %s, found %s (%s)", (const char *const[]) { s1, s3, s4, s2 }, 4);
        } else if (streq(member, "PolicyReloaded")) {
                r = sd_bus_message_read(m, "bs", &ok, &s1);
                if (r < 0)
                        return 0;
                json_object_object_add(j, "ok", json_object_new_boolean(ok));
                json_object_object_add(j, "message", json_object_new_string(s1));
                if (!arg.json)
                        text_line(member, ok ? " taken: %s" : " refused: %s", (const char *const[]) { s1 }, 1);
        } else
                return 0; /* a signal of a newer daemon: not known here */
        if (arg.json)
                puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        /* One line as it happens, also into a pipe. */
        fflush(stdout);
        return 0;
}

/* The name's owner is gone (the daemon stopped): a monitor of nothing would wait forever. */
static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *name, *old, *new;

        if (sd_bus_message_read(m, "sss", &name, &old, &new) >= 0 && streq(name, NPU_BUS_NAME) && !*new)
                stop = 2;
        return 0;
}

int cmd_monitor(int argc, char **argv) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        struct sigaction sa = { .sa_handler = on_stop }; /* no SA_RESTART: the wait returns -EINTR */
        int r;

        /* Subscribed first, then checked that the daemon is there: no event between. */
        r = sd_bus_match_signal(bus, NULL, NPU_BUS_NAME, NPU_BUS_PATH, NPU_BUS_INTERFACE, NULL, on_signal, NULL);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        "NameOwnerChanged", on_owner_changed, NULL);
        if (r < 0)
                return tunectl_report("AddMatch", &e, r);
        if ((r = get_property("Version", "s", &m)) != EXIT_OK)
                return r;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        /* On stderr also with --json: a script sees when it may make something happen. */
        fprintf(stderr, "Monitoring npu-tuned on the %s bus (Ctrl-C stops).\n", bus_name());
        while (!stop) {
                r = sd_bus_process(bus, NULL);
                if (r > 0)
                        continue;
                if (r >= 0)
                        r = sd_bus_wait(bus, UINT64_MAX);
                if (r == -EINTR)
                        continue;
                if (r < 0)
                        return tunectl_report("monitor", NULL, r);
        }
        if (stop == 2) {
                fprintf(stderr, "npu-tunectl monitor: npu-tuned left the %s bus.\n", bus_name());
                return EXIT_NOT_RUNNING;
        }
        return EXIT_OK;
}
