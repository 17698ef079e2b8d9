/* SPDX-License-Identifier: GPL-2.0-only */
/* mmap-trap FUSE_DEV DIR HOLD_S: the mmap_lock trap of docs/trust.md, as an unprivileged user.
 *
 * Run as nobody. Unshares a user and mount namespace (root in it maps to the caller),
 * mounts on DIR (an empty directory it may write) a FUSE filesystem served by a forked child over FUSE_DEV (the raw /dev/fuse
 * protocol, no libfuse; a 0666 node of 10:229 where /dev/fuse is root's alone), and maps
 * its one file (fuse-raw.c). Then:
 *   - a thread reads /proc/self/mem at the mapping: the fault asks the server for the page
 *     with the process's mmap_lock held for reading, and the server does not answer READ
 *     for HOLD_S seconds;
 *   - a second thread calls mmap(): a queued writer, so every later reader of the lock
 *     (the kernel's /proc/PID/cmdline, environ, numa_maps, smaps_rollup, move_pages)
 *     waits behind it;
 *   - the main thread renames itself (PR_SET_NAME), a COMM event a watcher re-reads the
 *     process on, and prints "armed" (stdout, flushed).
 * When the server answers, both threads finish: "released" is printed, and the process
 * waits for stdin to close. Exit codes: 77 when the namespace or the mount is refused
 * (said on stdout), 1 on another failure. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuse-raw.h"

#define FILE_SIZE 65536

static unsigned hold_s;
static int read_seen[2];
static void *mapping;

/* The page is asked for with the mmap_lock held, and the answer comes when this user
 * likes: first tell the trap it is held. */
static void hold(uint32_t opcode, uint64_t nodeid) {
        struct timespec ts = { hold_s, 0 };

        (void) nodeid;
        if (opcode != FUSE_READ)
                return;
        (void) !write(read_seen[1], "r", 1);
        nanosleep(&ts, NULL);
}

static int write_file(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = write(fd, text, strlen(text));
        close(fd);
        return n == (ssize_t) strlen(text) ? 0 : -EIO;
}

/* The reader that takes the mmap_lock and waits for the page with it held. */
static void *park_reader(void *arg) {
        char c;
        int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);

        (void) arg;
        if (fd >= 0 && getenv("TRAP_DEBUG")) {
                ssize_t n = pread(fd, &c, 1, (off_t) (uintptr_t) mapping);
                fprintf(stderr, "reader: %zd %s\n", n, n < 0 ? strerror(errno) : "");
        } else if (fd >= 0)
                (void) !pread(fd, &c, 1, (off_t) (uintptr_t) mapping);
        return NULL;
}

/* The queued writer: behind it, every new reader of the lock waits too. Started before
 * the trap (its stack is an mmap() too), it waits for a byte on go[0]. */
static int go[2];

static void *queue_writer(void *arg) {
        char c;
        void *p;

        (void) arg;
        if (read(go[0], &c, 1) != 1)
                return NULL;
        p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED)
                munmap(p, 4096);
        return NULL;
}

int main(int argc, char *argv[]) {
        char file[PATH_MAX], opts[160], map[64];
        const char *dir;
        pthread_t reader, writer;
        unsigned uid = getuid(), gid = getgid();
        pid_t server;
        int fuse_fd, fd, r;
        char c;

        if (argc != 4)
                return 2;
        dir = argv[2];
        hold_s = (unsigned) strtoul(argv[3], NULL, 10);
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
                printf("SKIP: no user namespace for uid %u (%s)\n", uid, strerror(errno));
                return 77;
        }
        snprintf(map, sizeof map, "0 %u 1", uid);
        if (write_file("/proc/self/uid_map", map) < 0 || write_file("/proc/self/setgroups", "deny") < 0)
                return 1;
        snprintf(map, sizeof map, "0 %u 1", gid);
        if (write_file("/proc/self/gid_map", map) < 0)
                return 1;
        fuse_fd = open(argv[1], O_RDWR | O_CLOEXEC);
        if (fuse_fd < 0) {
                printf("SKIP: cannot open %s (%s)\n", argv[1], strerror(errno));
                return 77;
        }
        snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0", fuse_fd);
        if (mount("npt-trap", dir, "fuse.npt-trap", MS_NOSUID | MS_NODEV, opts) < 0) {
                printf("SKIP: cannot mount FUSE in a user namespace (%s)\n", strerror(errno));
                return 77;
        }
        if (pipe(read_seen) < 0)
                return 1;
        server = fork();
        if (server < 0)
                return 1;
        if (server == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                fuse_raw_serve(fuse_fd, &(const fuse_raw_params) { .file_size = FILE_SIZE, .valid_s = 3600,
                                                                   .before_answer = hold });
        }
        close(fuse_fd);
        close(read_seen[1]);
        read_seen[1] = -1;

        snprintf(file, sizeof file, "%s/f", dir);
        fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 1;
        mapping = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
        if (mapping == MAP_FAILED)
                return 1;
        printf("ready\n");
        fflush(stdout);
        if (!fgets(opts, sizeof opts, stdin))
                return 1;

        if (pipe(go) < 0 || pthread_create(&writer, NULL, queue_writer, NULL) != 0 ||
            pthread_create(&reader, NULL, park_reader, NULL) != 0)
                return 1;
        /* The page is asked for: the lock is held from here until the server answers. */
        if (read(read_seen[0], &c, 1) != 1 || write(go[1], "w", 1) != 1)
                return 1;
        usleep(100 * 1000); /* the writer is queued by then */
        prctl(PR_SET_NAME, "trapped", 0, 0, 0);
        printf("armed\n");
        fflush(stdout);

        r = pthread_join(reader, NULL) | pthread_join(writer, NULL);
        printf("released\n");
        fflush(stdout);
        while (fgets(opts, sizeof opts, stdin))
                ;
        return r ? 1 : 0;
}
