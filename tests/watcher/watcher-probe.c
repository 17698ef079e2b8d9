/* SPDX-License-Identifier: GPL-2.0-only */
/* watcher-probe: the real watcher (connector, registry, matching, attribution) with a
 * consumer that records every callback as one line on stdout, for the live tests to
 * parse. Rules and accelerators are built from the command line (no policy parser).
 *
 *   watcher-probe [--rule NAME [--comm GLOB] [--exe GLOB] [--cmdline ERE] [--uid UID]
 *                  [--cgroup PREFIX] [--rank-cmdline ERE] [--rank-comm ERE] [--rank-env NAME]
 *                  [--mode auto|explicit|none] [--rule-accel KIND:INDEX]...
 *                  [--thread-names GLOB]]...
 *                 [--accel KIND:INDEX[:DEVPATH]]... [--kind NAME:ENV[:physical]]
 *                 [--rcvbuf-kib N] [--reconcile-ms N] [--device-retry-ms N] [--max N]
 *                 [--check-identity] [--names-by-rule] [-v] [--then --rule NAME ...]
 *                 [--driver-query PROGRAM [--driver-library-dir DIR] [--driver-interval-ms N]]
 *                 [--evaluate PID]
 *
 * Rules after --then form a second policy, swapped in with watcher_reload() on SIGHUP
 * ("reloaded" line). --thread-names: the rule's control role takes the threads so named.
 * --names-by-rule: thread names only where a rule wants them, as the daemon (by default
 * the probe wants all, to print them). --evaluate PID: no events, just watcher_evaluate_pid() (the
 * --explain path) on one process, one "evaluated" line, exit.
 *
 * Lines: ready, matched, changed, thread_new, thread_renamed, thread_exit, exit, reconcile,
 * violation, stats (on SIGUSR1 and at the end). Every line about a process carries its
 * pid and start time. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>

#include "log.h"
#include "npu-tuned/context.h"
#include "npu-tuned/proc.h"
#include "watcher.h"

#define MAX_RULES 16
#define MAX_ACCELS 64

static tune_policy_rule rules[MAX_RULES], rules2[MAX_RULES];
static tune_accel_ref rule_accels[MAX_RULES][16];
static tune_policy_kind kinds[8];
static tune_policy policy = { .version = TUNE_POLICY_VERSION, .rules = rules, .kinds = kinds };
static tune_policy policy2 = { .version = TUNE_POLICY_VERSION, .rules = rules2, .kinds = kinds };
static tune_policy *building = &policy;
static const tune_accels *probe_accels;
static tune_accel accel_items[MAX_ACCELS];
static tune_accels accels = { .items = accel_items };
static bool check_identity;
static const tune_ctx *probe_ctx;

static void out(const char *fmt, ...) _printf_(1, 2);
static void out(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
}

/* The consumer's side of "never act on a process that merely reuses a pid": at every
 * callback but the exit, the pid must still be the process we were told about. */
static void identity(const char *cb, const managed_process *p) {
        tune_proc_stat st;

        if (!check_identity)
                return;
        if (tune_proc_read_stat(probe_ctx, p->pid, &st) < 0)
                return; /* gone: an action would fail, not hit another process */
        if (st.start_time != p->start_time)
                out("violation callback=%s pid=%d start=%" PRIu64 " now=%" PRIu64, cb, (int) p->pid, p->start_time,
                    st.start_time);
}

static void print_process(const char *what, const managed_process *p, unsigned changes) {
        _cleanup_free_ char *acc = NULL;
        char comm[80], cmdline[200];

        (void) tune_attribution_format_accels(&p->attribution, &acc);
        tune_escape(p->comm, comm, sizeof comm);
        tune_escape(p->cmdline ? p->cmdline : "", cmdline, sizeof cmdline);
        for (char *c = cmdline; *c; c++)
                if (*c == ' ')
                        *c = '_';
        out("%s pid=%d start=%" PRIu64 " ppid=%d rule=%s comm=%s rank=%d accels=%s source=%s variable=%s env=%s "
            "inherited=%d unknown=%u threads=%u changes=%u cmdline=%s",
            what, (int) p->pid, p->start_time, (int) p->ppid, p->rule ? p->rule->name : "-", comm, p->rank,
            acc && *acc ? acc : "-", tune_attribution_source_to_string(p->attribution.source),
            p->attribution.variable[0] ? p->attribution.variable : "-", tune_env_state_to_string(p->env.state),
            p->env.inherited, p->attribution.n_unknown, p->n_threads, changes, cmdline);
}

static void on_matched(Watcher *w, managed_process *p, void *u) {
        identity("matched", p);
        print_process("matched", p, 0);
        for (unsigned i = 0; i < p->n_threads; i++) {
                char comm[80];
                tune_escape(p->threads[i].comm, comm, sizeof comm);
                out("thread pid=%d start=%" PRIu64 " tid=%d comm=%s", (int) p->pid, p->start_time,
                    (int) p->threads[i].tid, comm);
        }
}

static void on_changed(Watcher *w, managed_process *p, unsigned changes, void *u) {
        identity("changed", p);
        print_process("changed", p, changes);
}

static void on_thread_new(Watcher *w, managed_process *p, managed_thread *t, void *u) {
        char comm[80];
        identity("thread_new", p);
        tune_escape(t->comm, comm, sizeof comm);
        out("thread_new pid=%d start=%" PRIu64 " tid=%d comm=%s", (int) p->pid, p->start_time, (int) t->tid, comm);
}

static void on_thread_renamed(Watcher *w, managed_process *p, managed_thread *t, const char *old, void *u) {
        char a[80], b[80];
        identity("thread_renamed", p);
        tune_escape(old, a, sizeof a);
        tune_escape(t->comm, b, sizeof b);
        out("thread_renamed pid=%d start=%" PRIu64 " tid=%d old=%s new=%s", (int) p->pid, p->start_time, (int) t->tid,
            a, b);
}

static void on_thread_exit(Watcher *w, managed_process *p, managed_thread *t, void *u) {
        out("thread_exit pid=%d start=%" PRIu64 " tid=%d", (int) p->pid, p->start_time, (int) t->tid);
}

static void on_exit_cb(Watcher *w, managed_process *p, watcher_exit_reason reason, void *u) {
        out("exit pid=%d start=%" PRIu64 " reason=%s", (int) p->pid, p->start_time, watcher_exit_reason_to_string(reason));
}

static void on_process_reconciled(Watcher *w, managed_process *p, void *u) {
        identity("reconcile", p);
        out("reconcile pid=%d start=%" PRIu64 " threads=%u", (int) p->pid, p->start_time, p->n_threads);
}

static void print_stats(Watcher *w) {
        watcher_stats s;
        watcher_get_stats(w, &s);
        out("stats events=%" PRIu64 " overruns=%" PRIu64 " resyncs=%" PRIu64 " matched=%" PRIu64 " exited=%" PRIu64
            " managed=%u candidates=%u skipped_full=%" PRIu64 " filter=%d socket_filter=%d rcvbuf=%d",
            s.events, s.overruns, s.resyncs, s.matched, s.exited, s.managed, s.candidates, s.skipped_full, s.filter,
            s.socket_filter, s.rcvbuf);
}

static int on_usr1(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        print_stats(userdata);
        return 0;
}

static int on_hup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        watcher_stats st;
        int r = watcher_reload(userdata, probe_accels, &policy2);
        watcher_get_stats(userdata, &st);
        out("reloaded r=%d rules=%u managed=%u", r, policy2.n_rules, st.managed);
        return 0;
}

static int parse_ref(const char *s, char kind[static TUNE_ACCEL_KIND_MAX], int *index, const char **rest) {
        const char *colon = strchr(s, ':');
        char *end;
        long v;

        if (!colon || (size_t) (colon - s) >= TUNE_ACCEL_KIND_MAX)
                return -EINVAL;
        memcpy(kind, s, (size_t) (colon - s));
        kind[colon - s] = 0;
        v = strtol(colon + 1, &end, 10);
        if (end == colon + 1 || v < 0 || v > 4096 || (*end && *end != ':'))
                return -EINVAL;
        *index = (int) v;
        *rest = *end == ':' ? end + 1 : NULL;
        return 0;
}

static int cmp_accel(const void *a, const void *b) {
        const tune_accel *x = a, *y = b;
        int c = strcmp(x->kind, y->kind);
        return c ? c : (x->index > y->index) - (x->index < y->index);
}

static int usage(void) {
        fprintf(stderr, "watcher-probe: bad arguments (see the comment at the top of watcher-probe.c)\n");
        return 2;
}

int main(int argc, char *argv[]) {
        enum {
                ARG_RULE = 0x100, ARG_COMM, ARG_EXE, ARG_CMDLINE, ARG_UID, ARG_CGROUP, ARG_RANK_CMDLINE, ARG_RANK_COMM,
                ARG_RANK_ENV, ARG_MODE, ARG_RULE_ACCEL, ARG_ACCEL, ARG_KIND, ARG_RCVBUF, ARG_RECONCILE, ARG_DEVICE_RETRY,
                ARG_MAX, ARG_CHECK_IDENTITY, ARG_THEN, ARG_EVALUATE, ARG_NAMES_BY_RULE, ARG_THREAD_NAMES,
                ARG_DRIVER_QUERY, ARG_DRIVER_LIBRARY_DIR, ARG_DRIVER_INTERVAL,
        };
        static const struct option options[] = {
                { "rule", required_argument, NULL, ARG_RULE },
                { "comm", required_argument, NULL, ARG_COMM },
                { "exe", required_argument, NULL, ARG_EXE },
                { "cmdline", required_argument, NULL, ARG_CMDLINE },
                { "uid", required_argument, NULL, ARG_UID },
                { "cgroup", required_argument, NULL, ARG_CGROUP },
                { "rank-cmdline", required_argument, NULL, ARG_RANK_CMDLINE },
                { "rank-comm", required_argument, NULL, ARG_RANK_COMM },
                { "rank-env", required_argument, NULL, ARG_RANK_ENV },
                { "mode", required_argument, NULL, ARG_MODE },
                { "rule-accel", required_argument, NULL, ARG_RULE_ACCEL },
                { "accel", required_argument, NULL, ARG_ACCEL },
                { "kind", required_argument, NULL, ARG_KIND },
                { "rcvbuf-kib", required_argument, NULL, ARG_RCVBUF },
                { "reconcile-ms", required_argument, NULL, ARG_RECONCILE },
                { "device-retry-ms", required_argument, NULL, ARG_DEVICE_RETRY },
                { "max", required_argument, NULL, ARG_MAX },
                { "check-identity", no_argument, NULL, ARG_CHECK_IDENTITY },
                { "names-by-rule", no_argument, NULL, ARG_NAMES_BY_RULE },
                { "thread-names", required_argument, NULL, ARG_THREAD_NAMES },
                { "then", no_argument, NULL, ARG_THEN },
                { "evaluate", required_argument, NULL, ARG_EVALUATE },
                { "driver-query", required_argument, NULL, ARG_DRIVER_QUERY },
                { "driver-library-dir", required_argument, NULL, ARG_DRIVER_LIBRARY_DIR },
                { "driver-interval-ms", required_argument, NULL, ARG_DRIVER_INTERVAL },
                { "verbose", no_argument, NULL, 'v' },
                {}
        };
        static uid_t uids[MAX_RULES][8];
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(watcher_freep) Watcher *w = NULL;
        sd_event *event = NULL;
        watcher_params params = { .all_thread_names = true }; /* it prints every name */
        tune_policy_rule *r = NULL;
        pid_t evaluate_pid = 0;
        sigset_t mask;
        int c, ret;

        log_set_max_level(LOG_WARNING);
        while ((c = getopt_long(argc, argv, "v", options, NULL)) >= 0) {
                if (c >= ARG_COMM && c <= ARG_RULE_ACCEL && !r)
                        return usage();
                switch (c) {
                case ARG_RULE: {
                        unsigned k = policy.n_rules + policy2.n_rules;
                        if (k >= MAX_RULES)
                                return usage();
                        r = &building->rules[building->n_rules++];
                        r->name = optarg;
                        r->accel_mode = TUNE_ACCEL_AUTO;
                        r->accels = rule_accels[k];
                        r->match_uids = uids[k];
                        break;
                }
                case ARG_THEN:
                        building = &policy2;
                        r = NULL;
                        break;
                case ARG_EVALUATE:
                        evaluate_pid = (pid_t) strtol(optarg, NULL, 10);
                        break;
                case ARG_COMM:
                        r->match_comm = optarg;
                        break;
                case ARG_EXE:
                        r->match_exe = optarg;
                        break;
                case ARG_CMDLINE:
                        if (regcomp(&r->match_cmdline, optarg, REG_EXTENDED | REG_NOSUB) != 0)
                                return usage();
                        r->match_cmdline_src = optarg;
                        r->has_match_cmdline = true;
                        break;
                case ARG_UID:
                        if (r->n_match_uids >= 8)
                                return usage();
                        r->match_uids[r->n_match_uids++] = (uid_t) strtoul(optarg, NULL, 10);
                        break;
                case ARG_CGROUP:
                        r->match_cgroup = optarg;
                        break;
                case ARG_RANK_CMDLINE:
                case ARG_RANK_COMM:
                        if (regcomp(&r->rank_regex, optarg, REG_EXTENDED) != 0)
                                return usage();
                        r->rank_regex_src = optarg;
                        r->rank_source = c == ARG_RANK_CMDLINE ? TUNE_RANK_CMDLINE : TUNE_RANK_COMM;
                        break;
                case ARG_RANK_ENV:
                        r->rank_source = TUNE_RANK_ENV;
                        r->rank_env = optarg;
                        break;
                case ARG_MODE:
                        r->accel_mode = streq(optarg, "explicit") ? TUNE_ACCEL_EXPLICIT
                                        : streq(optarg, "none")   ? TUNE_ACCEL_NONE
                                                                  : TUNE_ACCEL_AUTO;
                        break;
                case ARG_RULE_ACCEL: {
                        const char *rest;
                        if (r->n_accels >= 16 || parse_ref(optarg, r->accels[r->n_accels].kind, &r->accels[r->n_accels].index, &rest) < 0)
                                return usage();
                        r->n_accels++;
                        break;
                }
                case ARG_ACCEL: {
                        tune_accel *a;
                        const char *rest;
                        if (accels.n >= MAX_ACCELS)
                                return usage();
                        a = &accel_items[accels.n];
                        *a = (tune_accel){ .numa_node = 0, .vendor = 0x19e5, .device = 0xd802 };
                        if (parse_ref(optarg, a->kind, &a->index, &rest) < 0)
                                return usage();
                        snprintf(a->pci, sizeof a->pci, "0000:%02x:00.0", (unsigned) (0x10 + accels.n));
                        if (rest)
                                snprintf(a->dev_path, sizeof a->dev_path, "%s", rest);
                        if (streq(a->kind, "nvidia"))
                                snprintf(a->uuid, sizeof a->uuid, "GPU-%08d-0000-1111-2222-333333333333", a->index);
                        accels.n++;
                        break;
                }
                case ARG_KIND: {
                        tune_policy_kind *k;
                        char *s = optarg, *env, *phys;
                        if (policy.n_kinds >= 8 || !(env = strchr(s, ':')))
                                return usage();
                        k = &kinds[policy.n_kinds++];
                        *env++ = 0;
                        phys = strchr(env, ':');
                        if (phys)
                                *phys++ = 0;
                        snprintf(k->kind.name, sizeof k->kind.name, "%s", s);
                        k->visible_env = env;
                        k->visible_ids = phys && streq(phys, "physical") ? TUNE_VISIBLE_IDS_PHYSICAL : TUNE_VISIBLE_IDS_LOGICAL;
                        break;
                }
                case ARG_RCVBUF:
                        params.rcvbuf_kib = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case ARG_RECONCILE:
                        params.reconcile_interval_ms = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case ARG_DEVICE_RETRY:
                        params.device_retry_ms = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case ARG_MAX:
                        params.max_managed = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case ARG_CHECK_IDENTITY:
                        check_identity = true;
                        break;
                case ARG_NAMES_BY_RULE:
                        params.all_thread_names = false;
                        break;
                case ARG_THREAD_NAMES: {
                        static char *globs[MAX_RULES][2];
                        static unsigned n_globs;
                        if (!r || n_globs >= MAX_RULES)
                                return usage();
                        globs[n_globs][0] = optarg;
                        r->control.name_globs = globs[n_globs++];
                        r->control.cpus = 1;
                        break;
                }
                case ARG_DRIVER_QUERY:
                        params.driver_query = optarg;
                        break;
                case ARG_DRIVER_LIBRARY_DIR:
                        params.driver_library_dir = optarg;
                        break;
                case ARG_DRIVER_INTERVAL:
                        params.driver_query_interval_ms = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'v':
                        log_set_max_level(LOG_DEBUG);
                        break;
                default:
                        return usage();
                }
        }
        if (optind < argc)
                return usage();
        qsort(accel_items, accels.n, sizeof *accel_items, cmp_accel);

        ret = tune_ctx_new("/", &ctx);
        if (ret < 0)
                return 1;
        probe_ctx = ctx;
        probe_accels = &accels;
        policy2.n_kinds = policy.n_kinds;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGUSR1);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        if (sd_event_new(&event) < 0)
                return 1;
        const watcher_ops ops = {
                .on_process_matched = on_matched,
                .on_process_changed = on_changed,
                .on_thread_new = on_thread_new,
                .on_thread_renamed = on_thread_renamed,
                .on_thread_exit = on_thread_exit,
                .on_process_exit = on_exit_cb,
                .on_process_reconciled = on_process_reconciled,
        };
        ret = watcher_new(event, ctx, &accels, &policy, &params, &ops, NULL, &w);
        if (ret < 0)
                return 1;
        (void) sd_event_add_signal(event, NULL, SIGTERM, NULL, NULL);
        (void) sd_event_add_signal(event, NULL, SIGINT, NULL, NULL);
        (void) sd_event_add_signal(event, NULL, SIGUSR1, on_usr1, w);
        (void) sd_event_add_signal(event, NULL, SIGHUP, on_hup, w);
        if (evaluate_pid > 0) {
                managed_process *p;
                ret = watcher_evaluate_pid(w, evaluate_pid, &p);
                if (ret < 0)
                        out("evaluated pid=%d error=%d", (int) evaluate_pid, ret);
                else
                        print_process("evaluated", p, 0);
                w = watcher_free(w);
                sd_event_unref(event);
                return ret < 0 ? 4 : 0;
        }
        ret = watcher_start(w);
        if (ret < 0) {
                out("failed error=%d", ret);
                return 3;
        }
        {
                watcher_stats s;
                watcher_get_stats(w, &s);
                out("ready pid=%d filter=%d rcvbuf=%d managed=%u", (int) getpid(), s.filter, s.rcvbuf, s.managed);
        }
        ret = sd_event_loop(event);
        print_stats(w);
        watcher_release_all(w);
        w = watcher_free(w);
        sd_event_unref(event);
        for (unsigned i = 0; i < MAX_RULES; i++) {
                tune_policy_rule *x[2] = { &rules[i], &rules2[i] };
                for (int j = 0; j < 2; j++) {
                        if (x[j]->has_match_cmdline)
                                regfree(&x[j]->match_cmdline);
                        if (x[j]->rank_regex_src)
                                regfree(&x[j]->rank_regex);
                }
        }
        return ret < 0 ? 1 : 0;
}
