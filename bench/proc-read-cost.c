/* SPDX-License-Identifier: GPL-2.0-only */
/* What each look at a process costs, system call by system call, so that the placement's
 * cost can be told apart into the facts it reads (bench/RESULTS.md, "What limits it"):
 *   build/bench/proc-read-cost [--rounds N]
 * It starts a child of 5 threads (a matched process as the benches make it) and times,
 * N times each, every read npu-tuned makes of a process it places (open + read + close
 * of /proc/PID/stat, status, cmdline, environ, cgroup, comm; the exe readlink; a listing of
 * /proc/PID/task; a thread's directory held open and checked with fstatat; pidfd_open;
 * sched_getaffinity; a cgroup cpuset file), in microseconds per call. Runs as any user on
 * its own child. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static double now_us(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double) t.tv_sec * 1e6 + (double) t.tv_nsec / 1e3;
}

static void *idle_thread(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

static pid_t start_child(void) {
        int p[2];
        pid_t pid;
        char c;

        if (pipe(p) < 0)
                return -1;
        pid = fork();
        if (pid == 0) {
                pthread_t t;
                for (int i = 0; i < 4; i++)
                        pthread_create(&t, NULL, idle_thread, NULL);
                (void) write(p[1], "r", 1);
                for (;;)
                        pause();
        }
        close(p[1]);
        if (pid < 0 || read(p[0], &c, 1) != 1)
                return -1;
        close(p[0]);
        return pid;
}

static double time_read(int root, const char *path, int rounds) {
        char buf[16384];
        double t0 = now_us();
        for (int i = 0; i < rounds; i++) {
                int fd = openat(root, path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return -1;
                while (read(fd, buf, sizeof buf) > 0)
                        ;
                close(fd);
        }
        return (now_us() - t0) / rounds;
}

int main(int argc, char **argv) {
        static const char *const files[] = { "stat", "status", "cmdline", "environ", "cgroup", "comm" };
        int rounds = 20000, root;
        char path[128], buf[16384];
        cpu_set_t set;
        pid_t pid;
        double t0;

        if (argc == 3 && strcmp(argv[1], "--rounds") == 0)
                rounds = atoi(argv[2]);
        if (rounds <= 0) {
                fprintf(stderr, "usage: %s [--rounds N]\n", argv[0]);
                return 2;
        }
        root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        pid = start_child();
        if (root < 0 || pid < 0) {
                perror("start");
                return 1;
        }
        printf("us per call, %d calls each, on a child of 5 threads:\n", rounds);
        for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
                snprintf(path, sizeof path, "proc/%d/%s", (int) pid, files[f]);
                printf("| read /proc/PID/%s | %.2f |\n", files[f], time_read(root, path, rounds));
        }
        snprintf(path, sizeof path, "proc/%d/exe", (int) pid);
        t0 = now_us();
        for (int i = 0; i < rounds; i++)
                (void) readlinkat(root, path, buf, sizeof buf);
        printf("| readlink /proc/PID/exe | %.2f |\n", (now_us() - t0) / rounds);
        snprintf(path, sizeof path, "proc/%d/task", (int) pid);
        t0 = now_us();
        for (int i = 0; i < rounds; i++) {
                int fd = openat(root, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                while (syscall(SYS_getdents64, fd, buf, sizeof buf) > 0)
                        ;
                close(fd);
        }
        printf("| list /proc/PID/task | %.2f |\n", (now_us() - t0) / rounds);
        snprintf(path, sizeof path, "proc/%d/task/%d", (int) pid, (int) pid);
        t0 = now_us();
        for (int i = 0; i < rounds; i++) {
                struct stat st;
                int fd = openat(root, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                (void) fstatat(fd, "stat", &st, AT_SYMLINK_NOFOLLOW);
                close(fd);
        }
        printf("| a thread's directory held and checked (open, fstatat, close) | %.2f |\n", (now_us() - t0) / rounds);
        t0 = now_us();
        for (int i = 0; i < rounds; i++)
                close((int) syscall(SYS_pidfd_open, pid, 0));
        printf("| pidfd_open + close | %.2f |\n", (now_us() - t0) / rounds);
        t0 = now_us();
        for (int i = 0; i < rounds; i++)
                (void) sched_getaffinity(pid, sizeof set, &set);
        printf("| sched_getaffinity | %.2f |\n", (now_us() - t0) / rounds);
        if (access("/sys/fs/cgroup/cpuset/cpuset.effective_cpus", R_OK) == 0)
                printf("| read a cgroup v1 cpuset file | %.2f |\n",
                       time_read(root, "sys/fs/cgroup/cpuset/cpuset.effective_cpus", rounds));
        else if (access("/sys/fs/cgroup/cpuset.cpus.effective", R_OK) == 0)
                printf("| read a cgroup v2 cpuset file | %.2f |\n",
                       time_read(root, "sys/fs/cgroup/cpuset.cpus.effective", rounds));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return 0;
}
