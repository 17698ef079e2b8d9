/* SPDX-License-Identifier: GPL-2.0-only */
/* The netlink process connector (see connector.h and docs/process-watcher.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/connector.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proc-connector.h"
#include "log.h"
#include "npu-tuned/context.h"
#include "npu-tuned/parse.h"

/* Linux 6.6 takes an event filter with the listen request (struct proc_input in newer
 * headers). Older kernels ignore a request of this size entirely. */
struct connector_proc_input {
        uint32_t mcast_op;
        uint32_t event_type;
};
#define CONNECTOR_EVENT_NONZERO_EXIT 0x20000000u
#define CONNECTOR_EVENT_ALL                                                                                   \
        (PROC_EVENT_FORK | PROC_EVENT_EXEC | PROC_EVENT_UID | PROC_EVENT_GID | PROC_EVENT_SID |               \
         PROC_EVENT_PTRACE | PROC_EVENT_COMM | CONNECTOR_EVENT_NONZERO_EXIT | PROC_EVENT_COREDUMP |          \
         PROC_EVENT_EXIT)

#define BATCH 64
#define SLOT 512 /* one event is ~80 bytes of netlink message */
#define MAX_PER_WAKEUP 4096

struct Connector {
        sd_event *event;
        sd_event_source *source;
        int fd;
        connector_params params;
        connector_callbacks cb;
        void *userdata;
        connector_stats stats;
        struct ack_wait *wait; /* while subscribing */
        bool subscribed;
        bool congested; /* an overrun's drain stopped at its bound (drain_queued()) */
};

Connector *connector_free(Connector *c) {
        if (!c)
                return NULL;
        sd_event_source_disable_unref(c->source);
        if (c->fd >= 0) {
                /* Unsubscribe explicitly: kernels before 6.6 count listeners per request,
                 * not per socket, and keep generating events for a closed one. */
                if (c->subscribed) {
                        uint32_t op = PROC_CN_MCAST_IGNORE;
                        char buf[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof op)] = {};
                        struct nlmsghdr *nh = (struct nlmsghdr *) buf;
                        struct cn_msg *cn = NLMSG_DATA(nh);
                        nh->nlmsg_len = NLMSG_LENGTH(sizeof *cn + sizeof op);
                        nh->nlmsg_type = NLMSG_DONE;
                        cn->id.idx = CN_IDX_PROC;
                        cn->id.val = CN_VAL_PROC;
                        cn->len = sizeof op;
                        memcpy(cn->data, &op, sizeof op);
                        (void) send(c->fd, buf, nh->nlmsg_len, MSG_DONTWAIT);
                }
                close(c->fd);
        }
        sd_event_unref(c->event);
        free(c);
        return NULL;
}

int connector_new(sd_event *e, const connector_params *p, const connector_callbacks *cb, void *userdata,
                  Connector **ret) {
        Connector *c;

        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->fd = -EBADF;
        c->event = sd_event_ref(e);
        c->params = *p;
        if (c->params.rcvbuf_kib == 0)
                c->params.rcvbuf_kib = 4096;
        if (c->params.ack_timeout_ms == 0)
                c->params.ack_timeout_ms = 2000;
        if (c->params.events == 0)
                c->params.events = PROC_EVENT_FORK | PROC_EVENT_EXEC | PROC_EVENT_COMM | PROC_EVENT_EXIT;
        c->cb = *cb;
        c->userdata = userdata;
        *ret = c;
        return 0;
}

void connector_get_stats(const Connector *c, connector_stats *ret) {
        *ret = c->stats;
}

/* Where the filter looks: the kernel sends one event per datagram, its netlink header,
 * then the connector's, then the event. */
#define EVENT_AT (NLMSG_HDRLEN + sizeof(struct cn_msg))
#define WHAT_AT (EVENT_AT + offsetof(struct proc_event, what))
#define COMM_PID_AT (EVENT_AT + offsetof(struct proc_event, event_data.comm.process_pid))
#define COMM_TGID_AT (EVENT_AT + offsetof(struct proc_event, event_data.comm.process_tgid))

unsigned connector_filter_build(uint32_t events, bool thread_comm, struct sock_filter *prog) {
        /* Word loads (BPF_ABS) read big-endian: the constants compared with them are too.
         * Each event type is one bit, so a byte-swapped mask tests a byte-swapped type. */
        bool by_thread = !thread_comm && (events & PROC_EVENT_COMM);
        uint32_t kept = by_thread ? events & ~(uint32_t) PROC_EVENT_COMM : events;
        unsigned n = 0, keep = by_thread ? 8 : 3; /* the index of "RET keep"; "RET drop" next */

        prog[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, WHAT_AT);
        prog[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROC_EVENT_NONE, keep - n - 1, 0);
        n++;
        if (by_thread) {
                prog[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_COMM), 0, 4);
                prog[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, COMM_TGID_AT);
                prog[n++] = (struct sock_filter) BPF_STMT(BPF_MISC | BPF_TAX, 0);
                prog[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, COMM_PID_AT);
                prog[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_X, 0, keep - n - 1, keep - n);
                n++;
        }
        prog[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, htonl(kept), keep - n - 1, keep - n);
        n++;
        prog[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, 0xffffffffu);
        prog[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, 0);
        return n;
}

static void attach_filter(Connector *c) {
        struct sock_filter prog[CONNECTOR_FILTER_MAX];
        struct sock_fprog fprog = { .filter = prog };

        fprog.len = (unsigned short) connector_filter_build(c->params.events, c->params.thread_comm, prog);
        if (setsockopt(c->fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof fprog) < 0) {
                /* Every event is still read and sorted by the watcher, as before the filter. */
                log_warning_errno(errno, "Failed to attach the process events' socket filter, reading every event: %m");
                c->stats.socket_filter = false;
                return;
        }
        c->stats.socket_filter = true;
}

void connector_set_thread_comm(Connector *c, bool want) {
        if (c->params.thread_comm == want)
                return;
        c->params.thread_comm = want;
        if (c->subscribed)
                attach_filter(c);
}

static int send_op(Connector *c, const void *payload, size_t len, uint32_t ack) {
        char buf[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(struct connector_proc_input))] = {};
        struct nlmsghdr *nh = (struct nlmsghdr *) buf;
        struct cn_msg *cn = NLMSG_DATA(nh);
        ssize_t n;

        nh->nlmsg_len = NLMSG_LENGTH(sizeof *cn + len);
        nh->nlmsg_type = NLMSG_DONE;
        nh->nlmsg_pid = 0;
        cn->id.idx = CN_IDX_PROC;
        cn->id.val = CN_VAL_PROC;
        cn->seq = ack;
        cn->ack = ack;
        cn->len = (uint16_t) len;
        memcpy(cn->data, payload, len);
        n = send(c->fd, buf, nh->nlmsg_len, 0);
        if (n < 0)
                return -errno;
        return 0;
}

/* Validate one datagram from the kernel and hand its events to fn. Returns the number of
 * events. */
static unsigned parse_datagram(Connector *c, const char *buf, size_t len, const struct sockaddr_nl *from,
                               void (*fn)(Connector *c, const struct proc_event *ev, const struct cn_msg *cn)) {
        unsigned n = 0;

        if (from->nl_pid != 0) { /* only the kernel speaks on this socket */
                c->stats.malformed++;
                return 0;
        }
        for (const struct nlmsghdr *nh = (const struct nlmsghdr *) buf; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
                const struct cn_msg *cn;
                struct proc_event ev;

                if (nh->nlmsg_type == NLMSG_NOOP)
                        continue;
                if (nh->nlmsg_type == NLMSG_ERROR || nh->nlmsg_len < NLMSG_LENGTH(sizeof *cn)) {
                        c->stats.malformed++;
                        continue;
                }
                cn = NLMSG_DATA(nh);
                if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC || cn->len < sizeof ev ||
                    nh->nlmsg_len < NLMSG_LENGTH(sizeof *cn + sizeof ev)) {
                        c->stats.malformed++;
                        continue;
                }
                memcpy(&ev, cn->data, sizeof ev); /* aligned copy */
                fn(c, &ev, cn);
                n++;
        }
        return n;
}

static void dispatch_one(Connector *c, const struct proc_event *ev, const struct cn_msg *cn) {
        if (ev->what == PROC_EVENT_NONE)
                return; /* an ack, ours or another listener's */
        c->stats.events++;
        c->stats.last_timestamp_ns = ev->timestamp_ns;
        c->cb.event(c, ev, c->userdata);
}

/* After an overrun the kernel's netlink socket is congested: it says ENOBUFS once, then
 * drops every further event for this socket, room or not, until a read leaves its queue
 * empty; those drops say nothing (they only count). So what is queued is read and dropped
 * until the queue is empty, and only then does the consumer resync: a resync walked while
 * the socket is still congested misses every process that starts during the walk, and no
 * later overrun is reported to make up for it (a burst of 4,096 processes left a thousand
 * of them unmanaged, bench/RESULTS.md). Bounded: while congested nothing is queued, so the
 * queue only shrinks, and it holds at most what the buffer does (an event takes several
 * hundred bytes of it). Returns false when the bound was reached first: still congested. */
static bool drain_queued(Connector *c) {
        static char sink[BATCH][16]; /* truncated: only the count matters */
        struct mmsghdr msgs[BATCH];
        struct iovec iov[BATCH];
        uint64_t max = (uint64_t) (c->stats.rcvbuf > 0 ? c->stats.rcvbuf : 0) / 128 + BATCH, n_read = 0;

        while (n_read < max) {
                int n;

                for (unsigned i = 0; i < BATCH; i++) {
                        iov[i] = (struct iovec){ .iov_base = sink[i], .iov_len = sizeof sink[i] };
                        msgs[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
                }
                n = recvmmsg(c->fd, msgs, BATCH, MSG_DONTWAIT, NULL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == ENOBUFS) { /* emptied, and overran again meanwhile: on */
                                c->stats.overruns++;
                                n_read += BATCH;
                                continue;
                        }
                        return errno == EAGAIN;
                }
                n_read += (unsigned) n;
                c->stats.dropped += (unsigned) n;
                if (n < BATCH)
                        return true; /* the next read found it empty */
        }
        return false;
}

/* The queue was read empty: a socket the drain left congested is not any more, and what the
 * kernel dropped meanwhile, silently, needs a resync of its own. */
static void queue_emptied(Connector *c) {
        if (!c->congested)
                return;
        c->congested = false;
        c->stats.silent_losses++;
        if (c->cb.lost)
                c->cb.lost(c, c->userdata);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Connector *c = userdata;
        static char bufs[BATCH][SLOT];
        struct mmsghdr msgs[BATCH];
        struct iovec iov[BATCH];
        struct sockaddr_nl from[BATCH];
        unsigned total = 0;

        while (total < MAX_PER_WAKEUP) {
                int n;

                for (unsigned i = 0; i < BATCH; i++) {
                        iov[i] = (struct iovec){ .iov_base = bufs[i], .iov_len = SLOT };
                        msgs[i] = (struct mmsghdr){ .msg_hdr = {
                                .msg_name = &from[i],
                                .msg_namelen = sizeof from[i],
                                .msg_iov = &iov[i],
                                .msg_iovlen = 1,
                        } };
                }
                n = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN) {
                                queue_emptied(c);
                                break;
                        }
                        if (errno == ENOBUFS) {
                                c->stats.overruns++;
                                log_warning("Process events were lost (socket receive buffer of %d bytes overran), resyncing from /proc.",
                                            c->stats.rcvbuf);
                                c->congested = !drain_queued(c);
                                if (c->cb.lost)
                                        c->cb.lost(c, c->userdata);
                                /* Back to the loop: the resync's timer and the other
                                 * sources run before the next events are read. */
                                return 0;
                        }
                        return log_error_errno(errno, "Failed to receive process events: %m");
                }
                for (int i = 0; i < n; i++) {
                        c->stats.datagrams++;
                        if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
                                c->stats.malformed++;
                                continue;
                        }
                        total += parse_datagram(c, bufs[i], msgs[i].msg_len, &from[i], dispatch_one);
                }
                if (n < BATCH) {
                        queue_emptied(c);
                        break;
                }
        }
        return 0;
}

/* During subscribe: watch for our acks. */
typedef struct ack_wait {
        uint32_t cookie_filter, cookie_plain;
        bool got_filter, got_plain;
        uint32_t err;
} ack_wait;

static void collect_ack(Connector *c, const struct proc_event *ev, const struct cn_msg *cn) {
        ack_wait *w = c->wait;

        if (ev->what != PROC_EVENT_NONE || !w)
                return;
        if (cn->ack == w->cookie_filter + 1)
                w->got_filter = true;
        else if (cn->ack == w->cookie_plain + 1) {
                w->got_plain = true;
                w->err = ev->event_data.ack.err;
        }
}

static uint64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* Best effort, for the message: which namespace we are in. This is about the daemon's own
 * process, so it reads the live /proc (through the resolver, like every other path). */
static const char *namespace_hint(void) {
        _cleanup_(tune_ctx_freep) tune_ctx *live = NULL;
        _cleanup_free_ char *uid_map = NULL, *status = NULL;
        bool userns = false, pidns = false;
        const char *v;
        size_t len;

        if (tune_ctx_new("/", &live) < 0)
                return "";
        /* The initial user namespace maps all 2^32 ids; a new one maps fewer, or none. */
        if (tune_read_string(live, "/proc/self/uid_map", &uid_map) >= 0) {
                unsigned long a, b, n;
                userns = sscanf(uid_map, "%lu %lu %lu", &a, &b, &n) != 3 || n != 4294967295UL;
        }
        /* NSpid lists one pid per PID namespace level (as far as this /proc sees). */
        if (tune_read_file(live, "/proc/self/status", 0, &status, NULL) >= 0 &&
            tune_find_key(status, "NSpid", &v, &len) >= 0) {
                unsigned levels = 0;
                for (size_t i = 0; i < len; i++)
                        if ((i == 0 || v[i - 1] == ' ' || v[i - 1] == '\t') && v[i] != ' ' && v[i] != '\t')
                                levels++;
                pidns = levels > 1;
        }
        if (userns && pidns)
                return " This process runs in a user namespace and a PID namespace.";
        if (userns)
                return " This process runs in a user namespace.";
        if (pidns)
                return " This process runs in a PID namespace.";
        return "";
}

int connector_subscribe(Connector *c) {
        struct sockaddr_nl addr = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
        struct connector_proc_input in = { .mcast_op = PROC_CN_MCAST_LISTEN, .event_type = CONNECTOR_EVENT_ALL };
        uint32_t op = PROC_CN_MCAST_LISTEN;
        ack_wait w = {};
        socklen_t sl = sizeof c->stats.rcvbuf;
        int size, r;
        uint64_t deadline;

        c->fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
        if (c->fd < 0)
                return log_error_errno(errno, "Failed to open the netlink process connector: %m");
        size = (int) (c->params.rcvbuf_kib > 1024 * 1024 ? 1024 * 1024 * 1024 : c->params.rcvbuf_kib * 1024);
        if (setsockopt(c->fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0) {
                log_debug_errno(errno, "SO_RCVBUFFORCE failed, trying SO_RCVBUF (capped by net.core.rmem_max): %m");
                (void) setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
        }
        (void) getsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &c->stats.rcvbuf, &sl);
        if (bind(c->fd, (struct sockaddr *) &addr, sizeof addr) < 0) {
                int e = errno;
                const char *hint = e == EPERM ? namespace_hint() : "";

                /* Newer kernels (6.18 here) refuse the join itself outside the initial user
                 * namespace, where older ones took it and ignored the subscription below. */
                if (*hint)
                        return log_error_errno(e, "Failed to join the process connector's multicast group: %m. The "
                                                  "kernel refuses it outside the initial user and PID namespaces "
                                                  "(containers, unshare -U, unshare -p): npu-tuned must run in the "
                                                  "host's namespaces.%s",
                                               hint);
                return log_error_errno(e, "Failed to join the process connector's multicast group: %m");
        }

        /* Two requests: the 6.6+ form with every event (older kernels ignore it, newer
         * ones ack it), then the classic form that every kernel acks. Their acks tell
         * whether the kernel takes a filter. */
        w.cookie_filter = ((uint32_t) getpid() << 8) ^ (uint32_t) now_ms();
        w.cookie_plain = w.cookie_filter + 0x10000;
        r = send_op(c, &in, sizeof in, w.cookie_filter);
        if (r == -ECONNREFUSED)
                return log_error_errno(r, "The process connector refused the subscription (%m): npu-tuned must run in the host's network namespace (no PrivateNetwork=).");
        if (r < 0)
                return log_error_errno(r, "Failed to subscribe to process events: %m");
        r = send_op(c, &op, sizeof op, w.cookie_plain);
        if (r < 0)
                return log_error_errno(r, "Failed to subscribe to process events: %m");

        c->wait = &w;
        deadline = now_ms() + c->params.ack_timeout_ms;
        while (!w.got_plain) {
                struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
                struct sockaddr_nl from;
                socklen_t fl = sizeof from;
                char buf[SLOT];
                uint64_t t = now_ms();
                ssize_t n;

                if (t >= deadline)
                        break;
                r = poll(&pfd, 1, (int) (deadline - t));
                if (r < 0 && errno != EINTR) {
                        c->wait = NULL;
                        return log_error_errno(errno, "Failed to wait for the process connector: %m");
                }
                for (;;) {
                        fl = sizeof from;
                        n = recvfrom(c->fd, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *) &from, &fl);
                        if (n < 0)
                                break;
                        (void) parse_datagram(c, buf, (size_t) n, &from, collect_ack);
                        if (w.got_plain)
                                break;
                }
        }
        c->wait = NULL;
        if (!w.got_plain)
                return log_error_errno(ETIMEDOUT,
                                       "The kernel did not acknowledge the process connector subscription within %u ms. "
                                       "It silently ignores requests from outside the initial user and PID namespaces "
                                       "(containers, unshare -U, unshare -p): npu-tuned must run in the host's namespaces.%s",
                                       c->params.ack_timeout_ms, namespace_hint());
        if (w.err != 0)
                return log_error_errno(-(int) w.err,
                                       "The kernel refused the process connector subscription: %m%s",
                                       w.err == EPERM ? " (before Linux 6.6 this needs CAP_NET_ADMIN)" : "");
        c->subscribed = true;

        if (w.got_filter) {
                in.event_type = c->params.events;
                r = send_op(c, &in, sizeof in, w.cookie_filter + 0x20000);
                if (r < 0)
                        log_warning_errno(r, "Failed to install the process event filter, receiving every event: %m");
                else
                        c->stats.filter = true; /* its ack is filtered out by design */
        }
        /* After the acks: what the subscription waited for passes it anyway. */
        attach_filter(c);
        log_debug("Process connector subscribed: receive buffer %d bytes, event filter %s, socket filter %s.",
                  c->stats.rcvbuf, c->stats.filter ? "on" : "not supported by this kernel",
                  c->stats.socket_filter ? (c->params.thread_comm ? "on" : "on, main threads' renames only") : "off");

        r = sd_event_add_io(c->event, &c->source, c->fd, EPOLLIN, on_io, c);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the process connector: %m");
        (void) sd_event_source_set_description(c->source, "proc-connector");
        return 0;
}
