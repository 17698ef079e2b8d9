/* SPDX-License-Identifier: GPL-2.0-only */
/* npu-tuned --explain PID: what the daemon does with a process, and why: the rule it
 * matches, its accelerators and where they came from, the nodes, the CPU pool of each
 * role and the memory node with its free-memory reasoning.
 *
 * A running daemon is asked first (D-Bus Explain()): it reports what it applied. Only
 * when none answers is the plan computed here, by manager_explain_offline(). */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus-client.h"
#include "explain-cli.h"
#include "explain-json.h"
#include "log.h"
#include "manager.h"

/* The running daemon's answer: 0 with *ret, -ENOENT when no daemon is there to ask, any
 * other negative errno when it answered with an error (printed). */
static int explain_from_daemon(const daemon_options *o, json_object **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus *bus = NULL;
        int r;

        r = bus_client_open(o->bus, &bus);
        if (r < 0)
                return -ENOENT;
        r = bus_client_explain(bus, o->explain_pid, ret, &error);
        sd_bus_flush_close_unref(bus);
        if (r == -ESRCH) {
                fprintf(stderr, "npu-tuned: no process %d\n", o->explain_pid);
                return r;
        }
        if (r < 0 && bus_client_error_is_absent(&error, r))
                return -ENOENT;
        if (r < 0) {
                fprintf(stderr, "npu-tuned: the running npu-tuned could not explain process %d: %s\n", o->explain_pid,
                        sd_bus_error_is_set(&error) ? error.message : strerror(-r));
                return r == -ENOENT ? -EIO : r;
        }
        return 0;
}

/* The exit status: 0, 2 for a usage error (below --root), 1 for any other failure (said). */
int run_explain(const daemon_options *o) {
        _cleanup_(json_object_putp) json_object *j = NULL;
        int r;

        r = explain_from_daemon(o, &j);
        if (r == -ENOENT) {
                if (!o->json)
                        fprintf(stderr, "npu-tuned: no running npu-tuned answers on the %s bus: computing what it would do.\n",
                                o->bus == DAEMON_BUS_SESSION ? "session" : "system");
                r = manager_explain_offline(o, &j);
        }
        if (r >= 0)
                r = explain_escape_strings(j);
        if (r < 0)
                return r == -EOPNOTSUPP ? 2 : 1;
        if (o->json)
                puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
        else
                explain_print_text(j, stdout);
        return 0;
}
