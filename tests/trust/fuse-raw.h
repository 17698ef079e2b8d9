/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* A tiny FUSE server over the raw /dev/fuse protocol (no libfuse), for the trust tests:
 * one directory (node 1) holding one read-only file "f" (node 2) of file_size zero bytes.
 * A hook runs before the answer to each GETATTR and READ: the hostile part of a test (a
 * user who serves a FUSE mount, possible unprivileged in a user namespace, answers when
 * they like). */

#include <stdint.h>

#define FUSE_RAW_ROOT_ID 1
#define FUSE_RAW_FILE_ID 2

typedef struct fuse_raw_params {
        uint64_t file_size;
        unsigned valid_s; /* how long the kernel may cache entries and attributes; 0: asks every time */
        void (*before_answer)(uint32_t opcode, uint64_t nodeid); /* may be NULL */
} fuse_raw_params;

/* Serve the mount on fd until it is unmounted (or FUSE_DESTROY); exits the process. */
_Noreturn void fuse_raw_serve(int fd, const fuse_raw_params *p);
