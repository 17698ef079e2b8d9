/* SPDX-License-Identifier: GPL-2.0-only */
/* npu-tunectl check-policy and policy: the daemon's own printers (daemon/common/policy-cli.c)
 * run here, so that they say what `npu-tuned --check-policy` and `--print-policy` say. With
 * --json their text is captured and returned as one JSON object. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bus-client.h"
#include "bus-names.h"
#include "explain-json.h"
#include "npu-tuned/macro.h"
#include "policy-cli.h"
#include "tunectl.h"

static int read_all(FILE *f, char **ret) {
        long size;
        char *s;

        if (fflush(f) != 0 || fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0)
                return -errno;
        s = malloc((size_t) size + 1);
        if (!s)
                return -ENOMEM;
        s[fread(s, 1, (size_t) size, f)] = 0;
        *ret = s;
        return 0;
}

/* fn(o) with its stdout and stderr caught in *ret_out and *ret_err; its return in *ret_rc. */
static int capture(int (*fn)(const daemon_options *), const daemon_options *o, char **ret_out, char **ret_err,
                   int *ret_rc) {
        FILE *out = tmpfile(), *err = tmpfile();
        int saved_out = -1, saved_err = -1, r = 0;

        if (!out || !err) {
                r = -errno;
                goto finish;
        }
        fflush(stdout);
        fflush(stderr);
        saved_out = dup(STDOUT_FILENO);
        saved_err = dup(STDERR_FILENO);
        if (saved_out < 0 || saved_err < 0 || dup2(fileno(out), STDOUT_FILENO) < 0 ||
            dup2(fileno(err), STDERR_FILENO) < 0) {
                r = -errno;
                goto finish;
        }
        *ret_rc = fn(o);
        fflush(stdout);
        fflush(stderr);
finish:
        if (saved_out >= 0)
                dup2(saved_out, STDOUT_FILENO), close(saved_out);
        if (saved_err >= 0)
                dup2(saved_err, STDERR_FILENO), close(saved_err);
        if (r >= 0)
                r = read_all(out, ret_out);
        if (r >= 0 && (r = read_all(err, ret_err)) < 0)
                free(*ret_out);
        if (out)
                fclose(out);
        if (err)
                fclose(err);
        return r;
}

/* The lines of text from line first on, as a JSON array of strings. */
static json_object *lines(const char *text, unsigned first) {
        json_object *a = json_object_new_array();
        unsigned n = 0;

        for (const char *p = text; *p;) {
                size_t l = strcspn(p, "\n");
                if (l > 0 && n++ >= first)
                        json_object_array_add(a, json_object_new_string_len(p, (int) l));
                p += l + (p[l] == '\n');
        }
        return a;
}

int cmd_check_policy(int argc, char **argv) {
        daemon_options o = { .mode = MODE_CHECK_POLICY, .root = "/", .paths = argv + 1, .n_paths = (unsigned) (argc - 1) };
        _cleanup_free_ char *out = NULL, *err = NULL;
        _cleanup_(json_object_putp) json_object *j = NULL;
        int rc = 1, r;

        if (!arg.json)
                return run_check_policy(&o) == 0 ? EXIT_OK : EXIT_FAILED;
        r = capture(run_check_policy, &o, &out, &err, &rc);
        if (r < 0) {
                fprintf(stderr, "npu-tunectl check-policy: %s\n", strerror(-r));
                return EXIT_FAILED;
        }
        /* stdout: "OK: ...", then with several files a heading and which file set each value;
         * stderr: one problem a line. */
        j = json_object_new_object();
        json_object_object_add(j, "ok", json_object_new_boolean(rc == 0));
        json_object_object_add(j, "summary", rc == 0 ? json_object_new_string_len(out, (int) strcspn(out, "\n")) : NULL);
        json_object_object_add(j, "problems", lines(err, 0));
        json_object_object_add(j, "provenance", rc == 0 ? lines(out, 2) : json_object_new_array());
        print_json(j);
        return rc == 0 ? EXIT_OK : EXIT_FAILED;
}

/* The running daemon's policy files (none: it runs the embedded default). */
static int daemon_policy_files(daemon_options *o, json_object *files) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        const char *s;
        int r;

        if (!bus)
                return -ENOTCONN;
        r = sd_bus_get_property(bus, NPU_BUS_NAME, NPU_BUS_PATH, NPU_BUS_INTERFACE, "PolicyFiles", &e, &m, "as");
        if (r < 0)
                return unreachable(&e, r) ? -ENOTCONN : tunectl_report("PolicyFiles", &e, r);
        r = sd_bus_message_enter_container(m, 'a', "s");
        while (r >= 0 && (r = sd_bus_message_read(m, "s", &s)) > 0) {
                if (o->n_policy_dirs >= MAX_POLICY_DIRS)
                        return -E2BIG;
                json_object_array_add(files, json_object_new_string(s));
                o->policy_dirs[o->n_policy_dirs++] = json_object_get_string(json_object_array_get_idx(
                        files, json_object_array_length(files) - 1));
        }
        return r < 0 ? r : 0;
}

/* The effective policy: the running daemon's files read again here and merged by the
 * printer of npu-tuned --print-policy. Honest about what it is: the files as they are now
 * (edited since the last reload: what a reload would load), not a copy of the daemon's
 * memory. Without a daemon: what it would load from the standard directories. */
int cmd_policy(int argc, char **argv) {
        daemon_options o = { .mode = MODE_PRINT_POLICY, .root = "/" };
        _cleanup_(json_object_putp) json_object *files = json_object_new_array(), *j = NULL;
        _cleanup_free_ char *out = NULL, *err = NULL;
        char empty[] = "/tmp/npu-tunectl-policy-XXXXXX";
        const char *source = "daemon";
        bool embedded = false;
        int rc = 1, r;

        r = daemon_policy_files(&o, files);
        if (r > 0)
                return r; /* an exit code: tunectl_report() said why */
        if (r == -ENOTCONN) {
                source = "installed";
                if (!arg.json)
                        fprintf(stderr, "npu-tunectl: npu-tuned is not running: the policy it would load from the "
                                        "standard directories.\n");
        } else if (r < 0) {
                fprintf(stderr, "npu-tunectl policy: %s\n", r == -E2BIG ? "too many policy files" : strerror(-r));
                return EXIT_FAILED;
        } else if (o.n_policy_dirs == 0) {
                /* The daemon runs the embedded default: an empty directory makes the printer
                 * take it too, whatever the standard directories hold now. */
                if (!mkdtemp(empty)) {
                        fprintf(stderr, "npu-tunectl policy: %s\n", strerror(errno));
                        return EXIT_FAILED;
                }
                o.policy_dirs[o.n_policy_dirs++] = empty;
                embedded = true;
        }
        if (!arg.json) {
                if (streq(source, "daemon"))
                        fprintf(stderr, "npu-tunectl: the policy of the running npu-tuned, %s:\n",
                                embedded ? "its embedded default" : "from its policy files as they are now");
                rc = run_print_policy(&o);
        } else
                r = capture(run_print_policy, &o, &out, &err, &rc);
        if (embedded)
                (void) rmdir(empty);
        if (r < 0) {
                fprintf(stderr, "npu-tunectl policy: %s\n", strerror(-r));
                return EXIT_FAILED;
        }
        if (!arg.json)
                return rc == 0 ? EXIT_OK : EXIT_FAILED;
        if (rc != 0) {
                fputs(err, stderr);
                return EXIT_FAILED;
        }
        j = json_object_new_object();
        json_object_object_add(j, "source", json_object_new_string(source));
        json_object_object_add(j, "files", TAKE_PTR(files));
        json_object_object_add(j, "embedded", json_object_new_boolean(embedded));
        json_object_object_add(j, "policy", json_tokener_parse(out));
        /* stderr: messages (warnings), then, with several files, "Effective values and the
         * files that set them ...:" and one line a value. */
        char *origins = strstr(err, "Effective values");
        json_object_object_add(j, "provenance", origins ? lines(origins, 1) : json_object_new_array());
        if (origins)
                *origins = 0;
        json_object_object_add(j, "messages", lines(err, 0));
        print_json(j);
        return EXIT_OK;
}
