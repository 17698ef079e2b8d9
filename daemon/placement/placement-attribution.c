/* SPDX-License-Identifier: GPL-2.0-only */
/* What each managed process was attributed from, kept in the state directory
 * (daemon/state/attribution-store.h) so that a restarted daemon attributes it the same
 * way. A process with an affinity record has it kept there, in the record's one write
 * before its first pin (placement-records.c); its file is written only when the daemon
 * stops (the record goes with the restore) or when what it was attributed from changes
 * without a new record. Any other process's file is written after its match (once the
 * events in hand are handled) and when its environment or accelerators change. The file
 * goes when the process does, and is kept when the daemon stops. */
#include <stdlib.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "attribution-store.h"
#include "log.h"
#include "npu-tuned/state-dir.h"
#include "placement-internal.h"

/* What there is to keep of mp: nothing (0) in a dry run, without an environment (only an
 * environment can be lost: setproctitle wipes it), or one read back from its file, which
 * is there as it was (1). */
static int keepable(const Placement *p, const managed_process *mp, attribution_saved *ret) {
        if (!mp->userdata || p->dry_run || !tune_env_capture_usable(&mp->env))
                return 0;
        if (mp->env.restored)
                return 1;
        *ret = (attribution_saved) { .pid = mp->pid, .start_time = mp->start_time, .env_start = mp->env_start,
                                     .env_end = mp->env_end, .env = mp->env };
        return 2;
}

int attribution_text(const Placement *p, const managed_process *mp, char **ret) {
        attribution_saved saved;

        *ret = NULL;
        if (keepable(p, mp, &saved) < 2)
                return 0;
        return attribution_saved_format(&saved, &mp->attribution, ret);
}

void attribution_keep(Placement *p, const managed_process *mp) {
        placed_process *pp = mp->userdata;
        attribution_saved saved;
        int dfd, r;

        r = keepable(p, mp, &saved);
        if (r == 1)
                pp->attribution_kept = true;
        if (r < 2)
                return;
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

static int on_attribution_due(sd_event_source *s, void *userdata) {
        Placement *p = userdata;
        size_t n = p->n_attribution_due;

        /* attribution_keep() defers nothing: the list cannot grow while it is walked. */
        p->n_attribution_due = 0;
        for (size_t i = 0; i < n; i++) {
                managed_process *mp = placement_find_process(p, p->attribution_due[i]);
                placed_process *pp = mp ? mp->userdata : NULL;

                /* Gone meanwhile: it had nothing kept, and there is nothing to keep. */
                if (!pp || !pp->attribution_due)
                        continue;
                pp->attribution_due = false;
                attribution_keep(p, mp);
        }
        return 0;
}

void attribution_keep_soon(Placement *p, managed_process *mp) {
        placed_process *pp = mp->userdata;
        int r;

        /* Its record, written before its first pin, holds it already. */
        if (!pp || pp->attribution_due || pp->attribution_in_record)
                return;
        if (!p->event)
                goto now;
        if (TUNE_GROW(p->attribution_due, p->size_attribution_due, p->n_attribution_due, 16) < 0)
                goto now;
        if (!p->attribution_source) {
                r = sd_event_add_defer(p->event, &p->attribution_source, on_attribution_due, p);
                if (r < 0)
                        goto now;
                /* The connector's priority: of two pending sources of one priority the
                 * one pending longer goes first, so this runs after the batch of events
                 * in hand and before the next. Below it, a host whose events never stop
                 * coming would never let it run. */
                (void) sd_event_source_set_description(p->attribution_source, "attribution-keep");
        }
        r = sd_event_source_set_enabled(p->attribution_source, SD_EVENT_ONESHOT);
        if (r < 0)
                goto now;
        p->attribution_due[p->n_attribution_due++] = pp->key;
        pp->attribution_due = true;
        return;
now:
        attribution_keep(p, mp);
}

void attribution_soon_done(Placement *p) {
        p->attribution_source = sd_event_source_disable_unref(p->attribution_source);
        free(p->attribution_due);
        p->attribution_due = NULL;
        p->n_attribution_due = p->size_attribution_due = 0;
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
