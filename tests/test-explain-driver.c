/* SPDX-License-Identifier: GPL-2.0-only */
/* --explain's text for a process the driver attributed: "from the driver (nvml)", and not
 * the words for a process whose devices nobody knows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "explain-json.h"

static char *print(const char *json) {
        json_object *j = json_tokener_parse(json);
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(j);
        assert_non_null(f);
        explain_print_text(j, f);
        fclose(f);
        json_object_put(j);
        return buf;
}

static void test_driver_words(void **state) {
        char *s = print("{ \"pid\": \"4242\", \"comm\": \"VLLM::Worker_TP0\", \"managed\": true, \"source\": \"daemon\", "
                        "\"rule\": \"vllm\", \"rule_file\": \"embedded\", \"accelerators\": \"nvidia:0\", "
                        "\"accelerator_source\": \"driver\", \"accelerator_variable\": \"nvml\", "
                        "\"environment\": \"wiped\", \"action\": \"leave\" }");

        assert_non_null(strstr(s, "accelerators:  nvidia:0 (from the driver (nvml): it lists this process on them)"));
        assert_null(strstr(s, "does not guess"));
        free(s);
        /* Others as before. */
        s = print("{ \"pid\": \"4242\", \"comm\": \"w\", \"managed\": true, \"source\": \"daemon\", \"rule\": \"vllm\", "
                  "\"rule_file\": \"embedded\", \"accelerators\": \"\", \"accelerator_source\": \"none\", "
                  "\"accelerator_variable\": \"\", \"environment\": \"wiped\", \"action\": \"leave\" }");
        assert_non_null(strstr(s, "accelerators:  none (source: none)"));
        assert_non_null(strstr(s, "does not guess"));
        free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_driver_words),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
