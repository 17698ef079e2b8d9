/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* What the daemon learned of a managed process's accelerators, kept in the state
 * directory so that a restarted daemon knows it too: one file per process
 * (attribution-PID: its start time, the environment variables it was attributed from,
 * the accelerators and their source then). A process found running after a restart has
 * often wiped its environment (setproctitle) and may have no launcher left whose
 * environment could stand in; what was captured at its exec still holds while the same
 * process runs (same pid and start time). /run goes at reboot, and with it the files.
 * Root's files in root's directory (docs/trust.md, "State"); the text is the process's
 * own words and is parsed as such. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "npu-tuned/attribution.h"

#define ATTRIBUTION_FILE_PREFIX "attribution-"
#define ATTRIBUTION_FILE_MAX 8192u   /* bytes of one file */
#define ATTRIBUTION_STORE_MAX 4096u  /* files read back at a start */
#define ATTRIBUTION_VARS_MAX 32u

typedef struct attribution_saved {
        pid_t pid;
        uint64_t start_time;
        /* Where its exec put its environment (/proc/PID/stat, tune_proc_stat): an exec
         * keeps pid and start time but moves this, so a process that exec'd another
         * program while no daemon watched is not taken for the one recorded. */
        uint64_t env_start, env_end;
        char source[32];       /* tune_attribution_source_to_string() when it was written */
        char accels[256];      /* tune_attribution_format_accels() then ("" none) */
        tune_env_capture env;  /* state READ, restored: the variables it was attributed from */
} attribution_saved;

void attribution_saved_done(attribution_saved *s);

/* Pure. The text of one file (s->source and s->accels are not used: a's); only variables whose values are printable ASCII without
 * spaces are kept (visible-devices lists, ranks); the others are left out. */
int attribution_saved_format(const attribution_saved *s, const tune_attribution *a, char **ret);
/* Pure. -EBADMSG for anything but what format writes. */
int attribution_saved_parse(const char *text, attribution_saved *ret);
/* "attribution-PID" -> PID; -EINVAL for other names. */
int attribution_saved_name_pid(const char *name, pid_t *ret);

/* Write (replace) one, for a caller that holds the state directory open at dfd: s's pid,
 * start time, place of the environment and env; a's accelerators and source. */
int attribution_store_save_at(int dfd, const attribution_saved *s, const tune_attribution *a);
/* Make pid's file of text, what attribution_saved_format() wrote for pid and was kept
 * in its affinity record instead (placement-records.c), unless pid has a file already: one
 * is written only when the record's text is out of date, so it is the newer. 0 either way;
 * -EBADMSG when text is not pid's. */
int attribution_store_adopt(const char *state_dir, pid_t pid, const char *text);
/* Remove one (0 if there was none). */
int attribution_store_remove_at(int dfd, pid_t pid);
int attribution_store_remove(const char *state_dir, pid_t pid);
/* Every file in state_dir (none: 0 and nothing), at most ATTRIBUTION_STORE_MAX; one that
 * cannot be read or parsed is skipped, and, with prune, removed. */
int attribution_store_load(const char *state_dir, bool prune, attribution_saved **ret, size_t *ret_n);
void attribution_saved_free_all(attribution_saved *l, size_t n);
