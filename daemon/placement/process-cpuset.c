/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "npu-tuned/cgroup-cpuset.h"
#include "process-cpuset.h"
#include "npu-tuned/text.h"

void process_cpuset_done(process_cpuset *c) {
        if (!c)
                return;
        tune_plan_cpuset_done(&c->plan);
        *c = (process_cpuset) {};
}

/* A cgroup path as it may appear in a log line: printable ASCII, bounded. */
static void safe_copy(char *dst, size_t size, const char *src) {
        size_t i = 0;

        for (; src[i] && i + 4 < size; i++)
                dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
        if (src[i])
                memcpy(dst + (i < size - 4 ? i : size - 4), "...", 4);
        else
                dst[i] = 0;
}

/* The cgroup mounts, read again only when the mount table changed: every managed process
 * is read on its match and on every reconcile tick, and reading /proc/self/mounts is half
 * the cost of a lookup. The kernel says when the table changed: an open /proc/self/mounts
 * reports POLLPRI once per change. The daemon's event loop watches for it
 * (process_cpuset_watch_mounts()), so a read on an exec's way to its first pin asks the
 * kernel nothing; without the loop (--explain) each read polls the file. Below a test root
 * the file is a plain one, which never reports: there it is read again at most once a
 * second. The daemon is single-threaded. */
#define MOUNTS_MAX_AGE_USEC (1000 * 1000ULL)
static tune_cgroup_mounts mounts_cache;
static const tune_ctx *mounts_ctx;
static uint64_t mounts_read_usec;
static int mounts_fd = -1;
static sd_event_source *mounts_source; /* on mounts_fd, for mounts_ctx */
static bool mounts_stale;              /* the loop saw a change since the last read */

static bool mounts_changed(void) {
        struct pollfd pfd = { .fd = mounts_fd, .events = POLLPRI };

        if (mounts_source)
                return mounts_stale; /* the loop takes the reports: a poll here would eat them */
        return poll(&pfd, 1, 0) != 0; /* a change, or an error: read them again */
}

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static void mounts_close(void) {
        mounts_source = sd_event_source_disable_unref(mounts_source);
        if (mounts_fd >= 0)
                close(mounts_fd);
        mounts_fd = -1;
        mounts_read_usec = 0;
}

static int read_mounts(const tune_ctx *ctx) {
        int r;

        if (mounts_ctx == ctx && mounts_read_usec) {
                if (mounts_fd >= 0 ? !mounts_changed() : now_usec() - mounts_read_usec < MOUNTS_MAX_AGE_USEC)
                        return 0;
        }
        if (mounts_ctx != ctx)
                mounts_close();
        if (mounts_fd < 0 && tune_ctx_is_live(ctx)) {
                mounts_fd = tune_open(ctx, "/proc/self/mounts", O_RDONLY | O_CLOEXEC, 0);
                if (mounts_fd >= 0)
                        (void) mounts_changed(); /* take the pending report: the read below is current */
        }
        mounts_stale = false;
        r = tune_cgroup_mounts_read(ctx, &mounts_cache);
        if (r < 0) {
                mounts_read_usec = 0;
                return r;
        }
        mounts_ctx = ctx;
        mounts_read_usec = now_usec();
        return 0;
}

static int on_mounts_changed(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        mounts_stale = true;
        return 0;
}

int process_cpuset_watch_mounts(sd_event *e, const tune_ctx *ctx) {
        int r;

        if (!tune_ctx_is_live(ctx))
                return 0; /* a plain file below a test root: read_mounts() goes by age */
        mounts_close();
        mounts_fd = tune_open(ctx, "/proc/self/mounts", O_RDONLY | O_CLOEXEC, 0);
        if (mounts_fd < 0)
                return mounts_fd;
        mounts_ctx = ctx;
        /* Before the process events in the same wake-up: a change is seen before a read. */
        r = sd_event_add_io(e, &mounts_source, mounts_fd, EPOLLPRI, on_mounts_changed, NULL);
        if (r >= 0)
                r = sd_event_source_set_priority(mounts_source, SD_EVENT_PRIORITY_IMPORTANT);
        if (r < 0) {
                mounts_close();
                return r;
        }
        (void) sd_event_source_set_description(mounts_source, "cgroup-mounts");
        /* Read them now, not on the first matched process's way to its pin (a failure
         * here is tried again at that read). */
        (void) read_mounts(ctx);
        return 0;
}

void process_cpuset_unwatch_mounts(void) {
        mounts_close();
}

int process_cpuset_read(const tune_ctx *ctx, const tune_topology *t, pid_t pid, process_cpuset *ret) {
        _cleanup_(tune_cgroup_cpuset_done) tune_cgroup_cpuset cg = {};
        process_cpuset c = {};
        tune_container_id id;
        char path[200], owner[400];
        int r;

        process_cpuset_done(ret);
        r = read_mounts(ctx);
        if (r >= 0)
                r = tune_cgroup_cpuset_read_at(ctx, &mounts_cache, pid, &cg);
        if (r == -ENOENT)
                return 0; /* no cpuset controller anywhere: nothing restricts it */
        if (r < 0)
                return r;
        c.version = cg.version;
        if (tune_container_identify(cg.path, &id))
                tune_container_format(&id, c.container, sizeof c.container);
        /* Only a cpuset narrower than the daemon's own is a limit worth planning around
         * (and saying so): the root cgroup's is every CPU. */
        c.restricted = (!tune_cpuset_is_empty(&cg.cpus) && !tune_cpuset_is_subset(&t->usable, &cg.cpus)) ||
                       (!tune_cpuset_is_empty(&cg.mems) && !tune_cpuset_is_empty(&t->mems_usable) &&
                        !tune_cpuset_is_subset(&t->mems_usable, &cg.mems));
        if (c.restricted) {
                safe_copy(path, sizeof path, cg.path);
                snprintf(owner, sizeof owner, "cgroup v%d %s%s%s%s", cg.version, path, c.container[0] ? " (" : "",
                         c.container, c.container[0] ? ")" : "");
                c.plan.owner = strdup(owner);
                if (!c.plan.owner)
                        return -ENOMEM;
                c.plan.cpus = cg.cpus;
                c.plan.mems = cg.mems;
                cg.cpus = (tune_cpuset) {};
                cg.mems = (tune_cpuset) {};
        }
        *ret = c;
        return 0;
}

const tune_plan_cpuset *process_cpuset_for_plan(const process_cpuset *c) {
        return c->restricted ? &c->plan : NULL;
}

const char *process_cpuset_label(const process_cpuset *c, char *buf, size_t size) {
        if (!c->container[0])
                return tune_concat(buf, size, NULL);
        return tune_concat(buf, size, " (", c->container, ")", NULL);
}

static int add(struct json_object *j, const char *key, struct json_object *v) {
        if (!v || json_object_object_add(j, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int process_cpuset_to_json(const process_cpuset *c, struct json_object *j) {
        _cleanup_free_ char *cpus = NULL, *mems = NULL;
        int r;

        r = add(j, "container", json_object_new_string(c->container));
        if (r < 0 || !c->restricted)
                return r;
        if (tune_cpuset_format_list(&c->plan.cpus, &cpus) < 0 || tune_cpuset_format_list(&c->plan.mems, &mems) < 0)
                return -ENOMEM;
        r = add(j, "cgroup_cpus", json_object_new_string(cpus));
        if (r >= 0)
                r = add(j, "cgroup_mems", json_object_new_string(mems));
        if (r >= 0)
                r = add(j, "cgroup", json_object_new_string(c->plan.owner ? c->plan.owner : ""));
        return r;
}
