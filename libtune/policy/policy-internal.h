/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Shared between the policy loader's files (policy.c, policy-schema.c, policy-validate.c,
 * policy-locate.c, policy-json.c); not part of libtune's interface. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/policy.h"

/* One loaded text, kept with the policy so that problems found later (against the host,
 * on reload) still name the file, the key in that file and its line. */
typedef struct tune_policy_source {
        char *name;         /* the path, or "(embedded default policy)" */
        char *text;         /* NUL terminated */
        size_t len;
        json_object *doc;   /* the parsed document */
        bool shipped;       /* from the shipped directory (or the first of several paths given):
                             * drop-ins are expected to override its values */
} tune_policy_source;

struct tune_policy_sources {
        tune_policy_source *items;
        unsigned n;
        json_object *merged; /* the documents merged; the one document when n == 1 */
};

void policy_sources_free(struct tune_policy_sources *s);

/* Error list. Strings are copied; the message is printf-formatted from our own format
 * strings only (values from files go through policy_quote()). */
int policy_error_add(tune_policy_errors *e, const char *file, const char *key_path, int line, int column, bool warning,
                     const char *fmt, ...) _printf_(7, 8);
/* Move every entry of from to the end of to. */
int policy_errors_move(tune_policy_errors *to, tune_policy_errors *from);

/* A value from a file, made safe to print: at most max bytes of it, control characters
 * and quotes escaped, "..." when cut. Returns a static-free malloc()ed string, NULL on
 * ENOMEM. */
char *policy_quote(const char *s, size_t len, size_t max);

/* Raw text scanning (policy-locate.c), for what json-c does not tell. Both expect a text
 * json-c parsed successfully. */
/* Duplicate keys and single-quoted strings (json-c accepts both silently). */
int policy_scan_text(const char *text, size_t len, const char *file, tune_policy_errors *errors);
/* Line and column (1-based; columns count characters) of the member named by key_path
 * ("a.b[2].c"): the position of its key, or of the element for an index. False when the
 * path is not in the text. */
bool policy_locate(const char *text, size_t len, const char *key_path, int *ret_line, int *ret_column);
void policy_offset_position(const char *text, size_t len, size_t offset, int *ret_line, int *ret_column);

/* Several texts merged as files of those names would be (the fuzzer's way in to the
 * merging code without files). */
int policy_parse_texts(const char *const *names, const char *const *texts, const size_t *lens, unsigned n,
                       const tune_policy_load_params *params, tune_policy **ret, tune_policy_errors *errors);

/* Schema pass (policy-schema.c): JSON document -> policy. */
typedef struct policy_schema_opts {
        const char *file;   /* names errors; NULL: the merged document (paths mapped later) */
        bool fragment;      /* one file of several: value checks only; completeness and
                             * cross-rule checks run on the merged document */
        bool check_version; /* the document is one file: "version": 1 is required */
        bool host_warnings;
        tune_policy_resolve_user_t resolve_user;
        void *userdata;
} policy_schema_opts;

/* Fills p (allocated by the caller, zeroed) from doc. Problems go to *errors; returns 0
 * or -ENOMEM. The caller decides by the error count whether p is usable. */
int policy_from_json(json_object *doc, const policy_schema_opts *o, tune_policy *p, tune_policy_errors *errors);
void policy_set_defaults(tune_policy *p);
void policy_rule_done(tune_policy_rule *r);
void policy_kind_done(tune_policy_kind *k);

/* Cross-rule checks on a complete policy (policy-validate.c), with merged paths. */
int policy_check_consistency(const tune_policy *p, tune_policy_errors *errors);

/* The merged path of a policy's own objects, for messages: "processes[3]". */
int policy_rule_path(const tune_policy_rule *r, const char *suffix, char **ret);

/* Map errors recorded against merged key paths (file == NULL) to the file and key path
 * that set the value, and fill in lines and columns from the texts. */
int policy_attribute_errors(const struct tune_policy_sources *s, tune_policy_errors *errors);
/* The file and file key path for one merged key path; *ret_file points into s. */
int policy_attribute(const struct tune_policy_sources *s, const char *merged_path, const char **ret_file, char **ret_path,
                     int *ret_line, int *ret_column);

/* The value file i of s sets at merged_path: 1 with *ret_value (owned by s), the path in
 * the file's terms (*ret_path, caller frees), its line and column (0: unknown); 0 when that file
 * does not set it. */
int policy_source_value(const struct tune_policy_sources *s, unsigned i, const char *merged_path, json_object **ret_value,
                        char **ret_path, int *ret_line, int *ret_column);
/* The key that identifies elements of a list merged by name ("name", "pci"), or NULL. */
const char *policy_list_id_key(unsigned depth, const char *parent, const char *key);
/* Warnings for values a file sets that a later file overrides, unless the earlier file is
 * a shipped one (policy-origin.c). */
int policy_check_overrides(const struct tune_policy_sources *s, tune_policy_errors *errors);

/* A PCI address as lspci prints it, with or without the domain ("c1:00.0" is
 * "0000:c1:00.0"), normalised. */
int policy_parse_pci(const char *text, char ret[static 13]);

/* Known built-in accelerator kinds. */
bool policy_kind_is_builtin(const char *name) _pure_;
