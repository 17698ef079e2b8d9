/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-tuned/macro.h"
#include "npu-tuned/state-file.h"
#include "released-list.h"

int released_list_parse(const char *text, released_process **ret, size_t *ret_n) {
        _cleanup_free_ released_process *l = NULL;
        size_t n = 0;

        l = calloc(RELEASED_LIST_MAX, sizeof *l);
        if (!l)
                return -ENOMEM;
        for (const char *line = text; line && *line && n < RELEASED_LIST_MAX;) {
                const char *eol = strchrnul(line, '\n');
                int pid;
                uint64_t start;
                char tail;
                char buf[64];
                size_t len = (size_t) (eol - line);

                if (len < sizeof buf) {
                        memcpy(buf, line, len);
                        buf[len] = 0;
                        if (sscanf(buf, "%d %" SCNu64 " %c", &pid, &start, &tail) == 2 && pid > 0)
                                l[n++] = (released_process) { .pid = pid, .start_time = start };
                }
                line = *eol ? eol + 1 : eol;
        }
        *ret = TAKE_PTR(l);
        *ret_n = n;
        return 0;
}

int released_list_load(const char *state_dir, released_process **ret, size_t *ret_n) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = tune_state_file_read(state_dir, RELEASED_LIST_FILE, 64 * RELEASED_LIST_MAX, &text, &len);
        if (r == -ENOENT)
                return released_list_parse("", ret, ret_n);
        if (r < 0)
                return r;
        return released_list_parse(text, ret, ret_n);
}

int released_list_save(const char *state_dir, const released_process *l, size_t n) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f;

        if (n == 0)
                return tune_state_file_delete(state_dir, RELEASED_LIST_FILE);
        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < n && i < RELEASED_LIST_MAX; i++)
                fprintf(f, "%d %" PRIu64 "\n", (int) l[i].pid, l[i].start_time);
        if (fclose(f) != 0)
                return -ENOMEM;
        return tune_state_file_write(state_dir, RELEASED_LIST_FILE, text, NULL, NULL);
}

int released_list_add(const char *state_dir, pid_t pid, uint64_t start_time) {
        _cleanup_free_ released_process *l = NULL;
        size_t n;
        int r;

        r = released_list_load(state_dir, &l, &n);
        if (r < 0)
                return r;
        if (n >= RELEASED_LIST_MAX)
                return -ENOSPC;
        l[n++] = (released_process) { .pid = pid, .start_time = start_time };
        return released_list_save(state_dir, l, n);
}
