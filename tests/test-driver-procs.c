/* SPDX-License-Identifier: GPL-2.0-only */
/* The driver query's lines (include/npu-tuned/driver-procs.h): the outputs in
 * tests/driver/outputs/, then hostile ones (overlong lines, garbage, pids out of range,
 * too many lines, a cut last line), and the driver as the last attribution source. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "npu-tuned/attribution.h"
#include "npu-tuned/driver-procs.h"
#include "npu-tuned/macro.h"

static char *read_fixture(const char *name, size_t *len) {
        char path[4096];
        const char *src = getenv("NPU_SOURCE_ROOT");
        FILE *f;
        char *buf = malloc(TUNE_DRIVER_OUTPUT_MAX);

        snprintf(path, sizeof path, "%s/tests/driver/outputs/%s", src ? src : ".", name);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_non_null(buf);
        *len = fread(buf, 1, TUNE_DRIVER_OUTPUT_MAX, f);
        fclose(f);
        return buf;
}

static tune_driver_procs parse(const char *s) {
        tune_driver_procs d;
        assert_int_equal(tune_driver_procs_parse(s, strlen(s), &d), 0);
        return d;
}

static void test_recorded(void **state) {
        tune_driver_procs d;
        size_t len;
        char *buf;

        buf = read_fixture("nvml-two-gpus.txt", &len);
        assert_int_equal(tune_driver_procs_parse(buf, len, &d), 0);
        free(buf);
        assert_int_equal(d.n, 3);
        assert_int_equal(d.n_rejected, 0);
        assert_false(d.truncated);
        assert_int_equal(d.n_sources, 1);
        assert_string_equal(d.sources[0], "nvml");
        assert_int_equal(d.items[0].pid, 4242);
        assert_string_equal(d.items[0].pci, "0000:3b:00.0");
        assert_string_equal(d.items[1].pci, "0000:5e:00.0");
        assert_int_equal(d.items[2].pid, 5151);
        tune_driver_procs_done(&d);

        buf = read_fixture("dcmi-atlas.txt", &len);
        assert_int_equal(tune_driver_procs_parse(buf, len, &d), 0);
        free(buf);
        assert_int_equal(d.n, 3);
        assert_int_equal(d.n_sources, 2); /* an NVML with no GPU process after it */
        assert_string_equal(d.sources[d.items[2].source], "dcmi");
        assert_int_equal(d.items[2].pid, 120733);
        tune_driver_procs_done(&d);

        buf = read_fixture("nvml-idle.txt", &len);
        assert_int_equal(tune_driver_procs_parse(buf, len, &d), 0);
        free(buf);
        assert_int_equal(d.n, 0);
        assert_int_equal(d.n_rejected, 0);
        tune_driver_procs_done(&d);

        /* Nothing at all (no library answered). */
        assert_int_equal(tune_driver_procs_parse(NULL, 0, &d), 0);
        assert_int_equal(d.n, 0);
        tune_driver_procs_done(&d);
        assert_int_equal(tune_driver_procs_parse(NULL, 1, &d), -EINVAL);
}

/* s (len bytes, 0: strlen) gives exactly one process, pid, and rejects that many lines. */
static void expect_one(const char *s, size_t len, pid_t pid, unsigned rejected) {
        tune_driver_procs d;

        assert_int_equal(tune_driver_procs_parse(s, len ? len : strlen(s), &d), 0);
        assert_int_equal(d.n, 1);
        assert_int_equal(d.items[0].pid, pid);
        assert_int_equal(d.n_rejected, rejected);
        tune_driver_procs_done(&d);
}

static void test_hostile(void **state) {
        static const char *const bad[] = {
                "0 0000:3b:00.0",            /* pid 0 */
                "-1 0000:3b:00.0",           /* negative */
                "+7 0000:3b:00.0",           /* signed */
                "007 0000:3b:00.0",          /* leading zeros */
                "4194305 0000:3b:00.0",      /* above PID_MAX_LIMIT */
                "99999999999999999999 0000:3b:00.0", /* overflows any integer */
                "42 0000:3B:00.0",           /* upper case: not as sysfs writes it */
                "42 00000000:3b:00.0",       /* NVML's eight-digit domain, not normalized */
                "42 3b:00.0",                /* no domain */
                "42 0000:3b:20.0",           /* device number above 31 */
                "42 0000:3b:00.8",           /* function above 7 */
                "42  0000:3b:00.0",          /* two spaces */
                "42 0000:3b:00.0 ",          /* trailing space */
                "42\t0000:3b:00.0",          /* a tab */
                "42 ../../etc/passwd",
                "4x2 0000:3b:00.0",
                "",
                "via",
                "via NVML",                  /* a source is lower-case letters */
                "via nvml-and-more",
                "via \x1b[31mred",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char buf[256];
                tune_driver_procs d;

                snprintf(buf, sizeof buf, "via nvml\n%s\n", bad[i]);
                d = parse(buf);
                if (d.n != 0 || d.n_rejected != 1)
                        fail_msg("line %zu (\"%s\"): %zu taken, %u rejected", i, bad[i], d.n, d.n_rejected);
                tune_driver_procs_done(&d);
        }

        /* A pid line before any "via": no library said it. */
        expect_one("42 0000:3b:00.0\nvia nvml\n43 0000:3b:00.0\n", 0, 43, 1);
        /* The highest pid the kernel can give. */
        expect_one("via dcmi\n4194304 0000:c1:00.0\n", 0, 4194304, 0);
        /* A NUL inside a line. */
        static const char nul[] = "via nvml\n42\0 0000:3b:00.0\n43 0000:3b:00.0\n";
        expect_one(nul, sizeof nul - 1, 43, 1);
        /* A last line without its newline (the output was cut): not taken. */
        expect_one("via nvml\n42 0000:3b:00.0\n43 0000:3b:0", 0, 42, 1);
        /* Duplicates are kept once. */
        expect_one("via nvml\n42 0000:3b:00.0\n42 0000:3b:00.0\n", 0, 42, 0);
        /* After a fifth library name, what follows is nobody's. */
        expect_one("via a\nvia b\nvia c\nvia d\nvia e\n42 0000:3b:00.0\nvia a\n43 0000:3b:00.0\n", 0, 43, 2);
}

static void test_bounds(void **state) {
        size_t size = 2 * TUNE_DRIVER_OUTPUT_MAX;
        char *buf = malloc(size + 1);
        tune_driver_procs d;
        size_t o = 0;

        assert_non_null(buf);
        /* An overlong line between good ones. */
        o = (size_t) snprintf(buf, size, "via nvml\n1 0000:3b:00.0\n");
        memset(buf + o, '7', 1000);
        o += 1000;
        o += (size_t) snprintf(buf + o, size - o, " 0000:3b:00.0\n2 0000:3b:00.0\n");
        assert_int_equal(tune_driver_procs_parse(buf, o, &d), 0);
        assert_int_equal(d.n, 2);
        assert_int_equal(d.n_rejected, 1);
        tune_driver_procs_done(&d);

        /* Too many lines: the first TUNE_DRIVER_LINES_MAX are read, the rest ignored. */
        o = (size_t) snprintf(buf, size, "via nvml\n");
        for (unsigned i = 1; i <= 2 * TUNE_DRIVER_LINES_MAX; i++)
                o += (size_t) snprintf(buf + o, size - o, "%u 0000:3b:00.0\n", i);
        assert_int_equal(tune_driver_procs_parse(buf, o, &d), 0);
        assert_true(d.truncated);
        assert_int_equal(d.n, TUNE_DRIVER_LINES_MAX - 1);
        assert_int_equal(d.items[d.n - 1].pid, TUNE_DRIVER_LINES_MAX - 1);
        tune_driver_procs_done(&d);

        /* More bytes than the bound, in short lines of garbage. */
        memset(buf, '\n', size);
        assert_int_equal(tune_driver_procs_parse(buf, size, &d), 0);
        assert_true(d.truncated);
        assert_int_equal(d.n, 0);
        tune_driver_procs_done(&d);
        free(buf);
}

/* Two GPUs and an NPU. */
static tune_accel items[] = {
        { .kind = "ascend", .index = 0, .pci = "0000:c1:00.0" },
        { .kind = "nvidia", .index = 0, .pci = "0000:5e:00.0" },
        { .kind = "nvidia", .index = 1, .pci = "0000:3b:00.0" },
};
static const tune_accels host = { .items = items, .n = ELEMENTSOF(items) };

static void test_lookup_and_attribute(void **state) {
        tune_driver_procs d = parse("via nvml\n4242 0000:3b:00.0\n4242 0000:5e:00.0\n4242 0000:99:00.0\n"
                                    "via dcmi\n77 0000:c1:00.0\n");
        tune_attribution a;
        const char *source;
        unsigned idx[ELEMENTSOF(items)];
        char origin[64];
        char *s;

        /* In the host's order; a device the host does not have is no device. */
        assert_int_equal(tune_driver_procs_lookup(&d, 4242, &host, idx, &source), 2);
        assert_int_equal(idx[0], 1);
        assert_int_equal(idx[1], 2);
        assert_string_equal(source, "nvml");
        assert_int_equal(tune_driver_procs_lookup(&d, 77, &host, idx, &source), 1);
        assert_string_equal(source, "dcmi");
        assert_int_equal(tune_driver_procs_lookup(&d, 78, &host, idx, &source), 0);
        assert_null(source);
        assert_int_equal(tune_driver_procs_lookup(&d, -4242, &host, idx, &source), 0);

        /* The last source: a wiped environment, no device files, the driver knows. */
        tune_env_capture wiped = { .state = TUNE_ENV_WIPED };
        tune_attribution_input in = { .accels = &host, .env = &wiped, .rank = -1, .driver = &d, .pid = 4242 };
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_DRIVER);
        assert_string_equal(a.variable, "nvml");
        assert_int_equal(tune_attribution_format_accels(&a, &s), 0);
        assert_string_equal(s, "nvidia:0,nvidia:1");
        free(s);
        tune_attribution_describe_source(&a, &wiped, origin, sizeof origin);
        assert_string_equal(origin, "from the driver (nvml)");
        assert_string_equal(tune_attribution_source_to_string(a.source), "driver");
        tune_attribution_done(&a);

        /* Not asked (NULL) or another pid: nothing. */
        in.driver = NULL;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_NONE);
        tune_attribution_done(&a);

        /* The environment comes first. */
        char *vars[] = { strdup("CUDA_VISIBLE_DEVICES=1"), NULL };
        tune_env_capture env = { .state = TUNE_ENV_READ, .vars = vars, .n = 1 };
        in.driver = &d;
        in.env = &env;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_ENV);
        tune_attribution_done(&a);
        free(vars[0]);

        /* A rule's explicit list, or "none", is never overridden. */
        tune_policy_rule none = { .accel_mode = TUNE_ACCEL_NONE };
        in.env = &wiped;
        in.rule = &none;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_NONE);
        tune_attribution_done(&a);
        tune_driver_procs_done(&d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_recorded),
                cmocka_unit_test(test_hostile),
                cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_lookup_and_attribute),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
