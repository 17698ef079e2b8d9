/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The kernel's netlink process connector: every fork, exec, comm change and exit, as it
 * happens. Subscribing needs the initial user and PID namespaces (the kernel silently
 * ignores anyone else) and, before Linux 6.6, CAP_NET_ADMIN. */

#include <stdbool.h>
#include <stdint.h>
#include <linux/cn_proc.h>
#include <systemd/sd-event.h>

typedef struct Connector Connector;

typedef struct connector_callbacks {
        /* One event (FORK, EXEC, COMM, EXIT, ...). ev is only valid during the call. */
        void (*event)(Connector *c, const struct proc_event *ev, void *userdata);
        /* The socket overflowed (ENOBUFS): events were lost and what was still queued has
         * been dropped, the queue read empty so that events flow again. The consumer must
         * resync from /proc. Also called, with no overrun counted, when the drain had to
         * stop before the queue was empty and a later read emptied it. */
        void (*lost)(Connector *c, void *userdata);
} connector_callbacks;

typedef struct connector_params {
        unsigned rcvbuf_kib;     /* receive buffer; 0: 4096 (the kernel doubles it) */
        unsigned ack_timeout_ms; /* wait for the subscription's ack; 0: 2000 */
        uint32_t events;         /* PROC_EVENT_* wanted; used as the kernel filter on 6.6+ */
        bool thread_comm;        /* the COMM events of threads other than a process's main one
                                  * are wanted too (see connector_filter_build()) */
} connector_params;

typedef struct connector_stats {
        uint64_t events;      /* events delivered */
        uint64_t datagrams;
        uint64_t overruns;    /* ENOBUFS seen */
        uint64_t dropped;     /* queued events dropped after an overrun */
        uint64_t silent_losses; /* drains that stopped at their bound: lost() called again later */
        uint64_t malformed;   /* messages refused (not from the kernel, truncated, ...) */
        bool filter;          /* the kernel applies our event filter (6.6+) */
        bool socket_filter;   /* connector_filter_build()'s program is on the socket */
        int rcvbuf;           /* effective SO_RCVBUF */
        uint64_t last_timestamp_ns; /* of the last event delivered (CLOCK_MONOTONIC) */
} connector_stats;

int connector_new(sd_event *e, const connector_params *p, const connector_callbacks *cb, void *userdata,
                  Connector **ret);
/* Subscribe, wait for the kernel's acknowledgement, then watch the socket from the event
 * loop. Returns 0, or: -ETIMEDOUT when no ack came (the daemon is not in the initial user
 * and PID namespaces), -EPERM (needs CAP_NET_ADMIN), -ECONNREFUSED (network namespace),
 * other negative errnos. Logs the cause. Events that arrive before the ack are dropped:
 * the caller scans /proc after this returns. */
int connector_subscribe(Connector *c);
Connector *connector_free(Connector *c);
void connector_get_stats(const Connector *c, connector_stats *ret);
/* Whether the COMM events of threads other than a process's main one are wanted; a
 * subscribed connector's socket filter changes at once (the events dropped before are
 * gone: a caller that starts to want them reads the names from /proc). */
void connector_set_thread_comm(Connector *c, bool want);

/* The classic BPF program the socket drops unwanted events with, on every kernel: the
 * acks (PROC_EVENT_NONE) and the types in events pass, except that without thread_comm a
 * COMM event passes only for a main thread (pid == tgid). Linux 6.6+ filters by type
 * already; older kernels send every type, and nothing filters renames by thread. Each
 * datagram the socket drops is a wake-up saved: a thread that names itself
 * (pthread_setname_np) sends a COMM event, and a server's threads do so by the dozen.
 * Pure; prog holds CONNECTOR_FILTER_MAX instructions. Returns the program's length. */
#define CONNECTOR_FILTER_MAX 10
struct sock_filter;
unsigned connector_filter_build(uint32_t events, bool thread_comm, struct sock_filter *prog);
