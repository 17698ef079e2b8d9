/* SPDX-License-Identifier: GPL-2.0-only */
/* Giving back what a daemon that did not stop cleanly left changed: the affinity records
 * of the processes it had placed, then the knobs in its journal. `npu-tuned --restore`
 * (the unit's ExecStopPost=) does both; a starting daemon gives the affinities back
 * before its watcher's first scan. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "attribution-store.h"
#include "knobs.h"
#include "log.h"
#include "npu-tuned/affinity.h"
#include "npu-tuned/affinity-record.h"
#include "npu-tuned/knob.h"
#include "npu-tuned/state-dir.h"
#include "restore.h"
#include "state-owner.h"

/* Whether the record of pid was last written before this boot began. */
static bool record_predates_boot(const char *state_dir, pid_t pid) {
        _cleanup_free_ char *path = NULL;
        struct timespec real, boot;
        struct stat st;

        if (asprintf(&path, "%s/" TUNE_AFFINITY_RECORD_PREFIX "%d" TUNE_AFFINITY_RECORD_SUFFIX, state_dir, (int) pid) < 0 ||
            lstat(path, &st) < 0 || clock_gettime(CLOCK_REALTIME, &real) < 0 || clock_gettime(CLOCK_BOOTTIME, &boot) < 0)
                return false;
        return st.st_mtim.tv_sec < real.tv_sec - boot.tv_sec - 1;
}

/* What a running process was attributed from, kept in its record (placement-records.c),
 * goes to its own file before the record goes: the next start reads it from there. */
static void keep_attribution(const char *state_dir, const tune_affinity_record *rec) {
        int r;

        if (!rec->attribution)
                return;
        r = attribution_store_adopt(state_dir, rec->originals.pid, rec->attribution);
        if (r < 0)
                log_warning_errno(r, "Failed to keep what pid %d was attributed from, from its affinity record, in %s; "
                                     "a restart will look again: %m",
                                  rec->originals.pid, state_dir);
}

/* Give one recorded process its originals back. Returns < 0 when it could not be
 * restored and the record is kept (for a later --restore). */
static int restore_record(const tune_ctx *ctx, const char *state_dir, const char *boot_id, pid_t pid) {
        _cleanup_(tune_affinity_record_done) tune_affinity_record rec = {};
        tune_affinity_stats stats = {};
        int r;

        r = tune_affinity_record_load(state_dir, pid, &rec);
        if (r == -ENOENT)
                return 0;
        if (r == -ENODATA) {
                /* A first record is written by one write() before the first pin: empty, the
                 * daemon died before that write, so it pinned nothing. */
                log_info("The affinity record of pid %d is empty: the daemon stopped before pinning it. "
                         "Removing it.", pid);
                return tune_affinity_record_delete(state_dir, pid);
        }
        if (r == -EBADMSG && record_predates_boot(state_dir, pid)) {
                /* Unsynced by design (affinity-record.h): a power loss may leave it torn,
                 * and it describes threads of an earlier boot anyway. */
                log_info("The affinity record of pid %d is from an earlier boot and unreadable: discarding it.", pid);
                return tune_affinity_record_delete(state_dir, pid);
        }
        if (r == -EBADMSG || r == -EPROTONOSUPPORT)
                return log_error_errno(r, "%s/" TUNE_AFFINITY_RECORD_PREFIX "%d" TUNE_AFFINITY_RECORD_SUFFIX
                                          " is %s: leaving pid %d's affinity as it is. Inspect and remove it.",
                                       state_dir, pid, r == -EBADMSG ? "corrupt" : "from a newer npu-tuned", pid);
        if (r < 0)
                return log_error_errno(r, "Failed to read the affinity record of pid %d in %s: %m", pid, state_dir);
        if (*rec.boot_id && boot_id && *boot_id && !streq(rec.boot_id, boot_id))
                log_info("The affinity record of pid %d is from an earlier boot: discarding it.", pid);
        else if (!rec.restore_on_stop) {
                log_info("pid %d keeps its CPU affinity (its rule says restore_on_stop: false).", pid);
                keep_attribution(state_dir, &rec);
        } else {
                r = tune_affinity_restore(ctx, NULL, &rec.originals, &stats);
                if (r == -ESRCH || r == -ENOENT)
                        log_info("pid %d (start time %llu) is gone: nothing to give back.", pid,
                                 (unsigned long long) rec.originals.start_time);
                else if (r < 0)
                        return log_warning_errno(r, "Failed to give pid %d its original CPU affinity back: %m; its "
                                                    "record is kept.", pid);
                else {
                        log_info("Gave %u thread(s) of pid %d their original CPU affinity back%s.", stats.set, pid,
                                 stats.skipped ? " (threads that re-bound themselves were left alone)" : "");
                        keep_attribution(state_dir, &rec);
                }
        }
        r = tune_affinity_record_delete(state_dir, pid);
        if (r < 0)
                return log_warning_errno(r, "Failed to remove the affinity record of pid %d: %m", pid);
        return 0;
}

int restore_affinity_records(const tune_ctx *ctx, const char *state_dir) {
        _cleanup_free_ pid_t *pids = NULL;
        _cleanup_free_ char *boot_id = NULL;
        unsigned n = 0, failed = 0;
        pid_t ready_pid;
        int r;

        /* A ready record a death left filled (affinity-record.h) is its process's record. */
        r = tune_affinity_record_adopt_ready(state_dir, &ready_pid);
        if (r < 0)
                log_warning_errno(r, "Failed to adopt the ready affinity record in %s: %m", state_dir);
        else if (r > 0)
                log_info("The ready affinity record in %s holds pid %d's first record: restoring it as such.", state_dir,
                         ready_pid);
        r = tune_affinity_record_clear_temps(state_dir);
        if (r < 0)
                log_warning_errno(r, "Failed to remove the temp files of affinity records in %s: %m", state_dir);
        r = tune_affinity_record_list(state_dir, &pids, &n);
        if (r < 0)
                return log_error_errno(r, "Failed to list the affinity records in %s: %m", state_dir);
        if (n == 0)
                return 0;
        if (!tune_ctx_is_live(ctx))
                return log_error_errno(EOPNOTSUPP, "%u affinity record(s) in %s, but the root is not \"/\": leaving them.",
                                       n, state_dir);
        (void) tune_boot_id(ctx, &boot_id);
        log_info("Found %u affinity record(s) of a previous run in %s: restoring.", n, state_dir);
        for (unsigned i = 0; i < n; i++)
                if (restore_record(ctx, state_dir, boot_id, pids[i]) < 0)
                        failed++;
        return failed > 0 ? -EIO : 0;
}

int run_restore(const daemon_options *o) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_journal_freep) tune_journal *j = NULL;
        _cleanup_(state_dir_freep) StateDir *state = NULL;
        bool affinity_failed;
        struct stat st;
        int r;

        r = tune_ctx_new(o->root, &ctx);
        if (r < 0) {
                log_error_errno(r, "Failed to open root directory %s: %m", o->root);
                return 1;
        }
        if (stat(o->state_dir, &st) < 0 && errno == ENOENT) {
                log_info("No state directory %s: nothing to restore.", o->state_dir);
                return 0;
        }
        r = state_dir_new(o->state_dir, &state);
        if (r < 0) {
                log_oom();
                return 1;
        }
        r = state_dir_lock(state);
        if (r == -EBUSY) {
                log_error("npu-tuned is running with the state directory %s: stop it (it restores on stop).",
                          o->state_dir);
                return 1;
        }
        if (tune_state_dir_is_refusal(r)) {
                log_error_errno(r, "The state directory %s %s: refusing to restore from it (docs/trust.md).",
                                o->state_dir, tune_state_dir_refusal(r));
                return 1;
        }
        if (r < 0) {
                log_error_errno(r, "Failed to lock the state directory %s: %m", o->state_dir);
                return 1;
        }
        /* Affinities of processes a killed daemon had placed (not below a test root). */
        affinity_failed = tune_ctx_is_live(ctx) && restore_affinity_records(ctx, o->state_dir) < 0;
        r = knobs_load_journal(ctx, o->state_dir, &j);
        if (r < 0)
                return 1;
        if (!j) {
                (void) tune_journal_delete(o->state_dir); /* a stale temp file */
                log_info("No knob journal in %s: nothing to restore.", o->state_dir);
                return affinity_failed ? 1 : 0;
        }
        log_info("Restoring %u host knob(s) from %s/%s.", j->n, o->state_dir, TUNE_JOURNAL_FILE);
        r = knobs_restore_journal(ctx, j, o->state_dir);
        if (r < 0) {
                log_error_errno(r, "%u host knob(s) could not be restored: %m; kept in the journal.", j->n);
                return 1;
        }
        log_info("Host knobs restored; journal removed.");
        return affinity_failed ? 1 : 0;
}
