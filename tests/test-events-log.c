/* SPDX-License-Identifier: GPL-2.0-only */
/* What the events (daemon/events/events.c) log, byte for byte: the line on stderr and, when
 * JOURNAL_STREAM names stderr, the journal entry's fields. sd_journal_sendv() is this
 * file's own (the linker takes it before libsystemd's), so the entry is read as the daemon
 * hands it over. Run as "test-events-log stderr", "... debug" (stderr, debug level: the
 * line ends with its FILE:LINE) or "... journal"; log.c decides its sink once per process. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <cmocka.h>

#include "events.h"
#include "log.h"

static enum { SINK_STDERR, SINK_DEBUG, SINK_JOURNAL } sink;
static char journal[8192]; /* the last entry: its fields, one a line */
static unsigned journal_entries;
static int err_fd = -1;    /* what stderr writes to */
static off_t err_read;

/* The call sd_journal_sendv() makes (systemd/sd-journal.h): the entry gets the caller's
 * CODE_FILE=, CODE_LINE= and CODE_FUNC= after the fields it was given. */
int sd_journal_sendv_with_location(const char *file, const char *line, const char *func, const struct iovec *iov, int n);
int sd_journal_sendv_with_location(const char *file, const char *line, const char *func, const struct iovec *iov, int n) {
        size_t o = 0;

        (void) line;
        for (int i = 0; i < n; i++) {
                assert_true(o + iov[i].iov_len + 2 <= sizeof journal);
                memcpy(journal + o, iov[i].iov_base, iov[i].iov_len);
                o += iov[i].iov_len;
                journal[o++] = '\n';
        }
        snprintf(journal + o, sizeof journal - o, "%s\nCODE_FUNC=%s\n", file, func);
        journal_entries++;
        return 0;
}

/* What stderr got since the last call. */
static const char *stderr_new(void) {
        static char buf[8192];
        ssize_t n = pread(err_fd, buf, sizeof buf - 1, err_read);

        assert_true(n >= 0);
        buf[n] = 0;
        err_read += n;
        return buf;
}

/* The fields of the entry the event made, without CODE_LINE= (where in events.c). */
static const char *journal_fields(void) {
        static char buf[8192];
        char *line = strstr(journal, "\nCODE_LINE=");

        assert_non_null(line);
        char *end = strchr(line + 1, '\n');
        memcpy(buf, journal, (size_t) (line - journal));
        strcpy(buf + (line - journal), end);
        return buf;
}

/* cmocka reports failures on stderr, which is the daemon's log here: say them on stdout. */
static void expect_str(const char *got, const char *want) {
        if (strcmp(got, want) != 0) {
                printf("got:  \"%s\"\nwant: \"%s\"\n", got, want);
                fail();
        }
}

/* After the fields of the event, where the entry was sent from (log.c). */
#define LOCATION "CODE_FILE=../daemon/common/log.c\nCODE_FUNC=log_struct_message\n"

/* The event logged text (one line on stderr, or one journal entry with these fields). */
static void expect_logged(const char *text, const char *fields) {
        const char *err = stderr_new();
        char want[8192];

        if (sink == SINK_JOURNAL) {
                expect_str(err, "");
                assert_int_equal(journal_entries, 1);
                snprintf(want, sizeof want, "MESSAGE=%s\n%s" LOCATION, text, fields);
                expect_str(journal_fields(), want);
        } else if (sink == SINK_DEBUG) {
                assert_int_equal(journal_entries, 0);
                snprintf(want, sizeof want, "npu-tuned: %s (", text);
                assert_true(strlen(err) > strlen(want));
                char head[8192];
                snprintf(head, sizeof head, "%.*s", (int) strlen(want), err);
                expect_str(head, want);
                const char *at = err + strlen(want);
                assert_true(strncmp(at, "../daemon/events/events.c:", 26) == 0);
                at += 26;
                assert_true(strspn(at, "0123456789") > 0);
                expect_str(at + strspn(at, "0123456789"), ")\n");
        } else {
                assert_int_equal(journal_entries, 0);
                snprintf(want, sizeof want, "npu-tuned: %s\n", text);
                expect_str(err, want);
        }
        journal_entries = 0;
        journal[0] = 0;
}


static tune_policy_rule rule = { .name = (char *) "vllm" };

static void test_placed(void **state) {
        (void) state;
        tune_accel_ref accels[] = { { .kind = "npu", .index = 0 }, { .kind = "npu", .index = 3 } };
        managed_process mp = { .pid = 4242, .rule = &rule };
        mp.attribution = (tune_attribution){ .source = TUNE_ATTRIBUTION_ENV, .accels = accels, .n_accels = 2, .rank = -1 };
        tune_plan pl = { .action = TUNE_PLAN_PLACE };

        assert_int_equal(tune_cpuset_add_range(&pl.pool, 0, 3), 0);
        assert_int_equal(tune_cpuset_add(&pl.pool, 8), 0);
        assert_int_equal(tune_cpuset_add(&pl.role_cpus[TUNE_ROLE_CONTROL], 0), 0);
        assert_int_equal(tune_cpuset_add_range(&pl.role_cpus[TUNE_ROLE_COMPUTE], 1, 3), 0);
        assert_int_equal(tune_cpuset_add(&pl.role_cpus[TUNE_ROLE_COMPUTE], 8), 0);
        assert_int_equal(tune_cpuset_add(&pl.mem_nodes, 0), 0);
        event_process_placed(NULL, &mp, &pl, "pod 1234 container containerd://abcdef");
        expect_logged("Placed pid 4242 (pod 1234 container containerd://abcdef) (rule \"vllm\", accelerators npu:0,npu:3 "
                      "from env): CPUs 0-3,8, control 0, compute 1-3,8, memory 0.",
                      "PRIORITY=6\nMESSAGE_ID=" NPU_MESSAGE_PROCESS_PLACED "\nSYSLOG_IDENTIFIER=npu-tuned\n"
                      "CODE_FILE=../daemon/events/events.c\nNPU_TUNED_PID=4242\nNPU_TUNED_RULE=vllm\n"
                      "NPU_TUNED_ACCEL=npu:0,npu:3\nNPU_TUNED_CONTAINER=pod 1234 container containerd://abcdef\n");
        tune_plan_done(&pl);

        /* Nothing to say: no container, no accelerators, no roles, memory left alone. */
        tune_plan bare = { .action = TUNE_PLAN_PLACE };
        mp.attribution = (tune_attribution){ .rank = -1 };
        mp.pid = 7;
        assert_int_equal(tune_cpuset_add_range(&bare.pool, 4, 5), 0);
        event_process_placed(NULL, &mp, &bare, "");
        expect_logged("Placed pid 7 (rule \"vllm\", accelerators - from none): CPUs 4-5, control -, compute -, memory left "
                      "where it is.",
                      "PRIORITY=6\nMESSAGE_ID=" NPU_MESSAGE_PROCESS_PLACED "\nSYSLOG_IDENTIFIER=npu-tuned\n"
                      "CODE_FILE=../daemon/events/events.c\nNPU_TUNED_PID=7\nNPU_TUNED_RULE=vllm\nNPU_TUNED_ACCEL=\n");
        event_process_placed(NULL, &mp, &bare, NULL);
        expect_logged("Placed pid 7 (rule \"vllm\", accelerators - from none): CPUs 4-5, control -, compute -, memory left "
                      "where it is.",
                      "PRIORITY=6\nMESSAGE_ID=" NPU_MESSAGE_PROCESS_PLACED "\nSYSLOG_IDENTIFIER=npu-tuned\n"
                      "CODE_FILE=../daemon/events/events.c\nNPU_TUNED_PID=7\nNPU_TUNED_RULE=vllm\nNPU_TUNED_ACCEL=\n");
        tune_plan_done(&bare);
}

/* Text past the bounds: the line stops at 2047 bytes, the container's field at 191. */
static void test_placed_cut(void **state) {
        (void) state;
        managed_process mp = { .pid = 99, .rule = &rule, .attribution = { .rank = -1 } };
        tune_plan pl = { .action = TUNE_PLAN_PLACE };
        char container[2200], text[4096], fields[1024];

        memset(container, 'c', sizeof container - 1);
        container[sizeof container - 1] = 0;
        assert_int_equal(tune_cpuset_add(&pl.pool, 1), 0);
        event_process_placed(NULL, &mp, &pl, container);
        snprintf(text, sizeof text, "Placed pid 99 (%s", container);
        text[2047] = 0;
        snprintf(fields, sizeof fields,
                 "PRIORITY=6\nMESSAGE_ID=" NPU_MESSAGE_PROCESS_PLACED "\nSYSLOG_IDENTIFIER=npu-tuned\n"
                 "CODE_FILE=../daemon/events/events.c\nNPU_TUNED_PID=99\nNPU_TUNED_RULE=vllm\nNPU_TUNED_ACCEL=\n"
                 "NPU_TUNED_CONTAINER=%.171s\n", container);
        expect_logged(text, fields);
        tune_plan_done(&pl);
}

static void test_released(void **state) {
        (void) state;
        managed_process mp = { .pid = 4242, .rule = &rule };

        event_process_released(NULL, &mp, "exited");
        expect_logged("pid 4242 (rule \"vllm\") is no longer managed (exited).",
                      "PRIORITY=6\nMESSAGE_ID=" NPU_MESSAGE_PROCESS_RELEASED "\nSYSLOG_IDENTIFIER=npu-tuned\n"
                      "CODE_FILE=../daemon/events/events.c\nNPU_TUNED_PID=4242\nNPU_TUNED_RULE=vllm\n");
        mp.rule = NULL;
        mp.pid = -1;
        event_process_released(NULL, &mp, "stop");
        expect_logged("pid -1 (rule \"?\") is no longer managed (stop).",
                      "PRIORITY=6\nMESSAGE_ID=" NPU_MESSAGE_PROCESS_RELEASED "\nSYSLOG_IDENTIFIER=npu-tuned\n"
                      "CODE_FILE=../daemon/events/events.c\nNPU_TUNED_PID=-1\nNPU_TUNED_RULE=\n");
}

static void test_knobs(void **state) {
        (void) state;
        event_knob_changed(NULL, NULL, "thp/enabled", "THP", "/sys/x", "madvise", "never", false);
        expect_logged("thp/enabled (THP): madvise -> never",
                      "PRIORITY=6\nMESSAGE_ID=" NPU_MESSAGE_KNOB_APPLIED "\nSYSLOG_IDENTIFIER=npu-tuned\n"
                      "CODE_FILE=../daemon/events/events.c\nNPU_TUNED_KNOB=thp/enabled\n");
        event_knob_changed(NULL, NULL, "thp/enabled", NULL, "/sys/x", NULL, "madvise", true);
        expect_logged("thp/enabled: restored \"madvise\".",
                      "PRIORITY=6\nMESSAGE_ID=" NPU_MESSAGE_KNOB_APPLIED "\nSYSLOG_IDENTIFIER=npu-tuned\n"
                      "CODE_FILE=../daemon/events/events.c\nNPU_TUNED_KNOB=thp/enabled\n");
        event_knob_drift(NULL, "governor", "/sys/y", "performance", "powersave", true);
        expect_logged("governor: changed by someone else to \"powersave\" (npu-tuned set \"performance\"); re-asserting "
                      "(policy: reassert).",
                      "PRIORITY=5\nMESSAGE_ID=" NPU_MESSAGE_KNOB_CHANGED_BY_OTHER "\nSYSLOG_IDENTIFIER=npu-tuned\n"
                      "CODE_FILE=../daemon/events/events.c\nNPU_TUNED_KNOB=governor\n");
        event_policy_reloaded(NULL, false, "Policy reload failed: x.");
        expect_logged("Policy reload failed: x.",
                      "PRIORITY=3\nMESSAGE_ID=" NPU_MESSAGE_POLICY_RELOADED "\nSYSLOG_IDENTIFIER=npu-tuned\n"
                      "CODE_FILE=../daemon/events/events.c\n");
}

/* Under the level: nothing made, nothing written. */
static void test_filtered(void **state) {
        (void) state;
        managed_process mp = { .pid = 1, .rule = &rule };
        int saved = log_get_max_level();

        log_set_max_level(LOG_NOTICE);
        event_process_released(NULL, &mp, "exited");
        log_set_max_level(saved);
        expect_str(stderr_new(), "");
        assert_int_equal(journal_entries, 0);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_placed),   cmocka_unit_test(test_placed_cut), cmocka_unit_test(test_released),
                cmocka_unit_test(test_knobs),    cmocka_unit_test(test_filtered),
        };
        char path[] = "/tmp/test-events-log.XXXXXX", env[64];
        struct stat st;

        sink = argc > 1 && strcmp(argv[1], "journal") == 0 ? SINK_JOURNAL
               : argc > 1 && strcmp(argv[1], "debug") == 0  ? SINK_DEBUG
                                                            : SINK_STDERR;
        /* cmocka reports on stdout; the daemon's log goes to a file of the test's own. */
        err_fd = mkstemp(path);
        if (err_fd < 0 || unlink(path) < 0 || dup2(err_fd, STDERR_FILENO) < 0 || fstat(err_fd, &st) < 0)
                return 1;
        snprintf(env, sizeof env, "%llu:%llu", (unsigned long long) st.st_dev, (unsigned long long) st.st_ino);
        if (sink == SINK_JOURNAL)
                setenv("JOURNAL_STREAM", env, 1);
        else
                unsetenv("JOURNAL_STREAM");
        if (sink == SINK_DEBUG)
                log_set_max_level(LOG_DEBUG);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
