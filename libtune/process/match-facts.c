/* SPDX-License-Identifier: GPL-2.0-only */
/* The matcher's facts read from /proc (see include/npu-tuned/match.h): the I/O half of
 * matching, kept out of libtune/process/match.c (pure) and out of the /proc readers
 * (libtune/host/proc.c), which know nothing of policies. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "npu-tuned/match.h"
#include "npu-tuned/proc.h"

int tune_proc_facts_load_from_proc(tune_proc_facts *f, tune_fact fact, void *userdata) {
        const tune_ctx *ctx = userdata;
        int r;

        switch (fact) {
        case TUNE_FACT_COMM:
                r = tune_proc_read_comm(ctx, f->pid, 0, f->comm);
                break;
        case TUNE_FACT_EXE:
                free(f->exe);
                f->exe = NULL;
                r = tune_proc_read_exe(ctx, f->pid, &f->exe);
                break;
        case TUNE_FACT_CMDLINE:
                free(f->cmdline);
                f->cmdline = NULL;
                r = tune_proc_read_cmdline(ctx, f->pid, &f->cmdline);
                break;
        case TUNE_FACT_UID:
                /* Kept: the claim's credentials come from the same read. */
                free(f->status);
                f->status = malloc(sizeof *f->status);
                r = f->status ? tune_proc_read_status_facts(ctx, f->pid, f->status) : -ENOMEM;
                if (r < 0) {
                        free(f->status);
                        f->status = NULL;
                } else
                        r = f->status->status_r;
                if (r >= 0)
                        f->uid = f->status->status.ruid;
                break;
        case TUNE_FACT_CGROUP:
                free(f->cgroup);
                f->cgroup = NULL;
                r = tune_proc_read_cgroup(ctx, f->pid, &f->cgroup);
                break;
        default:
                return -EINVAL;
        }
        if (r < 0) {
                f->failed |= fact;
                if (r == -ETIMEDOUT || r == -EBUSY)
                        f->gave_up |= fact;
                return r;
        }
        f->loaded |= fact;
        return 0;
}

void tune_proc_facts_init(tune_proc_facts *f, const tune_ctx *ctx, pid_t pid, const char *comm) {
        *f = (tune_proc_facts){
                .pid = pid,
                .load = tune_proc_facts_load_from_proc,
                .userdata = (void *) ctx,
        };
        if (comm) {
                tune_copy_string(f->comm, sizeof f->comm, comm);
                f->loaded |= TUNE_FACT_COMM;
        }
}
