/* SPDX-License-Identifier: GPL-2.0-only */
/* What each managed process was attributed from, kept in the state directory
 * (daemon/state/attribution-store.h) so that a restarted daemon attributes it the same
 * way: written at its match and when its environment or accelerators change, removed when
 * it goes, kept when the daemon stops. */
#include <unistd.h>

#include "attribution-store.h"
#include "log.h"
#include "npu-tuned/state-dir.h"
#include "placement-internal.h"

void attribution_keep(Placement *p, const managed_process *mp) {
        placed_process *pp = mp->userdata;
        attribution_saved saved;
        int dfd, r;

        /* Only an environment can be lost (setproctitle wipes it). */
        if (!pp || p->dry_run || !tune_env_capture_usable(&mp->env))
                return;
        if (mp->env.restored) { /* read back from its file, which is there as it was */
                pp->attribution_kept = true;
                return;
        }
        saved = (attribution_saved) { .pid = mp->pid, .start_time = mp->start_time, .env_start = mp->env_start,
                                      .env_end = mp->env_end, .env = mp->env };
        dfd = p->state_dfd >= 0 ? p->state_dfd : tune_state_dir_open(p->state_dir, true);
        r = dfd < 0 ? dfd : attribution_store_save_at(dfd, &saved, &mp->attribution);
        if (dfd >= 0 && dfd != p->state_dfd)
                close(dfd);
        if (r < 0) {
                log_warning_errno(r, "Failed to keep what pid %d was attributed from in %s, a restart will look again: %m",
                                  mp->pid, p->state_dir);
                return;
        }
        pp->attribution_kept = true;
}

void attribution_forget(Placement *p, placed_process *pp) {
        int r;

        if (!pp->attribution_kept)
                return;
        r = p->state_dfd >= 0 ? attribution_store_remove_at(p->state_dfd, pp->pid)
                              : attribution_store_remove(p->state_dir, pp->pid);
        if (r < 0)
                log_warning_errno(r, "Failed to remove what pid %d was attributed from from %s: %m", pp->pid, p->state_dir);
        pp->attribution_kept = false;
}
