/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The driver as one more attribution source: npu-tuned-driver-query run off the event
 * loop when a matched process has no accelerator yet (daemon/watcher/watcher-driver.c). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "npu-tuned/driver-procs.h"

typedef struct Watcher Watcher;

typedef struct DriverQuery {
        pid_t child;              /* running (or killed and not reaped yet); 0: none */
        int fd;                   /* its stdout */
        sd_event_source *io, *deadline;
        sd_event_source *reaper;  /* a killed child not gone yet: looked for until it is */
        char *buf;
        size_t len;
        bool overflow;
        bool eof;                 /* its output closed: waiting for it to exit */
        int status;               /* its wait status, once reaped */
        uint64_t deadline_usec;   /* CLOCK_MONOTONIC */
        uint64_t last_start_usec; /* CLOCK_MONOTONIC */
        uint64_t started_ticks;   /* CLOCK_BOOTTIME in clock ticks, as /proc/PID/stat counts start times */
        tune_driver_procs answer; /* the last answer; valid when answered */
        uint64_t answer_ticks;    /* started_ticks of the query that gave it */
        bool answered;
        bool given_up;            /* no library there: not asked again until a reload */
} DriverQuery;

/* Ask the driver now unless a query runs, the last began less than the interval ago, it
 * is off (no program) or it has given up. Never blocks: the answer comes later, and
 * every managed process still without accelerators is then attributed again. */
void watcher_driver_request(Watcher *w);
/* The answer for a process that began at start_time, or NULL: only a process that ran
 * before the query began held its pid when the driver answered (it is alive now, so it
 * never let the pid go). */
const tune_driver_procs *watcher_driver_answer(Watcher *w, uint64_t start_time);
/* Kill a running query and forget the answer. */
void watcher_driver_done(Watcher *w);
/* After a reload: a library may be there now. */
void watcher_driver_reset(Watcher *w);
