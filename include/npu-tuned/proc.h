/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* What /proc says about a process: pure parsers (libtune/host/proc-parse.c) and root-resolved
 * readers (libtune/host/proc.c). Everything under /proc/PID is written by the process or chosen
 * by whoever started it: hostile input. Reads are bounded, parsers are total (a negative
 * errno on garbage, never a crash), and nothing here trusts a name. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "npu-tuned/context.h"

#define TUNE_COMM_MAX 16                   /* TASK_COMM_LEN, with the NUL */
#define TUNE_CMDLINE_MAX (32u * 1024u)     /* what matching looks at; longer is cut */
#define TUNE_ENVIRON_MAX (1024u * 1024u)   /* environ read at exec; longer is cut */
#define TUNE_STATUS_MAX (16u * 1024u)
#define TUNE_CGROUP_MAX (16u * 1024u)
#define TUNE_FD_SCAN_MAX 65536u            /* fds looked at per process */
#define TUNE_PF_KTHREAD 0x00200000u        /* /proc/PID/stat flags: a kernel thread */

/* /proc/PID/stat (and /proc/PID/task/TID/stat). */
typedef struct tune_proc_stat {
        pid_t pid;
        char comm[TUNE_COMM_MAX];
        char state;
        pid_t ppid;
        unsigned flags;      /* field 9, PF_* */
        uint64_t start_time; /* field 22: clock ticks after boot; with pid, the process's identity */
        uint64_t env_start, env_end; /* fields 50-51: where its last exec put the environment (the
                                      * stack is randomised: another exec moves it); 0 when not
                                      * shown (no permission, a kernel thread, an older kernel) */
} tune_proc_stat;

/* The comm is between the first '(' and the LAST ')' (a comm may hold ")" and spaces).
 * -EBADMSG on anything else. */
int tune_parse_proc_stat(const char *text, tune_proc_stat *ret);

/* /proc/PID/status: the fields matching needs. */
typedef struct tune_proc_status {
        pid_t tgid;
        pid_t ppid;
        uid_t ruid, euid;
} tune_proc_status;
int tune_parse_proc_status(const char *text, tune_proc_status *ret);

#define TUNE_CREDS_GROUPS_MAX 256

/* The credentials the kernel checks an open() against (include/npu-tuned/claim-trust.h
 * checks them). */
typedef struct tune_creds {
        uid_t ruid, euid, fsuid;
        gid_t fsgid;
        gid_t groups[TUNE_CREDS_GROUPS_MAX];
        unsigned n_groups;
        bool groups_truncated; /* more groups than fit: those are not considered */
} tune_creds;

/* Pure: the Uid, Gid and Groups lines of /proc/PID/status. -EBADMSG when absent. */
int tune_parse_creds(const char *text, tune_creds *ret);

/* Both of the above from one pass over the text (a match's user criterion and the claim
 * check that follows it read the same status): each part with its parser's result. */
typedef struct tune_status_facts {
        int status_r; /* tune_parse_proc_status()'s; status is set when >= 0 */
        tune_proc_status status;
        int creds_r; /* tune_parse_creds()'s; creds is set when >= 0 */
        tune_creds creds;
} tune_status_facts;
int tune_parse_status_facts(const char *text, tune_status_facts *ret);

/* How /proc is mounted for other users (proc(5), hidepid= and gid=): whom a process's
 * /proc/PID shows to. */
typedef enum tune_proc_hidepid {
        TUNE_PROC_HIDEPID_OFF = 0,        /* everyone sees every process */
        TUNE_PROC_HIDEPID_NOACCESS = 1,   /* others' directories show, their files do not */
        TUNE_PROC_HIDEPID_INVISIBLE = 2,  /* others' directories are hidden */
        TUNE_PROC_HIDEPID_PTRACEABLE = 4, /* only what the reader may ptrace shows */
} tune_proc_hidepid;
typedef struct tune_proc_visibility {
        tune_proc_hidepid hidepid;
        bool has_gid;
        gid_t gid; /* members of this group see every process */
} tune_proc_visibility;
/* Pure: the options of the proc mount on /proc in a mountinfo text. No such mount, or
 * none of the options: everyone sees everything (what /proc shows by default). */
int tune_parse_proc_visibility(const char *mountinfo, tune_proc_visibility *ret);

/* Pure: the pid holding a flock on the file (dev, ino) in a /proc/locks text ("1: FLOCK
 * ADVISORY WRITE 1234 fe:00:11018008 0 EOF"); -ENOENT when none does. */
int tune_parse_proc_locks_holder(const char *text, dev_t dev, ino_t ino, pid_t *ret);

/* /proc/PID/cgroup: the cgroup v2 path (the "0::" line). -ENOENT when there is none
 * (cgroup v1 only). */
int tune_parse_proc_cgroup(const char *text, char **ret);

/* The NUL-separated argument area as one string: trailing NULs dropped, the others turned
 * into spaces (what a policy's cmdline regex sees). A retitled process (setproctitle) pads
 * its title with NULs: those go too. */
int tune_cmdline_join(const char *buf, size_t len, char **ret);

/* A comm as given by the kernel ("name\n", at most 15 bytes) into a NUL-terminated
 * buffer. */
int tune_parse_comm(const char *text, char ret[static TUNE_COMM_MAX]);
/* The pids of /proc/PID/task/TID/children ("1 2 3 "), at most max of them, in the kernel's
 * order; anything but digits and spaces is -EBADMSG. */
int tune_parse_pid_list(const char *text, size_t max, pid_t *ret, size_t *ret_n);

/* Copy s into buf for a log line: bytes outside printable ASCII become \xNN, and a
 * string that does not fit ends in "...". Never fails; buf is always terminated. */
void tune_escape(const char *s, char *buf, size_t size);

/* s for a D-Bus string, a JSON value or a table cell, where another user's bytes must not
 * break the message (D-Bus strings must be valid UTF-8) nor drive the reader's terminal:
 * valid UTF-8 stays as it is (a name in any script reads as written), and every byte of
 * an invalid sequence, every control character (C0, DEL, and C1 as U+0080..U+009F) and,
 * with escape_backslash, the backslash become \xNN. The result is valid UTF-8 without
 * control characters. -ENOMEM. */
int tune_escape_utf8(const char *s, bool escape_backslash, char **ret);
/* Whether s is valid UTF-8 without control characters (tune_escape_utf8() would leave it,
 * but for backslashes, as it is). */
bool tune_utf8_clean(const char *s);

/* Whether the process a pidfd (pidfd_open()) names has exited: 1 it has, 0 it lives, < 0
 * the poll failed (cannot tell: each caller decides what that means for it). */
int tune_pidfd_exited(int pidfd);

/* "/proc/PID[/task/TID][/FILE]" (tid 0: none; file NULL: the directory), built by hand:
 * every process event reads a path or two, and a formatter costs more than the rest of an
 * unmatched exec's own work. -EINVAL for pid <= 0 or tid < 0, -ENAMETOOLONG. */
int tune_proc_path(char *buf, size_t size, pid_t pid, pid_t tid, const char *file);

/* Readers: each opens below the context's root ("/proc/PID/..."). A vanished process
 * reads as -ENOENT or -ESRCH. */
int tune_proc_read_stat(const tune_ctx *ctx, pid_t pid, tune_proc_stat *ret);
int tune_proc_read_status(const tune_ctx *ctx, pid_t pid, tune_proc_status *ret);
/* /proc/PID/status (at most TUNE_STATUS_MAX bytes of it) parsed for both of the above. */
int tune_proc_read_status_facts(const tune_ctx *ctx, pid_t pid, tune_status_facts *ret);
int tune_proc_read_creds(const tune_ctx *ctx, pid_t pid, tune_creds *ret);
/* tid 0: the process's (main thread's) comm. */
int tune_proc_read_comm(const tune_ctx *ctx, pid_t pid, pid_t tid, char ret[static TUNE_COMM_MAX]);
/* At most TUNE_CMDLINE_MAX bytes of it, joined (see tune_cmdline_join). */
int tune_proc_read_cmdline(const tune_ctx *ctx, pid_t pid, char **ret);
/* The raw environ block, at most TUNE_ENVIRON_MAX bytes (*ret_truncated says whether it was
 * longer). Not NUL-terminated as a whole; *ret holds *ret_len bytes plus one NUL. */
int tune_proc_read_environ(const tune_ctx *ctx, pid_t pid, char **ret, size_t *ret_len, bool *ret_truncated);
/* Both of the above with one hand-off to the slow reader (tune_read_slow_pair()). Returns
 * the environment's result as tune_proc_read_environ() does, and the command line's in
 * *ret_cmdline_r (*ret_cmdline set only when it is 0). */
int tune_proc_read_cmdline_environ(const tune_ctx *ctx, pid_t pid, char **ret_cmdline, int *ret_cmdline_r, char **ret,
                                   size_t *ret_len, bool *ret_truncated);
/* The children of pid's main thread (/proc/PID/task/PID/children), at most max of them
 * (the first ones the kernel lists); -ENOENT also on a kernel without
 * CONFIG_PROC_CHILDREN. */
#define TUNE_CHILDREN_MAX 64u
int tune_proc_read_children(const tune_ctx *ctx, pid_t pid, pid_t *ret, size_t max, size_t *ret_n);
/* The link text of /proc/PID/exe without the kernel's " (deleted)" suffix. */
int tune_proc_read_exe(const tune_ctx *ctx, pid_t pid, char **ret);
int tune_proc_read_cgroup(const tune_ctx *ctx, pid_t pid, char **ret);

/* The thread ids in /proc/PID/task, sorted. */
int tune_proc_list_tasks(const tune_ctx *ctx, pid_t pid, pid_t **ret, size_t *ret_n);
/* The process ids in /proc, sorted. */
int tune_proc_list_pids(const tune_ctx *ctx, pid_t **ret, size_t *ret_n);
/* tune_parse_proc_visibility() of this process's /proc/self/mountinfo below ctx; a root
 * without one (a fake tree) shows everything. */
int tune_proc_read_visibility(const tune_ctx *ctx, tune_proc_visibility *ret);

/* The device numbers (st_rdev) of the character devices the process holds open, sorted,
 * without duplicates. stat() follows /proc/PID/fd/N to the real file, which is only
 * meaningful on the live system: -EOPNOTSUPP below another root. */
int tune_proc_list_char_devices(const tune_ctx *ctx, pid_t pid, dev_t **ret, size_t *ret_n);
/* st_rdev of a device node below the root; -ENOTTY if it is not a character device. */
int tune_read_rdev(const tune_ctx *ctx, const char *path, dev_t *ret);
