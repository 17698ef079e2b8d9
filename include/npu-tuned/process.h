/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* A process the watcher manages: what it knows about it, as the placement code sees it in
 * the watcher's callbacks (daemon/watcher/watcher.h). Plain data; the watcher owns every field
 * except userdata (the consumer's). Pointers into it (threads included) are valid only
 * during a callback: the thread array moves when threads come and go. */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "npu-tuned/attribution.h"
#include "npu-tuned/policy.h"
#include "npu-tuned/proc.h"

typedef struct managed_thread {
        pid_t tid;
        char comm[TUNE_COMM_MAX]; /* as last seen (COMM events, reconcile) */
        void *userdata;           /* the consumer's; the watcher never touches it */
} managed_thread;

typedef struct managed_process {
        /* Identity: a pid is only this process while the start time matches. */
        pid_t pid;
        uint64_t start_time;  /* /proc/PID/stat field 22 */
        int pidfd;            /* held while managed; -1 if pidfd_open() failed (old kernel, fd limit) */
        pid_t ppid;

        /* What it looked like when last matched. */
        char comm[TUNE_COMM_MAX];
        char *exe;            /* may be NULL (unreadable) */
        char *cmdline;        /* NULs as spaces, bounded; may be NULL */
        uid_t uid;
        tune_status_facts *status; /* the /proc/PID/status of that match (its credentials): only
                               * during the callback that follows the match, NULL otherwise */

        const tune_policy_rule *rule; /* the matching rule (never NULL in a callback) */
        int rank;             /* from the rule's rank source; -1: none */
        tune_attribution attribution; /* accelerators and where they came from */
        tune_env_capture env; /* the variables that matter, captured at exec or inherited */
        uint64_t env_start, env_end; /* where its exec put its environment (tune_proc_stat), as
                                      * last read: what tells this exec from a later one */

        managed_thread *threads; /* every thread, the main one (tid == pid) included while it lives */
        unsigned n_threads;

        void *userdata;       /* the consumer's (placement plan); the watcher never touches it */
} managed_process;

static inline managed_thread *managed_process_find_thread(const managed_process *p, pid_t tid) {
        for (unsigned i = 0; i < p->n_threads; i++)
                if (p->threads[i].tid == tid)
                        return &p->threads[i];
        return NULL;
}
