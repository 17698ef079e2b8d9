/* SPDX-License-Identifier: GPL-2.0-only */
/* npu-tunectl: ask the running npu-tuned (org.nputuned1 on the system bus) what it does,
 * and tell it to reload, rescan or release a process. `topology` and `check-policy` also
 * work without a daemon. Exit codes: see EXIT_* below and man npu-tunectl(1). */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "config.h"
#include "explain-json.h"
#include "bus-names.h"
#include "npu-tuned/macro.h"
#include "options.h"
#include "policy-cli.h"
#include "npu-tuned/proc.h"
#include "print-topology.h"
#include "tunectl.h"

tunectl_args arg = { .bus = DAEMON_BUS_SYSTEM, .verb = "npu-tunectl", .root = "/", .state_dir = STATE_DIR };

const char *bus_name(void) {
        return arg.bus == DAEMON_BUS_SESSION ? "session" : "system";
}

/* ---- tables: aligned columns, the header bold on a terminal ---- */

#define MAX_COLUMNS 10

typedef struct Table {
        unsigned n_columns;
        char **cells; /* row-major, header first */
        unsigned n_cells;
} Table;

/* A cell's bytes may be another user's (a process's comm): control characters and bytes
 * that are not UTF-8 are shown as \xNN, never sent to the terminal (docs/trust.md). */
static void table_add(Table *t, const char *cell) {
        char **cells = realloc(t->cells, (t->n_cells + 1) * sizeof *cells);
        if (!cells)
                exit(EXIT_FAILED);
        t->cells = cells;
        if (tune_escape_utf8(cell, false, &t->cells[t->n_cells]) < 0)
                exit(EXIT_FAILED);
        t->n_cells++;
}

static void table_addf(Table *t, const char *fmt, ...) _printf_(2, 3);
static void table_addf(Table *t, const char *fmt, ...) {
        char buf[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        table_add(t, buf);
}

static void table_print(Table *t) {
        size_t width[MAX_COLUMNS] = {};

        for (unsigned i = 0; i < t->n_cells; i++) {
                size_t l = strlen(t->cells[i] ? t->cells[i] : "");
                if (l > width[i % t->n_columns])
                        width[i % t->n_columns] = l;
        }
        for (unsigned i = 0; i < t->n_cells; i++) {
                unsigned c = i % t->n_columns;
                bool last = c == t->n_columns - 1, header = i < t->n_columns;
                if (header && arg.color)
                        fputs("\033[1m", stdout);
                if (last)
                        fputs(t->cells[i] ? t->cells[i] : "", stdout);
                else
                        printf("%-*s ", (int) width[c], t->cells[i] ? t->cells[i] : "");
                if (header && arg.color && last)
                        fputs("\033[0m", stdout);
                if (last)
                        putchar('\n');
        }
}

static void table_done(Table *t) {
        for (unsigned i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->cells);
}

void print_json(json_object *j) {
        const char *s = json_object_to_json_string_ext(
                j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);

        /* json-c prints an empty array as "[", a newline and "]": shown as []. A newline is
         * never inside a string (it is escaped there), so "[" followed by white space with a
         * newline in it and "]" is always such an array. */
        for (const char *p = s; *p; p++) {
                if (*p == '[') {
                        size_t n = strspn(p + 1, " \n");
                        if (p[1 + n] == ']' && memchr(p + 1, '\n', n)) {
                                fputs("[]", stdout);
                                p += n + 1;
                                continue;
                        }
                }
                putchar(*p);
        }
        putchar('\n');
}

/* A listing read with the outcome r: JSON with --json, else the table, or one line when
 * it has no rows. */
static int output(Table *t, json_object *all, int r, const char *empty) {
        if (r < 0) {
                table_done(t);
                json_object_put(all);
                return bad_reply(r);
        }
        if (arg.json)
                print_json(all);
        else if (t->n_cells <= t->n_columns)
                printf("%s\n", empty);
        else
                table_print(t);
        table_done(t);
        json_object_put(all);
        return EXIT_OK;
}

/* ---- the bus ---- */

sd_bus *bus;

/* The connection itself failed: sd-bus reports it as an errno, which it also puts in e as
 * a System.Error.E* name (so bus_client_error_is_absent(), which trusts e's name when it is
 * set, does not see it). A bus whose policy refuses this user closes the connection. */
static bool connection_lost(const sd_bus_error *e, int r) {
        /* Only sd-bus's own errno names: a D-Bus error such as UnknownProperty (an older
         * daemon) also maps to an errno (ENOENT), but came from a daemon that answered. */
        if (sd_bus_error_is_set(e) && !startswith_lit(e->name, "System.Error."))
                return false;
        int err = sd_bus_error_is_set(e) ? sd_bus_error_get_errno(e) : -r;
        return err == ENOTCONN || err == ECONNRESET || err == ECONNREFUSED || err == EPIPE || err == ENOENT ||
               err == ENOMEDIUM || err == EHOSTDOWN || err == ENXIO || err == ECONNABORTED;
}

bool unreachable(const sd_bus_error *e, int r) {
        return !bus || bus_client_error_is_absent(e, r) || connection_lost(e, r);
}

/* AccessDenied from the bus driver or the daemon, or EACCES/EPERM from sd-bus itself (its
 * check of privileged methods, System.Error.EPERM). */
static bool access_denied(const sd_bus_error *e, int r) {
        int err = sd_bus_error_is_set(e) ? sd_bus_error_get_errno(e) : -r;
        return sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED) || sd_bus_error_has_name(e, SD_BUS_ERROR_AUTH_FAILED) ||
               err == EACCES || err == EPERM;
}

/* Every failure of a call ends here: one line, and an exit code a script can act on. */
int tunectl_report(const char *what, const sd_bus_error *e, int r) {
        if (access_denied(e, r)) {
                /* The bus driver's own rejection ("Rejected send message, 2 matched rules;
                 * type=...") says nothing to a user: say what it means. */
                if (arg.privileged)
                        fprintf(stderr, "npu-tunectl %s: refused: it needs root\n", arg.verb);
                else if (sd_bus_error_is_set(e) && e->message && !strstr(e->message, "matched rules"))
                        fprintf(stderr, "npu-tunectl %s: refused: %s\n", arg.verb, e->message);
                else
                        fprintf(stderr, "npu-tunectl %s: refused by the %s bus's policy for %s\n", arg.verb, bus_name(),
                                NPU_BUS_NAME);
                return EXIT_DENIED;
        }
        if (bus_client_error_is_absent(e, r) && !connection_lost(e, r)) {
                fprintf(stderr, "npu-tunectl: npu-tuned is not running (nothing owns %s on the %s bus).\n", NPU_BUS_NAME,
                        bus_name());
                return EXIT_NOT_RUNNING;
        }
        if (unreachable(e, r)) {
                fprintf(stderr, "npu-tunectl: cannot reach npu-tuned: the %s bus closed or refused the connection "
                                "(its policy may not let this user in): %s\n",
                        bus_name(), strerror(sd_bus_error_is_set(e) ? sd_bus_error_get_errno(e) : -r));
                return EXIT_NOT_RUNNING;
        }
        /* "npu-tunectl status: Version: ..." names the property; "reload: Reload:" would not help. */
        if (strcasecmp(what, arg.verb) == 0)
                fprintf(stderr, "npu-tunectl %s: %s\n", arg.verb, sd_bus_error_is_set(e) ? e->message : strerror(-r));
        else
                fprintf(stderr, "npu-tunectl %s: %s: %s\n", arg.verb, what,
                        sd_bus_error_is_set(e) ? e->message : strerror(-r));
        /* A failure the daemon answered is a result too: scripts read it from stdout. */
        if (arg.json && sd_bus_error_is_set(e)) {
                _cleanup_(json_object_putp) json_object *j = json_object_new_object();
                json_object_object_add(j, "ok", json_object_new_boolean(false));
                json_object_object_add(j, "error", json_object_new_string(e->name));
                json_object_object_add(j, "message", json_object_new_string(e->message ? e->message : ""));
                print_json(j);
        }
        return EXIT_FAILED;
}

static int connect_bus(void) {
        int r = bus_client_open(arg.bus, &bus);
        if (r < 0) {
                fprintf(stderr, "npu-tunectl: npu-tuned is not running (no D-Bus %s bus: %s).\n", bus_name(), strerror(-r));
                return EXIT_NOT_RUNNING;
        }
        return EXIT_OK;
}

int get_property(const char *name, const char *type, sd_bus_message **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r = sd_bus_get_property(bus, NPU_BUS_NAME, NPU_BUS_PATH, NPU_BUS_INTERFACE, name, &e, ret, type);
        return r < 0 ? tunectl_report(name, &e, r) : EXIT_OK;
}

static int call(const char *method, sd_bus_message **ret, const char *types, ...) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, NPU_BUS_NAME, NPU_BUS_PATH, NPU_BUS_INTERFACE, method);
        if (r >= 0 && types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
        }
        if (r >= 0)
                r = sd_bus_call(bus, m, 0, &e, ret);
        return r < 0 ? tunectl_report(method, &e, r) : EXIT_OK;
}

int bad_reply(int r) {
        fprintf(stderr, "npu-tunectl: unexpected reply from npu-tuned: %s\n", strerror(-r));
        return EXIT_FAILED;
}

/* ---- commands ---- */

static int cmd_processes(int argc, char **argv) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        json_object *all; /* output() takes it */
        Table t = { .n_columns = 9 };
        int r;

        r = call("ListProcesses", &m, NULL);
        if (r != EXIT_OK)
                return r;
        all = json_object_new_array();
        for (const char *h = "PID\0COMM\0RULE\0ACCELERATORS\0FROM\0CONTROL\0COMPUTE\0MEMORY\0LOCALITY\0"; *h; h += strlen(h) + 1)
                table_add(&t, h);
        r = sd_bus_message_enter_container(m, 'a', "(utssssa(ss)sd)");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'r', "utssssa(ss)sd")) > 0) {
                uint32_t pid;
                uint64_t start;
                const char *comm, *rule, *accels, *source, *role, *cpus, *mem;
                const char *control = "", *compute = "";
                double locality;
                json_object *j = json_object_new_object(), *roles = json_object_new_object();

                r = sd_bus_message_read(m, "utssss", &pid, &start, &comm, &rule, &accels, &source);
                if (r >= 0)
                        r = sd_bus_message_enter_container(m, 'a', "(ss)");
                while (r >= 0 && (r = sd_bus_message_read(m, "(ss)", &role, &cpus)) > 0) {
                        json_object_object_add(roles, role, json_object_new_string(cpus));
                        if (streq(role, "control"))
                                control = cpus;
                        else if (streq(role, "compute"))
                                compute = cpus;
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r >= 0)
                        r = sd_bus_message_read(m, "sd", &mem, &locality);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0) {
                        json_object_put(j);
                        json_object_put(roles);
                        break;
                }
                json_object_object_add(j, "pid", json_object_new_int((int) pid));
                json_object_object_add(j, "start_time", json_object_new_uint64(start));
                json_object_object_add(j, "comm", json_object_new_string(comm));
                json_object_object_add(j, "rule", json_object_new_string(rule));
                json_object_object_add(j, "accelerators", json_object_new_string(accels));
                json_object_object_add(j, "accelerator_source", json_object_new_string(source));
                json_object_object_add(j, "roles", roles);
                json_object_object_add(j, "mem_nodes", json_object_new_string(mem));
                json_object_object_add(j, "locality_pct", locality >= 0 ? json_object_new_double(locality) : NULL);
                json_object_array_add(all, j);
                table_addf(&t, "%u", pid);
                table_add(&t, comm);
                table_add(&t, rule);
                table_add(&t, *accels ? accels : "-");
                table_add(&t, source);
                table_add(&t, *control ? control : "-");
                table_add(&t, *compute ? compute : "-");
                table_add(&t, *mem ? mem : "-");
                if (locality >= 0)
                        table_addf(&t, "%.1f%%", locality);
                else
                        table_add(&t, "-");
        }
        return output(&t, all, r, "No managed processes.");
}

static int usage_error(const char *fmt, ...) _printf_(1, 2);

static int parse_pid(const char *s, uint32_t *ret) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || *end || !*s || v == 0 || v > 4194304) {
                return usage_error("not a process id: %s", s);
        }
        *ret = (uint32_t) v;
        return EXIT_OK;
}

static int cmd_explain(int argc, char **argv) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        json_object *j = NULL;
        uint32_t pid;
        int r;

        if ((r = parse_pid(argv[1], &pid)) != EXIT_OK)
                return r;
        r = bus_client_explain(bus, (pid_t) pid, &j, &e);
        if (r == -ESRCH) {
                fprintf(stderr, "npu-tunectl: no process %u\n", pid);
                return EXIT_FAILED;
        }
        if (r < 0)
                return tunectl_report("Explain", &e, r);
        if (arg.json)
                print_json(j);
        else
                explain_print_text(j, stdout);
        json_object_put(j);
        return EXIT_OK;
}

static int cmd_knobs(int argc, char **argv) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        const char *id, *path, *orig, *applied, *status, *note;
        json_object *all; /* output() takes it */
        Table t = { .n_columns = 5 };
        int r;

        r = get_property("Knobs", "a(ssssss)", &m);
        if (r != EXIT_OK)
                return r;
        all = json_object_new_array();
        for (const char *h = "KNOB\0STATUS\0ORIGINAL\0APPLIED\0NOTE\0"; *h; h += strlen(h) + 1)
                table_add(&t, h);
        r = sd_bus_message_enter_container(m, 'a', "(ssssss)");
        while (r >= 0 && (r = sd_bus_message_read(m, "(ssssss)", &id, &path, &orig, &applied, &status, &note)) > 0) {
                json_object *j = json_object_new_object();
                json_object_object_add(j, "name", json_object_new_string(id));
                json_object_object_add(j, "path", json_object_new_string(path));
                json_object_object_add(j, "original", json_object_new_string(orig));
                json_object_object_add(j, "applied", json_object_new_string(applied));
                json_object_object_add(j, "status", json_object_new_string(status));
                json_object_object_add(j, "note", json_object_new_string(note));
                json_object_array_add(all, j);
                table_add(&t, id);
                table_add(&t, status);
                table_add(&t, *orig ? orig : "-");
                table_add(&t, *applied ? applied : "-");
                table_add(&t, note);
        }
        return output(&t, all, r, "No host knobs in the policy.");
}

static int cmd_topology(int argc, char **argv) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        const char *text;
        json_object *j;
        int r = -ENOENT;

        if (bus)
                r = sd_bus_call_method(bus, NPU_BUS_NAME, NPU_BUS_PATH, NPU_BUS_INTERFACE, "GetTopology", &e, &m, NULL);
        if (r < 0 && unreachable(&e, r)) {
                /* No daemon: what this machine looks like with the installed policy. */
                daemon_options o = { .mode = MODE_PRINT_TOPOLOGY, .root = "/", .json = arg.json };
                return run_print_topology(&o);
        }
        if (r < 0)
                return tunectl_report("GetTopology", &e, r);
        r = sd_bus_message_read(m, "s", &text);
        if (r < 0)
                return bad_reply(r);
        j = json_tokener_parse(text);
        if (!j)
                return bad_reply(-EBADMSG);
        if (arg.json)
                print_json(j);
        else
                topology_print_table(j, stdout);
        json_object_put(j);
        return EXIT_OK;
}

/* What a command that changes something did: a line, or {"ok": true, "message", ...} with
 * --json (extra: more keys, taken). */
static int done(const char *message, json_object *extra) {
        if (arg.json) {
                json_object *j = extra ?: json_object_new_object();
                json_object_object_add(j, "ok", json_object_new_boolean(true));
                json_object_object_add(j, "message", json_object_new_string(message));
                print_json(j);
                json_object_put(j);
        } else {
                printf("%s\n", message);
                json_object_put(extra);
        }
        return EXIT_OK;
}

static int cmd_reload(int argc, char **argv) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        uint64_t when;
        int ok, r;
        char *message;

        r = call("Reload", NULL, NULL);
        if (r != EXIT_OK)
                return r;
        /* The daemon's own word on it ("some of it could not be applied"), when it has one. */
        if (get_optional(&reply, "LastReload", "(tbs)", &when, &ok, &message) && when > 0 && ok && *message)
                return done(message, NULL);
        return done("Policy reloaded.", NULL);
}

static int cmd_rescan(int argc, char **argv) {
        int r = call("Rescan", NULL, NULL);
        return r != EXIT_OK ? r : done("Processes rescanned.", NULL);
}

static int cmd_release(int argc, char **argv) {
        char message[160];
        json_object *j;
        uint32_t pid;
        int r;

        if ((r = parse_pid(argv[1], &pid)) != EXIT_OK)
                return r;
        r = call("Release", NULL, "u", pid);
        if (r != EXIT_OK)
                return r;
        snprintf(message, sizeof message,
                 "Released process %u: it has its original CPU affinity back and is not managed until it execs again.", pid);
        j = json_object_new_object();
        json_object_object_add(j, "pid", json_object_new_int64(pid));
        return done(message, j);
}

typedef struct Verb {
        const char *name;
        int min_args, max_args; /* beside the verb */
        bool needs_daemon;
        bool privileged; /* root's: a refusal says so */
        int (*run)(int argc, char **argv);
        const char *usage;
} Verb;

static const Verb verbs[] = {
        { "status", 0, 0, true, false, cmd_status, "status                 the daemon's state, PID, uptime, policy and counters" },
        { "processes", 0, 0, true, false, cmd_processes, "processes              the managed processes and where they run" },
        { "explain", 1, 1, true, false, cmd_explain, "explain PID            what npu-tuned did with a process, and why" },
        { "knobs", 0, 0, true, false, cmd_knobs, "knobs                  host knobs: original, applied, status" },
        { "topology", 0, 0, false, false, cmd_topology, "topology               NUMA nodes, CPUs, accelerators" },
        { "policy", 0, 0, false, false, cmd_policy, "policy                 the effective policy, and which file set each value" },
        { "monitor", 0, 0, true, false, cmd_monitor, "monitor                events as they happen, until interrupted" },
        { "reload", 0, 0, true, true, cmd_reload, "reload                 load the policy files again (root)" },
        { "rescan", 0, 0, true, true, cmd_rescan, "rescan                 scan /proc for processes again (root)" },
        { "release", 1, 1, true, true, cmd_release, "release PID            give a process its CPU affinity back (root)" },
        { "check-policy", 1, 1024, false, false, cmd_check_policy, "check-policy PATH...   validate policy files or directories" },
        { "doctor", 0, 0, false, false, cmd_doctor, "doctor                 check the host and the daemon: OK, WARN or FAIL, each with its fix" },
};

static void help(void) {
        printf("npu-tunectl %s — ask and control the running npu-tuned\n\n"
               "Usage: npu-tunectl [OPTIONS] COMMAND [ARGS] (options may also follow the command; -- ends them)\n\n"
               "Commands:\n",
               PACKAGE_VERSION);
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %s\n", verbs[i].usage);
        printf("\nOptions:\n"
               "      --bus=system|session  where npu-tuned is (default: $NPU_TUNECTL_BUS, else system)\n"
               "      --json                JSON output\n"
               "      --no-color            never colour (default: only on a terminal)\n"
               "      --root DIR            doctor: the host's /sys, /proc and /dev below DIR\n"
               "      --policy-dir DIR      doctor: the daemon's policy directories (repeatable)\n"
               "      --state-dir DIR       doctor: the daemon's state directory (default %s)\n"
               "  -h, --help                show this help\n"
               "      --version             show the version\n\n"
               "Exit status: 0 done, 1 failed, 2 usage error, 3 npu-tuned or its bus cannot be reached, 4 refused\n"
               "(the command needs root).\n",
               STATE_DIR);
}

static int usage_error(const char *fmt, ...) _printf_(1, 2);
static int usage_error(const char *fmt, ...) {
        va_list ap;

        if (fmt) {
                fputs("npu-tunectl: ", stderr);
                va_start(ap, fmt);
                vfprintf(stderr, fmt, ap);
                va_end(ap);
                fputc('\n', stderr);
        }
        fputs("Try 'npu-tunectl --help' for the commands and options.\n", stderr);
        return EXIT_USAGE;
}

static int parse_bus(const char *what, const char *value) {
        if (streq(value, "system"))
                arg.bus = DAEMON_BUS_SYSTEM;
        else if (streq(value, "session"))
                arg.bus = DAEMON_BUS_SESSION;
        else
                return usage_error("%s: system or session, not '%s'", what, value);
        return EXIT_OK;
}

int main(int argc, char *argv[]) {
        enum { ARG_BUS = 0x100, ARG_JSON, ARG_NO_COLOR, ARG_VERSION, ARG_ROOT, ARG_POLICY_DIR, ARG_STATE_DIR };
        static const struct option options[] = {
                { "bus", required_argument, NULL, ARG_BUS },
                { "json", no_argument, NULL, ARG_JSON },
                { "no-color", no_argument, NULL, ARG_NO_COLOR },
                { "root", required_argument, NULL, ARG_ROOT },
                { "policy-dir", required_argument, NULL, ARG_POLICY_DIR },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {}
        };
        const char *term = getenv("TERM");
        bool no_color = getenv("NO_COLOR") != NULL;
        const Verb *verb = NULL;
        const char *env_bus = getenv("NPU_TUNECTL_BUS");
        bool doctor_options = false;
        int c, r;

        /* The environment first, so that --bus= overrides it. */
        if (env_bus && *env_bus && (r = parse_bus("NPU_TUNECTL_BUS", env_bus)) != EXIT_OK)
                return r;
        /* No "+": GNU getopt permutes, so that options may follow the command
         * (npu-tunectl status --json) as they may precede it; "--" ends them. */
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case ARG_BUS:
                        if ((r = parse_bus("--bus", optarg)) != EXIT_OK)
                                return r;
                        break;
                case ARG_JSON:
                        arg.json = true;
                        break;
                case ARG_NO_COLOR:
                        no_color = true;
                        break;
                case ARG_ROOT:
                        arg.root = optarg;
                        doctor_options = true;
                        break;
                case ARG_POLICY_DIR:
                        if (arg.n_policy_dirs >= MAX_POLICY_DIRS)
                                return usage_error("at most %d --policy-dir options", MAX_POLICY_DIRS);
                        arg.policy_dirs[arg.n_policy_dirs++] = optarg;
                        doctor_options = true;
                        break;
                case ARG_STATE_DIR:
                        arg.state_dir = optarg;
                        doctor_options = true;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                case ARG_VERSION:
                        printf("npu-tunectl %s\n", PACKAGE_VERSION);
                        return EXIT_OK;
                case ':':
                        return usage_error("option %s needs a value", argv[optind - 1]);
                default:
                        if (optopt)
                                return usage_error("unknown option -%c", optopt);
                        return usage_error("unknown option %s", argv[optind - 1]);
                }
        arg.color = !no_color && isatty(STDOUT_FILENO) && term && !streq(term, "dumb");
        if (optind >= argc)
                return usage_error("no command given");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[optind], verbs[i].name))
                        verb = &verbs[i];
        if (!verb)
                return usage_error("unknown command '%s'", argv[optind]);
        if (doctor_options && !streq(verb->name, "doctor"))
                return usage_error("--root, --policy-dir and --state-dir are doctor's options");
        arg.verb = verb->name;
        arg.privileged = verb->privileged;
        argc -= optind;
        argv += optind;
        if (argc - 1 < verb->min_args || argc - 1 > verb->max_args) {
                fprintf(stderr, "npu-tunectl: usage: npu-tunectl %s\n", verb->usage);
                return usage_error(NULL);
        }
        if (verb->needs_daemon) {
                r = connect_bus();
                if (r != EXIT_OK)
                        return r;
        } else
                (void) bus_client_open(arg.bus, &bus); /* optional: without it, answered locally */
        r = verb->run(argc, argv);
        sd_bus_flush_close_unref(bus);
        return r;
}
