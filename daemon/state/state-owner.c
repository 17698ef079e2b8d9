/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
