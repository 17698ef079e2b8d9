/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The processes D-Bus Release() let go of, kept in the state directory (released.list:
 * one "PID START_TIME" line each) so that a restarted daemon does not take them again:
 * released means "not managed until it execs again", and a restart is no exec. /run goes
 * at reboot, and with it the list. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RELEASED_LIST_FILE "released.list"
#define RELEASED_LIST_MAX 4096

typedef struct released_process {
        pid_t pid;
        uint64_t start_time;
} released_process;

/* Pure: the lines of text; malformed lines are skipped (the file is root's; a bad line
 * costs one process its release, nothing else). At most RELEASED_LIST_MAX. */
int released_list_parse(const char *text, released_process **ret, size_t *ret_n);
/* The list in state_dir (none: an empty one). */
int released_list_load(const char *state_dir, released_process **ret, size_t *ret_n);
/* Write the list whole (n == 0: remove the file). */
int released_list_save(const char *state_dir, const released_process *l, size_t n);
/* Add one and write the list. */
int released_list_add(const char *state_dir, pid_t pid, uint64_t start_time);
