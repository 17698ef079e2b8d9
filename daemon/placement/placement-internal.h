/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* What the files of placement share (placement.h is what the daemon sees):
 *   placement.c          the Placement: its life, what it reports, reaction times
 *   placement-replan.c   plan a process (one way for every cause) and pin its threads
 *   placement-watch.c    the watcher's callbacks: match, change, threads, exit
 *   placement-reconcile.c the reconcile tick: cgroup cpuset rewritten, affinity drift
 *   placement-records.c  the affinity records and their ready-record protocol
 *   placement-memory.c   the stepped memory migration and its verification
 *   placement-binding.c  the watch window of a process that may bind itself
 * Only these files include it. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "engine-binding.h"
#include "events.h"
#include "npu-tuned/affinity.h"
#include "npu-tuned/affinity-record.h"
#include "npu-tuned/memmove.h"
#include "placement.h"
#include "process-cpuset.h"
#include "reaction-time.h"

struct Placement {
        sd_event *event;
        const tune_ctx *ctx;
        tune_topology *topology;
        const char *state_dir;
        /* The kernel as placement reaches it (placement_inputs; never NULL here). */
        const tune_affinity_backend *affinity;
        const tune_memmove_backend *memmove;
        /* The state directory, held open for the affinity records once a walk from "/"
         * has accepted it (tune_state_dir_open()): a first record is then one write (into
         * the ready record, or a create and a write), its removal one unlink. < 0 until
         * then, and again after a failed write, so that the next one walks anew (a
         * directory removed meanwhile is recreated). */
        int state_dfd;
        /* The ready record (affinity-record.h), made after a pin for the next process's
         * first record, which is then one pwrite() before that process's first pin: < 0
         * when there is none (before the first record, after a failure). ready_pid: the
         * process it was just filled for, renamed to that one's record right after its set
         * (0: empty). */
        int ready_fd;
        pid_t ready_pid;
        bool ready_failed;
        const tune_accels *accels; /* of the current policy load */
        bool dry_run;
        Watcher *watcher;
        tune_placer *placer;
        char *boot_id;          /* for the affinity records */
        bool record_error_logged;
        const event_sink *events; /* where events go besides the log; may be NULL */
        placement_stats stats;
        uint64_t last_set_ns;   /* CLOCK_MONOTONIC of the last sched_setaffinity */
        reaction_stats reactions;
        /* Keys of the processes whose attribution is kept once the events in hand are
         * handled (attribution_keep_soon()), and the source that does it. */
        uint64_t *attribution_due;
        size_t n_attribution_due, size_attribution_due;
        sd_event_source *attribution_source;
};

/* Per managed process: managed_process.userdata. */
typedef struct placed_process {
        Placement *owner;
        /* Whose userdata it is: the watcher frees the process after on_process_exit()
         * freed this. For what needs no check that it still runs (placement_find_process()
         * polls its pidfd). */
        const managed_process *process;
        pid_t pid;
        uint64_t key;
        tune_affinity_originals originals;
        /* What STATE_DIR/affinity-PID.json holds (see record_before_set()). */
        tune_affinity_record record;
        bool recorded;
        bool attribution_kept;  /* STATE_DIR/attribution-PID holds what it was attributed from */
        bool attribution_due;   /* in owner->attribution_due, to be kept after this batch of events */
        bool attribution_in_record; /* record.attribution holds what it was attributed from now */
        bool restore_on_stop;   /* the rule's, for the record */
        tune_affinity_backend backend; /* the owner's, recording before each set */
        sd_event_source *memory_timer; /* the settle delay, then migration steps */
        tune_memmove *memmove;
        uint64_t matched_usec;
        bool memory_done;
        double locality;        /* % of its memory on its memory node(s) when last verified; < 0: not measured */
        bool drift_logged;
        bool refusal_logged;
        process_cpuset cpuset;  /* its cgroup's, as last read (match, reconcile) */
        bool cpuset_error_logged;
        /* Who binds its threads (engine-binding.h): only BINDER_DAEMON pins. */
        binder binder;
        char binding_why[192];
        tune_cpuset start_mask;        /* BINDER_WATCHING: the main thread's mask at match, before anyone placed it */
        sd_event_source *binding_timer; /* BINDER_WATCHING: the watch window */
        uint64_t watch_until_usec;
        char *engine_report;           /* last report of what the engine did (logged on change) */
} placed_process;

/* placement.c */
uint64_t placement_now_usec(void);
/* The managed process behind a key, if it is still that process. */
managed_process *placement_find_process(Placement *p, uint64_t key);
/* Thread tid's CPU affinity as the kernel (the affinity backend) has it now. */
static inline int placement_get_affinity(const Placement *p, pid_t tid, tune_cpuset *ret) {
        return p->affinity->get(p->affinity->userdata, tid, ret);
}
void placed_process_free(placed_process *pp);
/* Call before handling an event; pass what it returns to reaction_end(). */
uint64_t reaction_begin(const Placement *p);
void reaction_end(Placement *p, reaction_kind kind, pid_t pid, uint64_t set_before);

/* placement-replan.c */
/* Read mp's cgroup cpuset again. 1: it differs from what the placer plans with. */
int refresh_cpuset(Placement *p, managed_process *mp, placed_process *pp);
/* Plan mp again with its rule, accelerators, claim and the cgroup cpuset last read
 * (pp->cpuset), pin it and the others whose CPUs that changed, say so, and move its memory
 * when its memory nodes changed. why: for the log. */
int replan(Placement *p, managed_process *mp, const char *why);
/* Pin every thread of mp by role (or give them back, when it is no longer placed). */
void apply_process(Placement *p, managed_process *mp);
/* The placer changed other processes' CPUs: re-pin those. */
/* Pin the processes whose plans changed with cause's (its arrival, change or exit), and
 * say so in one line. */
void apply_changed(Placement *p, const tune_keys *changed, pid_t cause);
void log_placement(const Placement *p, const managed_process *mp, const tune_plan *pl, bool dry_run);

/* placement-records.c */
/* The backend that records the originals before each set (pp->backend). */
tune_affinity_backend recording_backend(placed_process *pp);
void record_remove(Placement *p, placed_process *pp);
/* The ready record goes (its directory is walked anew, the daemon stops). */
void ready_drop(Placement *p);

/* placement-attribution.c */
/* Keep what mp was attributed from (its environment) for a restarted daemon. */
void attribution_keep(Placement *p, const managed_process *mp);
/* What attribution_keep() would write for mp (*ret NULL: nothing), for its affinity record. */
int attribution_text(const Placement *p, const managed_process *mp, char **ret);
/* The same, once the process events already received are handled: its file is a restart's
 * worth, and the threads whose events wait behind it are to be pinned first. At once when
 * there is no event loop, or the deferral fails. */
void attribution_keep_soon(Placement *p, managed_process *mp);
/* Stop keeping anything later (the placement goes). */
void attribution_soon_done(Placement *p);
/* It went (not a stop): what was kept goes too. */
void attribution_forget(Placement *p, placed_process *pp);

/* placement-reconcile.c: watcher_ops.on_process_reconciled. */
void placement_on_reconciled(Watcher *w, managed_process *mp, void *userdata);

/* placement-memory.c */
void arm_memory(Placement *p, managed_process *mp, placed_process *pp, const tune_plan *pl);
/* Its memory home changed: what was moved (or is moving) there counts for nothing. */
void memory_reset(placed_process *pp);

/* placement-binding.c */
/* The engine binds: say what it did, checked against the plan, when it changes. */
void report_engine(Placement *p, managed_process *mp, placed_process *pp);
/* Thread tid of mp set mask itself (when: for the log): npu-tuned steps back. */
void step_back(Placement *p, managed_process *mp, placed_process *pp, pid_t tid, const tune_cpuset *mask,
               const char *when);
void watch_binding(Placement *p, placed_process *pp, unsigned ms);
