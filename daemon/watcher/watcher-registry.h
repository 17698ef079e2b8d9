/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The watcher's table of processes, keyed by pid (the watcher checks start times: a pid
 * alone is never an identity). Open addressing, grows as needed; entries are the
 * caller's. */

#include <stddef.h>
#include <sys/types.h>

#include "npu-tuned/macro.h"

typedef struct Registry Registry;

int registry_new(Registry **ret);
/* Frees the table, not the entries. */
Registry *registry_free(Registry *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Registry *, registry_free);

void *registry_get(const Registry *r, pid_t pid);
/* -EEXIST if pid is taken, -EINVAL for pid <= 0. */
int registry_put(Registry *r, pid_t pid, void *entry);
/* Returns the entry removed, or NULL. */
void *registry_remove(Registry *r, pid_t pid);
size_t registry_size(const Registry *r);
/* A sorted snapshot of the pids, for walks that may add or remove entries. */
int registry_pids(const Registry *r, pid_t **ret, size_t *ret_n);
