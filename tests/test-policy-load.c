/* SPDX-License-Identifier: GPL-2.0-only */
/* Loading policies from directories: precedence and merging, masking, refusing files root
 * should not trust, problems attributed to the file and line that caused them, checks
 * against a host, reload keeping the old policy on failure, and the shipped policies. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/policy.h"
#include "policy-assert.h"

static char base[256];

static void write_file(const char *dir, const char *name, const char *text) {
        char path[512];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", dir, name);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static void make_dir(char *ret, size_t size, const char *name) {
        snprintf(ret, size, "%s/%s", base, name);
        assert_int_equal(mkdir(ret, 0755), 0);
}

static char *problems_text(const tune_policy_errors *errors) {
        char *all = strdup("");
        for (unsigned i = 0; i < errors->n; i++) {
                char *line, *joined;
                assert_int_equal(tune_policy_error_format(&errors->items[i], &line), 0);
                assert_true(asprintf(&joined, "%s%s%s", all, i ? "\n" : "", line) >= 0);
                free(all);
                free(line);
                all = joined;
        }
        return all;
}

static int load_dirs(const char *const *dirs, unsigned n, bool check_owner, bool owner_warnings, tune_policy **ret, char **ret_problems) {
        tune_policy_load_params params = { .dirs = dirs, .n_dirs = n, .check_owner = check_owner, .owner_warnings = owner_warnings };
        tune_policy_errors errors = {};
        int r;

        *ret = NULL;
        r = tune_policy_load(&params, ret, &errors);
        *ret_problems = problems_text(&errors);
        if (r < 0)
                assert_null(*ret);
        tune_policy_errors_done(&errors);
        return r;
}

static int setup(void **state) {
        (void) state;
        umask(022);
        snprintf(base, sizeof base, "/tmp/test-policy-load.XXXXXX");
        assert_non_null(mkdtemp(base));
        assert_int_equal(chmod(base, 0755), 0);
        return 0;
}

static int teardown(void **state) {
        char cmd[300];
        (void) state;
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
        assert_int_equal(system(cmd), 0);
        return 0;
}

static const char base_policy[] =
        "{ \"version\": 1,\n"
        "  \"host\": { \"thp\": { \"enabled\": \"never\" } },\n"
        "  \"processes\": [\n"
        "    { \"name\": \"w\", \"match\": { \"exe\": \"/usr/bin/w\" },\n"
        "      \"threads\": { \"control\": { \"main_thread\": true, \"cpus\": 2 } } }\n"
        "  ] }\n";

static void test_precedence_and_merge(void **state) {
        char shipped[300], etc[300];
        tune_policy *p;
        char *problems;
        (void) state;

        make_dir(shipped, sizeof shipped, "prec-shipped");
        make_dir(etc, sizeof etc, "prec-etc");
        write_file(shipped, "10-base.json", base_policy);
        write_file(shipped, "50-site.json", "{ \"version\": 1, \"host\": { \"thp\": { \"enabled\": \"always\" } } }");
        /* Same name in the later directory: replaces the shipped 50-site.json entirely. */
        write_file(etc, "50-site.json", "{ \"version\": 1, \"host\": { \"thp\": { \"defrag\": \"never\" } } }");
        /* Patches rule w by name (null removes a key), adds rule x. */
        write_file(etc, "60-patch.json",
                   "{ \"version\": 1, \"processes\": [\n"
                   "  { \"name\": \"w\", \"match\": { \"exe\": null, \"cmdline\": \"^w \" }, \"memory\": { \"migrate\": true } },\n"
                   "  { \"name\": \"x\", \"priority\": 5, \"match\": { \"exe\": \"/usr/bin/x\" } } ] }");
        /* Not *.json, or hidden: ignored. */
        write_file(etc, "70-notes.txt", "not a policy");
        write_file(etc, ".80-hidden.json", "broken");

        const char *dirs[] = { shipped, etc };
        assert_int_equal(load_dirs(dirs, 2, false, false, &p, &problems), 0);
        assert_string_equal(problems, "");
        free(problems);

        assert_int_equal(p->n_files, 3);
        assert_true(strstr(p->files[0], "prec-shipped/10-base.json") != NULL);
        assert_true(strstr(p->files[1], "prec-etc/50-site.json") != NULL);
        assert_true(strstr(p->files[2], "prec-etc/60-patch.json") != NULL);
        assert_string_equal(p->host.thp_enabled, "never"); /* the shipped "always" was replaced */
        assert_string_equal(p->host.thp_defrag, "never");
        assert_int_equal(p->n_rules, 2);
        assert_string_equal(p->rules[0].name, "x"); /* priority 5 */
        assert_true(strstr(p->rules[0].file, "prec-etc/60-patch.json") != NULL);
        assert_string_equal(p->rules[0].key_path, "processes[1]");
        tune_policy_rule *w = &p->rules[1];
        assert_string_equal(w->name, "w");
        assert_true(strstr(w->file, "prec-shipped/10-base.json") != NULL); /* where it was defined */
        assert_null(w->match_exe);
        assert_string_equal(w->match_cmdline_src, "^w ");
        assert_true(w->memory_migrate);
        assert_true(w->control.main_thread);
        assert_int_equal(w->control.cpus, 2);
        tune_policy_free(p);
}

static void test_masking_and_disabling(void **state) {
        char shipped[300], etc[300], link[600];
        tune_policy *p;
        char *problems;
        (void) state;

        make_dir(shipped, sizeof shipped, "mask-shipped");
        make_dir(etc, sizeof etc, "mask-etc");
        write_file(shipped, "10-base.json", base_policy);
        write_file(shipped, "20-more.json", "{ \"version\": 1, \"host\": { \"reassert\": true } }");
        write_file(shipped, "30-kinds.json", "{ \"version\": 1, \"accelerators\": { \"kinds\": [ { \"name\": \"edu\", \"pci_id\": \"1234:11e8\" } ] } }");
        /* An empty file and a link to /dev/null mask the shipped files of the same name. */
        write_file(etc, "20-more.json", "");
        snprintf(link, sizeof link, "%s/30-kinds.json", etc);
        assert_int_equal(symlink("/dev/null", link), 0);
        /* "enabled": false drops a rule. */
        write_file(etc, "40-off.json", "{ \"version\": 1, \"processes\": [ { \"name\": \"w\", \"enabled\": false } ] }");

        const char *dirs[] = { shipped, etc };
        assert_int_equal(load_dirs(dirs, 2, true, false, &p, &problems), 0);
        assert_string_equal(problems, "");
        free(problems);
        assert_int_equal(p->n_files, 2);
        assert_false(p->host.reassert);
        assert_int_equal(p->n_kinds, 0);
        assert_int_equal(p->n_rules, 0);
        assert_string_equal(p->host.thp_enabled, "never");
        tune_policy_free(p);
}

static void test_missing(void **state) {
        char empty[300], missing[300];
        tune_policy *p;
        char *problems;
        (void) state;

        make_dir(empty, sizeof empty, "empty");
        const char *dirs[] = { empty };
        assert_int_equal(load_dirs(dirs, 1, false, false, &p, &problems), -ENOENT);
        assert_string_equal(problems, "");
        free(problems);

        snprintf(missing, sizeof missing, "%s/does-not-exist", base);
        const char *dirs2[] = { missing };
        assert_int_equal(load_dirs(dirs2, 1, false, false, &p, &problems), -EINVAL);
        char *expected;
        assert_true(asprintf(&expected, "%s: cannot open: No such file or directory", missing) > 0);
        assert_string_equal(problems, expected);
        free(expected);
        free(problems);
}

static void test_file_problems(void **state) {
        char dir[300], path[400];
        tune_policy *p;
        char *problems, *expected;
        FILE *f;
        (void) state;

        make_dir(dir, sizeof dir, "big");
        snprintf(path, sizeof path, "%s/10-big.json", dir);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs("{ \"version\": 1 }", f);
        for (unsigned i = 0; i < 2 * 1024 * 1024 - 16; i++)
                fputc(' ', f);
        fclose(f);
        /* Another file's problems are reported too: all of them in one go. */
        write_file(dir, "20-typo.json", "{ \"version\": 1,\n  \"host\": { \"thp\": { \"enable\": \"never\" } } }");
        const char *dirs[] = { dir };
        assert_int_equal(load_dirs(dirs, 1, false, false, &p, &problems), -EINVAL);
        assert_true(asprintf(&expected,
                             "%s/10-big.json: is 2097152 bytes; policy files are limited to 1 MiB\n"
                             "%s/20-typo.json: host.thp.enable: unknown key (did you mean \"enabled\"?) (line 2, column 22)",
                             dir, dir) > 0);
        assert_string_equal(problems, expected);
        free(expected);
        free(problems);
}

static void test_cross_file_attribution(void **state) {
        char a[300], b[300];
        tune_policy *p;
        char *problems, *expected;
        (void) state;

        make_dir(a, sizeof a, "attr-a");
        make_dir(b, sizeof b, "attr-b");
        /* Rule "c" is incomplete in 10-a.json (control without cpus) and 20-b.json completes it. */
        write_file(a, "10-a.json",
                   "{ \"version\": 1, \"processes\": [\n"
                   "  { \"name\": \"a\", \"match\": { \"exe\": \"/a\" }, \"accelerators\": \"none\",\n"
                   "    \"unattributed\": { \"action\": \"place\", \"cpus\": \"0-3\" } },\n"
                   "  { \"name\": \"c\", \"match\": { \"exe\": \"/c\" }, \"threads\": { \"control\": { \"main_thread\": true } } },\n"
                   "  { \"name\": \"d\", \"match\": { \"exe\": \"/d\" }, \"threads\": { \"control\": { \"main_thread\": true } } } ] }");
        write_file(b, "20-b.json",
                   "{ \"version\": 1, \"processes\": [\n"
                   "  { \"name\": \"c\", \"threads\": { \"control\": { \"cpus\": 2 } } },\n"
                   "  { \"name\": \"b\", \"match\": { \"exe\": \"/b\" }, \"accelerators\": \"none\",\n"
                   "    \"unattributed\": { \"action\": \"place\", \"cpus\": \"2-5\" } } ] }");
        const char *dirs[] = { a, b };
        assert_int_equal(load_dirs(dirs, 2, false, false, &p, &problems), -EINVAL);
        /* "d" is incomplete in the file that defined it; the CPU conflict is reported in the
         * file that made it, at the line of the key. */
        assert_true(asprintf(&expected,
                             "%s/10-a.json: processes[2].threads.control: missing \"cpus\": how many CPUs the control "
                             "threads get, e.g. \"cpus\": 2 (line 5, column 57)\n"
                             "%s/20-b.json: processes[1].unattributed.cpus: CPUs 2-3 are also claimed by rule \"a\" (line 4, column 42)",
                             a, b) > 0);
        assert_string_equal(problems, expected);
        free(expected);
        free(problems);

        /* A type error in a patch points at the patch. */
        write_file(b, "20-b.json", "{ \"version\": 1,\n  \"processes\": [ { \"name\": \"c\", \"priority\": \"high\" } ] }");
        const char *dirs1[] = { b };
        assert_int_equal(load_dirs(dirs1, 1, false, false, &p, &problems), -EINVAL);
        assert_true(asprintf(&expected,
                             "%s/20-b.json: processes[0].priority: expected a whole number, got a string (line 2, column 33)\n"
                             "%s/20-b.json: processes[0]: missing \"match\": a rule needs at least one of comm, exe, cmdline, user, cgroup (line 2, column 18)",
                             b, b) > 0);
        assert_string_equal(problems, expected);
        free(expected);
        free(problems);
}

static void test_permissions(void **state) {
        char dir[300], path[400];
        tune_policy *p;
        char *problems, *expected;
        (void) state;

        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: the ownership checks need root (chown to another user)\n");
                skip();
        }
        make_dir(dir, sizeof dir, "perm");
        write_file(dir, "10-other.json", "{ \"version\": 1 }");
        snprintf(path, sizeof path, "%s/10-other.json", dir);
        assert_int_equal(chown(path, 1234, 1234), 0);
        write_file(dir, "20-open.json", "{ \"version\": 1 }");
        snprintf(path, sizeof path, "%s/20-open.json", dir);
        assert_int_equal(chmod(path, 0666), 0);
        write_file(dir, "30-group.json", "{ \"version\": 1 }");
        snprintf(path, sizeof path, "%s/30-group.json", dir);
        assert_int_equal(chmod(path, 0664), 0);

        const char *dirs[] = { dir };
        assert_int_equal(load_dirs(dirs, 1, true, false, &p, &problems), -EINVAL);
        assert_true(asprintf(&expected,
                             "%s/10-other.json: owned by uid 1234, not root: refusing a policy file that someone other than "
                             "root could have written (chown root:root %s/10-other.json)\n"
                             "%s/20-open.json: writable by group and others (mode 0666): refusing it (chmod go-w %s/20-open.json)\n"
                             "%s/30-group.json: writable by group (mode 0664): refusing it (chmod go-w %s/30-group.json)",
                             dir, dir, dir, dir, dir, dir) > 0);
        assert_string_equal(problems, expected);
        free(expected);
        free(problems);

        /* Checked by someone else than root (--check-policy as a user): warnings, it loads. */
        assert_int_equal(load_dirs(dirs, 1, true, true, &p, &problems), 0);
        assert_true(strstr(problems, "10-other.json: warning: owned by uid 1234, not root: the daemon would refuse a policy file") != NULL);
        tune_policy_free(p);
        free(problems);
        /* Not checking (the daemon as non-root, on a test tree): loads. */
        assert_int_equal(load_dirs(dirs, 1, false, false, &p, &problems), 0);
        tune_policy_free(p);
        free(problems);

        /* A directory others can write to. */
        char open_dir[300];
        make_dir(open_dir, sizeof open_dir, "perm-dir");
        assert_int_equal(chmod(open_dir, 0777), 0);
        write_file(open_dir, "10-ok.json", "{ \"version\": 1 }");
        const char *dirs2[] = { open_dir };
        assert_int_equal(load_dirs(dirs2, 1, true, false, &p, &problems), -EINVAL);
        assert_true(asprintf(&expected, "%s: writable by group and others (mode 0777): refusing it (chmod go-w %s)", open_dir, open_dir) > 0);
        assert_string_equal(problems, expected);
        free(expected);
        free(problems);
}

static char *read_all(const char *path) {
        FILE *f = fopen(path, "r");
        char *buf;
        long n;
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        rewind(f);
        buf = calloc(1, (size_t) n + 1);
        assert_int_equal(fread(buf, 1, (size_t) n, f), (size_t) n);
        fclose(f);
        return buf;
}

static void test_shipped_and_embedded(void **state) {
        const char *src = getenv("NPU_SOURCE_ROOT");
        char path[512], *text, *problems;
        tune_policy *p;
        tune_policy_errors errors = {};
        (void) state;

        assert_non_null(src);
        /* The embedded default is policies/10-default.json, byte for byte. */
        snprintf(path, sizeof path, "%s/policies/10-default.json", src);
        text = read_all(path);
        assert_string_equal(tune_policy_default_json, text);
        free(text);
        assert_int_equal(tune_policy_load_embedded(&p, &errors), 0);
        assert_int_equal(errors.n, 0);
        assert_true(p->embedded);
        assert_true(p->n_rules >= 6);
        /* Safe on any host: no host knob at all. */
        assert_host_untouched(&p->host);
        for (unsigned i = 0; i < p->n_rules; i++) {
                /* Never by comm alone; never a memory migration; affinity given back. */
                assert_true(p->rules[i].match_exe || p->rules[i].has_match_cmdline);
                assert_null(p->rules[i].match_comm);
                assert_false(p->rules[i].memory_migrate);
                assert_true(p->rules[i].restore_on_stop);
        }
        tune_policy_free(p);

        /* Each shipped policy loads alone without a problem, and each host policy on top of
         * the default (as an operator installs it). */
        const char *names[] = { "10-default.json", "50-atlas-800i-a2.json", "50-nvidia-hgx.json" };
        for (unsigned i = 0; i < ELEMENTSOF(names); i++) {
                char one[512];
                snprintf(one, sizeof one, "%s/policies/%s", src, names[i]);
                const char *dirs[] = { one };
                assert_int_equal(load_dirs(dirs, 1, false, false, &p, &problems), 0);
                assert_string_equal(problems, "");
                free(problems);
                tune_policy_free(p);
        }
        char def[512], hgx[512];
        snprintf(def, sizeof def, "%s/policies/10-default.json", src);
        snprintf(hgx, sizeof hgx, "%s/policies/50-nvidia-hgx.json", src);
        const char *dirs[] = { def, hgx };
        assert_int_equal(load_dirs(dirs, 2, false, false, &p, &problems), 0);
        assert_string_equal(problems, "");
        free(problems);
        assert_string_equal(p->host.governor, "performance");
        for (unsigned i = 0; i < p->n_rules; i++)
                if (streq(p->rules[i].name, "vllm-worker")) {
                        assert_int_equal(p->rules[i].compute.cpus, 16);
                        assert_true(p->rules[i].memory_migrate);
                }
        tune_policy_free(p);
}

/* A host with nodes 0-1 (CPUs 0-3, 4-7) and two accelerators, built by hand. */
static tune_topology *two_nodes(void) {
        tune_topology *t = calloc(1, sizeof *t);
        t->n_nodes = 2;
        t->nodes = calloc(2, sizeof *t->nodes);
        for (unsigned i = 0; i < 2; i++) {
                t->nodes[i].id = (int) i;
                assert_int_equal(tune_cpuset_add_range(&t->nodes[i].cpus, 4 * i, 4 * i + 3), 0);
        }
        assert_int_equal(tune_cpuset_add_range(&t->online, 0, 7), 0);
        assert_int_equal(tune_cpuset_add_range(&t->usable, 0, 7), 0);
        return t;
}

static void two_accels(tune_accels *a) {
        a->n = 2;
        a->items = calloc(2, sizeof *a->items);
        for (unsigned i = 0; i < 2; i++) {
                snprintf(a->items[i].kind, sizeof a->items[i].kind, "ascend");
                a->items[i].index = (int) i;
                snprintf(a->items[i].pci, sizeof a->items[i].pci, "0000:%02x:00.0", 0xc1 + i);
                a->items[i].numa_node = i == 0 ? 0 : -1;
        }
}

static void test_validate_host(void **state) {
        tune_topology *t = two_nodes();
        tune_accels a = {};
        tune_policy *p = NULL;
        tune_policy_errors errors = {};
        char *problems;
        const char *json =
                "{ \"version\": 1,\n"
                "  \"host\": { \"irq\": { \"housekeeping_cpus_per_node\": 4 } },\n"
                "  \"accelerators\": { \"numa_node_overrides\": [ { \"pci\": \"0000:c2:00.0\", \"node\": 1 },\n"
                "                                              { \"pci\": \"0000:c9:00.0\", \"node\": 7 } ] },\n"
                "  \"processes\": [\n"
                "    { \"name\": \"w\", \"match\": { \"exe\": \"/w\" }, \"accelerators\": [ \"ascend:1\", \"ascend:4\", \"nvidia:0\" ],\n"
                "      \"threads\": { \"control\": { \"main_thread\": true, \"cpus\": 2 }, \"compute\": { \"cpus\": 4 } } },\n"
                "    { \"name\": \"u\", \"match\": { \"exe\": \"/u\" }, \"accelerators\": \"none\",\n"
                "      \"unattributed\": { \"action\": \"place\", \"cpus\": \"6-9\", \"nodes\": \"1-3\" } } ] }";
        (void) state;

        two_accels(&a);
        assert_int_equal(tune_policy_parse_string(json, "h.json", &p, &errors), 0);
        assert_int_equal(errors.n, 0);

        /* The daemon: errors (capacity problems stay warnings). */
        assert_int_equal(tune_policy_validate_host(p, t, &a, false, &errors), -EINVAL);
        problems = problems_text(&errors);
        assert_string_equal(problems,
                            "h.json: accelerators.numa_node_overrides[1].pci: warning: no accelerator at 0000:c9:00.0 on this host: the override does nothing here (line 4, column 49)\n"
                            "h.json: accelerators.numa_node_overrides[1].node: NUMA node 7 does not exist on this host (nodes: 0-1) (line 4, column 72)\n"
                            "h.json: host.irq.housekeeping_cpus_per_node: warning: 4 housekeeping CPUs leave no CPU for inference work on NUMA node 0 (4 CPUs) (line 2, column 22)\n"
                            "h.json: processes[0].accelerators[1]: no accelerator ascend:4 on this host (ascend: 0-1) (line 6, column 76)\n"
                            "h.json: processes[0].accelerators[2]: no accelerator nvidia:0 on this host (it has no nvidia accelerators) (line 6, column 88)\n"
                            "h.json: processes[0].threads: warning: control (2) and compute (4) CPUs do not fit in one NUMA node of this host (the largest, node 0, has 4 CPUs, 4 of them housekeeping: host.irq.housekeeping_cpus_per_node, 1 unless set); the daemon gives such a process the 0 CPU(s) there are, and on one CPU its roles share it (line 7, column 7)\n"
                            "h.json: processes[1].unattributed.cpus: CPUs 8-9 are not online on this host (online: 0-7) (line 9, column 44)\n"
                            "h.json: processes[1].unattributed.nodes: NUMA nodes 2-3 do not exist on this host (nodes: 0-1) (line 9, column 59)");
        free(problems);
        tune_policy_errors_done(&errors);

        /* As warnings only (a policy for another host: the tests' fragments). */
        assert_int_equal(tune_policy_validate_host(p, t, &a, true, &errors), 0);
        assert_int_equal(errors.n, 8);
        assert_int_equal(tune_policy_errors_count(&errors), 0);
        tune_policy_errors_done(&errors);

        /* The override that matches a device applies: node 1's CPUs. */
        assert_int_equal(tune_policy_apply_node_overrides(p, t, &a, &errors), 0);
        assert_int_equal(a.items[1].numa_node, 1);
        assert_true(a.items[1].numa_node_overridden);
        assert_true(tune_cpuset_equal(&a.items[1].local_cpus, &t->nodes[1].cpus));
        problems = problems_text(&errors);
        assert_string_equal(problems,
                            "h.json: accelerators.numa_node_overrides[1].node: NUMA node 7 does not exist on this host (line 4, column 72)");
        free(problems);
        tune_policy_errors_done(&errors);

        /* Kinds for discovery. */
        tune_accel_kind *kinds;
        unsigned n;
        assert_int_equal(tune_policy_accel_kinds(p, &kinds, &n), 0);
        assert_int_equal(n, 0);
        free(kinds);

        tune_policy_free(p);
        tune_accels_done(&a);
        tune_topology_free(t);
}

static void test_reload(void **state) {
        tune_ctx *ctx = NULL;
        tune_topology *t = NULL;
        tune_policy *p = NULL, *before;
        tune_accels a = {};
        tune_policy_errors errors = {};
        char good[300], bad[300], other[300];
        (void) state;

        assert_int_equal(tune_ctx_new("/", &ctx), 0);
        if (tune_topology_load(ctx, &t) < 0) {
                fprintf(stderr, "SKIP: this machine's /sys has no readable CPU topology\n");
                tune_ctx_free(ctx);
                skip();
        }
        make_dir(good, sizeof good, "reload-good");
        make_dir(bad, sizeof bad, "reload-bad");
        make_dir(other, sizeof other, "reload-other");
        write_file(good, "10.json", "{ \"version\": 1, \"processes\": [ { \"name\": \"first\", \"match\": { \"exe\": \"/a\" } } ] }");
        write_file(bad, "10.json", "{ \"version\": 1, \"processes\": [ { \"name\": \"broken\", \"match\": { \"exe\": \"a\" } } ] }");
        write_file(other, "10.json", "{ \"version\": 1, \"processes\": [ { \"name\": \"second\", \"match\": { \"exe\": \"/b\" } } ] }");

        const char *g[] = { good }, *b[] = { bad }, *o[] = { other };
        tune_policy_load_params params = { .dirs = g, .n_dirs = 1 };
        assert_int_equal(tune_policy_prepare(ctx, &params, t, &p, &a, &errors), 0);
        assert_int_equal(errors.n, 0);
        assert_string_equal(p->rules[0].name, "first");
        before = p;

        /* A bad policy: the error is reported, the previous policy stays, untouched. */
        params.dirs = b;
        assert_int_equal(tune_policy_reload(ctx, &params, t, &p, &a, &errors), -EINVAL);
        assert_ptr_equal(p, before);
        assert_string_equal(p->rules[0].name, "first");
        assert_int_equal(errors.n, 1);
        assert_true(strstr(errors.items[0].message, "can never match") != NULL);
        tune_policy_errors_done(&errors);

        /* A good one is swapped in. */
        params.dirs = o;
        assert_int_equal(tune_policy_reload(ctx, &params, t, &p, &a, &errors), 0);
        assert_int_equal(errors.n, 0);
        assert_string_equal(p->rules[0].name, "second");

        /* No file at all: the embedded default. */
        char empty[300];
        make_dir(empty, sizeof empty, "reload-empty");
        const char *e[] = { empty };
        params.dirs = e;
        assert_int_equal(tune_policy_reload(ctx, &params, t, &p, &a, &errors), 0);
        assert_true(p->embedded);
        tune_policy_errors_done(&errors);

        tune_policy_free(p);
        tune_accels_done(&a);
        tune_topology_free(t);
        tune_ctx_free(ctx);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_precedence_and_merge),
                cmocka_unit_test(test_masking_and_disabling),
                cmocka_unit_test(test_missing),
                cmocka_unit_test(test_file_problems),
                cmocka_unit_test(test_cross_file_attribution),
                cmocka_unit_test(test_permissions),
                cmocka_unit_test(test_shipped_and_embedded),
                cmocka_unit_test(test_validate_host),
                cmocka_unit_test(test_reload),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
