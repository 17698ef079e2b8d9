/* SPDX-License-Identifier: GPL-2.0-only */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "npu-tuned/engine-binding.h"

const char *const tune_engine_binding_env_names[] = {
        "SGLANG_NUMA_BIND_V2", "CPU_AFFINITY_CONF", "TLLM_NUMA_BIND", NULL,
};

static bool is_off(const char *v) {
        return streq(v, "0") || strcasecmp(v, "false") == 0 || strcasecmp(v, "no") == 0 || strcasecmp(v, "off") == 0 ||
               !*v;
}

/* A command-line switch as a whole word: "--numa-bind" matches "--numa-bind" and
 * "--numa-bind=..." and "--numa-bind-nodes", not "--numa-binding". */
static bool has_switch(const char *cmdline, const char *sw, bool allow_suffix) {
        size_t l = strlen(sw);

        for (const char *p = cmdline; (p = strstr(p, sw)); p += l) {
                char next = p[l];
                if (p != cmdline && p[-1] != ' ')
                        continue;
                if (next == 0 || next == ' ' || next == '=' || (allow_suffix && next == '-'))
                        return true;
        }
        return false;
}

/* vllm-ascend's --additional-config JSON: "enable_cpu_binding": false|true. */
static tune_engine_binds vllm_ascend_switch(const char *cmdline) {
        const char *p = strstr(cmdline, "enable_cpu_binding");

        if (!p)
                return TUNE_ENGINE_BINDS_UNKNOWN;
        p += strlen("enable_cpu_binding");
        while (*p == '"' || *p == '\'' || *p == ':' || *p == ' ' || *p == '\\')
                p++;
        if (strncasecmp(p, "false", 5) == 0)
                return TUNE_ENGINE_BINDS_NO;
        if (strncasecmp(p, "true", 4) == 0)
                return TUNE_ENGINE_BINDS_YES;
        return TUNE_ENGINE_BINDS_UNKNOWN;
}

static tune_engine_binds detect(const char *cmdline, const tune_env_capture *env, const char *accel_kind, char *why,
                                size_t size) {
        const char *v;
        tune_engine_binds r;

        snprintf(why, size, "%s", "");
        if (!cmdline)
                cmdline = "";
        if ((v = tune_env_capture_get(env, "SGLANG_NUMA_BIND_V2"))) {
                snprintf(why, size, "SGLANG_NUMA_BIND_V2=%.32s in its environment", v);
                return is_off(v) ? TUNE_ENGINE_BINDS_NO : TUNE_ENGINE_BINDS_YES;
        }
        if ((v = tune_env_capture_get(env, "TLLM_NUMA_BIND"))) {
                snprintf(why, size, "TLLM_NUMA_BIND=%.32s in its environment", v);
                return is_off(v) ? TUNE_ENGINE_BINDS_NO : TUNE_ENGINE_BINDS_YES;
        }
        if ((v = tune_env_capture_get(env, "CPU_AFFINITY_CONF"))) {
                /* torch_npu: "<mode>[,npuN:a-b...]", mode 0 off, 1 coarse, 2 fine. */
                snprintf(why, size, "CPU_AFFINITY_CONF=%.32s in its environment (torch_npu)", v);
                return v[0] == '1' || v[0] == '2' ? TUNE_ENGINE_BINDS_YES : TUNE_ENGINE_BINDS_NO;
        }
        if (has_switch(cmdline, "--numa-bind", true)) {
                snprintf(why, size, "%s", "--numa-bind on its command line (vLLM)");
                return TUNE_ENGINE_BINDS_YES;
        }
        if (has_switch(cmdline, "--numa-binding", false)) {
                snprintf(why, size, "%s", "--numa-binding on its command line (torchrun)");
                return TUNE_ENGINE_BINDS_YES;
        }
        r = vllm_ascend_switch(cmdline);
        if (r != TUNE_ENGINE_BINDS_UNKNOWN) {
                snprintf(why, size, "enable_cpu_binding %s in its --additional-config (vllm-ascend)",
                         r == TUNE_ENGINE_BINDS_YES ? "true" : "false");
                return r;
        }
        /* Engines whose default is to bind, recognised by their retitled processes. */
        if (strncmp(cmdline, "sglang::scheduler", strlen("sglang::scheduler")) == 0) {
                snprintf(why, size, "%s", "SGLang schedulers bind by default (SGLANG_NUMA_BIND_V2 unset)");
                return TUNE_ENGINE_BINDS_YES;
        }
        if (accel_kind && streq(accel_kind, "ascend") && strstr(cmdline, "::Worker")) {
                snprintf(why, size, "%s", "vllm-ascend workers bind by default since v0.18 (enable_cpu_binding)");
                return TUNE_ENGINE_BINDS_YES;
        }
        return TUNE_ENGINE_BINDS_UNKNOWN;
}

tune_engine_binds tune_engine_binding_detect(const char *cmdline, const tune_env_capture *env, const char *accel_kind,
                                             char *why, size_t size) {
        tune_engine_binds r = detect(cmdline, env, accel_kind, why, size);

        /* The values come from the process's environment: printable in a log line. */
        for (char *p = why; *p; p++)
                if ((unsigned char) *p < 0x20 || (unsigned char) *p >= 0x7f)
                        *p = '?';
        return r;
}

bool tune_engine_binding_observed(const tune_cpuset *masks, unsigned n, const tune_cpuset *start) {
        for (unsigned i = 0; i < n; i++)
                if (!tune_cpuset_is_empty(&masks[i]) && !tune_cpuset_equal(&masks[i], start))
                        return true;
        return false;
}
