/* SPDX-License-Identifier: GPL-2.0-only */
/* What a managed process was attributed from, kept in the state directory across a
 * restart (daemon/state/attribution-store.c): the text round-trips; a file that is not
 * exactly what the daemon writes is refused (its values are a process's own words);
 * loading skips and, for the daemon, removes what it cannot use; a record's copy is
 * adopted only where there is no file; an untrusted directory is refused. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "attribution-store.h"
#include "npu-tuned/state-dir.h"

static char dir[64];

static int setup(void **state) {
        snprintf(dir, sizeof dir, "/tmp/npu-attribution-store-XXXXXX");
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        return system(cmd);
}

static tune_env_capture env_of(char **vars, unsigned n, pid_t from, bool inherited) {
        return (tune_env_capture) { .state = TUNE_ENV_READ, .vars = vars, .n = n, .from_pid = from, .inherited = inherited };
}

static void test_round_trip(void **state) {
        char *vars[] = { (char *) "EDU_VISIBLE_DEVICES=1,0", (char *) "RANK=a b", (char *) "X=\x1b]0;t\x07",
                         (char *) "CUDA_DEVICE_ORDER=PCI_BUS_ID" };
        tune_env_capture env = env_of(vars, 4, 171, true);
        tune_accel_ref ref = { .index = 1 };
        tune_attribution a = { .source = TUNE_ATTRIBUTION_ENV_INHERITED, .accels = &ref, .n_accels = 1 };
        attribution_saved s = {};
        char *text = NULL;
        (void) state;

        snprintf(ref.kind, sizeof ref.kind, "edu");
        attribution_saved in = { .pid = 183, .start_time = 809, .env_start = 140732962411238ULL,
                                 .env_end = 140732962414567ULL, .env = env };

        assert_int_equal(attribution_saved_format(&in, &a, &text), 0);
        fprintf(stderr, "%s", text);
        /* The values with a space or a control character are not kept. */
        assert_null(strstr(text, "RANK"));
        assert_null(strstr(text, "\x1b"));
        assert_int_equal(attribution_saved_parse(text, &s), 0);
        assert_int_equal(s.pid, 183);
        assert_int_equal(s.start_time, 809);
        assert_true(s.env_start == 140732962411238ULL && s.env_end == 140732962414567ULL);
        assert_string_equal(s.source, "env-inherited");
        assert_string_equal(s.accels, "edu:1");
        assert_int_equal(s.env.state, TUNE_ENV_READ);
        assert_true(s.env.restored);
        assert_true(s.env.inherited);
        assert_int_equal(s.env.from_pid, 171);
        assert_int_equal(s.env.n, 2);
        assert_string_equal(tune_env_capture_get(&s.env, "EDU_VISIBLE_DEVICES"), "1,0");
        assert_string_equal(tune_env_capture_get(&s.env, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
        attribution_saved_done(&s);
        free(text);
}

/* The bytes written, whole: the accelerators' line (put in place, not formatted apart) is
 * there for a list the reader takes, and left out for none, for one not plain() and for
 * one as long as the reader's field; the file's size bound. */
static void test_exact_bytes(void **state) {
        char *vars[] = { (char *) "ASCEND_VISIBLE_DEVICES=3,1", (char *) "RANK=2" };
        tune_accel_ref refs[40] = {};
        tune_attribution a = { .source = TUNE_ATTRIBUTION_ENV, .accels = refs, .n_accels = 3 };
        attribution_saved in = { .pid = 2147483647, .start_time = UINT64_MAX, .env_start = 0,
                                 .env_end = 140732962414567ULL, .env = env_of(vars, 2, 2147483647, false) };
        attribution_saved s = {};
        char *text = NULL;
        (void) state;

        for (unsigned i = 0; i < 40; i++) {
                snprintf(refs[i].kind, sizeof refs[i].kind, "ascend");
                refs[i].index = i == 2 ? -7 : 1000000 + (int) i;
        }
        assert_int_equal(attribution_saved_format(&in, &a, &text), 0);
        assert_string_equal(text, "npu-tuned-attribution 1\npid 2147483647\nstart_time 18446744073709551615\n"
                                  "exec_env 0,140732962414567\nsource env\n"
                                  "accelerators ascend:1000000,ascend:1000001,ascend:-7\n"
                                  "from_pid 2147483647\ninherited 0\nenv ASCEND_VISIBLE_DEVICES=3,1\nenv RANK=2\n");
        assert_int_equal(attribution_saved_parse(text, &s), 0);
        assert_string_equal(s.accels, "ascend:1000000,ascend:1000001,ascend:-7");
        attribution_saved_done(&s);
        free(text);

        /* None: no line. */
        a.n_accels = 0;
        in.env.n = 0;
        assert_int_equal(attribution_saved_format(&in, &a, &text), 0);
        assert_string_equal(text, "npu-tuned-attribution 1\npid 2147483647\nstart_time 18446744073709551615\n"
                                  "exec_env 0,140732962414567\nsource env\nfrom_pid 2147483647\ninherited 0\n");
        free(text);

        /* 17 of "ascend:100000N," make 254 bytes with no last comma, 255 with one more digit:
         * kept (the reader's field holds 255); 256: left out. */
        a.n_accels = 17;
        refs[2].index = 1000002;
        refs[16].index = 10000016;
        assert_int_equal(attribution_saved_format(&in, &a, &text), 0);
        assert_non_null(strstr(text, ",ascend:10000016\nfrom_pid "));
        assert_int_equal(attribution_saved_parse(text, &s), 0);
        assert_int_equal(strlen(s.accels), 255);
        attribution_saved_done(&s);
        free(text);
        refs[15].index = 10000015;
        assert_int_equal(attribution_saved_format(&in, &a, &text), 0);
        assert_null(strstr(text, "accelerators"));
        assert_non_null(strstr(text, "\nsource env\nfrom_pid 2147483647\n"));
        free(text);

        /* A kind that is not plain: left out whole. */
        a.n_accels = 2;
        snprintf(refs[1].kind, sizeof refs[1].kind, "a b");
        assert_int_equal(attribution_saved_format(&in, &a, &text), 0);
        assert_null(strstr(text, "accelerators"));
        free(text);
}

static void test_refused_texts(void **state) {
        static const char *const bad[] = {
                "",
                "pid 1\nstart_time 2\n",                                         /* no header */
                "npu-tuned-attribution 2\npid 1\nstart_time 2\n",                /* another version */
                "npu-tuned-attribution 1\npid 1\n",                              /* no start time */
                "npu-tuned-attribution 1\npid 1\nstart_time 2\n",                /* no exec_env */
                "npu-tuned-attribution 1\npid 1\nstart_time 2\nexec_env 1\n",
                "npu-tuned-attribution 1\npid 1\nstart_time 2\nexec_env 1,2,3\n",
                "npu-tuned-attribution 1\npid 0\nstart_time 2\n",
                "npu-tuned-attribution 1\npid 2147483648\nstart_time 2\n",
                "npu-tuned-attribution 1\npid 1\nstart_time 2\nevil 1\n",        /* unknown key */
                "npu-tuned-attribution 1\npid 1\nstart_time 2\nenv NOVALUE\n",
                "npu-tuned-attribution 1\npid 1\nstart_time 2\nenv 1BAD=0\n",
                "npu-tuned-attribution 1\npid 1\nstart_time 2\nenv A=b\tc\n",
                "npu-tuned-attribution 1\npid 1\nstart_time 18446744073709551616\n",
                "npu-tuned-attribution 1\npid 1\nstart_time 2\ninherited yes\n",
        };
        char many[4096] = "npu-tuned-attribution 1\npid 1\nstart_time 2\nexec_env 3,4\n";
        attribution_saved s;
        (void) state;

        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
                s = (attribution_saved) {};
                assert_int_equal(attribution_saved_parse(bad[i], &s), -EBADMSG);
                assert_int_equal(s.env.n, 0);
        }
        for (unsigned i = 0; i <= ATTRIBUTION_VARS_MAX; i++)
                snprintf(many + strlen(many), sizeof many - strlen(many), "env V%u=0\n", i);
        assert_int_equal(attribution_saved_parse(many, &s), -EBADMSG);
}

static void put(const char *name, const char *text, mode_t mode) {
        char path[128];
        int fd;

        snprintf(path, sizeof path, "%s/%s", dir, name);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

static bool exists(const char *name) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        return access(path, F_OK) == 0;
}

static void test_save_load_prune(void **state) {
        char *vars[] = { (char *) "EDU_VISIBLE_DEVICES=1,0" };
        tune_env_capture env = env_of(vars, 1, 300, false);
        tune_attribution a = { .source = TUNE_ATTRIBUTION_ENV };
        attribution_saved *l = NULL;
        size_t n = 0;
        int dfd;
        (void) state;

        dfd = tune_state_dir_open(dir, false);
        assert_true(dfd >= 0);
        attribution_saved one = { .pid = 300, .start_time = 3000, .env_start = 10, .env_end = 20, .env = env };
        assert_int_equal(attribution_store_save_at(dfd, &one, &a), 0);
        one = (attribution_saved) { .pid = 301, .start_time = 3010, .env = env };
        one.env.from_pid = 301;
        assert_int_equal(attribution_store_save_at(dfd, &one, &a), 0);
        put("attribution-77", "garbage", 0600);
        put("attribution-5", "npu-tuned-attribution 1\npid 6\nstart_time 2\nexec_env 0,0\n", 0600); /* names another pid */
        put("attribution-8", "npu-tuned-attribution 1\npid 8\nstart_time 2\nexec_env 0,0\n", 0644); /* readable by others */
        put("attribution-x", "npu-tuned-attribution 1\npid 9\nstart_time 2\nexec_env 0,0\n", 0600); /* not a pid name */
        /* The offline --explain reads and changes nothing. */
        assert_int_equal(attribution_store_load(dir, false, &l, &n), 0);
        assert_int_equal(n, 2);
        attribution_saved_free_all(l, n);
        assert_true(exists("attribution-77"));
        /* The daemon removes what it cannot use. */
        assert_int_equal(attribution_store_load(dir, true, &l, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(l[0].pid + l[1].pid, 601);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(l[i].start_time, l[i].pid == 300 ? 3000 : 3010);
                assert_int_equal(l[i].env_end, l[i].pid == 300 ? 20 : 0);
                assert_int_equal(l[i].env.from_pid, l[i].pid);
                assert_string_equal(tune_env_capture_get(&l[i].env, "EDU_VISIBLE_DEVICES"), "1,0");
        }
        attribution_saved_free_all(l, n);
        assert_false(exists("attribution-77"));
        assert_false(exists("attribution-5"));
        assert_false(exists("attribution-8"));
        assert_true(exists("attribution-x"));
        assert_int_equal(attribution_store_remove_at(dfd, 300), 0);
        assert_int_equal(attribution_store_remove_at(dfd, 300), 0); /* none: still 0 */
        assert_false(exists("attribution-300"));
        close(dfd);
}

static char *slurp(const char *name) {
        char path[128], *text = calloc(1, 8192);
        int fd;
        ssize_t n;

        snprintf(path, sizeof path, "%s/%s", dir, name);
        assert_non_null(text);
        fd = open(path, O_RDONLY);
        assert_true(fd >= 0);
        n = read(fd, text, 8191);
        assert_true(n >= 0);
        close(fd);
        return text;
}

/* The text an affinity record kept (restore.c) becomes the process's file, as it was,
 * unless the process has one already (written after the record: the newer); a text that
 * is not that process's is refused and nothing is written. */
static void test_adopt(void **state) {
        char *vars[] = { (char *) "EDU_VISIBLE_DEVICES=1,0" };
        attribution_saved one = { .pid = 300, .start_time = 3000, .env_start = 10, .env_end = 20,
                                  .env = env_of(vars, 1, 300, false) };
        tune_attribution a = { .source = TUNE_ATTRIBUTION_ENV };
        char *text = NULL, *got;
        (void) state;

        assert_int_equal(attribution_saved_format(&one, &a, &text), 0);
        assert_int_equal(attribution_store_adopt(dir, 300, text), 0);
        got = slurp("attribution-300");
        assert_string_equal(got, text);
        free(got);

        put("attribution-300", "newer", 0600);
        assert_int_equal(attribution_store_adopt(dir, 300, text), 0);
        got = slurp("attribution-300");
        assert_string_equal(got, "newer");
        free(got);

        assert_int_equal(attribution_store_adopt(dir, 301, text), -EBADMSG);
        assert_int_equal(attribution_store_adopt(dir, 301, "npu-tuned-attribution 1\npid 301\n"), -EBADMSG);
        assert_false(exists("attribution-301"));
        free(text);
}

/* A directory others may write is refused before anything is read. */
static void test_untrusted_dir(void **state) {
        attribution_saved *l = NULL;
        size_t n = 0;
        (void) state;

        put("attribution-12", "npu-tuned-attribution 1\npid 12\nstart_time 2\nexec_env 0,0\n", 0600);
        assert_int_equal(chmod(dir, 0777), 0);
        assert_true(tune_state_dir_is_refusal(attribution_store_load(dir, true, &l, &n)));
        assert_int_equal(n, 0);
        assert_true(exists("attribution-12"));
        /* No directory: nothing, no error. */
        assert_int_equal(attribution_store_load("/nonexistent/npu-tuned", true, &l, &n), 0);
        assert_int_equal(n, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_exact_bytes),
                cmocka_unit_test(test_refused_texts),
                cmocka_unit_test_setup_teardown(test_save_load_prune, setup, teardown),
                cmocka_unit_test_setup_teardown(test_adopt, setup, teardown),
                cmocka_unit_test_setup_teardown(test_untrusted_dir, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
