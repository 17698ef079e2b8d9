/* SPDX-License-Identifier: GPL-2.0-only */
/* npu-tuned: tunes a host for NPU/GPU inference serving. The startup story: options,
 * policy, checks, start, READY=1, loop. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "manager.h"
#include "bus-server.h"
#include "options.h"
#include "policy-cli.h"
#include "print-topology.h"
#include "restore.h"
#include "explain-cli.h"

static void help(void) {
        printf("npu-tuned %s — tune a host for NPU/GPU inference serving\n\n"
               "Usage: npu-tuned [OPTIONS]\n\n"
               "Modes (default: run the daemon):\n"
               "      --print-topology      print NUMA nodes, CPUs and accelerators and exit\n"
               "      --check-policy PATH.. validate policy files or directories and exit\n"
               "      --print-policy        print the merged effective policy as JSON and exit\n"
               "      --restore             restore host knobs from the state journal and exit\n"
               "      --explain PID         what the running daemon did with a process and why (or,\n"
               "                            when none runs, what it would do)\n"
               "      --bus-introspect      print the D-Bus interface XML and exit\n"
               "      --dry-run             print what the daemon would change now (each host knob\n"
               "                            current -> desired, each matched process's CPUs and\n"
               "                            memory node) and exit; nothing is changed\n"
               "Options:\n"
               "      --root DIR            read and write sysfs/procfs below DIR (tests)\n"
               "      --policy-dir DIR      load policies from DIR instead of the standard\n"
               "                            directories (repeatable)\n"
               "      --state-dir DIR       journal of original knob values (default %s)\n"
               "      --json                JSON output for --print-topology and --explain\n"
               "      --metrics-textfile PATH\n"
               "                            keep Prometheus metrics in PATH (*.prom, for\n"
               "                            node_exporter's textfile collector)\n"
               "      --driver-query=no|PROGRAM\n"
               "                            ask the accelerator driver (NVML, DCMI) which device a\n"
               "                            matched process without one uses (default %s)\n"
               "      --driver-library-dir DIR\n"
               "                            load the driver's library from DIR only\n"
               "      --follow              with --dry-run: run on as a dry daemon, logging what\n"
               "                            it would do as processes come and go\n"
               "      --no-watch            do not watch processes (implied by --root)\n"
               "      --bus=system|session|none\n"
               "                            where to offer org.nputuned1 (default system; without\n"
               "                            that bus the daemon runs on without D-Bus)\n"
               "      --log-level=LEVEL     debug, info (default), notice, warning or err\n"
               "  -v, --verbose             debug logging (--log-level=debug)\n"
               "  -h, --help                show this help\n"
               "      --version             show the version\n",
               PACKAGE_VERSION, STATE_DIR, DRIVER_QUERY_PATH);
}

enum {
        ARG_PRINT_TOPOLOGY = 0x100,
        ARG_CHECK_POLICY,
        ARG_PRINT_POLICY,
        ARG_RESTORE,
        ARG_EXPLAIN,
        ARG_ROOT,
        ARG_POLICY_DIR,
        ARG_STATE_DIR,
        ARG_METRICS_TEXTFILE,
        ARG_DRIVER_QUERY,
        ARG_DRIVER_LIBRARY_DIR,
        ARG_JSON,
        ARG_DRY_RUN,
        ARG_FOLLOW,
        ARG_NO_WATCH,
        ARG_BUS,
        ARG_BUS_INTROSPECT,
        ARG_LOG_LEVEL,
        ARG_VERSION,
};

/* One mode per run: a second one is a usage error, not silently ignored. */
static int set_mode(daemon_options *o, daemon_mode mode, const char *option, const char **previous) {
        if (*previous && o->mode != mode) {
                fprintf(stderr, "npu-tuned: %s and %s cannot be used together (one mode at a time)\n", *previous, option);
                return -EINVAL;
        }
        o->mode = mode;
        *previous = option;
        return 0;
}

/* Returns 0 to go on, 1 to exit successfully (help), or -EINVAL for usage errors. */
static int parse_argv(int argc, char *argv[], daemon_options *o) {
        static const struct option options[] = {
                { "print-topology", no_argument, NULL, ARG_PRINT_TOPOLOGY },
                { "check-policy", no_argument, NULL, ARG_CHECK_POLICY },
                { "print-policy", no_argument, NULL, ARG_PRINT_POLICY },
                { "restore", no_argument, NULL, ARG_RESTORE },
                { "explain", required_argument, NULL, ARG_EXPLAIN },
                { "root", required_argument, NULL, ARG_ROOT },
                { "policy-dir", required_argument, NULL, ARG_POLICY_DIR },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "metrics-textfile", required_argument, NULL, ARG_METRICS_TEXTFILE },
                { "driver-query", required_argument, NULL, ARG_DRIVER_QUERY },
                { "driver-library-dir", required_argument, NULL, ARG_DRIVER_LIBRARY_DIR },
                { "json", no_argument, NULL, ARG_JSON },
                { "dry-run", no_argument, NULL, ARG_DRY_RUN },
                { "follow", no_argument, NULL, ARG_FOLLOW },
                { "no-watch", no_argument, NULL, ARG_NO_WATCH },
                { "bus", required_argument, NULL, ARG_BUS },
                { "bus-introspect", no_argument, NULL, ARG_BUS_INTROSPECT },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {}
        };
        const char *mode_option = NULL;
        bool follow = false;
        int c;

        *o = (daemon_options){ .mode = MODE_RUN, .root = "/", .state_dir = STATE_DIR, .driver_query = DRIVER_QUERY_PATH };
        while ((c = getopt_long(argc, argv, "vh", options, NULL)) >= 0)
                switch (c) {
                case ARG_PRINT_TOPOLOGY:
                        if (set_mode(o, MODE_PRINT_TOPOLOGY, argv[optind - 1], &mode_option) < 0)
                                return -EINVAL;
                        break;
                case ARG_CHECK_POLICY:
                        if (set_mode(o, MODE_CHECK_POLICY, argv[optind - 1], &mode_option) < 0)
                                return -EINVAL;
                        break;
                case ARG_PRINT_POLICY:
                        if (set_mode(o, MODE_PRINT_POLICY, argv[optind - 1], &mode_option) < 0)
                                return -EINVAL;
                        break;
                case ARG_RESTORE:
                        if (set_mode(o, MODE_RESTORE, argv[optind - 1], &mode_option) < 0)
                                return -EINVAL;
                        break;
                case ARG_EXPLAIN: {
                        char *end;
                        long pid;
                        errno = 0;
                        pid = strtol(optarg, &end, 10);
                        if (errno || *end || pid <= 0 || pid > 4194304) {
                                fprintf(stderr, "npu-tuned: --explain: not a process id: %s\n", optarg);
                                return -EINVAL;
                        }
                        if (set_mode(o, MODE_EXPLAIN, "--explain", &mode_option) < 0)
                                return -EINVAL;
                        o->explain_pid = (pid_t) pid;
                        break;
                }
                case ARG_ROOT:
                        o->root = optarg;
                        break;
                case ARG_POLICY_DIR:
                        if (o->n_policy_dirs >= MAX_POLICY_DIRS) {
                                fprintf(stderr, "npu-tuned: at most %d --policy-dir options\n", MAX_POLICY_DIRS);
                                return -EINVAL;
                        }
                        o->policy_dirs[o->n_policy_dirs++] = optarg;
                        break;
                case ARG_STATE_DIR:
                        o->state_dir = optarg;
                        break;
                case ARG_METRICS_TEXTFILE:
                        if (optarg[0] != '/' || strlen(optarg) < 7 || !streq(optarg + strlen(optarg) - 5, ".prom")) {
                                fprintf(stderr, "npu-tuned: --metrics-textfile: an absolute path to a *.prom file, not %s\n",
                                        optarg);
                                return -EINVAL;
                        }
                        o->metrics_textfile = optarg;
                        break;
                case ARG_DRIVER_QUERY:
                case ARG_DRIVER_LIBRARY_DIR:
                        if (c == ARG_DRIVER_QUERY && streq(optarg, "no")) {
                                o->driver_query = NULL;
                                break;
                        }
                        if (optarg[0] != '/') {
                                fprintf(stderr, "npu-tuned: --%s: an absolute path, not %s\n",
                                        c == ARG_DRIVER_QUERY ? "driver-query" : "driver-library-dir", optarg);
                                return -EINVAL;
                        }
                        *(c == ARG_DRIVER_QUERY ? &o->driver_query : &o->driver_library_dir) = optarg;
                        break;
                case ARG_JSON:
                        o->json = true;
                        break;
                case ARG_DRY_RUN:
                        if (set_mode(o, MODE_DRY_RUN, "--dry-run", &mode_option) < 0)
                                return -EINVAL;
                        o->dry_run = true;
                        break;
                case ARG_FOLLOW:
                        follow = true;
                        break;
                case ARG_NO_WATCH:
                        o->no_watch = true;
                        break;
                case ARG_BUS:
                        if (streq(optarg, "system"))
                                o->bus = DAEMON_BUS_SYSTEM;
                        else if (streq(optarg, "session"))
                                o->bus = DAEMON_BUS_SESSION;
                        else if (streq(optarg, "none"))
                                o->bus = DAEMON_BUS_NONE;
                        else {
                                fprintf(stderr, "npu-tuned: --bus: system, session or none, not %s\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_BUS_INTROSPECT:
                        if (set_mode(o, MODE_BUS_INTROSPECT, argv[optind - 1], &mode_option) < 0)
                                return -EINVAL;
                        break;
                case ARG_LOG_LEVEL: {
                        int level = log_level_from_string(optarg);
                        if (level < 0) {
                                fprintf(stderr, "npu-tuned: --log-level: debug, info, notice, warning or err, not %s\n",
                                        optarg);
                                return -EINVAL;
                        }
                        log_set_max_level(level);
                        break;
                }
                case 'v':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case 'h':
                        help();
                        return 1;
                case ARG_VERSION:
                        printf("npu-tuned %s\n", PACKAGE_VERSION);
                        return 1;
                default:
                        return -EINVAL;
                }
        /* Options that only mean something to one mode are a usage error elsewhere, not
         * silently a daemon start. */
        if (follow && o->mode != MODE_DRY_RUN) {
                fprintf(stderr, "npu-tuned: --follow goes with --dry-run\n");
                return -EINVAL;
        }
        if (follow)
                o->mode = MODE_RUN; /* the daemon, dry */
        if (o->json && o->mode != MODE_PRINT_TOPOLOGY && o->mode != MODE_EXPLAIN) {
                fprintf(stderr, "npu-tuned: --json goes with --print-topology or --explain\n");
                return -EINVAL;
        }
        if (o->mode == MODE_CHECK_POLICY) {
                if (optind >= argc) {
                        fprintf(stderr, "npu-tuned: --check-policy needs at least one file or directory\n");
                        return -EINVAL;
                }
                o->paths = argv + optind;
                o->n_paths = (unsigned) (argc - optind);
        } else if (optind < argc) {
                fprintf(stderr, "npu-tuned: unexpected argument: %s\n", argv[optind]);
                return -EINVAL;
        }
        return 0;
}

static int run_daemon(const daemon_options *o) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        r = manager_new(o, &m);
        if (r < 0)
                return 1;
        r = manager_start(m);
        if (r < 0)
                return 1;
        r = manager_run(m);
        if (r < 0) {
                log_error_errno(r, "Event loop failed: %m");
                return 1;
        }
        return 0;
}

int main(int argc, char *argv[]) {
        daemon_options o;
        int r;

        r = parse_argv(argc, argv, &o);
        if (r < 0)
                return 2;
        if (r > 0)
                return 0;
        switch (o.mode) {
        case MODE_PRINT_TOPOLOGY:
                return run_print_topology(&o);
        case MODE_EXPLAIN:
                return run_explain(&o);
        case MODE_CHECK_POLICY:
                return run_check_policy(&o);
        case MODE_PRINT_POLICY:
                return run_print_policy(&o);
        case MODE_RUN:
                return run_daemon(&o);
        case MODE_RESTORE:
                return run_restore(&o);
        case MODE_BUS_INTROSPECT:
                return bus_server_print_introspection(stdout) < 0 ? 1 : 0;
        case MODE_DRY_RUN:
                return manager_dry_run_once(&o);
        default:
                fprintf(stderr, "npu-tuned: this mode is not implemented yet\n");
                return 2;
        }
}
