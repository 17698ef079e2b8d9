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
#include <sys/stat.h>

#include "bus-client.h"
#include "explain-cli.h"
#include "explain-json.h"
#include "log.h"
#include "manager.h"
#include "npu-tuned/proc.h"
#include "npu-tuned/state-file.h"

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

/* The pid of an npu-tuned that holds the state directory's lock, read from /proc/locks
 * (taking the lock to find out would make a daemon starting at that moment refuse to
 * run); 0 when none, or when it cannot be told (not root: the directory is root's). */
static pid_t daemon_holding(const daemon_options *o) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_free_ char *path = NULL, *text = NULL;
        struct stat st;
        size_t len;
        pid_t pid;

        if (asprintf(&path, "%s/%s", o->state_dir, TUNE_STATE_DIR_LOCK_FILE) < 0 || stat(path, &st) < 0 ||
            tune_ctx_new(o->root, &ctx) < 0 || tune_read_file(ctx, "/proc/locks", 1024 * 1024, &text, &len) < 0 ||
            tune_parse_proc_locks_holder(text, st.st_dev, st.st_ino, &pid) < 0)
                return 0;
        return pid;
}

/* The exit status: 0, 2 for a usage error (below --root), 1 for any other failure (said). */
int run_explain(const daemon_options *o) {
        _cleanup_(json_object_putp) json_object *j = NULL;
        int r;

        r = explain_from_daemon(o, &j);
        if (r == -ENOENT) {
                const char *bus = o->bus == DAEMON_BUS_SESSION ? "session" : "system";
                pid_t holder = daemon_holding(o);
                /* A daemon that runs but is not on this bus applied what it decided, which
                 * a computation here need not match: said whatever the output format. */
                if (holder > 0)
                        fprintf(stderr,
                                "npu-tuned: WARNING: npu-tuned (pid %d) runs with the state directory %s but does not "
                                "answer on the %s bus (is it on another bus, --bus=session or none?). What follows is "
                                "computed here, not what it applied; ask it on its bus (npu-tunectl --bus=...).\n",
                                (int) holder, o->state_dir, bus);
                else if (!o->json)
                        fprintf(stderr, "npu-tuned: no running npu-tuned answers on the %s bus: computing what it would do.\n",
                                bus);
                r = manager_explain_offline(o, &j);
                if (r >= 0 && holder > 0)
                        r = tune_json_add(j, "daemon_elsewhere", json_object_new_int(holder));
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
