/* SPDX-License-Identifier: GPL-2.0-only */
/* The connector's socket filter (connector_filter_build()) run by the kernel: attached to
 * one end of a datagram socket pair, it sees datagrams laid out as the proc connector's
 * (netlink header, connector header, event), and the test reads which ones come through.
 * watcher-live-comm-filter checks the same program on the real connector. */
#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc-connector.h"

#define WANTED (PROC_EVENT_FORK | PROC_EVENT_EXEC | PROC_EVENT_COMM | PROC_EVENT_EXIT)

typedef struct pair {
        int rx, tx;
} pair;

static void pair_open(pair *p, uint32_t events, bool thread_comm) {
        struct sock_filter prog[CONNECTOR_FILTER_MAX];
        struct sock_fprog fprog = { .filter = prog };
        int sv[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
        fprog.len = (unsigned short) connector_filter_build(events, thread_comm, prog);
        assert_true(fprog.len <= CONNECTOR_FILTER_MAX);
        assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof fprog), 0);
        p->rx = sv[0];
        p->tx = sv[1];
}

static void pair_close(pair *p) {
        close(p->rx);
        close(p->tx);
}

/* Sends one event as the kernel lays it out; returns whether the receiving end got it. */
static bool passes_len(const pair *p, uint32_t what, pid_t pid, pid_t tgid, size_t len) {
        union {
                char buf[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(struct proc_event))];
                struct nlmsghdr align;
        } u = {};
        struct nlmsghdr *nh = &u.align;
        struct cn_msg *cn = NLMSG_DATA(nh);
        struct proc_event ev = { .what = what };
        char got[sizeof u.buf + 16];
        ssize_t n;

        nh->nlmsg_len = NLMSG_LENGTH(sizeof *cn + sizeof ev);
        nh->nlmsg_type = NLMSG_DONE;
        cn->id.idx = CN_IDX_PROC;
        cn->id.val = CN_VAL_PROC;
        cn->len = sizeof ev;
        if (what == PROC_EVENT_COMM) {
                ev.event_data.comm.process_pid = pid;
                ev.event_data.comm.process_tgid = tgid;
                memcpy(ev.event_data.comm.comm, "worker", 7);
        } else if (what == PROC_EVENT_EXIT) {
                ev.event_data.exit.process_pid = pid;
                ev.event_data.exit.process_tgid = tgid;
        } else if (what == PROC_EVENT_NONE)
                ev.event_data.ack.err = 0;
        else {
                /* The first two words of every other event are a pid and a tgid too. */
                ev.event_data.fork.parent_pid = pid;
                ev.event_data.fork.parent_tgid = tgid;
        }
        memcpy(cn->data, &ev, sizeof ev);
        assert_true(len <= sizeof u.buf);
        /* A datagram the filter refuses is tossed without an error to the sender. */
        (void) send(p->tx, u.buf, len, 0);
        n = recv(p->rx, got, sizeof got, MSG_DONTWAIT);
        if (n < 0) {
                assert_int_equal(errno, EAGAIN);
                return false;
        }
        assert_int_equal((size_t) n, len); /* passed whole */
        assert_memory_equal(got, u.buf, len);
        return true;
}

static bool passes(const pair *p, uint32_t what, pid_t pid, pid_t tgid) {
        return passes_len(p, what, pid, tgid, NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(struct proc_event)));
}

static void test_main_threads_renames_only(void **state) {
        pair p;
        (void) state;

        pair_open(&p, WANTED, false);
        assert_true(passes(&p, PROC_EVENT_NONE, 0, 0)); /* the subscription's acks */
        assert_true(passes(&p, PROC_EVENT_FORK, 100, 100));
        assert_true(passes(&p, PROC_EVENT_EXEC, 200, 200));
        assert_true(passes(&p, PROC_EVENT_EXIT, 201, 200)); /* a thread's exit */
        assert_true(passes(&p, PROC_EVENT_EXIT, 200, 200));
        assert_true(passes(&p, PROC_EVENT_COMM, 200, 200));   /* a retitle: a match may follow */
        assert_false(passes(&p, PROC_EVENT_COMM, 201, 200));  /* a thread names itself */
        assert_false(passes(&p, PROC_EVENT_COMM, 70000, 1));  /* pids above 65535: every byte compared */
        assert_true(passes(&p, PROC_EVENT_COMM, 70000, 70000));
        assert_false(passes(&p, PROC_EVENT_COMM, 0x01000002, 0x02000002));
        /* What kernels before 6.6 send though nobody asked. */
        assert_false(passes(&p, PROC_EVENT_UID, 200, 200));
        assert_false(passes(&p, PROC_EVENT_GID, 200, 200));
        assert_false(passes(&p, PROC_EVENT_SID, 200, 200));
        assert_false(passes(&p, PROC_EVENT_PTRACE, 200, 200));
        assert_false(passes(&p, PROC_EVENT_COREDUMP, 200, 200));
        assert_false(passes(&p, 0x1000, 200, 200)); /* a type of a later kernel */
        /* Too short to hold an event: the program's load fails, the datagram is dropped
         * (the watcher would count it malformed). */
        assert_false(passes_len(&p, PROC_EVENT_FORK, 1, 1, NLMSG_HDRLEN + 8));
        pair_close(&p);
}

static void test_thread_renames_wanted(void **state) {
        pair p;
        (void) state;

        pair_open(&p, WANTED, true);
        assert_true(passes(&p, PROC_EVENT_NONE, 0, 0));
        assert_true(passes(&p, PROC_EVENT_COMM, 201, 200));
        assert_true(passes(&p, PROC_EVENT_COMM, 200, 200));
        assert_true(passes(&p, PROC_EVENT_FORK, 201, 200));
        assert_false(passes(&p, PROC_EVENT_UID, 200, 200));
        pair_close(&p);
}

static void test_types_asked(void **state) {
        pair p;
        (void) state;

        pair_open(&p, PROC_EVENT_FORK | PROC_EVENT_EXIT, false);
        assert_true(passes(&p, PROC_EVENT_NONE, 0, 0));
        assert_true(passes(&p, PROC_EVENT_FORK, 5, 5));
        assert_true(passes(&p, PROC_EVENT_EXIT, 5, 5));
        assert_false(passes(&p, PROC_EVENT_EXEC, 5, 5));
        assert_false(passes(&p, PROC_EVENT_COMM, 5, 5));
        assert_false(passes(&p, PROC_EVENT_COMM, 6, 5));
        pair_close(&p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_main_threads_renames_only),
                cmocka_unit_test(test_thread_renames_wanted),
                cmocka_unit_test(test_types_asked),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
