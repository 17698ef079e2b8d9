/* SPDX-License-Identifier: GPL-2.0-only */
/* The floor: the least a proc-connector pinner must do, for the benches to compare
 * npu-tuned (and tuned) against. On each EXEC it reads /proc/PID/exe and, if that matches
 * the glob, /proc/PID/cmdline; a match gets every thread pinned to CPU, and every later
 * thread of it on its FORK event. No policy, no roles, no records, no restore: whatever
 * npu-tuned spends beyond this is the price of what it does on top.
 *
 *   floor-pinner [--facts STATE_DIR [--loop] [--worker] [--record-files]] EXE_GLOB
 *                CMDLINE_SUBSTRING CPU[,THREAD_CPU]
 *
 * With THREAD_CPU the main thread goes on CPU and every other thread on THREAD_CPU: the
 * control/compute split npu-tuned's bench rule makes, migrations included.
 *
 * --facts makes the second floor: the same pinner, obliged to know before it pins what
 * npu-tuned must know, and to know it the least costly way, with none of npu-tuned's
 * machinery (policy engine, planner, log, D-Bus). Before the first pin: the real uid
 * (/proc/PID/status; the rule's user, between exe and cmdline as npu-tuned orders its
 * criteria), a pidfd and the start time (/proc/PID/stat: the record's identity, checked
 * by the pidfd after the pin), the environment (/proc/PID/environ: the visible-devices
 * list), the cgroup and its cpuset's two files (the pin stays inside the container's
 * cpuset), the main thread's original affinity and one write of it into a journal held
 * open in STATE_DIR (restore after a crash). A new thread: its directory held across its
 * pin (a reused tid is not pinned unseen), its original affinity. An exit: one journal
 * line. With THREAD_CPU it does the same job as npu-tuned under the benches' rule: what
 * npu-tuned spends beyond it is its own overhead, and what it spends beyond the bare floor
 * is the price of those facts and of the split.
 *
 * With --facts, three options give the floor one each of the ways npu-tuned is built, to
 * price each apart (bench/RESULTS.md, "floor-shape"):
 * --loop          an event loop's read: epoll_wait(2) on the socket, then recvmmsg(2)
 *                 of what is queued (MSG_DONTWAIT), as npu-tuned's sd-event loop and its
 *                 connector read; without it one blocking recv(2) per datagram.
 * --worker        the command line and the environment (the reads that take the target's
 *                 mmap_lock) read on a worker thread while the loop waits at most 100 ms
 *                 for them, as npu-tuned's reads' guard does (docs/trust.md): a mutex, a
 *                 condition variable and a semaphore per hand-off.
 * --record-files  a record file per placed process instead of a line in the journal: the
 *                 original written into a spare file made in advance, the pin, the spare
 *                 renamed to the process's record, the next spare made; the record
 *                 unlinked at the exit (npu-tuned's affinity record, docs/placement.md).
 *
 * An overrun (ENOBUFS) is recovered from the least costly way that finds every process
 * the lost events would have: the socket, congested after an overrun (it drops every event
 * until a read leaves its queue empty, daemon/watcher/proc-connector.c), is read empty
 * without handling what it held, then /proc is walked once: a process that matches as on
 * its exec is placed as then, and its threads; a known one gets its threads placed (their
 * FORK events may be among those lost); one gone (its EXIT lost) is forgotten. Overruns
 * during the drain make no walk of their own: the one walk after it covers them.
 *
 * Uses the kernel's event filter (Linux 6.6+; older kernels send everything). Runs until
 * SIGTERM/SIGINT, then prints its reaction times (the event's kernel timestamp to its last
 * sched_setaffinity for it) and their handling part (from when it began to handle the
 * event), as npu-tuned measures its own. Needs root and the initial namespaces. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* Matched processes by pid, in an open-addressed table twice their most (a bench's burst
 * runs 4096 at once): a lookup per event costs a hash and a probe or two, as npu-tuned's
 * does, not a scan of the table. */
#define MAX_MATCHED 8192
#define MATCHED_SLOTS (2 * MAX_MATCHED)

static const char *exe_glob, *cmd_sub;
static cpu_set_t target, thread_target; /* the main thread's, the other threads' */
static pid_t matched[MATCHED_SLOTS];
static unsigned n_matched;
static volatile sig_atomic_t stop;

/* --facts: the journal of originals, the cpuset hierarchy, each matched process's pidfd. */
static bool facts;
static uid_t own_uid; /* the rule's user: the pinner's own */
static int journal_fd = -1;
static char cpuset_mnt[256];
static bool cpuset_v2;
static int pidfds[MATCHED_SLOTS];
/* When each matched process was placed (CLOCK_MONOTONIC ns, the events' clock, taken before
 * its exe was read): an EXEC event older than that is one a resync walk has answered
 * already (it came in while the walk ran). */
static uint64_t placed_ns[MATCHED_SLOTS];
/* Resyncs after overruns: walks, datagrams read away before them, processes placed, threads
 * placed, processes found gone; printed at each and at stop. */
static unsigned long resyncs, resync_drained, resync_procs, resync_threads, resync_gone;
/* Printed at stop: environments with a visible-devices or rank variable, cpusets whose
 * memory nodes were read; journal lines that failed to go out. */
static unsigned long facts_seen, journal_failed;

/* --loop, --worker, --record-files (see the header). */
static bool loop_read, worker_reads, record_files;
static int state_dfd = -1, spare_fd = -1;

/* --worker: one job at a time, as the loop waits for each. */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t work;
        sem_t done;
        pid_t pid; /* 0: no job */
        char cmdline[4096], environ[4096];
        ssize_t n_cmdline, n_environ;
} worker = { .lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER };
/* The environment the worker read with the command line, for facts_place(). */
static pid_t environ_of;

#define MAX_SAMPLES 65536
/* [0] exec, [1] new thread, in ns: from the event's timestamp, and from the start of its
 * handling (handling_began), as npu-tuned splits its own. */
static uint64_t reaction[2][MAX_SAMPLES], handling[2][MAX_SAMPLES];
static unsigned n_reaction[2];
static uint64_t handling_began;

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void note_reaction(int kind, uint64_t event_ns) {
        uint64_t now = now_ns();
        if (n_reaction[kind] < MAX_SAMPLES && now >= event_ns) {
                handling[kind][n_reaction[kind]] = now - (handling_began > event_ns ? handling_began : event_ns);
                reaction[kind][n_reaction[kind]++] = now - event_ns;
        }
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static void print_times(const char *what, uint64_t (*samples)[MAX_SAMPLES]) {
        static const char *const kind[2] = { "exec", "thread" };
        fprintf(stderr, "floor-pinner: %s:", what);
        for (int k = 0; k < 2; k++) {
                unsigned n = n_reaction[k];
                qsort(samples[k], n, sizeof samples[k][0], cmp_u64);
                fprintf(stderr, "%s %s n=%u", k ? ";" : "", kind[k], n);
                if (n)
                        fprintf(stderr, " p50=%lluus p99=%lluus max=%lluus", (unsigned long long) samples[k][n / 2] / 1000,
                                (unsigned long long) samples[k][n * 99 / 100] / 1000,
                                (unsigned long long) samples[k][n - 1] / 1000);
        }
        fprintf(stderr, "\n");
}

static void print_reactions(void) {
        print_times("reaction times", reaction);
        print_times("handling times", handling);
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

/* One bounded read of a whole small file: open, read, close, as npu-tuned reads /proc. */
static ssize_t read_small(const char *path, char *buf, size_t size) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        ssize_t n;

        if (fd < 0)
                return -1;
        n = read(fd, buf, size - 1);
        close(fd);
        if (n >= 0)
                buf[n] = 0;
        return n;
}

static ssize_t read_proc(pid_t pid, const char *name, char *buf, size_t size) {
        char path[64];

        snprintf(path, sizeof path, "/proc/%d/%s", (int) pid, name);
        return read_small(path, buf, size);
}

/* The real uid, from status's "Uid:" line. */
static bool real_uid_is(pid_t pid, uid_t uid) {
        char buf[4096], *u;

        if (read_proc(pid, "status", buf, sizeof buf) <= 0 || !(u = strstr(buf, "\nUid:")))
                return false;
        return (uid_t) strtoul(u + 5, NULL, 10) == uid;
}

/* Field 22 of stat, after the comm's closing parenthesis. */
static unsigned long long start_time_of(pid_t pid) {
        char buf[1024], *p;

        if (read_proc(pid, "stat", buf, sizeof buf) <= 0 || !(p = strrchr(buf, ')')))
                return 0;
        for (int field = 2; field < 22 && p; field++)
                p = strchr(p + 1, ' ');
        return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* A CPU list ("0-3,8") into set. */
static void parse_list(const char *s, cpu_set_t *set) {
        CPU_ZERO(set);
        while (*s >= '0' && *s <= '9') {
                char *end;
                unsigned long a = strtoul(s, &end, 10), b = a;
                if (*end == '-')
                        b = strtoul(end + 1, &end, 10);
                for (unsigned long c = a; c <= b && c < CPU_SETSIZE; c++)
                        CPU_SET(c, set);
                s = *end == ',' ? end + 1 : end;
        }
}

/* The CPUs the process's cpuset allows: its cgroup's line in /proc/PID/cgroup, then that
 * cgroup's effective CPUs and memory nodes (the mount was found at start). false: none
 * found, nothing restricts it. */
static bool cpuset_of(pid_t pid, cpu_set_t *cpus) {
        char buf[4096], path[4600], mems[256], *line, *rel = NULL;

        if (!cpuset_mnt[0] || read_proc(pid, "cgroup", buf, sizeof buf) <= 0)
                return false;
        for (line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                char *colon = strchr(line, ':'), *colon2 = colon ? strchr(colon + 1, ':') : NULL;
                if (!colon2)
                        break;
                bool v2_line = colon2 == colon + 1;
                if (cpuset_v2 ? v2_line : memmem(colon, (size_t) (colon2 - colon), "cpuset", 6) != NULL) {
                        rel = colon2 + 1;
                        break;
                }
        }
        if (!rel)
                return false;
        rel[strcspn(rel, "\n")] = 0;
        snprintf(path, sizeof path, "%s%s/%s", cpuset_mnt, strcmp(rel, "/") ? rel : "",
                 cpuset_v2 ? "cpuset.cpus.effective" : "cpuset.effective_cpus");
        if (read_small(path, buf, sizeof buf) <= 0)
                return false;
        snprintf(path, sizeof path, "%s%s/%s", cpuset_mnt, strcmp(rel, "/") ? rel : "",
                 cpuset_v2 ? "cpuset.mems.effective" : "cpuset.effective_mems");
        if (read_small(path, mems, sizeof mems) > 0)
                facts_seen++;
        parse_list(buf, cpus);
        return true;
}

/* Where the cpuset hierarchy is: a v1 cpuset mount, else cgroup2's. */
static void find_cpuset_mount(void) {
        char buf[65536], *line, *save = NULL;

        if (read_small("/proc/self/mounts", buf, sizeof buf) <= 0)
                return;
        for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char dev[256], dir[256], type[64], opts[1024];
                if (sscanf(line, "%255s %255s %63s %1023s", dev, dir, type, opts) != 4)
                        continue;
                if (strcmp(type, "cgroup") == 0 && strstr(opts, "cpuset")) {
                        snprintf(cpuset_mnt, sizeof cpuset_mnt, "%s", dir);
                        cpuset_v2 = false;
                        return;
                }
                if (strcmp(type, "cgroup2") == 0 && !cpuset_mnt[0]) {
                        snprintf(cpuset_mnt, sizeof cpuset_mnt, "%s", dir);
                        cpuset_v2 = true;
                }
        }
}

static unsigned slot_hash(pid_t pid) {
        return ((uint32_t) pid * 2654435761u) & (MATCHED_SLOTS - 1);
}

/* pid's slot, or -1 if it is not matched. */
static int slot_of(pid_t pid) {
        for (unsigned i = slot_hash(pid);; i = (i + 1) & (MATCHED_SLOTS - 1)) {
                if (matched[i] == pid)
                        return (int) i;
                if (matched[i] == 0)
                        return -1;
        }
}

/* A slot for pid, or -1 when MAX_MATCHED are matched already. */
static int slot_new(pid_t pid) {
        unsigned i = slot_hash(pid);

        if (n_matched >= MAX_MATCHED)
                return -1;
        while (matched[i] != 0)
                i = (i + 1) & (MATCHED_SLOTS - 1);
        matched[i] = pid;
        placed_ns[i] = 0;
        n_matched++;
        return (int) i;
}

/* Empty a slot, moving back the entries after it that probed past it (no tombstones). */
static void slot_free(unsigned i) {
        unsigned j = i;

        matched[i] = 0;
        pidfds[i] = -1;
        n_matched--;
        for (;;) {
                j = (j + 1) & (MATCHED_SLOTS - 1);
                if (matched[j] == 0)
                        return;
                unsigned k = slot_hash(matched[j]);
                /* Stays where it is when its home k lies cyclically in (i, j]. */
                if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
                        continue;
                matched[i] = matched[j];
                pidfds[i] = pidfds[j];
                placed_ns[i] = placed_ns[j];
                matched[j] = 0;
                pidfds[j] = -1;
                i = j;
        }
}

static ssize_t read_proc(pid_t pid, const char *name, char *buf, size_t size);

static void *worker_main(void *arg) {
        (void) arg;
        for (;;) {
                pid_t pid;
                pthread_mutex_lock(&worker.lock);
                while (worker.pid == 0)
                        pthread_cond_wait(&worker.work, &worker.lock);
                pid = worker.pid;
                pthread_mutex_unlock(&worker.lock);
                worker.n_cmdline = read_proc(pid, "cmdline", worker.cmdline, sizeof worker.cmdline);
                worker.n_environ = read_proc(pid, "environ", worker.environ, sizeof worker.environ);
                pthread_mutex_lock(&worker.lock);
                worker.pid = 0;
                pthread_mutex_unlock(&worker.lock);
                sem_post(&worker.done);
        }
        return NULL;
}

/* --worker: the command line into buf (its length, or -1), the environment kept for
 * facts_place(); at most 100 ms (past it the floor gives up on the process; a bench's
 * processes never take that long). */
static ssize_t read_cmdline_on_worker(pid_t pid, char *buf, size_t size) {
        struct timespec deadline;
        ssize_t n;

        pthread_mutex_lock(&worker.lock);
        worker.pid = pid;
        pthread_mutex_unlock(&worker.lock);
        pthread_cond_signal(&worker.work);
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_nsec += 100 * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
        }
        while (sem_clockwait(&worker.done, CLOCK_MONOTONIC, &deadline) < 0)
                if (errno != EINTR) {
                        fprintf(stderr, "floor-pinner: the worker took over 100 ms on pid %d\n", (int) pid);
                        exit(1);
                }
        n = worker.n_cmdline;
        if (n > 0 && (size_t) n < size)
                memcpy(buf, worker.cmdline, (size_t) n + 1);
        else
                n = n > 0 ? -1 : n;
        environ_of = worker.n_environ > 0 ? pid : 0;
        return n;
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
        if (facts) {
                if (!real_uid_is(pid, own_uid))
                        return 0;
                n = worker_reads ? read_cmdline_on_worker(pid, buf, sizeof buf) : read_proc(pid, "cmdline", buf, sizeof buf);
        } else {
                snprintf(path, sizeof path, "/proc/%d/cmdline", (int) pid);
                f = fopen(path, "re");
                if (!f)
                        return 0;
                n = (ssize_t) fread(buf, 1, sizeof buf - 1, f);
                fclose(f);
        }
        if (n <= 0)
                return 0;
        for (ssize_t i = 0; i < n; i++)
                if (buf[i] == 0)
                        buf[i] = ' ';
        buf[n] = 0;
        return strstr(buf, cmd_sub) != NULL;
}

static void facts_thread(pid_t tgid, pid_t tid);
static int open_spare(void);
static void record_file_commit(pid_t pid);

/* Every thread of pid but its main one on thread_target (--facts: as on its FORK event);
 * skip_placed: those already there are left alone (one read of a mask instead of a pin:
 * a resync's known process, most of whose threads are placed). Returns how many. */
static unsigned place_other_threads(pid_t pid, bool skip_placed) {
        char path[64];
        struct dirent *de;
        unsigned n = 0;
        DIR *d;

        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                pid_t tid = atoi(de->d_name);
                cpu_set_t now;
                if (de->d_name[0] == '.' || tid == pid)
                        continue;
                if (skip_placed && sched_getaffinity(tid, sizeof now, &now) == 0 && CPU_EQUAL(&now, &thread_target))
                        continue;
                if (facts)
                        facts_thread(pid, tid);
                else
                        (void) sched_setaffinity(tid, sizeof thread_target, &thread_target);
                n++;
        }
        closedir(d);
        return n;
}

static void pin_all_threads(pid_t pid) {
        /* The main thread first: threads created from now on inherit its mask. */
        (void) sched_setaffinity(pid, sizeof target, &target);
        (void) place_other_threads(pid, false);
}

/* --facts: what must be known and written before the first pin, then the pin, then the
 * pidfd's word that the pin hit that process. At its exec a process has one thread: its
 * later threads come as FORK events. */
static void facts_place(pid_t pid, int slot) {
        char env[4096], line[128];
        cpu_set_t allowed, original;
        unsigned long long start;
        int pidfd, n;

        pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0)
                return;
        start = start_time_of(pid);
        if (start == 0)
                goto not_placed;
        if (worker_reads && environ_of == pid) {
                n = (int) worker.n_environ; /* read with the command line */
                memcpy(env, worker.environ, (size_t) n);
        } else
                n = (int) read_proc(pid, "environ", env, sizeof env);
        if (n > 0 && (memmem(env, (size_t) n, "VISIBLE_DEVICES=", 16) || memmem(env, (size_t) n, "RANK=", 5)))
                facts_seen++;
        if (cpuset_of(pid, &allowed)) {
                cpu_set_t want, both;
                CPU_OR(&want, &target, &thread_target);
                CPU_AND(&both, &allowed, &want);
                if (!CPU_EQUAL(&both, &want))
                        goto not_placed; /* its cpuset does not have our CPUs */
        }
        if (sched_getaffinity(pid, sizeof original, &original) < 0)
                goto not_placed;
        n = snprintf(line, sizeof line, "%d %llu %lx\n", (int) pid, start, *(unsigned long *) &original);
        if (record_files ? spare_fd < 0 || pwrite(spare_fd, line, (size_t) n, 0) != n
                         : write(journal_fd, line, (size_t) n) != n) {
                journal_failed++;
                goto not_placed; /* no record, no pin */
        }
        (void) sched_setaffinity(pid, sizeof target, &target);
        if (record_files)
                record_file_commit(pid);
        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
        if (poll(&pfd, 1, 0) != 0)
                /* It exited: the set may have hit the pid's next owner. Undo it, as
                 * npu-tuned does. */
                (void) sched_setaffinity(pid, sizeof original, &original);
        if (pidfds[slot] >= 0)
                close(pidfds[slot]); /* placed before, and exec'd again */
        pidfds[slot] = pidfd;
        return;
not_placed:
        close(pidfd);
}

/* --record-files: a new spare record, made before the placement that writes it. */
static int open_spare(void) {
        return openat(state_dfd, "spare", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* --record-files: the spare, written, becomes pid's record; the next spare is made. */
static void record_file_commit(pid_t pid) {
        char name[32];

        snprintf(name, sizeof name, "record-%d", (int) pid);
        if (renameat(state_dfd, "spare", state_dfd, name) < 0)
                journal_failed++;
        close(spare_fd);
        spare_fd = open_spare();
}

/* --facts: a new thread, held by its directory across its pin. */
static void facts_thread(pid_t tgid, pid_t tid) {
        char path[64];
        cpu_set_t original;
        struct stat st;
        int dfd;

        snprintf(path, sizeof path, "/proc/%d/task/%d", (int) tgid, (int) tid);
        dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return;
        if (sched_getaffinity(tid, sizeof original, &original) == 0) {
                (void) sched_setaffinity(tid, sizeof thread_target, &thread_target);
                if (fstatat(dfd, "stat", &st, AT_SYMLINK_NOFOLLOW) < 0)
                        (void) sched_setaffinity(tid, sizeof original, &original); /* the tid is another's now */
        }
        close(dfd);
}

static void facts_exit(pid_t pid, int slot) {
        char line[32];
        int n;

        if (record_files) {
                snprintf(line, sizeof line, "record-%d", (int) pid);
                if (pidfds[slot] >= 0 && unlinkat(state_dfd, line, 0) < 0) /* placed: it has one */
                        journal_failed++;
        } else {
                n = snprintf(line, sizeof line, "exit %d\n", (int) pid);
                if (write(journal_fd, line, (size_t) n) != n)
                        journal_failed++;
        }
        if (pidfds[slot] >= 0)
                close(pidfds[slot]);
        pidfds[slot] = -1;
}

__attribute__((noinline)) static void handle(const struct proc_event *ev) {
        int slot;

        switch (ev->what) {
        case PROC_EVENT_EXEC: {
                pid_t pid = ev->event_data.exec.process_tgid;
                handling_began = now_ns();
                if (!matches(pid))
                        return;
                if ((slot = slot_of(pid)) < 0)
                        slot = slot_new(pid);
                else if (placed_ns[slot] > ev->timestamp_ns)
                        return; /* a resync placed it after this exec */
                if (slot >= 0)
                        placed_ns[slot] = handling_began;
                if (!facts)
                        pin_all_threads(pid);
                else if (slot >= 0)
                        facts_place(pid, slot);
                note_reaction(0, ev->timestamp_ns);
                return;
        }
        case PROC_EVENT_FORK:
                if (ev->event_data.fork.child_pid != ev->event_data.fork.child_tgid &&
                    slot_of(ev->event_data.fork.child_tgid) >= 0) {
                        handling_began = now_ns();
                        if (facts)
                                facts_thread(ev->event_data.fork.child_tgid, ev->event_data.fork.child_pid);
                        else
                                (void) sched_setaffinity(ev->event_data.fork.child_pid, sizeof thread_target,
                                                         &thread_target);
                        note_reaction(1, ev->timestamp_ns);
                }
                return;
        case PROC_EVENT_EXIT:
                if (ev->event_data.exit.process_pid == ev->event_data.exit.process_tgid &&
                    (slot = slot_of(ev->event_data.exit.process_tgid)) >= 0) {
                        if (facts)
                                facts_exit(ev->event_data.exit.process_tgid, slot);
                        slot_free((unsigned) slot);
                }
                return;
        default:
                return;
        }
}

/* A matched process whose EXIT event may have been lost: gone? --facts asks its pidfd (a
 * reused pid is then gone too), the bare floor the pid. */
static bool matched_gone(unsigned i) {
        if (facts && pidfds[i] >= 0) {
                struct pollfd pfd = { .fd = pidfds[i], .events = POLLIN };
                return poll(&pfd, 1, 0) != 0;
        }
        return kill(matched[i], 0) < 0 && errno == ESRCH;
}

/* After an overrun: what the lost events would have said, from one walk of /proc (see the
 * header). The socket was read empty first, so every event from now on is queued, and is
 * handled after the walk: an EXEC of a process the walk placed is then skipped. */
static void resync(void) {
        unsigned long procs = 0, threads = 0, gone = 0;
        uint64_t t0 = now_ns();
        struct dirent *de;
        DIR *d;

        /* Forget the gone first, so that a pid reused meanwhile is met as new. slot_free()
         * moves a later entry into the slot freed: look at that slot again. */
        for (unsigned i = 0; i < MATCHED_SLOTS;) {
                if (matched[i] == 0 || !matched_gone(i)) {
                        i++;
                        continue;
                }
                if (facts)
                        facts_exit(matched[i], (int) i);
                slot_free(i);
                gone++;
        }
        d = opendir("/proc");
        if (!d) {
                perror("resync: /proc");
                return;
        }
        while ((de = readdir(d))) {
                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                pid_t pid = atoi(de->d_name);
                int slot = slot_of(pid);
                if (slot >= 0) {
                        /* Known: placed on its exec; its threads since may be unplaced. */
                        if (!facts)
                                pin_all_threads(pid);
                        else if (pidfds[slot] >= 0)
                                threads += place_other_threads(pid, true);
                        continue;
                }
                uint64_t read_ns = now_ns();
                if (!matches(pid))
                        continue;
                if ((slot = slot_new(pid)) >= 0)
                        placed_ns[slot] = read_ns;
                if (!facts)
                        pin_all_threads(pid);
                else if (slot >= 0) {
                        facts_place(pid, slot);
                        if (pidfds[slot] < 0)
                                continue; /* not placed: its threads neither */
                        threads += place_other_threads(pid, false);
                }
                procs++;
        }
        closedir(d);
        resyncs++;
        resync_procs += procs;
        resync_threads += threads;
        resync_gone += gone;
        fprintf(stderr, "floor-pinner: resync %lu: %lu processes placed, %lu threads (--facts), %lu gone, in %llu ms\n",
                resyncs, procs, threads, gone, (unsigned long long) (now_ns() - t0) / 1000000);
}

/* Read the congested socket empty, the events dropped (see the header). */
static void drain(int fd) {
        char sink[16]; /* truncated: only emptying counts */

        for (;;) {
                if (recv(fd, sink, sizeof sink, MSG_DONTWAIT) >= 0)
                        resync_drained++;
                else if (errno != EINTR && errno != ENOBUFS) /* ENOBUFS: emptied, and overran again */
                        return;
        }
}

/* A failed read of the socket (errno): true where reading goes on, after an overrun's
 * recovery or a signal. */
static bool recovered(int fd) {
        if (errno == EINTR)
                return true;
        if (errno != ENOBUFS)
                return false;
        fprintf(stderr, "floor-pinner: overrun (events lost)\n");
        drain(fd);
        resync();
        return true;
}

/* The events of one datagram. */
static void handle_datagram(char *buf, ssize_t n) {
        for (struct nlmsghdr *nh = (struct nlmsghdr *) buf; NLMSG_OK(nh, (size_t) n); nh = NLMSG_NEXT(nh, n)) {
                struct cn_msg *cn = NLMSG_DATA(nh);
                struct proc_event ev;
                if (nh->nlmsg_type != NLMSG_DONE || cn->id.idx != CN_IDX_PROC || cn->len < sizeof ev)
                        continue;
                /* cn->data is 4-byte aligned, the event's 64-bit timestamp wants 8: an
                 * aligned copy, as npu-tuned's connector makes. */
                memcpy(&ev, cn->data, sizeof ev);
                handle(&ev);
        }
}

/* --loop: datagrams per recvmmsg(2), as npu-tuned's connector reads them. */
#define LOOP_BATCH 64

int main(int argc, char **argv) {
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC, .nl_pid = 0 };
        int fd, ep = -1, rcvbuf = 4 << 20;
        char buf[16384] __attribute__((aligned(8)));

        if (argc >= 3 && strcmp(argv[1], "--facts") == 0) {
                state_dfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                journal_fd = state_dfd < 0 ? -1
                                           : openat(state_dfd, "floor-facts.journal",
                                                    O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
                if (journal_fd < 0) {
                        perror(argv[2]);
                        return 1;
                }
                facts = true;
                own_uid = getuid();
                for (int i = 0; i < MATCHED_SLOTS; i++)
                        pidfds[i] = -1;
                find_cpuset_mount();
                argc -= 2;
                argv += 2;
                for (; argc > 1 && strncmp(argv[1], "--", 2) == 0; argc--, argv++) {
                        if (strcmp(argv[1], "--loop") == 0)
                                loop_read = true;
                        else if (strcmp(argv[1], "--worker") == 0)
                                worker_reads = true;
                        else if (strcmp(argv[1], "--record-files") == 0)
                                record_files = true;
                        else
                                break;
                }
                if (record_files) {
                        (void) unlinkat(state_dfd, "spare", 0);
                        spare_fd = open_spare();
                        if (spare_fd < 0) {
                                perror("spare record");
                                return 1;
                        }
                }
                if (worker_reads) {
                        pthread_t t;
                        sigset_t all, old;
                        sem_init(&worker.done, 0, 0);
                        /* The worker takes no signal: SIGTERM interrupts the loop's wait. */
                        sigfillset(&all);
                        pthread_sigmask(SIG_BLOCK, &all, &old);
                        if (pthread_create(&t, NULL, worker_main, NULL) != 0) {
                                fprintf(stderr, "floor-pinner: no worker thread\n");
                                return 1;
                        }
                        pthread_sigmask(SIG_SETMASK, &old, NULL);
                }
        }
        if (argc != 4) {
                fprintf(stderr, "usage: %s [--facts STATE_DIR [--loop] [--worker] [--record-files]] EXE_GLOB CMDLINE_SUBSTRING "
                                "CPU[,THREAD_CPU]\n",
                        argv[0]);
                return 2;
        }
        exe_glob = argv[1];
        cmd_sub = argv[2];
        CPU_ZERO(&target);
        CPU_SET(atoi(argv[3]), &target);
        CPU_ZERO(&thread_target);
        CPU_SET(strchr(argv[3], ',') ? atoi(strchr(argv[3], ',') + 1) : atoi(argv[3]), &thread_target);
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
        if (loop_read) {
                ep = epoll_create1(EPOLL_CLOEXEC);
                struct epoll_event want = { .events = EPOLLIN };
                if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &want) < 0) {
                        perror("epoll");
                        return 1;
                }
        }
        while (!stop) {
                if (loop_read) {
                        static char bufs[LOOP_BATCH][512] __attribute__((aligned(8)));
                        struct mmsghdr msgs[LOOP_BATCH];
                        struct iovec iov[LOOP_BATCH];
                        struct epoll_event ready;
                        int k;

                        if (epoll_wait(ep, &ready, 1, -1) < 0) {
                                if (errno == EINTR)
                                        continue;
                                perror("epoll_wait");
                                break;
                        }
                        for (unsigned i = 0; i < LOOP_BATCH; i++) {
                                iov[i] = (struct iovec){ .iov_base = bufs[i], .iov_len = sizeof bufs[i] };
                                msgs[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
                        }
                        k = recvmmsg(fd, msgs, LOOP_BATCH, MSG_DONTWAIT, NULL);
                        if (k < 0) {
                                if (errno == EAGAIN || recovered(fd))
                                        continue;
                                perror("recvmmsg");
                                break;
                        }
                        for (int i = 0; i < k; i++)
                                handle_datagram(bufs[i], (ssize_t) msgs[i].msg_len);
                        continue;
                }
                ssize_t n = recv(fd, buf, sizeof buf, 0);
                if (n < 0) {
                        if (recovered(fd))
                                continue;
                        perror("recv");
                        break;
                }
                handle_datagram(buf, n);
        }
        (void) send_listen(fd, PROC_CN_MCAST_IGNORE, 0);
        close(fd);
        print_reactions();
        fprintf(stderr, "floor-pinner: %lu resyncs: %lu processes placed by them, %lu threads (--facts), %lu gone; %lu datagrams drained\n",
                resyncs, resync_procs, resync_threads, resync_gone, resync_drained);
        if (facts)
                fprintf(stderr, "floor-pinner: cpuset hierarchy %s (%s); %lu facts seen; %lu journal writes failed\n",
                        cpuset_mnt[0] ? cpuset_mnt : "none", cpuset_v2 ? "v2" : "v1", facts_seen, journal_failed);
        return 0;
}
