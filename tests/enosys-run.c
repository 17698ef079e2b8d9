/* SPDX-License-Identifier: GPL-2.0-only */
/* enosys-run: run a command on the kernel an older host has, as far as npu-tuned can tell.
 *
 *   enosys-run FEATURE[,FEATURE...] -- COMMAND [ARGS...]
 *
 * A seccomp filter (inherited by COMMAND and its children, and never taken back) answers
 * the system calls of the features named as a kernel without them would:
 *   pidfd_open    ENOSYS (Linux < 5.3: Kylin V10's 4.19, CentOS 7's 4.14)
 *   openat2       ENOSYS (Linux < 5.6)
 *   pagemap_scan  ioctl(PAGEMAP_SCAN) fails with ENOTTY (Linux < 6.7)
 * Before it runs COMMAND it checks that each one really fails so (exit 1 if not), so a
 * test run through it cannot pass on the new kernel's paths by mistake. Exit 2 on a usage
 * error; otherwise COMMAND's own exit status (it is exec'd). */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The numbers came with Linux 5.3 and 5.6, the same on every architecture; older headers
 * lack them. */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
/* PAGEMAP_SCAN as libtune/placement/memmove.c declares it: _IOWR('f', 16, 96 bytes). */
#define PAGEMAP_SCAN_CMD _IOWR('f', 16, uint64_t[12])

#if defined(__x86_64__)
#define AUDIT_ARCH_NATIVE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_NATIVE AUDIT_ARCH_AARCH64
#else
#error "enosys-run: add this architecture's AUDIT_ARCH_*"
#endif

#define MAX_INSNS 32

static int usage(void) {
        fprintf(stderr, "usage: enosys-run pidfd_open|openat2|pagemap_scan[,...] -- COMMAND [ARGS...]\n");
        return 2;
}

static void emit(struct sock_filter *f, unsigned *n, struct sock_filter insn) {
        if (*n < MAX_INSNS)
                f[(*n)++] = insn;
}

/* "if the syscall number is nr, fail with err" (the accumulator holds the number). */
static void deny_nr(struct sock_filter *f, unsigned *n, uint32_t nr, int err) {
        emit(f, n, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
        emit(f, n, (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t) err));
}

/* Each feature must now fail as it would on the old kernel. */
static int verify(int pidfd_open, int openat2, int pagemap_scan) {
        int ok = 1;

        if (pidfd_open && !(syscall(SYS_pidfd_open, getpid(), 0) < 0 && errno == ENOSYS)) {
                fprintf(stderr, "enosys-run: pidfd_open still works\n");
                ok = 0;
        }
        if (openat2 && !(syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0) < 0 && errno == ENOSYS)) {
                fprintf(stderr, "enosys-run: openat2 still works\n");
                ok = 0;
        }
        if (pagemap_scan) {
                int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
                uint64_t arg[12] = { sizeof arg };
                if (fd >= 0 && !(ioctl(fd, PAGEMAP_SCAN_CMD, arg) < 0 && errno == ENOTTY)) {
                        fprintf(stderr, "enosys-run: ioctl(PAGEMAP_SCAN) still answers\n");
                        ok = 0;
                }
                if (fd >= 0)
                        close(fd);
        }
        return ok;
}

int main(int argc, char **argv) {
        struct sock_filter f[MAX_INSNS];
        struct sock_fprog prog;
        int pidfd_open = 0, openat2 = 0, pagemap_scan = 0;
        unsigned n = 0;
        char *list, *tok, *save = NULL;

        if (argc < 4 || strcmp(argv[2], "--") != 0)
                return usage();
        list = strdup(argv[1]);
        if (!list)
                return 1;
        for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (strcmp(tok, "pidfd_open") == 0)
                        pidfd_open = 1;
                else if (strcmp(tok, "openat2") == 0)
                        openat2 = 1;
                else if (strcmp(tok, "pagemap_scan") == 0)
                        pagemap_scan = 1;
                else {
                        fprintf(stderr, "enosys-run: unknown feature '%s'\n", tok);
                        return usage();
                }
        }
        free(list);

        /* Another architecture's system calls (a 32-bit compat task) pass untouched. */
        emit(f, &n, (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
        emit(f, &n, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_NATIVE, 1, 0));
        emit(f, &n, (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        emit(f, &n, (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
        if (pidfd_open)
                deny_nr(f, &n, SYS_pidfd_open, ENOSYS);
        if (openat2)
                deny_nr(f, &n, SYS_openat2, ENOSYS);
        if (pagemap_scan) {
                /* ioctl with the PAGEMAP_SCAN request (its low 32 bits: ioctl's cmd is an
                 * unsigned int) fails as an unknown request does. */
                emit(f, &n, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3));
                emit(f, &n, (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                                          offsetof(struct seccomp_data, args[1])));
                emit(f, &n, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) PAGEMAP_SCAN_CMD, 0, 1));
                emit(f, &n, (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOTTY));
        }
        emit(f, &n, (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        if (n >= MAX_INSNS) {
                fprintf(stderr, "enosys-run: filter too long\n");
                return 1;
        }
        prog = (struct sock_fprog) { .len = (unsigned short) n, .filter = f };

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
                fprintf(stderr, "enosys-run: cannot install the seccomp filter: %s\n", strerror(errno));
                return 1;
        }
        if (!verify(pidfd_open, openat2, pagemap_scan))
                return 1;
        execvp(argv[3], argv + 3);
        fprintf(stderr, "enosys-run: cannot run %s: %s\n", argv[3], strerror(errno));
        return 127;
}
