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

enum {
        EXIT_OK = 0,
        EXIT_FAILED = 1,       /* the daemon answered with an error, or a policy has problems */
        EXIT_USAGE = 2,
        EXIT_NOT_RUNNING = 3,  /* no npu-tuned on the bus (or no bus) */
        EXIT_DENIED = 4,       /* the command needs root */
};

static struct {
        daemon_bus bus;
        bool json;
        bool color;
} arg = { .bus = DAEMON_BUS_SYSTEM };

static const char *bus_name(void) {
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

static void print_json(json_object *j) {
        puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
}

static int bad_reply(int r);

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

static sd_bus *bus;

/* An error of a call, as one line and an exit code. */
static int report(const char *what, const sd_bus_error *e, int r) {
        if (bus_client_error_is_absent(e, r)) {
                fprintf(stderr, "npu-tunectl: npu-tuned is not running (nothing owns %s on the %s bus).\n", NPU_BUS_NAME,
                        bus_name());
                return EXIT_NOT_RUNNING;
        }
        if (sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED) || r == -EACCES || r == -EPERM) {
                fprintf(stderr, "npu-tunectl: %s: permission denied: %s\n", what,
                        sd_bus_error_is_set(e) ? e->message : "this needs root");
                return EXIT_DENIED;
        }
        fprintf(stderr, "npu-tunectl: %s: %s\n", what, sd_bus_error_is_set(e) ? e->message : strerror(-r));
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

static int get_property(const char *name, const char *type, sd_bus_message **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r = sd_bus_get_property(bus, NPU_BUS_NAME, NPU_BUS_PATH, NPU_BUS_INTERFACE, name, &e, ret, type);
        return r < 0 ? report(name, &e, r) : EXIT_OK;
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
        return r < 0 ? report(method, &e, r) : EXIT_OK;
}

static int bad_reply(int r) {
        fprintf(stderr, "npu-tunectl: unexpected reply from npu-tuned: %s\n", strerror(-r));
        return EXIT_FAILED;
}

/* ---- commands ---- */

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

static int cmd_status(int argc, char **argv) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        const char *version, *state, *s;
        uint64_t events, resyncs, overruns, placements, migrations;
        unsigned managed, n_nodes = 0, n_accels = 0, n_knobs = 0, n_owned = 0, n_already = 0;
        _cleanup_(json_object_putp) json_object *files = json_object_new_array();
        int dry_run, r;
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

static int parse_pid(const char *s, uint32_t *ret) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || *end || !*s || v == 0 || v > 4194304) {
                fprintf(stderr, "npu-tunectl: not a process id: %s\n", s);
                return EXIT_USAGE;
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
                return report("Explain", &e, r);
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
        if (r < 0 && (!bus || bus_client_error_is_absent(&e, r))) {
                /* No daemon: what this machine looks like with the installed policy. */
                daemon_options o = { .mode = MODE_PRINT_TOPOLOGY, .root = "/", .json = arg.json };
                return run_print_topology(&o);
        }
        if (r < 0)
                return report("GetTopology", &e, r);
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

static int cmd_simple(const char *method, const char *done) {
        int r = call(method, NULL, NULL);
        if (r == EXIT_OK && !arg.json)
                printf("%s\n", done);
        return r;
}

static int cmd_reload(int argc, char **argv) {
        return cmd_simple("Reload", "Policy reloaded.");
}

static int cmd_rescan(int argc, char **argv) {
        return cmd_simple("Rescan", "Processes rescanned.");
}

static int cmd_release(int argc, char **argv) {
        uint32_t pid;
        int r;

        if ((r = parse_pid(argv[1], &pid)) != EXIT_OK)
                return r;
        r = call("Release", NULL, "u", pid);
        if (r == EXIT_OK && !arg.json)
                printf("Released process %u: it has its original CPU affinity back and is not managed until it execs "
                       "again.\n", pid);
        return r;
}

static int cmd_check_policy(int argc, char **argv) {
        daemon_options o = { .mode = MODE_CHECK_POLICY, .root = "/", .paths = argv + 1, .n_paths = (unsigned) (argc - 1) };
        return run_check_policy(&o) == 0 ? EXIT_OK : EXIT_FAILED;
}

typedef struct Verb {
        const char *name;
        int min_args, max_args; /* beside the verb */
        bool needs_daemon;
        int (*run)(int argc, char **argv);
        const char *usage;
} Verb;

static const Verb verbs[] = {
        { "status", 0, 0, true, cmd_status, "status                 the daemon's state, policy and counters" },
        { "processes", 0, 0, true, cmd_processes, "processes              the managed processes and where they run" },
        { "explain", 1, 1, true, cmd_explain, "explain PID            what npu-tuned did with a process, and why" },
        { "knobs", 0, 0, true, cmd_knobs, "knobs                  host knobs: original, applied, status" },
        { "topology", 0, 0, false, cmd_topology, "topology               NUMA nodes, CPUs, accelerators" },
        { "reload", 0, 0, true, cmd_reload, "reload                 load the policy files again (root)" },
        { "rescan", 0, 0, true, cmd_rescan, "rescan                 scan /proc for processes again (root)" },
        { "release", 1, 1, true, cmd_release, "release PID            give a process its CPU affinity back (root)" },
        { "check-policy", 1, 1024, false, cmd_check_policy, "check-policy PATH...   validate policy files or directories" },
};

static void help(void) {
        printf("npu-tunectl %s — ask and control the running npu-tuned\n\n"
               "Usage: npu-tunectl [OPTIONS] COMMAND [ARGS]\n\nCommands:\n",
               PACKAGE_VERSION);
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %s\n", verbs[i].usage);
        printf("\nOptions:\n"
               "      --bus=system|session  where npu-tuned is (default: system)\n"
               "      --json                JSON output\n"
               "      --no-color            never colour (default: only on a terminal)\n"
               "  -h, --help                show this help\n"
               "      --version             show the version\n\n"
               "Exit status: 0 done, 1 failed, 2 usage error, 3 npu-tuned is not running, 4 permission denied.\n");
}

int main(int argc, char *argv[]) {
        enum { ARG_BUS = 0x100, ARG_JSON, ARG_NO_COLOR, ARG_VERSION };
        static const struct option options[] = {
                { "bus", required_argument, NULL, ARG_BUS },
                { "json", no_argument, NULL, ARG_JSON },
                { "no-color", no_argument, NULL, ARG_NO_COLOR },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {}
        };
        const char *term = getenv("TERM");
        bool no_color = getenv("NO_COLOR") != NULL;
        const Verb *verb = NULL;
        int c, r;

        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case ARG_BUS:
                        if (streq(optarg, "system"))
                                arg.bus = DAEMON_BUS_SYSTEM;
                        else if (streq(optarg, "session"))
                                arg.bus = DAEMON_BUS_SESSION;
                        else {
                                fprintf(stderr, "npu-tunectl: --bus: system or session, not %s\n", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case ARG_JSON:
                        arg.json = true;
                        break;
                case ARG_NO_COLOR:
                        no_color = true;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                case ARG_VERSION:
                        printf("npu-tunectl %s\n", PACKAGE_VERSION);
                        return EXIT_OK;
                default:
                        return EXIT_USAGE;
                }
        arg.color = !no_color && isatty(STDOUT_FILENO) && term && !streq(term, "dumb");
        if (optind >= argc) {
                help();
                return EXIT_USAGE;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[optind], verbs[i].name))
                        verb = &verbs[i];
        if (!verb) {
                fprintf(stderr, "npu-tunectl: unknown command %s (npu-tunectl --help lists them)\n", argv[optind]);
                return EXIT_USAGE;
        }
        argc -= optind;
        argv += optind;
        if (argc - 1 < verb->min_args || argc - 1 > verb->max_args) {
                fprintf(stderr, "npu-tunectl: usage: npu-tunectl %s\n", verb->usage);
                return EXIT_USAGE;
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
