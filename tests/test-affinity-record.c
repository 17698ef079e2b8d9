/* SPDX-License-Identifier: GPL-2.0-only */
/* The affinity record's text form and file: a round trip (the plan's sets included), every
 * truncation and bad contents refused (a record that does not parse restores nothing), the file's name,
 * and the file in a held directory (created whole, replaced whole, empty, temp files cleared). */
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
#include <json.h>

#include "npu-tuned/affinity-record.h"
#include "npu-tuned/state-dir.h"

static void add_entry(tune_affinity_originals *j, pid_t tid, const char *original, const char *applied) {
        j->entries = realloc(j->entries, (j->n + 1) * sizeof *j->entries);
        assert_non_null(j->entries);
        j->entries[j->n] = (tune_affinity_entry){ .tid = tid };
        assert_int_equal(tune_cpuset_parse_list(&j->entries[j->n].original, original), 0);
        assert_int_equal(tune_cpuset_parse_list(&j->entries[j->n].applied, applied), 0);
        j->n++;
}

static void make(tune_affinity_record *rec) {
        *rec = (tune_affinity_record){ .boot_id = strdup("f0c62e8c-0e62-4b75-a031-2163bfff8c37"), .restore_on_stop = true };
        rec->originals.pid = 1234;
        rec->originals.start_time = 987654321;
        add_entry(&rec->originals, 1234, "0-63", "0");
        add_entry(&rec->originals, 1240, "0-63", "1-3");
        add_entry(&rec->originals, 1251, "4", "2,5");
        assert_int_equal(tune_cpuset_parse_list(&rec->originals.sets[0], "0"), 0);
        assert_int_equal(tune_cpuset_parse_list(&rec->originals.sets[1], "1-3,8"), 0);
        rec->originals.n_sets = 2;
}

/* An attribution file's text (daemon/state/attribution-store.c) with every byte the
 * record escapes. */
#define ATTRIBUTION "npu-tuned-attribution 1\npid 1234\nsource env\naccelerators npu:0,npu:1\n" \
        "env ASCEND_RT_VISIBLE_DEVICES=0,1\nenv P=/opt/x\"y\\z\t\x01\x7f\xc3\xa9\n"

static void test_roundtrip(void **state) {
        _cleanup_(tune_affinity_record_done) tune_affinity_record rec = {}, back = {};
        _cleanup_free_ char *text = NULL, *again = NULL;

        make(&rec);
        assert_int_equal(tune_affinity_record_format(&rec, &text), 0);
        assert_int_equal(tune_affinity_record_parse(text, strlen(text), &back), 0);
        assert_string_equal(back.boot_id, rec.boot_id);
        assert_true(back.restore_on_stop);
        assert_int_equal(back.originals.pid, 1234);
        assert_true(back.originals.start_time == 987654321);
        assert_int_equal(back.originals.n, 3);
        for (unsigned i = 0; i < 3; i++) {
                assert_int_equal(back.originals.entries[i].tid, rec.originals.entries[i].tid);
                assert_true(tune_cpuset_equal(&back.originals.entries[i].original, &rec.originals.entries[i].original));
                assert_true(tune_cpuset_equal(&back.originals.entries[i].applied, &rec.originals.entries[i].applied));
        }
        assert_int_equal(back.originals.n_sets, 2);
        for (unsigned i = 0; i < 2; i++)
                assert_true(tune_cpuset_equal(&back.originals.sets[i], &rec.originals.sets[i]));
        assert_null(back.attribution);
        assert_int_equal(tune_affinity_record_format(&back, &again), 0);
        assert_string_equal(text, again);
        assert_non_null(strstr(text, ",\"sets\":[\"0\",\"1-3,8\"]}"));

        /* The daemon's text kept with it comes back byte for byte. */
        tune_affinity_record_done(&back);
        free(text);
        free(again);
        text = again = NULL;
        rec.attribution = strdup(ATTRIBUTION);
        assert_int_equal(tune_affinity_record_format(&rec, &text), 0);
        assert_int_equal(tune_affinity_record_parse(text, strlen(text), &back), 0);
        assert_string_equal(back.attribution, ATTRIBUTION);
        assert_int_equal(tune_affinity_record_format(&back, &again), 0);
        assert_string_equal(text, again);
}

/* The hand-made text is what json-c itself writes for the same object. */
static void test_layout_is_json_c_plain(void **state) {
        _cleanup_(tune_affinity_record_done) tune_affinity_record rec = {};
        _cleanup_free_ char *text = NULL, *boot = strdup("a\"b\\c\n\x01-Z");
        json_object *o;

        make(&rec);
        free(rec.boot_id);
        rec.boot_id = TAKE_PTR(boot);
        add_entry(&rec.originals, 1300, "0-3,8,10-11", "");
        assert_int_equal(tune_affinity_record_format(&rec, &text), 0);
        o = json_tokener_parse(text);
        assert_non_null(o);
        assert_string_equal(json_object_get_string(json_object_object_get(o, "boot_id")), "a\"b\\c\n\x01-Z");
        json_object_put(o);
        /* A plain boot id: byte for byte what json-c writes. */
        free(text);
        text = NULL;
        free(rec.boot_id);
        rec.boot_id = strdup("f0c62e8c-0e62-4b75-a031-2163bfff8c37");
        assert_int_equal(tune_affinity_record_format(&rec, &text), 0);
        o = json_tokener_parse(text);
        assert_non_null(o);
        const char *plain = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        assert_int_equal(strlen(text), strlen(plain) + 1);
        assert_memory_equal(text, plain, strlen(plain));
        json_object_put(o);
        /* With the daemon's text: escaped as json-c escapes it, byte for byte. */
        free(text);
        text = NULL;
        rec.attribution = strdup(ATTRIBUTION);
        assert_int_equal(tune_affinity_record_format(&rec, &text), 0);
        o = json_tokener_parse(text);
        assert_non_null(o);
        assert_string_equal(json_object_get_string(json_object_object_get(o, "attribution")), ATTRIBUTION);
        plain = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        assert_int_equal(strlen(text), strlen(plain) + 1);
        assert_memory_equal(text, plain, strlen(plain));
        json_object_put(o);
}

static void test_every_truncation_refused(void **state) {
        _cleanup_(tune_affinity_record_done) tune_affinity_record rec = {};
        _cleanup_free_ char *text = NULL;
        size_t len;

        make(&rec);
        assert_int_equal(tune_affinity_record_format(&rec, &text), 0);
        len = strlen(text);
        /* The last byte is the newline: everything shorter than the closing brace fails. */
        for (size_t cut = 0; cut + 1 < len; cut++) {
                tune_affinity_record bad = {};
                assert_int_equal(tune_affinity_record_parse(text, cut, &bad), -EBADMSG);
        }
}

static void test_bad_contents(void **state) {
        static const struct {
                const char *text;
                int error;
        } cases[] = {
                { "", -EBADMSG },
                { "[]", -EBADMSG },
                { "{\"version\":2,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,\"threads\":[]}",
                  -EPROTONOSUPPORT },
                /* no start time: the pid alone is never trusted */
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":0,\"restore_on_stop\":true,\"threads\":[]}", -EBADMSG },
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"restore_on_stop\":true,\"threads\":[]}", -EBADMSG },
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":-4,\"start_time\":5,\"restore_on_stop\":true,\"threads\":[]}", -EBADMSG },
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":\"yes\",\"threads\":[]}", -EBADMSG },
                /* an empty original would leave a thread on no CPU */
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,"
                  "\"threads\":[{\"tid\":1,\"original\":\"\",\"applied\":\"0\"}]}", -EBADMSG },
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,"
                  "\"threads\":[{\"tid\":1,\"original\":\"x\",\"applied\":\"0\"}]}", -EBADMSG },
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,"
                  "\"threads\":[{\"tid\":1,\"original\":\"0\",\"applied\":\"0\"},{\"tid\":1,\"original\":\"0\",\"applied\":\"1\"}]}",
                  -EBADMSG },
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,\"threads\":[]} x", -EBADMSG },
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,\"threads\":[]}\n", 0 },
                /* sets: optional (earlier records have none), at most one per role, CPU lists */
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,\"threads\":[],"
                  "\"sets\":[\"0\",\"1\",\"0-1\"]}", 0 },
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,\"threads\":[],"
                  "\"sets\":[\"0\",\"1\",\"0-1\",\"2\"]}", -EBADMSG },
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,\"threads\":[],"
                  "\"sets\":[1]}", -EBADMSG },
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,\"threads\":[],"
                  "\"sets\":\"0\"}", -EBADMSG },
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,\"threads\":[],"
                  "\"sets\":[\"x\"]}", -EBADMSG },
                /* attribution: optional, a string */
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,\"threads\":[],"
                  "\"sets\":[],\"attribution\":\"a\\nb\"}", 0 },
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,\"threads\":[],"
                  "\"sets\":[],\"attribution\":5}", -EBADMSG },
                { "{\"version\":1,\"boot_id\":\"\",\"pid\":1,\"start_time\":5,\"restore_on_stop\":true,\"threads\":[],"
                  "\"sets\":[],\"attribution\":null}", -EBADMSG },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                tune_affinity_record rec = {};
                int r = tune_affinity_record_parse(cases[i].text, strlen(cases[i].text), &rec);
                if (r != cases[i].error)
                        fail_msg("case %zu: got %d, want %d: %s", i, r, cases[i].error, cases[i].text);
                tune_affinity_record_done(&rec);
        }
}

static void test_name(void **state) {
        pid_t pid = 0;

        assert_int_equal(tune_affinity_record_name_pid("affinity-1234.json", &pid), 0);
        assert_int_equal(pid, 1234);
        assert_int_equal(tune_affinity_record_name_pid("affinity-1234.json.tmp", &pid), -EINVAL);
        assert_int_equal(tune_affinity_record_name_pid("affinity-.json", &pid), -EINVAL);
        assert_int_equal(tune_affinity_record_name_pid("affinity-0.json", &pid), -EINVAL);
        assert_int_equal(tune_affinity_record_name_pid("affinity-12a.json", &pid), -EINVAL);
        assert_int_equal(tune_affinity_record_name_pid("affinity-99999999999.json", &pid), -EINVAL);
        assert_int_equal(tune_affinity_record_name_pid("knobs.journal", &pid), -EINVAL);
}

static void test_file(void **state) {
        _cleanup_(tune_affinity_record_done) tune_affinity_record rec = {}, back = {};
        _cleanup_free_ pid_t *pids = NULL;
        char dir[] = "/tmp/test-affinity-record-XXXXXX", sub[64];
        unsigned n = 7;

        assert_non_null(mkdtemp(dir));
        snprintf(sub, sizeof sub, "%s/state", dir);
        /* No directory: no records. */
        assert_int_equal(tune_affinity_record_list(sub, &pids, &n), 0);
        assert_int_equal(n, 0);
        make(&rec);
        assert_int_equal(tune_affinity_record_save(sub, &rec), 0);
        rec.originals.pid = 77;
        assert_int_equal(tune_affinity_record_save(sub, &rec), 0);
        assert_int_equal(tune_affinity_record_list(sub, &pids, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(pids[0], 77);
        assert_int_equal(pids[1], 1234);
        assert_int_equal(tune_affinity_record_load(sub, 1234, &back), 0);
        assert_int_equal(back.originals.n, 3);
        tune_affinity_record_done(&back);
        assert_int_equal(tune_affinity_record_load(sub, 5, &back), -ENOENT);
        assert_int_equal(tune_affinity_record_delete(sub, 1234), 0);
        assert_int_equal(tune_affinity_record_delete(sub, 1234), 0);
        assert_int_equal(tune_affinity_record_delete(sub, 77), 0);
        free(pids);
        pids = NULL;
        assert_int_equal(tune_affinity_record_list(sub, &pids, &n), 0);
        assert_int_equal(n, 0);
        assert_int_equal(rmdir(sub), 0);
        assert_int_equal(rmdir(dir), 0);
}

/* An empty file as the daemon creates its state: 0600. */
static void touch(const char *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
}

/* In a held directory: a first record is created under its own name (no temp file), a
 * rewrite replaces it whole; an empty record (a death before its one write) is -ENODATA;
 * the temp files of records go, other files and the records stay, and the listing that
 * follows another in the same directory still sees every record. */
static void test_file_at(void **state) {
        _cleanup_(tune_affinity_record_done) tune_affinity_record rec = {}, back = {};
        _cleanup_free_ pid_t *pids = NULL;
        char dir[] = "/tmp/test-affinity-record-XXXXXX", sub[64], path[128];
        _cleanup_close_ int dfd = -EBADF;
        struct stat st;
        unsigned n = 0;

        assert_non_null(mkdtemp(dir));
        snprintf(sub, sizeof sub, "%s/state", dir);
        dfd = tune_state_dir_open(sub, true);
        assert_true(dfd >= 0);
        make(&rec);
        assert_int_equal(tune_affinity_record_save_at(dfd, &rec, true), 0);
        snprintf(path, sizeof path, "%s/affinity-1234.json.tmp", sub);
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(tune_affinity_record_load(sub, 1234, &back), 0);
        assert_int_equal(back.originals.n, 3);
        tune_affinity_record_done(&back);
        /* A rewrite, and a "first" one that finds a record there: each replaces it whole. */
        rec.originals.entries[0].tid = 1235;
        assert_int_equal(tune_affinity_record_save_at(dfd, &rec, false), 0);
        rec.originals.entries[1].tid = 1241;
        assert_int_equal(tune_affinity_record_save_at(dfd, &rec, true), 0);
        assert_int_equal(tune_affinity_record_load(sub, 1234, &back), 0);
        assert_int_equal(back.originals.entries[0].tid, 1235);
        assert_int_equal(back.originals.entries[1].tid, 1241);
        tune_affinity_record_done(&back);
        /* Empty: the daemon died between the create and the write. */
        snprintf(path, sizeof path, "%s/affinity-88.json", sub);
        touch(path);
        assert_int_equal(tune_affinity_record_load(sub, 88, &back), -ENODATA);
        /* Temp files: a record's goes, another file stays. */
        snprintf(path, sizeof path, "%s/affinity-1234.json.tmp", sub);
        touch(path);
        snprintf(path, sizeof path, "%s/knobs.journal.tmp", sub);
        touch(path);
        assert_int_equal(tune_affinity_record_clear_temps(sub), 0);
        snprintf(path, sizeof path, "%s/affinity-1234.json.tmp", sub);
        assert_int_equal(stat(path, &st), -1);
        snprintf(path, sizeof path, "%s/knobs.journal.tmp", sub);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(tune_affinity_record_list(sub, &pids, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(pids[0], 88);
        assert_int_equal(pids[1], 1234);
        assert_int_equal(tune_affinity_record_delete_at(dfd, 1234), 0);
        assert_int_equal(tune_affinity_record_delete_at(dfd, 1234), 0);
        assert_int_equal(tune_affinity_record_delete_at(dfd, 88), 0);
        assert_int_equal(rmdir(sub), 0);
        assert_int_equal(rmdir(dir), 0);
}

/* The ready record: made empty ahead, filled by one write, renamed to its process's record;
 * invisible to the listing; what a death leaves of it adopted (filled: as its process's
 * record, over an older one of that pid) or removed (empty, unreadable) at the next start. */
static void test_ready(void **state) {
        _cleanup_(tune_affinity_record_done) tune_affinity_record rec = {}, back = {};
        char dir[] = "/tmp/test-affinity-record-XXXXXX", sub[64], path[128];
        _cleanup_free_ pid_t *pids = NULL;
        _cleanup_close_ int dfd = -EBADF;
        struct stat st;
        unsigned n = 0;
        pid_t pid;
        int fd;

        assert_non_null(mkdtemp(dir));
        snprintf(sub, sizeof sub, "%s/state", dir);
        dfd = tune_state_dir_open(sub, true);
        assert_true(dfd >= 0);
        snprintf(path, sizeof path, "%s/" TUNE_AFFINITY_RECORD_READY_NAME, sub);
        make(&rec);

        /* Ready, filled, committed: pid's record, loaded as any other. */
        fd = tune_affinity_record_ready_at(dfd);
        assert_true(fd >= 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_size, 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(tune_affinity_record_list(sub, &pids, &n), 0);
        assert_int_equal(n, 0); /* not a record */
        assert_int_equal(tune_affinity_record_fill_ready(fd, &rec), 0);
        assert_int_equal(tune_affinity_record_commit_ready_at(dfd, 1234), 0);
        close(fd);
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(tune_affinity_record_load(sub, 1234, &back), 0);
        assert_int_equal(back.originals.n, 3);
        tune_affinity_record_done(&back);

        /* Nothing ready: nothing to adopt. */
        assert_int_equal(tune_affinity_record_adopt_ready(sub, &pid), 0);
        /* A death after the fill: adopted over the older record of that pid. */
        rec.originals.entries[0].tid = 1235;
        fd = tune_affinity_record_ready_at(dfd);
        assert_true(fd >= 0);
        assert_int_equal(tune_affinity_record_fill_ready(fd, &rec), 0);
        close(fd);
        assert_int_equal(tune_affinity_record_adopt_ready(sub, &pid), 1);
        assert_int_equal(pid, 1234);
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(tune_affinity_record_load(sub, 1234, &back), 0);
        assert_int_equal(back.originals.entries[0].tid, 1235);
        tune_affinity_record_done(&back);
        /* A death before the fill (empty), and a leftover that does not parse: removed. */
        fd = tune_affinity_record_ready_at(dfd);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(tune_affinity_record_adopt_ready(sub, &pid), 0);
        assert_int_equal(stat(path, &st), -1);
        fd = tune_affinity_record_ready_at(dfd);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "{\"version\":1,", 13), 13);
        close(fd);
        /* (ready_at replaces a leftover) */
        fd = tune_affinity_record_ready_at(dfd);
        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        assert_int_equal(st.st_size, 0);
        assert_int_equal(write(fd, "{\"version\":1,", 13), 13);
        close(fd);
        assert_int_equal(tune_affinity_record_adopt_ready(sub, &pid), 0);
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(tune_affinity_record_load(sub, 1234, &back), 0); /* untouched */
        tune_affinity_record_done(&back);

        /* Too long for one write: refused whole, the ready file left empty. */
        fd = tune_affinity_record_ready_at(dfd);
        assert_true(fd >= 0);
        for (pid_t t = 2000; t < 2400; t++)
                add_entry(&rec.originals, t, "0-63", "1-3");
        assert_int_equal(tune_affinity_record_fill_ready(fd, &rec), -E2BIG);
        assert_int_equal(fstat(fd, &st), 0);
        assert_int_equal(st.st_size, 0);
        close(fd);
        assert_int_equal(unlink(path), 0);

        assert_int_equal(tune_affinity_record_delete_at(dfd, 1234), 0);
        assert_int_equal(rmdir(sub), 0);
        assert_int_equal(rmdir(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_roundtrip),
                cmocka_unit_test(test_layout_is_json_c_plain),
                cmocka_unit_test(test_every_truncation_refused),
                cmocka_unit_test(test_bad_contents),
                cmocka_unit_test(test_name),
                cmocka_unit_test(test_file),
                cmocka_unit_test(test_file_at),
                cmocka_unit_test(test_ready),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
