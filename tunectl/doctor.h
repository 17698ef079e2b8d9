/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* npu-tunectl doctor: the questions behind a slow time-to-first-token, asked in one go.
 * doctor-facts.c reads what the host has through the root resolver (so a fake tree can
 * trip every check), tunectl-doctor.c asks the running daemon over the bus, and
 * doctor-checks.c judges the facts: pure functions, one per check, each adding results
 * with an id, a status, the evidence (the value read and where) and the fix (a policy
 * snippet naming the key, or a command). FAIL is for what breaks placement or
 * correctness; what costs latency is WARN. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/context.h"
#include "npu-tuned/cpuset.h"
#include "npu-tuned/engine-binding.h"
#include "npu-tuned/knob.h"
#include "npu-tuned/policy.h"
#include "npu-tuned/proc.h"
#include "npu-tuned/topology.h"

typedef enum doctor_status {
        DOCTOR_OK,
        DOCTOR_WARN,
        DOCTOR_FAIL,
} doctor_status;

const char *doctor_status_to_string(doctor_status s);

typedef struct doctor_result {
        char id[32];
        doctor_status status;
        char *evidence; /* one line, valid UTF-8 without control characters */
        char *fix;      /* NULL when there is nothing to do */
} doctor_result;

typedef struct doctor_report {
        doctor_result *items;
        unsigned n;
} doctor_report;

/* Add a result; evidence is printf'd and escaped (it may quote another user's process). */
void doctor_add(doctor_report *r, const char *id, doctor_status s, const char *fix, const char *fmt, ...)
        _printf_(5, 6);
void doctor_report_done(doctor_report *r);
/* The worst status in the report. */
doctor_status doctor_report_worst(const doctor_report *r);

/* A process on the host, as doctor reads it: those that other tuners and binders run as,
 * and those that look like inference servers. */
#define DOCTOR_PROCS_MAX 512
typedef struct doctor_proc {
        pid_t pid;
        char comm[TUNE_COMM_MAX];
        char *cmdline;                    /* NULs as spaces; NULL: not read */
        bool inference;                   /* its command line names an inference server */
        const tune_policy_rule *rule;     /* the rule of the policy that matches it; NULL: none */
        tune_engine_binds binds;          /* whether it binds its own threads */
        char binds_why[160];
} doctor_proc;

typedef struct doctor_cpufreq {
        int cpu;
        char governor[32];                /* "" when unreadable */
        long cur_khz, max_khz, hw_max_khz; /* scaling_cur_freq, scaling_max_freq, cpuinfo_max_freq; -1 unknown */
} doctor_cpufreq;

typedef struct doctor_link {
        unsigned accel;                   /* index into accels.items */
        int l0s, l1;                      /* link/l0s_aspm, link/l1_aspm; -1 absent */
} doctor_link;

/* A managed process as the daemon reports it (ListProcesses) and the kernel has it. */
typedef struct doctor_managed {
        pid_t pid;
        char *comm, *rule, *accelerators;
        tune_cpuset plan_cpus;            /* every role's CPUs together */
        tune_cpuset accel_cpus;           /* its accelerators' local CPUs */
        tune_cpuset cpuset_cpus;          /* its cgroup's effective CPUs; empty: unrestricted or unknown */
        double locality;                  /* % on its memory nodes; < 0 not measured */
        unsigned threads, threads_outside;
        pid_t first_outside;
        char first_outside_cpus[64];
} doctor_managed;

typedef struct doctor_facts {
        const char *root;
        const char *state_dir;
        tune_topology *topology;
        tune_accels accels;
        tune_policy *policy;              /* NULL when invalid */
        char *policy_problem;             /* its first error, as --check-policy prints it */
        unsigned policy_errors;
        const char *policy_where;         /* the directories read, for messages */
        tune_cpuset housekeeping, inference; /* as the IRQ knob computes them */

        char *thp_enabled, *thp_defrag;   /* the selected words; NULL: unreadable */
        long khugepaged_defrag;           /* -1 unreadable */
        long numa_balancing;              /* -1 unreadable */
        char *aspm_policy;                /* the selected word of pcie_aspm's policy; NULL: none */
        doctor_link *links;
        unsigned n_links;
        doctor_cpufreq *cpufreq;          /* the CPUs near accelerators */
        unsigned n_cpufreq;
        tune_knob_plan irq_plan;          /* what the IRQ knob would do */

        doctor_proc *procs;
        unsigned n_procs;
        bool procs_truncated;
        pid_t irqbalance, tuned, numad;   /* 0: not running */
        bool irqbalance_socket;           /* its control socket exists (1.8+: it takes bans) */
        char *tuned_profile;
        int tuned_scheduler;              /* its profile has a [scheduler] section: 1, 0; -1 unknown */

        int kmsg_r;                       /* < 0: the kernel log could not be read */
        unsigned kmsg_mce, kmsg_nmi, kmsg_aer;
        char *kmsg_last;                  /* the last such line */

        int journal_r;                    /* tune_journal_load(): 0 there is one, -ENOENT none */
        unsigned journal_entries;

        /* The running daemon, over the bus. */
        bool daemon;
        char *daemon_state;
        uint64_t reload_usec;             /* 0: no reload */
        bool reload_ok;
        char *reload_message;
        unsigned knobs, knobs_drifted, knobs_refused;
        char *drifted;                    /* the first drifted knob's name */
        doctor_managed *managed;
        unsigned n_managed;
} doctor_facts;

/* doctor-facts.c: everything but the daemon's part, below ctx (which it may give a slow
 * reader). policy_dirs: as --policy-dir (n 0: the standard directories). */
int doctor_facts_read(tune_ctx *ctx, const char *const *policy_dirs, unsigned n_policy_dirs, const char *state_dir,
                      doctor_facts *ret);
/* The kernel's CPU affinity of each thread of m->pid and its cgroup cpuset, below ctx. */
int doctor_managed_read(const tune_ctx *ctx, const doctor_facts *f, doctor_managed *m);
void doctor_facts_done(doctor_facts *f);

/* doctor-checks.c: every check over f, in the order they are printed. */
void doctor_check_all(const doctor_facts *f, doctor_report *r);
