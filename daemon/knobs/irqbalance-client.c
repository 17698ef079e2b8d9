/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "irqbalance-client.h"
#include "log.h"
#include "npu-tuned/irqbalance.h"
#include "npu-tuned/knob.h"

/* irqbalance answers from its main loop; never wait on it for long. */
#define IRQBALANCE_TIMEOUT_MS 2000

struct Irqbalance {
        const tune_ctx *ctx; /* borrowed: outlives us (the manager's) */
        pid_t pid;
        tune_irqbalance_setup original;
};

pid_t irqbalance_pid(const Irqbalance *b) {
        return b ? b->pid : 0;
}

static int connect_to(pid_t pid) {
        /* Where irqbalance 1.x listens, in the order it tries: a file in /run/irqbalance
         * (its unit's RuntimeDirectory), else an abstract socket: "irqbalance<PID>.sock"
         * in older releases, an all-zero name in 1.9 (it binds an empty sun_path). */
        for (int kind = 0; kind < 3; kind++) {
                _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                struct sockaddr_un a = { .sun_family = AF_UNIX };
                socklen_t len = sizeof a;
                struct ucred peer;
                socklen_t plen = sizeof peer;

                if (fd < 0)
                        return negative_errno();
                if (kind == 0)
                        snprintf(a.sun_path, sizeof a.sun_path, "/run/irqbalance/irqbalance%d.sock", (int) pid);
                else if (kind == 1) {
                        int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "irqbalance%d.sock", (int) pid);
                        len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + (size_t) n);
                }
                if (connect(fd, (struct sockaddr *) &a, len) < 0)
                        continue; /* a non-blocking connect to a listening unix socket completes at once */
                /* An abstract name can be taken by anyone: talk only to irqbalance itself. */
                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &plen) < 0 || peer.uid != 0 || peer.pid != pid)
                        continue;
                return TAKE_FD(fd);
        }
        return -ECONNREFUSED;
}

static int wait_fd(int fd, short events) {
        struct pollfd p = { .fd = fd, .events = events };
        int r = poll(&p, 1, IRQBALANCE_TIMEOUT_MS);
        if (r < 0)
                return negative_errno();
        return r == 0 ? -ETIMEDOUT : 0;
}

/* One command per connection, with our credentials; the reply (if reply) up to EOF. */
static int command(pid_t pid, const char *cmd, char **reply, size_t *reply_len) {
        _cleanup_close_ int fd = connect_to(pid);
        struct ucred cred = { .pid = getpid(), .uid = getuid(), .gid = getgid() };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(struct ucred))];
        } control = {};
        struct iovec iov = { .iov_base = (void *) cmd, .iov_len = strlen(cmd) };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof control };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        int r;

        if (fd < 0)
                return fd;
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_CREDENTIALS;
        c->cmsg_len = CMSG_LEN(sizeof cred);
        memcpy(CMSG_DATA(c), &cred, sizeof cred);
        r = wait_fd(fd, POLLOUT);
        if (r < 0)
                return r;
        if (sendmsg(fd, &msg, MSG_NOSIGNAL) != (ssize_t) iov.iov_len)
                return -EIO;
        if (!reply)
                return 0;
        size_t cap = 8192, len = 0;
        _cleanup_free_ char *buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                r = wait_fd(fd, POLLIN);
                if (r < 0)
                        return r;
                ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len >= cap - 1)
                        return -EFBIG; /* a setup reply is short; this is not one */
        }
        buf[len] = 0;
        *reply = TAKE_PTR(buf);
        *reply_len = len;
        return 0;
}

static int read_setup(pid_t pid, tune_irqbalance_setup *ret) {
        _cleanup_free_ char *reply = NULL;
        size_t len = 0;
        int r = command(pid, "setup", &reply, &len);
        if (r < 0)
                return r;
        return tune_irqbalance_parse_setup(reply, len, ret);
}

int irqbalance_cooperate(const tune_ctx *ctx, const unsigned *irqs, unsigned n, const tune_cpuset *cpus, Irqbalance **ret) {
        _cleanup_free_ Irqbalance *b = calloc(1, sizeof *b);
        _cleanup_free_ char *ban = NULL, *ban_cpus = NULL;
        _cleanup_cpuset_ tune_cpuset all_cpus = {};
        int pid = 0, r;

        if (!b)
                return -ENOMEM;
        if (!tune_ctx_is_live(ctx))
                return -EOPNOTSUPP;
        r = tune_irqbalance_find(ctx, &pid);
        if (r < 0)
                return r;
        if (pid <= 0)
                return -ESRCH;
        b->pid = pid;
        b->ctx = ctx;
        r = read_setup(pid, &b->original);
        if (r < 0)
                return r;
        r = tune_irqbalance_format_ban_irqs(b->original.banned_irqs, b->original.n_banned_irqs, irqs, n, &ban);
        if (r >= 0)
                r = tune_cpuset_copy(&all_cpus, &b->original.banned_cpus);
        if (r >= 0 && cpus)
                r = tune_cpuset_or(&all_cpus, cpus);
        if (r >= 0)
                r = tune_irqbalance_format_ban_cpus(&all_cpus, &ban_cpus);
        if (r >= 0)
                r = command(pid, ban, NULL, NULL);
        if (r >= 0)
                r = command(pid, ban_cpus, NULL, NULL);
        if (r < 0) {
                tune_irqbalance_setup_done(&b->original);
                return r;
        }
        log_debug("Told irqbalance (pid %d): \"%s\", \"%s\".", pid, ban, ban_cpus);
        *ret = TAKE_PTR(b);
        return 0;
}

Irqbalance *irqbalance_release(Irqbalance *b) {
        _cleanup_free_ char *ban = NULL, *ban_cpus = NULL;
        int pid = 0, r;

        if (!b)
                return NULL;
        /* Only the process we told: a restarted irqbalance has its own settings already. */
        if (tune_irqbalance_find(b->ctx, &pid) >= 0 && pid == b->pid) {
                r = tune_irqbalance_format_ban_irqs(b->original.banned_irqs, b->original.n_banned_irqs, NULL, 0, &ban);
                if (r >= 0)
                        r = command(b->pid, ban, NULL, NULL);
                /* The CPU ban it had, whoever set it: its own (IRQBALANCE_BANNED_CPULIST,
                 * isolated, nohz_full) or another client over the socket, which "settings
                 * cpus NULL" would drop. None had: NULL, its own configuration. */
                if (r >= 0)
                        r = tune_irqbalance_format_ban_cpus(&b->original.banned_cpus, &ban_cpus);
                if (r >= 0)
                        r = command(b->pid, ban_cpus, NULL, NULL);
                if (r < 0)
                        log_warning_errno(r, "Failed to give irqbalance (pid %d) its settings back: %m; restart it.", b->pid);
                else
                        log_info("Gave irqbalance (pid %d) its IRQs and CPUs back.", b->pid);
        }
        tune_irqbalance_setup_done(&b->original);
        free(b);
        return NULL;
}
