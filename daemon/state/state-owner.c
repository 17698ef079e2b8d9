/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "npu-tuned/state-dir.h"
#include "npu-tuned/state-file.h"
#include "state-owner.h"

struct StateDir {
        char *path;
        int lock_fd; /* < 0: not held */
};

int state_dir_new(const char *path, StateDir **ret) {
        StateDir *d;

        d = calloc(1, sizeof *d);
        if (!d)
                return -ENOMEM;
        d->lock_fd = -EBADF;
        d->path = strdup(path);
        if (!d->path) {
                free(d);
                return -ENOMEM;
        }
        *ret = d;
        return 0;
}

StateDir *state_dir_free(StateDir *d) {
        if (!d)
                return NULL;
        if (d->lock_fd >= 0)
                close(d->lock_fd);
        free(d->path);
        free(d);
        return NULL;
}

const char *state_dir_path(const StateDir *d) {
        return d->path;
}

int state_dir_lock(StateDir *d) {
        int fd;

        if (d->lock_fd >= 0)
                return 0;
        fd = tune_state_dir_lock(d->path);
        if (fd < 0)
                return fd;
        d->lock_fd = fd;
        return 0;
}

bool state_dir_locked(const StateDir *d) {
        return d->lock_fd >= 0;
}

int state_dir_acquire(StateDir *d, const char *consequence) {
        int r = state_dir_lock(d);

        if (r == -EBUSY)
                return log_error_errno(r, "Another npu-tuned holds the state directory %s.", d->path);
        if (tune_state_dir_is_refusal(r))
                return log_error_errno(r, "The state directory %s %s: refusing to use it (docs/trust.md).", d->path,
                                       tune_state_dir_refusal(r));
        if (r < 0) {
                log_warning_errno(r, "Failed to lock the state directory %s: %m; %s.", d->path, consequence);
                return 0;
        }
        return 1;
}
