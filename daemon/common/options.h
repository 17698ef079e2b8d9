/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

typedef enum daemon_mode {
        MODE_RUN,
        MODE_PRINT_TOPOLOGY,
        MODE_CHECK_POLICY,
        MODE_PRINT_POLICY,
        MODE_RESTORE,
        MODE_EXPLAIN,
        MODE_BUS_INTROSPECT,
        MODE_DRY_RUN,        /* --dry-run (one shot); with --follow the daemon runs dry (MODE_RUN) */
} daemon_mode;

#define MAX_POLICY_DIRS 16

typedef enum daemon_bus {
        DAEMON_BUS_SYSTEM,  /* the default */
        DAEMON_BUS_SESSION, /* a development machine without a system bus */
        DAEMON_BUS_NONE,
} daemon_bus;

typedef struct daemon_options {
        daemon_mode mode;
        const char *root;       /* "/" unless --root */
        const char *state_dir;  /* --state-dir, default STATE_DIR */
        const char *policy_dirs[MAX_POLICY_DIRS]; /* --policy-dir, repeatable; none: the standard dirs */
        unsigned n_policy_dirs;
        char **paths;           /* --check-policy PATH... */
        unsigned n_paths;
        pid_t explain_pid;
        bool json;
        const char *metrics_textfile; /* --metrics-textfile; NULL: the policy's */
        const char *driver_query;     /* --driver-query: the program; NULL: none ("no") */
        const char *driver_library_dir; /* --driver-library-dir; NULL: the system's */
        bool dry_run;
        bool no_watch;          /* implied when root is not "/" */
        daemon_bus bus;         /* --bus= */
} daemon_options;
