/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The affinity record: the original CPU affinities of a placed process's threads,
 * persisted in the state directory BEFORE npu-tuned changes them, like the knob journal,
 * so that `npu-tuned --restore` (after SIGKILL) and the next start can give them back.
 *
 * One file per process, STATE_DIR/affinity-PID.json, written whole (the first one created
 * by one write() or, from a daemon's second on, written by one pwrite() into the ready
 * record below and renamed after the pin; a rewrite by temp file + rename:
 * tune_state_file_create_at() and tune_state_file_replace_at() in state-file.h) but not
 * fsync'ed: the record must outlive the daemon (SIGKILL, a crash of npu-tuned), and a
 * write() that returned already has: the data is in the kernel's page cache, not in the
 * process, and the rename is visible to every later open. fsync would only add surviving
 * the kernel's own death, and after a reboot no thread the record describes exists
 * (records carry the boot id and are discarded on the next boot). So the record costs no disk flush before the first
 * pin, on tmpfs (the default, /run) and on a disk filesystem alike:
 *
 *   {"version":1,"boot_id":"f0c6...","pid":1234,"start_time":98765,"restore_on_stop":true,
 *    "threads":[{"tid":1234,"original":"0-1","applied":"0"},...],"sets":["0","1","0-1"]}
 *
 * start_time is /proc/PID/stat field 22: with pid, the process's identity (a record never
 * applies to a process that merely reuses the pid). Threads and sets as
 * tune_affinity_originals holds them; a thread missing from the record whose mask lies
 * inside one of the sets or of the applied ones was placed by us after the write (or
 * inherited our set) and gets the process's original (tune_affinity_restore()). "sets"
 * may be absent (records of earlier builds). An optional last member, "attribution", is a
 * string the daemon keeps with the record (tune_affinity_record.attribution). A record that does not parse is -EBADMSG,
 * one from a newer version -EPROTONOSUPPORT. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "npu-tuned/affinity.h"

#define TUNE_AFFINITY_RECORD_VERSION 1
#define TUNE_AFFINITY_RECORD_PREFIX "affinity-"
#define TUNE_AFFINITY_RECORD_SUFFIX ".json"
#define TUNE_AFFINITY_RECORD_SIZE_MAX (4u * 1024u * 1024u)

typedef struct tune_affinity_record {
        char *boot_id;                 /* "" unknown */
        bool restore_on_stop;          /* the rule's, when written */
        tune_affinity_originals originals; /* pid, start_time, threads (sorted by tid) */
        /* The daemon's own text of what the process was attributed from (its attribution
         * file's, daemon/state/attribution-store.h), kept here so that the process's one
         * record write keeps both; NULL none. Opaque to libtune. */
        char *attribution;
} tune_affinity_record;

void tune_affinity_record_done(tune_affinity_record *rec);
/* Deep copy of the originals (into a zeroed or done *dst). */
int tune_affinity_originals_copy(tune_affinity_originals *dst, const tune_affinity_originals *src);

/* Text form (pure). */
int tune_affinity_record_format(const tune_affinity_record *rec, char **ret);
int tune_affinity_record_parse(const char *text, size_t len, tune_affinity_record *ret);

/* "affinity-PID.json" -> PID; -EINVAL for other names (temp files included). */
int tune_affinity_record_name_pid(const char *name, pid_t *ret);

int tune_affinity_record_save(const char *state_dir, const tune_affinity_record *rec);
/* The same in the state directory held open at dfd: first, the process's first record
 * (tune_state_file_create_at(): no rename, and a death in the write leaves an empty file,
 * written before any pin); else a rewrite (temp file + rename). */
int tune_affinity_record_save_at(int dfd, const tune_affinity_record *rec, bool first);
/* The ready record: STATE_DIR/affinity-ready, made empty ahead of a process's first record
 * (after an earlier pin, not before this one), so that the first record costs one pwrite()
 * before the first pin, not a create and a close; the same write as a create's (whole or
 * empty after a death), on any filesystem. After the pin it is renamed to
 * affinity-PID.json. Its name is no record's: tune_affinity_record_list() does not see it;
 * tune_affinity_record_adopt_ready() does, first thing at a start or --restore.
 * ready_at: creates it (a leftover replaced), returns its fd; fill_ready: the first record
 * into it (-E2BIG: too long for one write, write it the create way); commit_ready: the
 * rename to pid's record. */
#define TUNE_AFFINITY_RECORD_READY_NAME TUNE_AFFINITY_RECORD_PREFIX "ready"
int tune_affinity_record_ready_at(int dfd);
int tune_affinity_record_fill_ready(int fd, const tune_affinity_record *rec);
int tune_affinity_record_commit_ready_at(int dfd, pid_t pid);
/* Remove the ready record (0 if there is none): at a clean stop, or emptied after a failed commit. */
int tune_affinity_record_drop_ready_at(int dfd);
/* The ready record a death left: filled, it is renamed to its process's record (it is
 * newer than any record of that pid: it is renamed right after its pin, before any other
 * write for that process) and 1 returned with its pid in *ret_pid; empty or unreadable,
 * removed (0); none, 0. */
int tune_affinity_record_adopt_ready(const char *state_dir, pid_t *ret_pid);
/* -ENOENT when there is none; -ENODATA for an empty one: the daemon died between creating
 * a first record and writing it, so none of the process's threads was pinned. */
int tune_affinity_record_load(const char *state_dir, pid_t pid, tune_affinity_record *ret);
/* Not fsync'ed either: a removal lost with the kernel leaves a record of an earlier boot,
 * which the next start discards. */
int tune_affinity_record_delete(const char *state_dir, pid_t pid);
/* The record alone, in the directory held at dfd (its temp file is left for
 * tune_affinity_record_clear_temps()). */
int tune_affinity_record_delete_at(int dfd, pid_t pid);
/* Remove the temp files of records (left by a death in the middle of a rewrite): for
 * whoever takes the state directory's lock. */
int tune_affinity_record_clear_temps(const char *state_dir);
/* The pids that have a record in state_dir, ascending (0 records: *ret NULL; no
 * directory: 0 records). */
int tune_affinity_record_list(const char *state_dir, pid_t **ret, unsigned *ret_n);
