/* SPDX-License-Identifier: GPL-2.0-only */
/* npu-tuned --check-policy PATH... and --print-policy. Problems go to stderr, one
 * "PATH: key.path: message" line each; the summary or the JSON to stdout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npu-tuned/accel.h"
#include "npu-tuned/context.h"
#include "npu-tuned/topology.h"
#include "policy-cli.h"

void policy_params_for_daemon(const daemon_options *o, tune_policy_load_params *ret) {
        *ret = (tune_policy_load_params){
                .dirs = o->n_policy_dirs > 0 ? o->policy_dirs : NULL,
                .n_dirs = o->n_policy_dirs,
                .check_owner = geteuid() == 0,
        };
}

void policy_errors_print(const tune_policy_errors *errors, FILE *f) {
        for (unsigned i = 0; i < errors->n; i++) {
                _cleanup_free_ char *line = NULL;
                if (tune_policy_error_format(&errors->items[i], &line) < 0)
                        fprintf(f, "npu-tuned: out of memory\n");
                else
                        fprintf(f, "%s\n", line);
        }
}

static unsigned count_warnings(const tune_policy_errors *e) {
        return e->n - tune_policy_errors_count(e);
}

/* The host checks as the daemon makes them, errors where it would refuse to start: the
 * answer is whether npu-tuned starts with the policy on this host (--root DIR: on the
 * host whose /sys and /proc are captured there). */
static int check_against_host(const daemon_options *o, const tune_policy *p, tune_policy_errors *errors) {
        _cleanup_(tune_ctx_freep) tune_ctx *ctx = NULL;
        _cleanup_(tune_topology_freep) tune_topology *t = NULL;
        _cleanup_free_ tune_accel_kind *kinds = NULL;
        tune_accels a = {};
        unsigned n_kinds;
        int r;

        r = tune_ctx_new(o->root, &ctx);
        if (r >= 0)
                r = tune_topology_load(ctx, &t);
        if (r >= 0)
                r = tune_policy_accel_kinds(p, &kinds, &n_kinds);
        if (r >= 0)
                r = tune_accels_discover(ctx, kinds, n_kinds, &a);
        if (r < 0) {
                fprintf(stderr, "npu-tuned: cannot read the topology below %s (%s): skipped the checks against this host\n",
                        o->root, strerror(-r));
                return 0;
        }
        r = tune_policy_apply_node_overrides(p, t, &a, NULL);
        if (r >= 0)
                r = tune_policy_validate_host(p, t, &a, false, errors);
        tune_accels_done(&a);
        return r == -EINVAL ? 0 : r;
}

/* Which file set each effective value, and what it replaced: with several files, the
 * answer to "why is this value not mine". < 0 (said) when they cannot be listed. */
static int print_origins(const tune_policy *p, FILE *f) {
        tune_policy_origin *l = NULL;
        unsigned n = 0;
        int r;

        if (p->n_files < 2)
                return 0;
        r = tune_policy_origins(p, &l, &n);
        if (r < 0) {
                fprintf(stderr, "npu-tuned: %s\n", strerror(-r));
                return r;
        }
        fprintf(f, "Effective values and the files that set them (files merge in name order):\n");
        for (unsigned i = 0; i < n; i++) {
                fprintf(f, "  %s = %s  <- %s:%d\n", l[i].key_path, l[i].value, l[i].file, l[i].line);
                for (unsigned j = 0; j < l[i].n_overridden; j++)
                        fprintf(f, "      replaces %s  <- %s:%d%s\n", l[i].overridden[j].value, l[i].overridden[j].file,
                                l[i].overridden[j].line, l[i].overridden[j].shipped ? "" : " (not a shipped file: see the warning)");
        }
        tune_policy_origins_free(l, n);
        return 0;
}

/* After a load: check p against the host, print every problem; false when there was one
 * (or the load failed: r). */
static bool checked(const daemon_options *o, int r, const tune_policy *p, tune_policy_errors *errors) {
        if (r >= 0)
                r = check_against_host(o, p, errors);
        policy_errors_print(errors, stderr);
        if (r == -ENOMEM)
                fprintf(stderr, "npu-tuned: out of memory\n");
        else if (r < 0 && r != -EINVAL)
                fprintf(stderr, "npu-tuned: %s\n", strerror(-r));
        return r >= 0 && tune_policy_errors_count(errors) == 0;
}

int run_check_policy(const daemon_options *o) {
        _cleanup_(tune_policy_freep) tune_policy *p = NULL;
        tune_policy_errors errors = {};
        tune_policy_load_params params = {
                .dirs = (const char *const *) o->paths,
                .n_dirs = o->n_paths,
                /* Report what the daemon (root) would refuse; as another user, as warnings. */
                .check_owner = true,
                .owner_warnings = geteuid() != 0,
                .host_warnings = true,
        };
        int r, ret = 1;

        r = tune_policy_load(&params, &p, &errors);
        if (r == -ENOENT) {
                /* Said for what each path is: an empty file is not "no files". */
                for (unsigned i = 0; i < o->n_paths; i++) {
                        struct stat st;
                        if (stat(o->paths[i], &st) < 0)
                                fprintf(stderr, "%s: %s\n", o->paths[i], strerror(errno));
                        else if (S_ISDIR(st.st_mode))
                                fprintf(stderr, "%s: no *.json policy files in this directory\n", o->paths[i]);
                        else if (st.st_size == 0)
                                fprintf(stderr, "%s: the file is empty: a policy is a JSON object (npu-tuned.policy(5))\n",
                                        o->paths[i]);
                        else
                                fprintf(stderr, "%s: not a *.json policy file\n", o->paths[i]);
                }
                goto out;
        }
        if (!checked(o, r, p, &errors))
                goto out;
        printf("OK: %u file%s, %u process rule%s, %u accelerator kind%s, %u NUMA override%s, %u warning%s\n", p->n_files,
               p->n_files == 1 ? "" : "s", p->n_rules, p->n_rules == 1 ? "" : "s", p->n_kinds, p->n_kinds == 1 ? "" : "s",
               p->n_overrides, p->n_overrides == 1 ? "" : "s", count_warnings(&errors), count_warnings(&errors) == 1 ? "" : "s");
        if (print_origins(p, stdout) < 0)
                goto out;
        ret = 0;
out:
        tune_policy_errors_done(&errors);
        return ret;
}

int run_print_policy(const daemon_options *o) {
        _cleanup_(tune_policy_freep) tune_policy *p = NULL;
        _cleanup_free_ char *json = NULL;
        tune_policy_errors errors = {};
        tune_policy_load_params params;
        int r, ret = 1;

        policy_params_for_daemon(o, &params);
        r = tune_policy_load(&params, &p, &errors);
        if (r == -ENOENT) {
                fprintf(stderr, "npu-tuned: no policy file found, this is the embedded default policy\n");
                r = tune_policy_load_embedded(&p, &errors);
        }
        if (!checked(o, r, p, &errors))
                goto out;
        r = tune_policy_to_json(p, &json);
        if (r < 0) {
                fprintf(stderr, "npu-tuned: %s\n", strerror(-r));
                goto out;
        }
        printf("%s\n", json);
        /* stdout stays the policy (it loads back); where its values come from goes beside it. */
        if (print_origins(p, stderr) < 0)
                goto out;
        ret = 0;
out:
        tune_policy_errors_done(&errors);
        return ret;
}
