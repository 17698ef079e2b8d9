/* SPDX-License-Identifier: GPL-2.0-only */
/* irqbalance's control socket protocol, text side (libtune/knobs/irqbalance-protocol.c):
 * replies as irqbalance 1.9 writes them, and the commands' limits (its 500-byte buffer,
 * its parser stopping at IRQ 0). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "npu-tuned/irqbalance.h"

static void test_parse_setup(void **state) {
        static const char reply[] = "SLEEP 10 IRQ 43 LOAD 0 DIFF 0 CLASS 0 IRQ 28 LOAD 12 DIFF 3 CLASS 4 BANNED 00000000,00000006";
        tune_irqbalance_setup s = {};
        _cleanup_free_ char *cpus = NULL;
        (void) state;

        assert_int_equal(tune_irqbalance_parse_setup(reply, strlen(reply), &s), 0);
        assert_int_equal(s.sleep_s, 10);
        assert_int_equal(s.n_banned_irqs, 2);
        assert_int_equal(s.banned_irqs[0], 28);
        assert_int_equal(s.banned_irqs[1], 43);
        assert_int_equal(tune_cpuset_format_list(&s.banned_cpus, &cpus), 0);
        assert_string_equal(cpus, "1-2");
        tune_irqbalance_setup_done(&s);

        assert_int_equal(tune_irqbalance_parse_setup("SLEEP 1 BANNED 0", 16, &s), 0);
        assert_int_equal(s.n_banned_irqs, 0);
        tune_irqbalance_setup_done(&s);
        /* Not irqbalance talking (a squatter on its abstract name), or cut short. */
        assert_int_equal(tune_irqbalance_parse_setup("HELLO", 5, &s), -EBADMSG);
        assert_int_equal(tune_irqbalance_parse_setup("SLEEP 10 IRQ 4 LOAD", 19, &s), -EBADMSG);
        assert_int_equal(tune_irqbalance_parse_setup("SLEEP 10 IRQ x LOAD 0 DIFF 0 CLASS 0 BANNED 0", 45, &s), -EBADMSG);
        assert_int_equal(tune_irqbalance_parse_setup("SLEEP 10", 8, &s), -EBADMSG);
}

static void test_format(void **state) {
        const unsigned mine[] = { 43, 0, 28 }, theirs[] = { 28, 7 };
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
        unsigned many[200];
        char *e = NULL;
        tune_cpuset cpus = {};
        (void) state;

        assert_int_equal(tune_irqbalance_format_ban_irqs(theirs, 2, mine, 3, &a), 0);
        assert_string_equal(a, "settings ban irqs 7 28 43");
        assert_int_equal(tune_irqbalance_format_ban_irqs(NULL, 0, NULL, 0, &b), 0);
        assert_string_equal(b, "settings ban irqs NONE");
        for (unsigned i = 0; i < 200; i++)
                many[i] = 1000 + i;
        assert_int_equal(tune_irqbalance_format_ban_irqs(many, 200, NULL, 0, &e), -E2BIG);
        assert_int_equal(tune_irqbalance_format_ban_cpus(NULL, &c), 0);
        assert_string_equal(c, "settings cpus NULL");
        assert_int_equal(tune_cpuset_parse_list(&cpus, "2-23,26"), 0);
        assert_int_equal(tune_irqbalance_format_ban_cpus(&cpus, &d), 0);
        assert_string_equal(d, "settings cpus 2-23,26");
        tune_cpuset_done(&cpus);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_setup),
                cmocka_unit_test(test_format),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
