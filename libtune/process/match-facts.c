/* SPDX-License-Identifier: GPL-2.0-only */
/* The matcher's facts read from /proc (see include/npu-tuned/match.h): the I/O half of
 * matching, kept out of libtune/process/match.c (pure) and out of the /proc readers
 * (libtune/host/proc.c), which know nothing of policies. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "npu-tuned/match.h"
#include "npu-tuned/proc.h"

static bool have_or_failed(const tune_proc_facts *f, tune_fact fact) {
        return (f->loaded | f->failed) & fact;
}

static void set_result(tune_proc_facts *f, tune_fact fact, int r) {
        if (r < 0) {
                f->failed |= fact;
                if (r == -ETIMEDOUT || r == -EBUSY)
                        f->gave_up |= fact;
        } else
                f->loaded |= fact;
}

/* The command line and the environment with one hand-off, each fact's result its own. */
static void load_pair(tune_proc_facts *f, const tune_ctx *ctx) {
        int cmdline_r, r;

        free(f->cmdline);
        free(f->environ);
        f->cmdline = f->environ = NULL;
        r = tune_proc_read_cmdline_environ(ctx, f->pid, &f->cmdline, &cmdline_r, &f->environ, &f->environ_len,
                                           &f->environ_truncated);
        set_result(f, TUNE_FACT_CMDLINE, cmdline_r);
        set_result(f, TUNE_FACT_ENVIRON, r);
}

int tune_proc_facts_load_from_proc(tune_proc_facts *f, tune_fact fact, void *userdata) {
        const tune_ctx *ctx = userdata;
        int r;

        /* The other of the two rides along where the caller said it will want it. */
        if ((fact == TUNE_FACT_CMDLINE && f->kept && (f->pair_if_kept & TUNE_FACT_ENVIRON) &&
             !have_or_failed(f, TUNE_FACT_ENVIRON)) ||
            (fact == TUNE_FACT_ENVIRON && (f->pair_if_kept & TUNE_FACT_CMDLINE) && !have_or_failed(f, TUNE_FACT_CMDLINE))) {
                load_pair(f, ctx);
                return (f->loaded & fact) ? 0 : -EIO;
        }
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
        case TUNE_FACT_ENVIRON:
                free(f->environ);
                f->environ = NULL;
                r = tune_proc_read_environ(ctx, f->pid, &f->environ, &f->environ_len, &f->environ_truncated);
                break;
        default:
                return -EINVAL;
        }
        set_result(f, fact, r);
        return r < 0 ? r : 0;
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
