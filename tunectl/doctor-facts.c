/* SPDX-License-Identifier: GPL-2.0-only */
/* What doctor judges, read below the root: the policy as the daemon would load it, the
 * topology and accelerators, the knob files, the IRQs as the IRQ knob plans them, the
 * processes of other tuners and binders, the kernel log and the knob journal. Every read
 * is bounded; a process's cmdline and environ go through the context's slow reader (the
 * /proc guard: a process holding its mmap_lock cannot stop doctor). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "doctor.h"
#include "npu-tuned/attribution.h"
#include "npu-tuned/cgroup-cpuset.h"
#include "npu-tuned/journal.h"
#include "npu-tuned/match.h"
#include "npu-tuned/macro.h"
#include "options.h"
#include "policy-cli.h"

/* Kernel log records read at most (about 1 MiB of ring buffer is a few thousand). */
#define KMSG_RECORDS_MAX 100000u
#define THREADS_MAX 4096u

static char *read_selected(const tune_ctx *ctx, const char *path) {
        _cleanup_free_ char *text = NULL;
        char *word = NULL;

        if (tune_read_string(ctx, path, &text) < 0 || tune_knob_parse_value(TUNE_KNOB_SELECTED, text, &word) < 0)
                return NULL;
        return word;
}

static long read_long(const tune_ctx *ctx, const char *path) {
        long v;
        return tune_read_int(ctx, path, &v) < 0 ? -1 : v;
}

static int load_policy(tune_ctx *ctx, const char *const *dirs, unsigned n_dirs, doctor_facts *f) {
        daemon_options o = { .root = f->root, .state_dir = f->state_dir };
        tune_policy_errors errors = {};
        tune_policy_load_params params;
        int r;

        for (unsigned i = 0; i < n_dirs && i < MAX_POLICY_DIRS; i++)
                o.policy_dirs[o.n_policy_dirs++] = dirs[i];
        policy_params_for_daemon(&o, &params);
        r = tune_policy_prepare(ctx, &params, f->topology, &f->policy, &f->accels, &errors);
        if (r < 0) {
                f->policy = NULL;
                f->policy_errors = tune_policy_errors_count(&errors);
                for (unsigned i = 0; i < errors.n && !f->policy_problem; i++)
                        if (!errors.items[i].warning)
                                (void) tune_policy_error_format(&errors.items[i], &f->policy_problem);
                if (!f->policy_problem && asprintf(&f->policy_problem, "%s", strerror(-r)) < 0)
                        f->policy_problem = NULL;
                /* Judged without it: the accelerators the host shows by itself. */
                r = tune_accels_discover(ctx, NULL, 0, &f->accels);
        }
        tune_policy_errors_done(&errors);
        return r;
}

static int read_links(const tune_ctx *ctx, doctor_facts *f) {
        f->links = calloc(f->accels.n ? f->accels.n : 1, sizeof *f->links);
        if (!f->links)
                return -ENOMEM;
        for (unsigned i = 0; i < f->accels.n; i++) {
                char path[128];
                doctor_link *l = &f->links[f->n_links++];
                l->accel = i;
                (void) tune_path(path, sizeof path, "/sys/bus/pci/devices/%s/link/l0s_aspm", f->accels.items[i].pci);
                l->l0s = (int) read_long(ctx, path);
                (void) tune_path(path, sizeof path, "/sys/bus/pci/devices/%s/link/l1_aspm", f->accels.items[i].pci);
                l->l1 = (int) read_long(ctx, path);
        }
        return 0;
}

/* The CPUs next to accelerators: their local CPUs (an accelerator without a node says
 * nothing about where it is). */
static void near_cpus(const doctor_facts *f, tune_cpuset *ret) {
        for (unsigned i = 0; i < f->accels.n; i++)
                if (f->accels.items[i].numa_node >= 0)
                        (void) tune_cpuset_or(ret, &f->accels.items[i].local_cpus);
        tune_cpuset_and(ret, &f->topology->online);
}

static int read_cpufreq(const tune_ctx *ctx, doctor_facts *f) {
        _cleanup_cpuset_ tune_cpuset near = {};

        near_cpus(f, &near);
        f->cpufreq = calloc(tune_cpuset_count(&near) + 1, sizeof *f->cpufreq);
        if (!f->cpufreq)
                return -ENOMEM;
        for (int c = tune_cpuset_next(&near, 0); c >= 0; c = tune_cpuset_next(&near, (unsigned) c + 1)) {
                _cleanup_free_ char *gov = NULL;
                char path[128];
                doctor_cpufreq *q = &f->cpufreq[f->n_cpufreq];

                q->cpu = c;
                (void) tune_path(path, sizeof path, "/sys/devices/system/cpu/cpufreq/policy%d/scaling_governor", c);
                if (tune_read_string(ctx, path, &gov) < 0) {
                        (void) tune_path(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", c);
                        if (tune_read_string(ctx, path, &gov) < 0)
                                continue; /* no cpufreq for this CPU */
                        (void) tune_path(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq", c);
                } else
                        (void) tune_path(path, sizeof path, "/sys/devices/system/cpu/cpufreq/policy%d", c);
                snprintf(q->governor, sizeof q->governor, "%s", gov);
                char file[192];
                (void) tune_path(file, sizeof file, "%s/scaling_cur_freq", path);
                q->cur_khz = read_long(ctx, file);
                (void) tune_path(file, sizeof file, "%s/scaling_max_freq", path);
                q->max_khz = read_long(ctx, file);
                (void) tune_path(file, sizeof file, "%s/cpuinfo_max_freq", path);
                q->hw_max_khz = read_long(ctx, file);
                f->n_cpufreq++;
        }
        return 0;
}

/* The IRQ knob's plan for a policy that manages IRQs: which IRQs are the accelerators',
 * where each may run now, and which the kernel does not let anyone move. */
static int plan_irqs(const tune_ctx *ctx, doctor_facts *f) {
        tune_policy_host host = {
                .governor_scope = TUNE_GOVERNOR_ALL_CPUS,
                .khugepaged_defrag = -1,
                .irq_manage = true,
                .irq_housekeeping_cpus_per_node = f->policy ? f->policy->host.irq_housekeeping_cpus_per_node : 1,
                .irq_keep_off_inference_cpus = true,
                .irq_steer_accelerator_irqs = true,
                .numa_balancing = -1,
        };
        int r;

        r = tune_knob_housekeeping_cpus(f->topology, host.irq_housekeeping_cpus_per_node, &f->housekeeping);
        if (r >= 0)
                r = tune_knob_default_inference_cpus(f->topology, &f->accels, &f->housekeeping, &f->inference);
        if (r < 0)
                return r;
        tune_knob_plan_input in = { .host = &host, .topology = f->topology, .accels = &f->accels,
                                    .inference_cpus = &f->inference, .housekeeping_cpus = &f->housekeeping };
        return tune_knobs_plan(ctx, &in, &f->irq_plan);
}

static bool inference_cmdline(const char *cmdline) {
        static const char *const servers[] = { "vllm", "sglang", "mindie", "tritonserver", "text-generation",
                                                "trtllm", "tensorrt_llm", "lmdeploy", NULL };
        for (size_t i = 0; servers[i]; i++)
                if (strcasestr(cmdline, servers[i]))
                        return true;
        return false;
}

/* Whose cmdline is worth reading: interpreters and servers (reading every process's would
 * cost a slow read each on a busy host). */
static bool worth_reading(const char *comm) {
        static const char *const prefixes[] = { "python", "vllm", "VLLM", "sglang", "mindie", "tritonserver",
                                                "text-generation", "trtllm", "pt_main_thread", "ray::", "lmdeploy",
                                                "tgi", NULL };
        for (size_t i = 0; prefixes[i]; i++)
                if (strncasecmp(comm, prefixes[i], strlen(prefixes[i])) == 0)
                        return true;
        return false;
}

static void read_binding(const tune_ctx *ctx, const doctor_facts *f, doctor_proc *p) {
        _cleanup_free_ char *block = NULL;
        tune_env_capture env = {};
        const char *kind = NULL;
        size_t len = 0;
        bool truncated = false;
        unsigned n_names = 0;

        while (tune_engine_binding_env_names[n_names])
                n_names++;
        if (tune_proc_read_environ(ctx, p->pid, &block, &len, &truncated) >= 0)
                (void) tune_env_capture_parse(block, len, truncated, tune_engine_binding_env_names, n_names, &env);
        for (unsigned i = 0; i < f->accels.n && !kind; i++)
                kind = f->accels.items[i].kind;
        p->binds = tune_engine_binding_detect(p->cmdline, &env, kind, p->binds_why, sizeof p->binds_why);
        tune_env_capture_done(&env);
}

static int read_procs(const tune_ctx *ctx, doctor_facts *f) {
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;
        int r;

        r = tune_proc_list_pids(ctx, &pids, &n);
        if (r < 0)
                return r == -ENOENT ? 0 : r;
        f->procs = calloc(DOCTOR_PROCS_MAX, sizeof *f->procs);
        if (!f->procs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                tune_proc_stat st;
                if (tune_proc_read_stat(ctx, pids[i], &st) < 0 || (st.flags & TUNE_PF_KTHREAD))
                        continue;
                if (streq(st.comm, "irqbalance"))
                        f->irqbalance = pids[i];
                else if (streq(st.comm, "tuned"))
                        f->tuned = pids[i];
                else if (streq(st.comm, "numad"))
                        f->numad = pids[i];
                if (!worth_reading(st.comm))
                        continue;
                if (f->n_procs >= DOCTOR_PROCS_MAX) {
                        f->procs_truncated = true;
                        break;
                }
                doctor_proc *p = &f->procs[f->n_procs];
                *p = (doctor_proc){ .pid = pids[i] };
                snprintf(p->comm, sizeof p->comm, "%s", st.comm);
                if (tune_proc_read_cmdline(ctx, p->pid, &p->cmdline) < 0 || !inference_cmdline(p->cmdline)) {
                        free(p->cmdline);
                        continue;
                }
                p->inference = true;
                if (f->policy) {
                        tune_proc_facts facts;
                        tune_proc_facts_init(&facts, ctx, p->pid, st.comm);
                        p->rule = tune_policy_match(f->policy, &facts, NULL);
                        tune_proc_facts_done(&facts);
                }
                read_binding(ctx, f, p);
                f->n_procs++;
        }
        return 0;
}

static void read_tuners(const tune_ctx *ctx, doctor_facts *f) {
        char path[128];

        if (f->irqbalance) {
                (void) tune_path(path, sizeof path, "/run/irqbalance/irqbalance%d.sock", (int) f->irqbalance);
                f->irqbalance_socket = tune_exists(ctx, path);
        }
        f->tuned_scheduler = -1;
        if (!f->tuned || tune_read_string(ctx, "/etc/tuned/active_profile", &f->tuned_profile) < 0)
                return;
        /* A profile name is a word; anything else is not looked up as a path. */
        if (!*f->tuned_profile || strpbrk(f->tuned_profile, "/ \t") || strstr(f->tuned_profile, ".."))
                return;
        for (const char *dir = "/etc/tuned"; dir; dir = streq(dir, "/etc/tuned") ? "/usr/lib/tuned" : NULL) {
                _cleanup_free_ char *conf = NULL;
                (void) tune_path(path, sizeof path, "%s/%s/tuned.conf", dir, f->tuned_profile);
                if (tune_read_file(ctx, path, 256 * 1024, &conf, NULL) >= 0) {
                        f->tuned_scheduler = strstr(conf, "[scheduler]") != NULL;
                        return;
                }
        }
}

static void kmsg_line(doctor_facts *f, const char *line, size_t len) {
        _cleanup_free_ char *text = strndup(line, len);
        const char *msg;
        bool mce, nmi, aer;

        if (!text || text[0] == ' ') /* a record's key=value continuation */
                return;
        msg = strchr(text, ';');
        msg = msg ? msg + 1 : text;
        /* Errors, not the boot lines of the same subsystems ("AER: enabled with IRQ",
         * "NMI watchdog: Enabled", "mce: CPU supports 10 MCE banks"). */
        mce = strstr(msg, "[Hardware Error]") || strstr(msg, "Machine check") || strstr(msg, "Machine Check");
        nmi = strstr(msg, "NMI received") || strstr(msg, "hard LOCKUP") || strstr(msg, "NMI: ");
        aer = strstr(msg, "PCIe Bus Error") || (strstr(msg, "AER:") && strstr(msg, "rror"));
        f->kmsg_mce += mce;
        f->kmsg_nmi += nmi && !mce;
        f->kmsg_aer += aer && !mce;
        if (mce || nmi || aer) {
                free(f->kmsg_last);
                f->kmsg_last = strdup(msg);
        }
}

/* /dev/kmsg: one record per read on the kernel's device (EAGAIN at the end), lines of a
 * file in a fake tree. */
static int read_kmsg(const tune_ctx *ctx, doctor_facts *f) {
        char buf[8192 + 1];
        size_t have = 0;
        int fd = tune_open(ctx, "/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);

        if (fd < 0)
                return fd;
        for (unsigned records = 0; records < KMSG_RECORDS_MAX; records++) {
                ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
                if (n < 0 && (errno == EINTR || errno == EPIPE))
                        continue; /* EPIPE: the record was overwritten meanwhile */
                if (n <= 0)
                        break;
                have += (size_t) n;
                size_t start = 0;
                for (size_t i = 0; i < have; i++)
                        if (buf[i] == '\n') {
                                kmsg_line(f, buf + start, i - start);
                                start = i + 1;
                        }
                if (start == 0 && have == sizeof buf - 1)
                        start = have; /* a line longer than the buffer: dropped */
                memmove(buf, buf + start, have - start);
                have -= start;
        }
        if (have > 0)
                kmsg_line(f, buf, have);
        close(fd);
        return 0;
}

int doctor_facts_read(tune_ctx *ctx, const char *const *policy_dirs, unsigned n_policy_dirs, const char *state_dir,
                      doctor_facts *f) {
        _cleanup_(tune_journal_freep) tune_journal *j = NULL;
        unsigned line = 0;
        int r;

        f->root = tune_ctx_root(ctx);
        f->state_dir = state_dir;
        r = tune_topology_load(ctx, &f->topology);
        if (r < 0)
                return r;
        r = load_policy(ctx, policy_dirs, n_policy_dirs, f);
        if (r < 0)
                return r;
        f->thp_enabled = read_selected(ctx, "/sys/kernel/mm/transparent_hugepage/enabled");
        f->thp_defrag = read_selected(ctx, "/sys/kernel/mm/transparent_hugepage/defrag");
        f->khugepaged_defrag = read_long(ctx, "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag");
        f->numa_balancing = read_long(ctx, "/proc/sys/kernel/numa_balancing");
        f->aspm_policy = read_selected(ctx, "/sys/module/pcie_aspm/parameters/policy");
        r = read_links(ctx, f);
        if (r >= 0)
                r = read_cpufreq(ctx, f);
        if (r >= 0)
                r = plan_irqs(ctx, f);
        if (r >= 0)
                r = read_procs(ctx, f);
        if (r < 0)
                return r;
        read_tuners(ctx, f);
        f->kmsg_r = read_kmsg(ctx, f);
        f->journal_r = tune_journal_load(state_dir, &j, &line);
        if (j)
                f->journal_entries = j->n;
        return 0;
}

static void accel_cpus(const doctor_facts *f, const char *list, tune_cpuset *ret) {
        _cleanup_free_ char *copy = strdup(list ? list : "");
        char *save = NULL;

        for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
                char *colon = strrchr(tok, ':');
                if (!colon)
                        continue;
                *colon = 0;
                const tune_accel *a = tune_accels_find(&f->accels, tok, atoi(colon + 1));
                if (a && a->numa_node >= 0)
                        (void) tune_cpuset_or(ret, &a->local_cpus);
        }
}

int doctor_managed_read(const tune_ctx *ctx, const doctor_facts *f, doctor_managed *m) {
        _cleanup_free_ pid_t *tids = NULL;
        tune_cgroup_cpuset cs = {};
        size_t n = 0;
        int r;

        accel_cpus(f, m->accelerators, &m->accel_cpus);
        if (tune_cgroup_cpuset_read(ctx, m->pid, &cs) >= 0 && cs.version > 0)
                (void) tune_cpuset_copy(&m->cpuset_cpus, &cs.cpus);
        tune_cgroup_cpuset_done(&cs);
        r = tune_proc_list_tasks(ctx, m->pid, &tids, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && i < THREADS_MAX; i++) {
                _cleanup_free_ char *status = NULL;
                _cleanup_cpuset_ tune_cpuset mask = {};
                char path[96];
                const char *line;

                (void) tune_path(path, sizeof path, "/proc/%d/task/%d/status", (int) m->pid, (int) tids[i]);
                if (tune_read_file(ctx, path, TUNE_STATUS_MAX, &status, NULL) < 0 ||
                    !(line = strstr(status, "\nCpus_allowed_list:")))
                        continue;
                line += strlen("\nCpus_allowed_list:");
                line += strspn(line, " \t");
                char list[64];
                snprintf(list, sizeof list, "%.*s", (int) strcspn(line, "\n"), line);
                if (tune_cpuset_parse_list(&mask, list) < 0)
                        continue;
                m->threads++;
                if (!tune_cpuset_is_empty(&m->plan_cpus) && !tune_cpuset_is_subset(&mask, &m->plan_cpus)) {
                        if (m->threads_outside++ == 0) {
                                m->first_outside = tids[i];
                                snprintf(m->first_outside_cpus, sizeof m->first_outside_cpus, "%s", list);
                        }
                }
        }
        return 0;
}

void doctor_facts_done(doctor_facts *f) {
        tune_topology_free(f->topology);
        tune_accels_done(&f->accels);
        tune_policy_free(f->policy);
        free(f->policy_problem);
        tune_cpuset_done(&f->housekeeping);
        tune_cpuset_done(&f->inference);
        free(f->thp_enabled);
        free(f->thp_defrag);
        free(f->aspm_policy);
        free(f->links);
        free(f->cpufreq);
        tune_knob_plan_done(&f->irq_plan);
        for (unsigned i = 0; i < f->n_procs; i++)
                free(f->procs[i].cmdline);
        free(f->procs);
        free(f->tuned_profile);
        free(f->kmsg_last);
        free(f->daemon_state);
        free(f->reload_message);
        free(f->drifted);
        for (unsigned i = 0; i < f->n_managed; i++) {
                doctor_managed *m = &f->managed[i];
                free(m->comm);
                free(m->rule);
                free(m->accelerators);
                tune_cpuset_done(&m->plan_cpus);
                tune_cpuset_done(&m->accel_cpus);
                tune_cpuset_done(&m->cpuset_cpus);
        }
        free(f->managed);
}
