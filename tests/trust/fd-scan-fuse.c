/* SPDX-License-Identifier: GPL-2.0-only */
/* The open-file scan must not wait on a filesystem a process controls (docs/trust.md).
 *
 * A tiny FUSE server (fuse-raw.c: the raw /dev/fuse protocol, no libfuse) serves one file, "f", and
 * answers every GETATTR on it only after HANG_MS: a user who serves a FUSE mount (possible
 * unprivileged in a user namespace) can make it take as long as they like. A process of
 * nobody holds that file open, /dev/null, and an O_PATH fd on /dev/zero.
 * tune_proc_list_char_devices() on that process must take under 10 ms, still find
 * /dev/null (1:3), and not count the O_PATH fd as an open device (a claim is verified by
 * the devices a process holds open: docs/trust.md).
 * Before the fix (fstatat follows the fd link and asks the filesystem) one scan took
 * HANG_MS. Needs root and /dev/fuse: exit 77 otherwise, saying which. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuse-raw.h"
#include "npu-tuned/context.h"
#include "npu-tuned/proc.h"

#define HANG_MS 3000

/* Entry and attributes valid for 0 s: every stat asks, and every GETATTR of the file waits. */
static void hang(uint32_t opcode, uint64_t nodeid) {
        struct timespec ts = { HANG_MS / 1000, (HANG_MS % 1000) * 1000000L };

        if (opcode == FUSE_GETATTR && nodeid == FUSE_RAW_FILE_ID)
                nanosleep(&ts, NULL); /* the hostile part */
}

static double now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(void) {
        char dir[] = "/tmp/fd-scan-fuse-XXXXXX", file[64], opts[160];
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_free_ dev_t *devs = NULL;
        pid_t server, holder;
        int fuse_fd, ready[2], fails = 0;
        size_t n = 0;
        double t0, ms;
        bool null_found = false, zero_found = false;
        int r;

        if (geteuid() != 0) {
                printf("SKIP: needs root (mounting the FUSE filesystem)\n");
                return 77;
        }
        fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (fuse_fd < 0) {
                printf("SKIP: no /dev/fuse (%s)\n", strerror(errno));
                return 77;
        }
        if (!mkdtemp(dir) || chmod(dir, 0755) < 0)
                return 1;
        snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fuse_fd);
        if (mount("npt-fuse", dir, "fuse.npt-fuse", MS_NOSUID | MS_NODEV, opts) < 0) {
                printf("SKIP: cannot mount FUSE here (%s)\n", strerror(errno));
                rmdir(dir);
                return 77;
        }
        server = fork();
        if (server == 0)
                fuse_raw_serve(fuse_fd, &(const fuse_raw_params) { .before_answer = hang });
        close(fuse_fd);

        /* The hostile process: nobody, holding the FUSE file and /dev/null open. */
        snprintf(file, sizeof file, "%s/f", dir);
        if (pipe(ready) < 0)
                return 1;
        holder = fork();
        if (holder == 0) {
                if (setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(2);
                if (open(file, O_RDONLY) < 0 || open("/dev/null", O_RDONLY) < 0 || open("/dev/zero", O_PATH) < 0)
                        _exit(3);
                (void) !write(ready[1], "r", 1);
                pause();
                _exit(0);
        }
        close(ready[1]);
        char c;
        if (read(ready[0], &c, 1) != 1) {
                printf("FAIL: the holder could not open %s as nobody\n", file);
                fails++;
                goto out;
        }

        r = tune_ctx_new("/", &ctx);
        if (r < 0)
                return 1;
        t0 = now_ms();
        r = tune_proc_list_char_devices(ctx, holder, &devs, &n);
        ms = now_ms() - t0;
        for (size_t i = 0; i < n; i++)
                if (devs[i] == makedev(1, 3))
                        null_found = true;
                else if (devs[i] == makedev(1, 5))
                        zero_found = true;
        printf("%s scan of a process holding a hanging FUSE file: %.2f ms (limit 10 ms; the server answers after %d ms)\n",
               ms < 10 ? "ok  " : "FAIL", ms, HANG_MS);
        fails += ms >= 10;
        printf("%s the scan still finds /dev/null (1:3): r=%d, %zu device(s)\n", r >= 0 && null_found ? "ok  " : "FAIL", r, n);
        fails += !(r >= 0 && null_found);
        printf("%s an O_PATH fd on /dev/zero is no open device: %s\n", zero_found ? "FAIL" : "ok  ",
               zero_found ? "listed" : "not listed");
        fails += zero_found;
out:
        kill(holder, SIGKILL);
        waitpid(holder, NULL, 0);
        umount2(dir, MNT_DETACH);
        kill(server, SIGKILL);
        waitpid(server, NULL, 0);
        rmdir(dir);
        return fails ? 1 : 0;
}
