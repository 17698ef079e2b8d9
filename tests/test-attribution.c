/* SPDX-License-Identifier: GPL-2.0-only */
/* Accelerator attribution: every source, visible-device lists with ids that do not exist,
 * malformed values, UUID forms, wiped and unreadable environments. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <cmocka.h>

#include "npu-tuned/attribution.h"
#include "npu-tuned/macro.h"

/* A host: 8 Ascend NPUs (davinci0-7), 4 NVIDIA GPUs whose minor numbers are not in PCI
 * order, 2 AMD GPUs, 2 of a policy kind "edu". Sorted by kind, then index, as
 * tune_accels_discover() returns them. */
static tune_accel items[16];
static tune_accels host = { .items = items };

static void add(const char *kind, int index, const char *pci, uint32_t device, const char *uuid) {
        tune_accel *a = &items[host.n++];
        *a = (tune_accel){ .index = index, .vendor = 0x1234, .device = device, .numa_node = -1 };
        snprintf(a->kind, sizeof a->kind, "%s", kind);
        snprintf(a->pci, sizeof a->pci, "%s", pci);
        if (uuid)
                snprintf(a->uuid, sizeof a->uuid, "%s", uuid);
}

static int setup_host(void **state) {
        host.n = 0;
        add("amd", 0, "0000:a1:00.0", 0x74a1, NULL);
        add("amd", 1, "0000:a2:00.0", 0x74a1, NULL);
        for (int i = 0; i < 8; i++) {
                char pci[13];
                snprintf(pci, sizeof pci, "0000:%02x:00.0", 0xc1 + i);
                add("ascend", i, pci, 0xd802, NULL);
        }
        add("edu", 0, "0000:00:05.0", 0x11e8, NULL);
        add("edu", 1, "0000:00:06.0", 0x11e8, NULL);
        /* nvidia0 sits at the highest PCI address: logical CUDA 0 (PCI order) is nvidia1. */
        add("nvidia", 0, "0000:ca:00.0", 0x2330, "GPU-8f3c1a2b-0000-1111-2222-333333333333");
        add("nvidia", 1, "0000:18:00.0", 0x2330, "GPU-12ab34cd-0000-1111-2222-444444444444");
        add("nvidia", 2, "0000:3a:00.0", 0x2330, "GPU-12ab99ff-0000-1111-2222-555555555555");
        add("nvidia", 3, "0000:5d:00.0", 0x2330, "GPU-77777777-0000-1111-2222-666666666666");
        *state = NULL;
        return 0;
}

/* A capture from "NAME=value" strings. */
static tune_env_capture env_of(const char *const *vars, unsigned n) {
        tune_env_capture e = { .state = TUNE_ENV_READ, .vars = calloc(n + 1, sizeof(char *)), .n = n };
        for (unsigned i = 0; i < n; i++)
                e.vars[i] = strdup(vars[i]);
        return e;
}

static tune_attribution run(const tune_policy_rule *rule, const tune_env_capture *env, int rank) {
        tune_attribution a;
        tune_attribution_input in = { .rule = rule, .accels = &host, .env = env, .rank = rank };
        assert_int_equal(tune_attribute(&in, &a), 0);
        return a;
}

static void assert_accels(const tune_attribution *a, const char *expect) {
        _cleanup_free_ char *s = NULL;
        assert_int_equal(tune_attribution_format_accels(a, &s), 0);
        assert_string_equal(s, expect);
}

static void test_env_capture(void **state) {
        static const char *const names[] = { "CUDA_VISIBLE_DEVICES", "RANK", "ASCEND_RT_VISIBLE_DEVICES" };
        tune_env_capture e;
        (void) state;

        /* The first occurrence wins (getenv); other names are not kept; an unterminated
         * last entry counts. */
        static const char raw[] = "PATH=/bin\0CUDA_VISIBLE_DEVICES=1,0\0CUDA_VISIBLE_DEVICES=3\0garbage\0=x\0RANK=2";
        assert_int_equal(tune_env_capture_parse(raw, sizeof raw - 1, false, names, 3, &e), 0);
        assert_int_equal(e.state, TUNE_ENV_READ);
        assert_int_equal(e.n, 2);
        assert_string_equal(tune_env_capture_get(&e, "CUDA_VISIBLE_DEVICES"), "1,0");
        assert_string_equal(tune_env_capture_get(&e, "RANK"), "2");
        assert_null(tune_env_capture_get(&e, "PATH"));
        assert_null(tune_env_capture_get(&e, "ASCEND_RT_VISIBLE_DEVICES"));
        assert_null(tune_env_capture_get(&e, "CUDA"));
        assert_true(tune_env_capture_usable(&e));
        tune_env_capture_done(&e);

        /* setproctitle overwrote it: NULs, or the title's tail. */
        static const char wiped[] = "\0\0\0\0\0\0\0\0";
        assert_int_equal(tune_env_capture_parse(wiped, sizeof wiped - 1, false, names, 3, &e), 0);
        assert_int_equal(e.state, TUNE_ENV_WIPED);
        assert_false(tune_env_capture_usable(&e));
        tune_env_capture_done(&e);
        static const char tail[] = "_TP3\0\0\0\0";
        assert_int_equal(tune_env_capture_parse(tail, sizeof tail - 1, false, names, 3, &e), 0);
        assert_int_equal(e.state, TUNE_ENV_WIPED);
        tune_env_capture_done(&e);

        /* An empty environment (env -i) is a read one, not a wiped one. */
        assert_int_equal(tune_env_capture_parse("", 0, false, names, 3, &e), 0);
        assert_int_equal(e.state, TUNE_ENV_READ);
        assert_int_equal(e.n, 0);
        tune_env_capture_done(&e);

        /* A value past TUNE_ENV_VALUE_MAX is dropped, not cut. */
        size_t big = TUNE_ENV_VALUE_MAX + 64;
        char *b = malloc(big);
        memcpy(b, "RANK=", 5);
        memset(b + 5, '7', big - 5);
        assert_int_equal(tune_env_capture_parse(b, big, true, names, 3, &e), 0);
        assert_null(tune_env_capture_get(&e, "RANK"));
        assert_true(e.truncated);
        /* TUNE_ENV_VALUE_MAX bytes are kept, one more dropped. */
        tune_env_capture_done(&e);
        assert_int_equal(tune_env_capture_parse(b, 5 + TUNE_ENV_VALUE_MAX, false, names, 3, &e), 0);
        assert_int_equal(strlen(tune_env_capture_get(&e, "RANK")), TUNE_ENV_VALUE_MAX);
        tune_env_capture_done(&e);
        assert_int_equal(tune_env_capture_parse(b, 6 + TUNE_ENV_VALUE_MAX, false, names, 3, &e), 0);
        assert_null(tune_env_capture_get(&e, "RANK"));
        free(b);

        /* More names than the first-byte index has bits (64): the later ones are found too;
         * a name no NAME=value entry can have is never found. */
        char many_buf[70][8];
        const char *many[71];
        for (unsigned i = 0; i < 70; i++) {
                snprintf(many_buf[i], sizeof many_buf[i], "V%u", i);
                many[i] = many_buf[i];
        }
        many[70] = "V-1";
        static const char vars[] = "V69=a\0V3=b\0V63=c\0V630=d\0W=e\0V64=f\0V-1=g\0V3=h\0V5";
        tune_env_capture_done(&e);
        assert_int_equal(tune_env_capture_parse(vars, sizeof vars - 1, false, many, 71, &e), 0);
        assert_int_equal(e.n, 4);
        assert_string_equal(tune_env_capture_get(&e, "V69"), "a");
        assert_string_equal(tune_env_capture_get(&e, "V3"), "b");
        assert_string_equal(tune_env_capture_get(&e, "V63"), "c");
        assert_string_equal(tune_env_capture_get(&e, "V64"), "f");
        assert_null(tune_env_capture_get(&e, "V630"));
        assert_null(tune_env_capture_get(&e, "V-1"));
        assert_null(tune_env_capture_get(&e, "V5"));

        /* Names that share their first bytes, one of one byte: each entry is the name up to
         * its '=' and no other; an entry without '=' or with the name alone is none; the
         * first occurrence of each wins; a one-byte entry or an empty one is skipped; the
         * unterminated last entry counts, and is kept whole. */
        static const char *const close_names[] = { "RANK", "RANKS", "R", "RA", "LOCAL_RANK", "LOCAL_RANKS" };
        static const char close_vars[] = "RANKS\0R\0\0RANK\0RA=x\0R=1\0RANK=2\0RANKS=3\0R=4\0RANK=5\0RANKSX=6\0"
                                         "LOCAL_RANK_=7\0LOCAL_RANKS=8\0=R\0R\0LOCAL_RANK=9";
        tune_env_capture_done(&e);
        assert_int_equal(tune_env_capture_parse(close_vars, sizeof close_vars - 1, false, close_names, 6, &e), 0);
        assert_int_equal(e.state, TUNE_ENV_READ);
        assert_int_equal(e.n, 6);
        assert_string_equal(e.vars[0], "RA=x");
        assert_string_equal(e.vars[1], "R=1");
        assert_string_equal(e.vars[2], "RANK=2");
        assert_string_equal(e.vars[3], "RANKS=3");
        assert_string_equal(e.vars[4], "LOCAL_RANKS=8");
        assert_string_equal(e.vars[5], "LOCAL_RANK=9");
        /* The same, cut in the middle of its last entry (the read bound): what is there. */
        tune_env_capture_done(&e);
        assert_int_equal(tune_env_capture_parse(close_vars, sizeof close_vars - 2, true, close_names, 6, &e), 0);
        assert_int_equal(e.n, 6);
        assert_string_equal(tune_env_capture_get(&e, "LOCAL_RANK"), "");
        assert_true(e.truncated);
        /* ... and cut just after the '=' of "R=": the name alone is no entry. */
        static const char cut[] = "PATH=/bin\0R=";
        tune_env_capture_done(&e);
        assert_int_equal(tune_env_capture_parse(cut, sizeof cut - 2, true, close_names, 6, &e), 0);
        assert_int_equal(e.state, TUNE_ENV_READ);
        assert_int_equal(e.n, 0);
        assert_int_equal(tune_env_capture_parse(cut, sizeof cut - 1, true, close_names, 6, &e), 0);
        assert_string_equal(tune_env_capture_get(&e, "R"), "");
        /* A title's bytes before the first NAME=value entry: not a name (a wanted name's
         * first two bytes in an entry without '='); the environment is read. */
        static const char titled[] = "RANK 3 worker\0\0RANK=1";
        tune_env_capture_done(&e);
        assert_int_equal(tune_env_capture_parse(titled, sizeof titled - 1, false, close_names, 6, &e), 0);
        assert_int_equal(e.state, TUNE_ENV_READ);
        assert_int_equal(e.n, 1);
        assert_string_equal(tune_env_capture_get(&e, "RANK"), "1");
        /* A name listed twice: kept once. */
        static const char *const twice[] = { "RANK", "RANK" };
        tune_env_capture_done(&e);
        assert_int_equal(tune_env_capture_parse("RANK=1\0RANK=2", 13, false, twice, 2, &e), 0);
        assert_int_equal(e.n, 1);
        assert_string_equal(tune_env_capture_get(&e, "RANK"), "1");

        /* Copies are deep. */
        tune_env_capture c;
        tune_env_capture_done(&e);
        assert_int_equal(tune_env_capture_parse(raw, sizeof raw - 1, false, names, 3, &e), 0);
        assert_int_equal(tune_env_capture_copy(&c, &e), 0);
        tune_env_capture_done(&e);
        assert_string_equal(tune_env_capture_get(&c, "RANK"), "2");
        tune_env_capture_done(&c);
}

/* What tune_env_capture_parse() keeps, the plain way: each entry (to its NUL or the end)
 * is NAME=value of the first name in the list it starts with followed by '=', kept when
 * its value fits and the name was not kept before; wiped when len > 0 and no entry has
 * the NAME=value form. */
static bool ref_name_char(char c, bool first) {
        return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9');
}

static bool ref_valid_name(const char *n) {
        for (size_t i = 0; n[i]; i++)
                if (!ref_name_char(n[i], i == 0))
                        return false;
        return n[0] != 0;
}

static void ref_parse(const char *buf, size_t len, const char *const *names, unsigned n_names, char **kept,
                      unsigned *n_kept, bool *wiped) {
        bool any = false;

        *n_kept = 0;
        for (size_t pos = 0; pos < len;) {
                const char *s = buf + pos;
                size_t elen = strnlen(s, len - pos), i = 0;

                pos += elen + 1;
                while (i < elen && ref_name_char(s[i], i == 0))
                        i++;
                if (i > 0 && i < elen && s[i] == '=')
                        any = true;
                for (unsigned k = 0; k < n_names; k++) {
                        size_t nl = strlen(names[k]);
                        bool dup = false;

                        if (!ref_valid_name(names[k]) || nl >= elen || s[nl] != '=' || memcmp(s, names[k], nl) != 0)
                                continue;
                        for (unsigned j = 0; j < *n_kept; j++)
                                dup = dup || (strncmp(kept[j], names[k], nl) == 0 && kept[j][nl] == '=');
                        if (!dup && elen - nl - 1 <= TUNE_ENV_VALUE_MAX)
                                kept[(*n_kept)++] = strndup(s, elen);
                        break;
                }
        }
        *wiped = len > 0 && !any;
}

/* Random environments (bytes that make names, '=', NULs, digits, others; entries across
 * every place in the 16 bytes the parser looks at together; unterminated last entries;
 * values past the bound), parsed with a short list of names that share their first bytes
 * and with one longer than the index's 63 bits: the same as the plain way, every time. */
static void test_env_capture_random(void **state) {
        static const char *const words[] = { "RANK", "RANKS", "R", "RA", "LOCAL_RANK", "CUDA_VISIBLE_DEVICES",
                                             "CUDA_DEVICE_ORDER", "PATH", "V1", "V70", "=", "==", "x", "9" };
        static const char *const short_names[] = { "RANK", "RANKS", "R", "RA", "LOCAL_RANK", "CUDA_VISIBLE_DEVICES",
                                                   "CUDA_DEVICE_ORDER", "9BAD", "" };
        char many_buf[72][8];
        const char *many[75];
        uint64_t x = 88172645463325252ULL;
        size_t cap = 3 * TUNE_ENV_VALUE_MAX;
        char *buf = malloc(cap);
        (void) state;

        assert_non_null(buf);
        for (unsigned i = 0; i < 72; i++) {
                snprintf(many_buf[i], sizeof many_buf[i], "V%u", i);
                many[i] = many_buf[i];
        }
        many[72] = "RANK";
        many[73] = "R";
        many[74] = "V-1";
        for (unsigned round = 0; round < 20000; round++) {
                const char *const *names = round % 2 ? many : short_names;
                unsigned n_names = round % 2 ? 75 : 9;
                size_t len = 0, target;
                char *kept[80];
                unsigned n_kept;
                bool wiped;
                tune_env_capture e;

#define NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17)
                target = NEXT() % (round % 97 == 0 ? cap - 64 : 200);
                while (len < target) {
                        unsigned what = (unsigned) (NEXT() % 8);
                        if (what < 3) {
                                const char *w = words[NEXT() % (sizeof words / sizeof *words)];
                                size_t wl = strlen(w);
                                if (len + wl > target)
                                        break;
                                memcpy(buf + len, w, wl);
                                len += wl;
                        } else if (what == 3)
                                buf[len++] = 0;
                        else if (what == 4)
                                buf[len++] = '=';
                        else if (what == 5)
                                buf[len++] = (char) ('0' + NEXT() % 10);
                        else if (what == 6)
                                buf[len++] = (char) (NEXT() % 256);
                        else { /* a run of one byte: long values, NULs together */
                                size_t run = NEXT() % (round % 97 == 0 ? TUNE_ENV_VALUE_MAX + 8 : 40);
                                char c = (char) "a\0=7"[NEXT() % 4];
                                if (len + run > target)
                                        run = target - len;
                                memset(buf + len, c, run);
                                len += run;
                        }
                }
                ref_parse(buf, len, names, n_names, kept, &n_kept, &wiped);
                /* In a block of its own size: a byte read past it is the sanitizers' error. */
                char *exact = malloc(len ? len : 1);
                assert_non_null(exact);
                memcpy(exact, buf, len);
                assert_int_equal(tune_env_capture_parse(exact, len, false, names, n_names, &e), 0);
                free(exact);
                assert_int_equal(e.state, wiped ? TUNE_ENV_WIPED : TUNE_ENV_READ);
                assert_int_equal(e.n, n_kept);
                for (unsigned i = 0; i < n_kept; i++) {
                        assert_string_equal(e.vars[i], kept[i]);
                        free(kept[i]);
                }
                tune_env_capture_done(&e);
#undef NEXT
        }
        free(buf);
}

static void test_env_names(void **state) {
        tune_policy_kind kinds[] = { { .kind = { .name = "edu" }, .visible_env = (char *) "EDU_VISIBLE_DEVICES" } };
        tune_policy_rule rules[] = {
                { .rank_source = TUNE_RANK_ENV, .rank_env = (char *) "RANK" },
                { .rank_source = TUNE_RANK_ENV, .rank_env = (char *) "RANK" },
                { .rank_source = TUNE_RANK_CMDLINE, .rank_env = (char *) "IGNORED" },
        };
        tune_policy p = { .kinds = kinds, .n_kinds = 1, .rules = rules, .n_rules = 3 };
        char **names;
        unsigned n;
        (void) state;

        assert_int_equal(tune_attribution_env_names(&p, &names, &n), 0);
        assert_int_equal(n, 11);
        assert_string_equal(names[6], "EDU_VISIBLE_DEVICES");
        assert_string_equal(names[7], "RANK");
        /* The engines' binding switches (include/npu-tuned/engine-binding.h) come last. */
        assert_string_equal(names[8], "SGLANG_NUMA_BIND_V2");
        assert_null(names[11]);
        tune_strv_free(names);
        assert_int_equal(tune_attribution_env_names(NULL, &names, &n), 0);
        assert_int_equal(n, 9);
        tune_strv_free(names);
}

static void test_visible_list(void **state) {
        unsigned base[4] = { 12, 13, 14, 15 }; /* the nvidia items, in minor order */
        unsigned out[4], n, unknown;
        (void) state;

        assert_string_equal(host.items[12].kind, "nvidia");
        /* CUDA semantics: stop at the first invalid entry. */
        assert_int_equal(tune_visible_list_parse("0,,x", &host, base, 4, TUNE_VISIBLE_CUDA_STOP, out, &n, &unknown), 0);
        assert_int_equal(n, 1);
        assert_int_equal(out[0], 12);
        assert_int_equal(unknown, 1);
        assert_int_equal(tune_visible_list_parse("2,7,1", &host, base, 4, TUNE_VISIBLE_CUDA_STOP, out, &n, &unknown), 0);
        assert_int_equal(n, 1);
        assert_int_equal(out[0], 14);
        /* Skipping semantics: invalid entries dropped and counted. */
        assert_int_equal(tune_visible_list_parse("2,7,x,,1", &host, base, 4, 0, out, &n, &unknown), 0);
        assert_int_equal(n, 2);
        assert_int_equal(out[0], 14);
        assert_int_equal(out[1], 13);
        assert_int_equal(unknown, 3);
        /* "-1" and "" hide every device. */
        assert_int_equal(tune_visible_list_parse("-1", &host, base, 4, TUNE_VISIBLE_CUDA_STOP, out, &n, &unknown), 0);
        assert_int_equal(n, 0);
        assert_int_equal(tune_visible_list_parse("", &host, base, 4, TUNE_VISIBLE_CUDA_STOP, out, &n, &unknown), 0);
        assert_int_equal(n, 0);
        assert_int_equal(unknown, 0);
        /* Blanks, duplicates. */
        assert_int_equal(tune_visible_list_parse(" 3 , 3,0 ", &host, base, 4, TUNE_VISIBLE_CUDA_STOP, out, &n, &unknown), 0);
        assert_int_equal(n, 2);
        assert_int_equal(out[0], 15);
        assert_int_equal(out[1], 12);
        /* UUIDs: whole, unique prefix, ambiguous prefix (invalid), any case, MIG (not ours). */
        assert_int_equal(tune_visible_list_parse("GPU-77777777-0000-1111-2222-666666666666,gpu-8F3C", &host, base, 4,
                                                 TUNE_VISIBLE_CUDA_STOP | TUNE_VISIBLE_UUID, out, &n, &unknown),
                         0);
        assert_int_equal(n, 2);
        assert_int_equal(out[0], 15);
        assert_int_equal(out[1], 12);
        assert_int_equal(tune_visible_list_parse("GPU-12ab,0", &host, base, 4, TUNE_VISIBLE_CUDA_STOP | TUNE_VISIBLE_UUID,
                                                 out, &n, &unknown),
                         0);
        assert_int_equal(n, 0);
        assert_int_equal(unknown, 1);
        assert_int_equal(tune_visible_list_parse("GPU-12ab3", &host, base, 4, TUNE_VISIBLE_UUID, out, &n, &unknown), 0);
        assert_int_equal(n, 1);
        assert_int_equal(out[0], 13);
        assert_int_equal(tune_visible_list_parse("MIG-GPU-8f3c1a2b/1/0,GPU-", &host, base, 4, TUNE_VISIBLE_UUID, out, &n,
                                                 &unknown),
                         0);
        assert_int_equal(n, 0);
        assert_int_equal(unknown, 2);
        /* UUIDs are not accepted where the flag is off. */
        assert_int_equal(tune_visible_list_parse("GPU-8f3c", &host, base, 4, 0, out, &n, &unknown), 0);
        assert_int_equal(n, 0);

        /* Physical ids and ranges (Ascend container runtime). */
        unsigned abase[8] = { 2, 3, 4, 5, 6, 7, 8, 9 };
        unsigned aout[8];
        assert_string_equal(host.items[2].kind, "ascend");
        assert_int_equal(tune_visible_list_parse("6-7,1,9", &host, abase, 8, TUNE_VISIBLE_PHYSICAL | TUNE_VISIBLE_RANGES,
                                                 aout, &n, &unknown),
                         0);
        assert_int_equal(n, 3);
        assert_int_equal(aout[0], 8);
        assert_int_equal(aout[1], 9);
        assert_int_equal(aout[2], 3);
        assert_int_equal(unknown, 1);
        assert_int_equal(tune_visible_list_parse("3-1,5-99999999", &host, abase, 8,
                                                 TUNE_VISIBLE_PHYSICAL | TUNE_VISIBLE_RANGES, aout, &n, &unknown),
                         0);
        assert_int_equal(n, 0);
        assert_int_equal(unknown, 2);
        /* A huge value: bounded work, no crash. */
        size_t big = 100000;
        char *s = malloc(big + 1);
        for (size_t i = 0; i < big; i += 2) {
                s[i] = '1';
                s[i + 1] = ',';
        }
        s[big] = 0;
        assert_int_equal(tune_visible_list_parse(s, &host, abase, 8, 0, aout, &n, &unknown), 0);
        assert_int_equal(n, 1);
        free(s);
}

static void test_rule_source(void **state) {
        tune_accel_ref refs[] = { { "ascend", 4 }, { "ascend", 5 }, { "ascend", 42 }, { "tpu", 0 }, { "ascend", 4 } };
        tune_policy_rule r = { .accel_mode = TUNE_ACCEL_EXPLICIT, .accels = refs, .n_accels = 5 };
        const char *vars[] = { "ASCEND_RT_VISIBLE_DEVICES=0" };
        tune_env_capture env = env_of(vars, 1);
        tune_attribution a;
        (void) state;

        /* The rule's list wins over the environment; missing devices are counted. */
        a = run(&r, &env, -1);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_RULE);
        assert_accels(&a, "ascend:4,ascend:5");
        assert_int_equal(a.n_unknown, 2);
        tune_attribution_done(&a);
        /* A rank picks one entry (rank % n). */
        a = run(&r, &env, 3);
        assert_accels(&a, "ascend:5");
        assert_true(a.rank_picked);
        assert_int_equal(a.n_visible, 2);
        tune_attribution_done(&a);

        /* NONE: nothing, whatever the environment says. */
        r.accel_mode = TUNE_ACCEL_NONE;
        a = run(&r, &env, 1);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_NONE);
        assert_int_equal(a.n_accels, 0);
        tune_env_capture_done(&env);
}

static void test_env_sources(void **state) {
        tune_policy_rule autorule = { .accel_mode = TUNE_ACCEL_AUTO };
        tune_attribution a;
        tune_env_capture env;
        (void) state;

        /* vLLM-Ascend TP=2 on NPUs 4,5: worker rank 1 uses visible[1] = davinci5. */
        env = env_of((const char *[]){ "ASCEND_RT_VISIBLE_DEVICES=4,5" }, 1);
        a = run(&autorule, &env, 1);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_ENV);
        assert_string_equal(a.variable, "ASCEND_RT_VISIBLE_DEVICES");
        assert_accels(&a, "ascend:5");
        tune_attribution_done(&a);
        /* Without a rank: the whole list. */
        a = run(NULL, &env, -1);
        assert_accels(&a, "ascend:4,ascend:5");
        tune_attribution_done(&a);
        /* The same capture inherited from the parent. */
        env.inherited = true;
        a = run(&autorule, &env, 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_ENV_INHERITED);
        assert_accels(&a, "ascend:4");
        tune_attribution_done(&a);
        tune_env_capture_done(&env);

        /* Container: ASCEND_VISIBLE_DEVICES (physical, ranges) then RT (logical over it). */
        env = env_of((const char *[]){ "ASCEND_VISIBLE_DEVICES=7,2-3", "ASCEND_RT_VISIBLE_DEVICES=1,2" }, 2);
        a = run(NULL, &env, -1);
        assert_string_equal(a.variable, "ASCEND_VISIBLE_DEVICES+ASCEND_RT_VISIBLE_DEVICES");
        assert_accels(&a, "ascend:3,ascend:7");
        tune_attribution_done(&a);
        tune_env_capture_done(&env);

        /* CUDA: logical ids in PCI order (nvidia1 has the lowest address). */
        env = env_of((const char *[]){ "CUDA_VISIBLE_DEVICES=0,2", "CUDA_DEVICE_ORDER=PCI_BUS_ID" }, 2);
        a = run(NULL, &env, -1);
        assert_string_equal(a.variable, "CUDA_VISIBLE_DEVICES");
        assert_accels(&a, "nvidia:1,nvidia:3");
        assert_false(a.order_assumed);
        tune_attribution_done(&a);
        tune_env_capture_done(&env);
        /* Malformed: "0,,x" gives device 0 only (CUDA stops at the empty entry), counted. */
        env = env_of((const char *[]){ "CUDA_VISIBLE_DEVICES=0,,x" }, 1);
        a = run(NULL, &env, -1);
        assert_accels(&a, "nvidia:1");
        assert_int_equal(a.n_unknown, 1);
        tune_attribution_done(&a);
        tune_env_capture_done(&env);
        /* UUID form, rank picks. */
        env = env_of((const char *[]){ "CUDA_VISIBLE_DEVICES=GPU-77777777,GPU-8f3c1a2b-0000-1111-2222-333333333333" }, 1);
        a = run(NULL, &env, 1);
        assert_accels(&a, "nvidia:0");
        tune_attribution_done(&a);
        tune_env_capture_done(&env);
        /* Default FASTEST_FIRST on mixed models: assumed to be PCI order, and said so. */
        items[12].device = 0x2331;
        env = env_of((const char *[]){ "CUDA_VISIBLE_DEVICES=0" }, 1);
        a = run(NULL, &env, -1);
        assert_accels(&a, "nvidia:1");
        assert_true(a.order_assumed);
        tune_attribution_done(&a);
        tune_env_capture_done(&env);
        items[12].device = 0x2330;

        /* ROCr filters, HIP indexes into what ROCr left. */
        env = env_of((const char *[]){ "ROCR_VISIBLE_DEVICES=1", "HIP_VISIBLE_DEVICES=0" }, 2);
        a = run(NULL, &env, -1);
        assert_string_equal(a.variable, "ROCR_VISIBLE_DEVICES+HIP_VISIBLE_DEVICES");
        assert_accels(&a, "amd:1");
        tune_attribution_done(&a);
        tune_env_capture_done(&env);
}

static void test_env_fallthrough(void **state) {
        tune_policy_kind kinds[] = {
                { .kind = { .name = "edu" }, .visible_env = (char *) "EDU_VISIBLE_DEVICES", .visible_ids = TUNE_VISIBLE_IDS_LOGICAL },
        };
        tune_attribution_input in = { .accels = &host, .kinds = kinds, .n_kinds = 1, .rank = -1 };
        tune_attribution a;
        tune_env_capture env;
        (void) state;

        /* Nothing that exists: the next variable decides. CUDA names GPUs that are not
         * there; ASCEND names an NPU that is. */
        env = env_of((const char *[]){ "CUDA_VISIBLE_DEVICES=9", "ASCEND_RT_VISIBLE_DEVICES=x,3" }, 2);
        in.env = &env;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_string_equal(a.variable, "ASCEND_RT_VISIBLE_DEVICES");
        assert_accels(&a, "ascend:3");
        tune_attribution_done(&a);
        tune_env_capture_done(&env);

        /* Policy kinds: logical, then physical. */
        env = env_of((const char *[]){ "EDU_VISIBLE_DEVICES=1" }, 1);
        in.env = &env;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_ENV);
        assert_accels(&a, "edu:1");
        tune_attribution_done(&a);
        kinds[0].visible_ids = TUNE_VISIBLE_IDS_PHYSICAL;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_accels(&a, "edu:1");
        tune_attribution_done(&a);
        tune_env_capture_done(&env);

        /* Only malformed or missing ids anywhere: nothing from the environment. */
        env = env_of((const char *[]){ "CUDA_VISIBLE_DEVICES=x", "ASCEND_RT_VISIBLE_DEVICES=8,9" }, 2);
        in.env = &env;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_NONE);
        assert_int_equal(a.n_unknown, 3);
        tune_attribution_done(&a);
        tune_env_capture_done(&env);

        /* A wiped or unreadable environment holds no variables: nothing from it. */
        tune_env_capture wiped = { .state = TUNE_ENV_WIPED };
        in.env = &wiped;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_NONE);
        tune_attribution_done(&a);
        tune_env_capture unreadable = { .state = TUNE_ENV_UNREADABLE };
        in.env = &unreadable;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_NONE);
        tune_attribution_done(&a);
}

static void test_rank_and_devices(void **state) {
        tune_accel one_kind_items[4];
        tune_accels one_kind = { .items = one_kind_items, .n = 4 };
        dev_t rdevs[4] = { makedev(236, 0), makedev(236, 1), makedev(236, 2), 0 };
        dev_t open_some[] = { makedev(1, 3), makedev(236, 1), makedev(236, 2) };
        dev_t open_manager_only[] = { makedev(1, 3), makedev(237, 0) }; /* /dev/davinci_manager */
        tune_attribution_input in = { .accels = &one_kind, .rank = -1, .accel_rdevs = rdevs };
        tune_env_capture no_vars = { .state = TUNE_ENV_READ };
        tune_attribution a;
        (void) state;

        memcpy(one_kind_items, &items[2], sizeof one_kind_items); /* ascend 0-3 */
        /* An environment read (own or a launcher's) that sets no visible-devices variable,
         * a rank, one kind on the host: all its devices are visible, rank picks one. */
        /* An 8-device host whose server sees 4,5,6,7 (the launcher's list): TP rank 2 is
         * device 6, not device 2. */
        {
                tune_accel eight_items[8];
                tune_accels eight = { .items = eight_items, .n = 8 };
                tune_policy_kind edu = { .visible_env = (char *) "EDU_VISIBLE_DEVICES" };
                tune_env_capture launcher = env_of((const char *[]){ "EDU_VISIBLE_DEVICES=4,5,6,7" }, 1);
                snprintf(edu.kind.name, sizeof edu.kind.name, "edu");
                for (int i = 0; i < 8; i++) {
                        eight_items[i] = (tune_accel){ .index = i, .vendor = 0x1234, .device = 0x11e8, .numa_node = i / 2 };
                        snprintf(eight_items[i].kind, sizeof eight_items[i].kind, "edu");
                        snprintf(eight_items[i].pci, sizeof eight_items[i].pci, "0000:%02x:00.0", 0x21 + i);
                }
                launcher.inherited = true;
                tune_attribution_input e = { .accels = &eight, .kinds = &edu, .n_kinds = 1, .env = &launcher };
                for (int r = 0; r < 4; r++) {
                        char want[16];
                        e.rank = r;
                        assert_int_equal(tune_attribute(&e, &a), 0);
                        snprintf(want, sizeof want, "edu:%d", 4 + r);
                        assert_accels(&a, want);
                        assert_int_equal(a.n_visible, 4);
                        tune_attribution_done(&a);
                }
                tune_env_capture_done(&launcher);
        }
        in.env = &no_vars;
        in.rank = 6;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_RANK);
        assert_false(a.rank_refused);
        assert_accels(&a, "ascend:2");
        tune_attribution_done(&a);
        /* The environment unknown: never read, wiped by setproctitle before anyone read it,
         * unreadable. visible[rank] need not be device rank ("1,0"): no guess. */
        for (tune_env_state st = TUNE_ENV_NOT_READ; st < _TUNE_ENV_STATE_MAX; st++) {
                tune_env_capture unknown = { .state = st };
                if (st == TUNE_ENV_READ)
                        continue;
                in.env = &unknown;
                in.rank = 0;
                assert_int_equal(tune_attribute(&in, &a), 0);
                assert_int_equal(a.source, TUNE_ATTRIBUTION_NONE);
                assert_true(a.rank_refused);
                assert_int_equal(a.n_accels, 0);
                tune_attribution_done(&a);
        }
        in.env = NULL;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_NONE);
        assert_true(a.rank_refused);
        tune_attribution_done(&a);
        /* ... but the device files it holds still decide, the rank picking none of them. */
        {
                tune_env_capture wiped = { .state = TUNE_ENV_WIPED };
                in.env = &wiped;
                in.rank = 1;
                in.open_devices = open_some + 1;
                in.n_open_devices = 1;
                assert_int_equal(tune_attribute(&in, &a), 0);
                assert_int_equal(a.source, TUNE_ATTRIBUTION_DEVICE_FILES);
                assert_accels(&a, "ascend:1");
                tune_attribution_done(&a);
                in.open_devices = NULL;
                in.n_open_devices = 0;
        }
        /* A launcher's capture that names the list: the rank indexes IT, not the devices. */
        {
                tune_policy_kind edu = { .visible_env = (char *) "EDU_VISIBLE" };
                tune_env_capture launcher = env_of((const char *[]){ "EDU_VISIBLE=1,0" }, 1);
                snprintf(edu.kind.name, sizeof edu.kind.name, "edu");
                launcher.inherited = true;
                launcher.from_pid = 100;
                tune_attribution_input e = { .accels = &host, .kinds = &edu, .n_kinds = 1, .env = &launcher, .rank = 0 };
                assert_int_equal(tune_attribute(&e, &a), 0);
                assert_int_equal(a.source, TUNE_ATTRIBUTION_ENV_INHERITED);
                assert_string_equal(a.variable, "EDU_VISIBLE");
                assert_accels(&a, "edu:1");
                assert_false(a.rank_refused);
                tune_attribution_done(&a);
                e.rank = 1;
                assert_int_equal(tune_attribute(&e, &a), 0);
                assert_accels(&a, "edu:0");
                tune_attribution_done(&a);
                tune_env_capture_done(&launcher);
        }
        in.env = &no_vars;
        in.rank = 6;
        /* Two kinds: a rank alone cannot say which; the device files decide. */
        in.accels = &host;
        in.accel_rdevs = NULL;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_NONE);
        tune_attribution_done(&a);

        /* Device files, by st_rdev (the path may differ inside a container). */
        in.accels = &one_kind;
        in.accel_rdevs = rdevs;
        in.rank = -1;
        in.open_devices = open_some;
        in.n_open_devices = 3;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_DEVICE_FILES);
        assert_accels(&a, "ascend:1,ascend:2");
        tune_attribution_done(&a);
        /* Only /dev/davinci_manager: the files say nothing. */
        in.open_devices = open_manager_only;
        in.n_open_devices = 2;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_NONE);
        assert_int_equal(a.n_accels, 0);
        tune_attribution_done(&a);
        /* No accelerators on the host at all. */
        tune_accels none = {};
        in.accels = &none;
        in.rank = 2;
        assert_int_equal(tune_attribute(&in, &a), 0);
        assert_int_equal(a.source, TUNE_ATTRIBUTION_NONE);
        tune_attribution_done(&a);
}

static void test_equal_copy(void **state) {
        tune_attribution a, b;
        tune_env_capture env = env_of((const char *[]){ "ASCEND_RT_VISIBLE_DEVICES=1,2" }, 1);
        (void) state;

        a = run(NULL, &env, -1);
        assert_int_equal(tune_attribution_copy(&b, &a), 0);
        assert_true(tune_attribution_equal(&a, &b));
        b.accels[1].index = 3;
        assert_false(tune_attribution_equal(&a, &b));
        tune_attribution_done(&a);
        tune_attribution_done(&b);
        assert_null(a.accels);
        assert_int_equal(a.rank, -1);
        tune_env_capture_done(&env);
        assert_string_equal(tune_attribution_source_to_string(TUNE_ATTRIBUTION_ENV_INHERITED), "env-inherited");
        assert_null(tune_attribution_source_to_string(_TUNE_ATTRIBUTION_SOURCE_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_env_capture),
                cmocka_unit_test(test_env_capture_random),
                cmocka_unit_test(test_env_names),
                cmocka_unit_test_setup(test_visible_list, setup_host),
                cmocka_unit_test_setup(test_rule_source, setup_host),
                cmocka_unit_test_setup(test_env_sources, setup_host),
                cmocka_unit_test_setup(test_env_fallthrough, setup_host),
                cmocka_unit_test_setup(test_rank_and_devices, setup_host),
                cmocka_unit_test_setup(test_equal_copy, setup_host),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
