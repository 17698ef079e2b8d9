/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* A process watcher driven as data, for the tests that run a real Watcher over a fake
 * /proc (tests/test-watcher-events.c, tests/test-placement.c): its policy from JSON text,
 * and proc connector events handed to its dispatch as the connector would. Include after
 * cmocka.h and watcher-internal.h. */

#include <stdio.h>
#include <stdlib.h>

#include "npu-tuned/policy.h"

/* The policy in json; its errors are printed, and fail the test. */
static inline tune_policy *fake_policy_parse(const char *json) {
        tune_policy_errors errors = {};
        tune_policy *policy = NULL;
        int r;

        r = tune_policy_parse_string(json, "test.json", &policy, &errors);
        for (unsigned i = 0; i < errors.n; i++) {
                char *line = NULL;
                if (tune_policy_error_format(&errors.items[i], &line) >= 0)
                        fprintf(stderr, "policy: %s\n", line);
                free(line);
        }
        tune_policy_errors_done(&errors);
        assert_int_equal(r, 0);
        return policy;
}

static inline void fake_event_feed(Watcher *w, const struct proc_event *ev) {
        watcher_on_event(NULL, ev, w);
}

static inline void fake_event_exec(Watcher *w, pid_t pid) {
        struct proc_event ev = { .what = PROC_EVENT_EXEC };
        ev.event_data.exec.process_pid = pid;
        ev.event_data.exec.process_tgid = pid;
        fake_event_feed(w, &ev);
}

/* A new thread (child_tgid == parent) or process; timestamp_ns: the kernel's stamp, 0: none. */
static inline void fake_event_fork(Watcher *w, pid_t parent, pid_t child_pid, pid_t child_tgid,
                                   uint64_t timestamp_ns) {
        struct proc_event ev = { .what = PROC_EVENT_FORK, .timestamp_ns = timestamp_ns };
        ev.event_data.fork.parent_pid = parent;
        ev.event_data.fork.parent_tgid = parent;
        ev.event_data.fork.child_pid = child_pid;
        ev.event_data.fork.child_tgid = child_tgid;
        fake_event_feed(w, &ev);
}

static inline void fake_event_comm(Watcher *w, pid_t tid, pid_t tgid, const char *comm) {
        struct proc_event ev = { .what = PROC_EVENT_COMM };
        ev.event_data.comm.process_pid = tid;
        ev.event_data.comm.process_tgid = tgid;
        snprintf(ev.event_data.comm.comm, sizeof ev.event_data.comm.comm, "%s", comm);
        fake_event_feed(w, &ev);
}

static inline void fake_event_exit(Watcher *w, pid_t tid, pid_t tgid) {
        struct proc_event ev = { .what = PROC_EVENT_EXIT };
        ev.event_data.exit.process_pid = tid;
        ev.event_data.exit.process_tgid = tgid;
        fake_event_feed(w, &ev);
}
