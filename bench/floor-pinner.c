/* SPDX-License-Identifier: GPL-2.0-only */
/* The floor: the least a proc-connector pinner must do, for the benches to compare
 * npu-tuned (and tuned) against. On each EXEC it reads /proc/PID/exe and, if that matches
 * the glob, /proc/PID/cmdline; a match gets every thread pinned to CPU, and every later
 * thread of it on its FORK event. No policy, no roles, no records, no restore: whatever
 * npu-tuned spends beyond this is the price of what it does on top.
 *
 *   floor-pinner EXE_GLOB CMDLINE_SUBSTRING CPU
 *
 * Uses the kernel's event filter (Linux 6.6+; older kernels send everything). Runs until
 * SIGTERM/SIGINT, then prints its reaction times (the event's kernel timestamp to its last
 * sched_setaffinity for it), as npu-tuned measures its own. Needs root and the initial
 * namespaces. */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_MATCHED 1024

static const char *exe_glob, *cmd_sub;
static cpu_set_t target;
static pid_t matched[MAX_MATCHED];
static volatile sig_atomic_t stop;

#define MAX_SAMPLES 65536
static uint64_t reaction[2][MAX_SAMPLES]; /* [0] exec, [1] new thread, in ns */
static unsigned n_reaction[2];

static void note_reaction(int kind, uint64_t event_ns) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t now = (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
        if (n_reaction[kind] < MAX_SAMPLES && now >= event_ns)
                reaction[kind][n_reaction[kind]++] = now - event_ns;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static void print_reactions(void) {
        static const char *const kind[2] = { "exec", "thread" };
        fprintf(stderr, "floor-pinner: reaction times:");
        for (int k = 0; k < 2; k++) {
                unsigned n = n_reaction[k];
                qsort(reaction[k], n, sizeof reaction[k][0], cmp_u64);
                fprintf(stderr, "%s %s n=%u", k ? ";" : "", kind[k], n);
                if (n)
                        fprintf(stderr, " p50=%lluus p99=%lluus max=%lluus", (unsigned long long) reaction[k][n / 2] / 1000,
                                (unsigned long long) reaction[k][n * 99 / 100] / 1000,
                                (unsigned long long) reaction[k][n - 1] / 1000);
        }
        fprintf(stderr, "\n");
}

static void on_signal(int sig) {
        (void) sig;
        stop = 1;
}

static int send_listen(int fd, uint32_t op, uint32_t events) {
        uint32_t input[2] = { op, events }; /* struct proc_input: mcast_op, event_type */
        char buf[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof input)] __attribute__((aligned(8))) = { 0 };
        struct nlmsghdr *nh = (struct nlmsghdr *) buf;
        struct cn_msg *cn = NLMSG_DATA(nh);

        nh->nlmsg_len = NLMSG_LENGTH(sizeof *cn + sizeof input);
        nh->nlmsg_type = NLMSG_DONE;
        cn->id.idx = CN_IDX_PROC;
        cn->id.val = CN_VAL_PROC;
        cn->len = sizeof input;
        memcpy(cn->data, input, sizeof input);
        return send(fd, buf, nh->nlmsg_len, 0) < 0 ? -errno : 0;
}

static int slot_of(pid_t pid) {
        for (int i = 0; i < MAX_MATCHED; i++)
                if (matched[i] == pid)
                        return i;
        return -1;
}

__attribute__((noinline)) static int matches(pid_t pid) {
        char path[64], buf[4096];
        ssize_t n;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/exe", (int) pid);
        n = readlink(path, buf, sizeof buf - 1);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        if (fnmatch(exe_glob, buf, 0) != 0)
                return 0;
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return 0;
        n = (ssize_t) fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        if (n <= 0)
                return 0;
        for (ssize_t i = 0; i < n; i++)
                if (buf[i] == 0)
                        buf[i] = ' ';
        buf[n] = 0;
        return strstr(buf, cmd_sub) != NULL;
}

static void pin_all_threads(pid_t pid) {
        char path[64];
        struct dirent *de;
        DIR *d;

        /* The main thread first: threads created from now on inherit its mask. */
        (void) sched_setaffinity(pid, sizeof target, &target);
        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && atoi(de->d_name) != pid)
                        (void) sched_setaffinity(atoi(de->d_name), sizeof target, &target);
        closedir(d);
}

__attribute__((noinline)) static void handle(const struct proc_event *ev) {
        int slot;

        switch (ev->what) {
        case PROC_EVENT_EXEC: {
                pid_t pid = ev->event_data.exec.process_tgid;
                if (!matches(pid))
                        return;
                if (slot_of(pid) < 0 && (slot = slot_of(0)) >= 0)
                        matched[slot] = pid;
                pin_all_threads(pid);
                note_reaction(0, ev->timestamp_ns);
                return;
        }
        case PROC_EVENT_FORK:
                if (ev->event_data.fork.child_pid != ev->event_data.fork.child_tgid &&
                    slot_of(ev->event_data.fork.child_tgid) >= 0) {
                        (void) sched_setaffinity(ev->event_data.fork.child_pid, sizeof target, &target);
                        note_reaction(1, ev->timestamp_ns);
                }
                return;
        case PROC_EVENT_EXIT:
                if (ev->event_data.exit.process_pid == ev->event_data.exit.process_tgid &&
                    (slot = slot_of(ev->event_data.exit.process_tgid)) >= 0)
                        matched[slot] = 0;
                return;
        default:
                return;
        }
}

int main(int argc, char **argv) {
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC, .nl_pid = 0 };
        int fd, rcvbuf = 4 << 20;
        char buf[16384] __attribute__((aligned(8)));

        if (argc != 4) {
                fprintf(stderr, "usage: %s EXE_GLOB CMDLINE_SUBSTRING CPU\n", argv[0]);
                return 2;
        }
        exe_glob = argv[1];
        cmd_sub = argv[2];
        CPU_ZERO(&target);
        CPU_SET(atoi(argv[3]), &target);
        /* Without SA_RESTART (which signal() sets): a blocked recv() returns on the signal,
         * so the pinner stops at once on a quiet host, not at the next process event. */
        struct sigaction sa_stop = { .sa_handler = on_signal };
        sigaction(SIGTERM, &sa_stop, NULL);
        sigaction(SIGINT, &sa_stop, NULL);
        fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                perror("proc connector");
                return 1;
        }
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
        if (send_listen(fd, PROC_CN_MCAST_LISTEN, PROC_EVENT_FORK | PROC_EVENT_EXEC | PROC_EVENT_EXIT) < 0) {
                perror("subscribe");
                return 1;
        }
        fprintf(stderr, "floor-pinner: listening\n");
        while (!stop) {
                ssize_t n = recv(fd, buf, sizeof buf, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == ENOBUFS) {
                                fprintf(stderr, "floor-pinner: overrun (events lost)\n");
                                continue;
                        }
                        perror("recv");
                        break;
                }
                for (struct nlmsghdr *nh = (struct nlmsghdr *) buf; NLMSG_OK(nh, (size_t) n); nh = NLMSG_NEXT(nh, n)) {
                        struct cn_msg *cn = NLMSG_DATA(nh);
                        if (nh->nlmsg_type != NLMSG_DONE || cn->id.idx != CN_IDX_PROC || cn->len < sizeof(struct proc_event))
                                continue;
                        handle((const struct proc_event *) cn->data);
                }
        }
        (void) send_listen(fd, PROC_CN_MCAST_IGNORE, 0);
        close(fd);
        print_reactions();
        return 0;
}
