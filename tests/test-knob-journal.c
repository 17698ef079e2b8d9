/* SPDX-License-Identifier: GPL-2.0-only */
/* The knob journal: text form round trip, every truncation and every flipped byte refused,
 * newer versions refused, the file written atomically, the state-directory lock. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "knobs/fake-tree.h"
#include "npu-tuned/journal.h"

static tune_journal *sample(void) {
        tune_journal *j = NULL;
        tune_journal_entry e1 = {
                .backend = (char *) "thp",
                .id = (char *) "thp/enabled",
                .path = (char *) "/sys/kernel/mm/transparent_hugepage/enabled",
                .cpu = -1,
                .format = TUNE_KNOB_SELECTED,
                .state = TUNE_JOURNAL_APPLIED,
                .original = (char *) "madvise",
                .desired = (char *) "never",
        };
        tune_journal_entry e2 = {
                .backend = (char *) "irq",
                .id = (char *) "irq/36",
                .path = (char *) "/proc/irq/36/smp_affinity",
                .cpu = -1,
                .format = TUNE_KNOB_CPUMASK,
                .state = TUNE_JOURNAL_REFUSED,
                .error = -EIO,
                .original = (char *) "ff,ffffffff",
                .desired = (char *) "00000001",
                .prior = (char *) "00000003",
        };
        /* Values with bytes that must be escaped: blanks, '%', '=', a newline, UTF-8. */
        tune_journal_entry e3 = {
                .backend = (char *) "cpufreq",
                .id = (char *) "cpufreq/policy4",
                .path = (char *) "/sys/devices/system/cpu/cpufreq/policy4/scaling_governor",
                .cpu = 4,
                .format = TUNE_KNOB_PLAIN,
                .state = TUNE_JOURNAL_PENDING,
                .original = (char *) "odd value=100% \xc3\xa9\n",
                .desired = (char *) "",
        };

        assert_int_equal(tune_journal_new("/tmp/root dir", "f0c62e8c-0e62-4b75-a031-2163bfff8c37", &j), 0);
        assert_int_equal(tune_journal_add(j, &e1), 0);
        assert_int_equal(tune_journal_add(j, &e2), 0);
        assert_int_equal(tune_journal_add(j, &e3), 0);
        assert_int_equal(tune_journal_add(j, &e1), -EEXIST);
        return j;
}

static void assert_same(const tune_journal *a, const tune_journal *b) {
        assert_string_equal(a->root, b->root);
        assert_string_equal(a->boot_id, b->boot_id);
        assert_int_equal(a->n, b->n);
        for (unsigned i = 0; i < a->n; i++) {
                const tune_journal_entry *x = &a->entries[i], *y = &b->entries[i];
                assert_int_equal(x->seq, y->seq);
                assert_string_equal(x->backend, y->backend);
                assert_string_equal(x->id, y->id);
                assert_string_equal(x->path, y->path);
                assert_int_equal(x->cpu, y->cpu);
                assert_int_equal(x->format, y->format);
                assert_int_equal(x->state, y->state);
                assert_int_equal(x->error, y->error);
                assert_string_equal(x->original, y->original);
                assert_string_equal(x->desired, y->desired);
                assert_string_equal(x->prior, y->prior);
        }
}

static void test_roundtrip(void **state) {
        _cleanup_(tune_journal_freep) tune_journal *j = sample(), *back = NULL;
        _cleanup_free_ char *text = NULL;
        unsigned line;
        (void) state;

        assert_int_equal(tune_journal_format(j, &text), 0);
        /* Versioned, one knob per line, no raw blank or newline inside a value. */
        assert_non_null(strstr(text, "\nnpu-tuned-journal 1\n"));
        assert_non_null(strstr(text, "original=odd%20value%3D100%25%20%C3%A9%0A desired= prior=\n"));
        assert_int_equal(tune_journal_parse(text, strlen(text), &back, &line), 0);
        assert_same(j, back);
        assert_int_equal(back->next_seq, 4);
        assert_int_equal(back->version, TUNE_JOURNAL_VERSION);

        /* An empty journal is valid too. */
        _cleanup_(tune_journal_freep) tune_journal *empty = NULL, *empty_back = NULL;
        _cleanup_free_ char *etext = NULL;
        assert_int_equal(tune_journal_new("/", "", &empty), 0);
        assert_int_equal(tune_journal_format(empty, &etext), 0);
        assert_int_equal(tune_journal_parse(etext, strlen(etext), &empty_back, &line), 0);
        assert_int_equal(empty_back->n, 0);
        assert_string_equal(empty_back->boot_id, "");
}

/* The sample journal as text, for the tests that damage it. */
static char *sample_text(void) {
        _cleanup_(tune_journal_freep) tune_journal *j = sample();
        char *text = NULL;

        assert_int_equal(tune_journal_format(j, &text), 0);
        return text;
}

static void test_every_truncation_refused(void **state) {
        _cleanup_free_ char *text = sample_text();
        size_t len = strlen(text);
        (void) state;

        for (size_t cut = 0; cut < len; cut++) {
                tune_journal *back = NULL;
                int r = tune_journal_parse(text, cut, &back, NULL);
                if (r != -EBADMSG)
                        fail_msg("a journal cut at byte %zu of %zu gave %d, not -EBADMSG", cut, len, r);
                assert_null(back);
        }
}

static void test_every_flipped_byte_refused(void **state) {
        _cleanup_free_ char *text = sample_text();
        size_t len = strlen(text);
        (void) state;

        for (size_t i = 0; i < len; i++) {
                tune_journal *back = NULL;
                char saved = text[i];
                int r;
                text[i] ^= 0x01;
                r = tune_journal_parse(text, len, &back, NULL);
                text[i] = saved;
                if (r >= 0) {
                        tune_journal_free(back);
                        fail_msg("a journal with byte %zu flipped was accepted", i);
                }
                assert_true(r == -EBADMSG || r == -EPROTONOSUPPORT);
        }
}

/* The first len bytes of text are refused with error, at line at (0: whatever line), and
 * no journal is handed back. */
static void assert_refused(const char *text, size_t len, int error, unsigned at) {
        tune_journal *back = NULL;
        unsigned line = 0;

        assert_int_equal(tune_journal_parse(text, len, &back, &line), error);
        if (at > 0)
                assert_int_equal(line, at);
        assert_null(back);
}

static void test_bad_contents(void **state) {
        (void) state;

        const char *newer = "npu-tuned-journal 2\nboot_id \nroot /\nend entries=0 fnv1a64=0000000000000000\n";
        assert_refused(newer, strlen(newer), -EPROTONOSUPPORT, 0);
        const char *no_header = "boot_id \nroot /\n";
        assert_refused(no_header, strlen(no_header), -EBADMSG, 1);
        /* An unknown field is refused at its line (before the checksum is even looked at). */
        const char *unknown = "npu-tuned-journal 1\nboot_id \nroot /\n"
                              "knob seq=1 backend=thp id=thp/enabled path=/x cpu=-1 format=plain state=applied "
                              "error=0 original=a desired=b prior= colour=red\n";
        assert_refused(unknown, strlen(unknown), -EBADMSG, 4);
        const char *bad_state = "npu-tuned-journal 1\nboot_id \nroot /\n"
                                "knob seq=1 backend=thp id=thp/enabled path=/x cpu=-1 format=plain state=maybe "
                                "error=0 original=a desired=b prior=\n";
        assert_refused(bad_state, strlen(bad_state), -EBADMSG, 4);
        const char *dup = "npu-tuned-journal 1\nboot_id \nroot /\n"
                          "knob seq=1 backend=thp id=a path=/x cpu=-1 format=plain state=applied error=0 original=a desired=b prior=\n"
                          "knob seq=2 backend=thp id=a path=/x cpu=-1 format=plain state=applied error=0 original=a desired=b prior=\n";
        assert_refused(dup, strlen(dup), -EBADMSG, 5);
        const char *nul = "npu-tuned-journal 1\n\0";
        assert_refused(nul, 21, -EBADMSG, 0);
}

static void test_file(void **state) {
        _cleanup_(tune_journal_freep) tune_journal *j = sample(), *back = NULL;
        char *dir = fake_root_new("journal");
        char state_dir[4200];
        unsigned line;
        int lock, r;
        (void) state;

        /* The state directory is created on first save. */
        snprintf(state_dir, sizeof state_dir, "%s/run/npu-tuned", dir);
        assert_int_equal(tune_journal_load(state_dir, &back, &line), -ENOENT);
        assert_int_equal(tune_journal_save(state_dir, j, NULL, NULL), 0);
        assert_int_equal(tune_journal_load(state_dir, &back, &line), 0);
        assert_same(j, back);
        _cleanup_free_ char *tmp = fake_read(dir, "run/npu-tuned/knobs.journal.tmp");
        assert_string_equal(tmp, ""); /* renamed away */

        /* A journal cut short on disk: a clear error with the line, nothing guessed. */
        _cleanup_free_ char *text = fake_read(dir, "run/npu-tuned/knobs.journal");
        text[strlen(text) * 2 / 3] = 0;
        fake_write(dir, "run/npu-tuned/knobs.journal", text, 0600);
        tune_journal *bad = NULL;
        assert_int_equal(tune_journal_load(state_dir, &bad, &line), -EBADMSG);
        assert_null(bad);
        assert_true(line > 0);

        /* The lock keeps a second owner out while the first holds it. */
        lock = tune_state_dir_lock(state_dir);
        assert_true(lock >= 0);
        r = tune_state_dir_lock(state_dir);
        assert_int_equal(r, -EBUSY);
        close(lock);
        lock = tune_state_dir_lock(state_dir);
        assert_true(lock >= 0);
        close(lock);

        assert_int_equal(tune_journal_delete(state_dir), 0);
        assert_int_equal(tune_journal_load(state_dir, &bad, &line), -ENOENT);
        assert_int_equal(tune_journal_delete(state_dir), 0);
        fake_rm(dir);
}

static void test_seq_order(void **state) {
        _cleanup_(tune_journal_freep) tune_journal *j = NULL;
        tune_journal_entry e = { .backend = (char *) "thp", .path = (char *) "/x", .cpu = -1 };
        (void) state;

        assert_int_equal(tune_journal_new("/", "", &j), 0);
        e.id = (char *) "a";
        e.seq = 5;
        assert_int_equal(tune_journal_add(j, &e), 0);
        e.id = (char *) "b";
        e.seq = 2; /* an adopted entry keeps its old number and its place */
        assert_int_equal(tune_journal_add(j, &e), 0);
        e.id = (char *) "c";
        e.seq = 0; /* the next one */
        assert_int_equal(tune_journal_add(j, &e), 0);
        assert_string_equal(j->entries[0].id, "b");
        assert_string_equal(j->entries[1].id, "a");
        assert_string_equal(j->entries[2].id, "c");
        assert_int_equal(j->entries[2].seq, 6);
        tune_journal_remove(j, 1);
        assert_int_equal(j->n, 2);
        assert_string_equal(j->entries[1].id, "c");
}

/* The example in docs/journal.md is a valid journal. */
static void test_documented_example(void **state) {
        const char *src = getenv("NPU_SOURCE_ROOT");
        _cleanup_free_ char *doc = NULL;
        _cleanup_(tune_journal_freep) tune_journal *j = NULL;
        char path[4096];
        unsigned line = 0;
        (void) state;

        if (!src)
                skip();
        snprintf(path, sizeof path, "%s/docs", src);
        doc = fake_read(path, "journal.md");
        char *start = strstr(doc, "```\n# npu-tuned knob journal");
        assert_non_null(start);
        start += 4;
        char *end = strstr(start, "```");
        assert_non_null(end);
        assert_int_equal(tune_journal_parse(start, (size_t) (end - start), &j, &line), 0);
        assert_int_equal(j->n, 2);
        assert_string_equal(tune_journal_find(j, "irq/36")->original, "ff");
        assert_int_equal(tune_journal_find(j, "irq/36")->error, -EIO);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_roundtrip),
                cmocka_unit_test(test_every_truncation_refused),
                cmocka_unit_test(test_every_flipped_byte_refused),
                cmocka_unit_test(test_bad_contents),
                cmocka_unit_test(test_file),
                cmocka_unit_test(test_seq_order),
                cmocka_unit_test(test_documented_example),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
