/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* What the files of npu-tunectl share: its options, its bus connection, the exit codes and
 * how an error of a call becomes one line and one of them. */

#include <json-c/json.h>
#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "options.h"

enum {
        EXIT_OK = 0,
        EXIT_FAILED = 1,       /* the daemon answered with an error, or a policy has problems */
        EXIT_USAGE = 2,
        EXIT_NOT_RUNNING = 3,  /* no npu-tuned on the bus, no bus, or the bus closed the connection */
        EXIT_DENIED = 4,       /* refused: the command needs root, or the bus policy says no */
};

typedef struct tunectl_args {
        daemon_bus bus;
        bool json;
        bool color;
        const char *verb;      /* the command, for messages */
        bool privileged;       /* the command needs root */
        /* doctor's: the host below root, the daemon's policy and state directories */
        const char *root;
        const char *policy_dirs[MAX_POLICY_DIRS];
        unsigned n_policy_dirs;
        const char *state_dir;
} tunectl_args;

extern tunectl_args arg;
extern sd_bus *bus;

const char *bus_name(void);
/* JSON for a terminal or a script: pretty, '/' not escaped, an empty array as []. */
void print_json(json_object *j);
/* The error of a call (e, r) as one line on stderr, and its exit code: 3 when npu-tuned or
 * the bus cannot be reached, 4 when refused, else 1. */
int tunectl_report(const char *what, const sd_bus_error *e, int r);
/* Whether (e, r) means that the bus or the daemon cannot be reached at all. */
bool unreachable(const sd_bus_error *e, int r);
int bad_reply(int r);
int get_property(const char *name, const char *type, sd_bus_message **ret);
/* A property that an older daemon may not have, read into the pointers after type: false
 * when it could not be read. Strings read point into *keep (the reply), which the caller
 * unrefs when done with them. */
bool get_optional(sd_bus_message **keep, const char *name, const char *type, ...);

/* tunectl-status.c */
int cmd_status(int argc, char **argv);

/* tunectl-policy.c */
int cmd_policy(int argc, char **argv);
int cmd_check_policy(int argc, char **argv);
/* tunectl-doctor.c */
int cmd_doctor(int argc, char **argv);
/* tunectl-monitor.c */
int cmd_monitor(int argc, char **argv);
