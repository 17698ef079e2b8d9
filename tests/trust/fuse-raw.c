/* SPDX-License-Identifier: GPL-2.0-only */
/* The raw FUSE server of fuse-raw.h. */
#include <errno.h>
#include <linux/fuse.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuse-raw.h"

static void reply(int fd, uint64_t unique, int error, const void *payload, size_t len) {
        static char buf[sizeof(struct fuse_out_header) + 128 * 1024];
        struct fuse_out_header *h = (struct fuse_out_header *) buf;

        if (len > sizeof buf - sizeof *h)
                len = sizeof buf - sizeof *h;
        h->len = (uint32_t) (sizeof *h + len);
        h->error = error;
        h->unique = unique;
        if (payload)
                memcpy(buf + sizeof *h, payload, len);
        else
                memset(buf + sizeof *h, 0, len); /* a READ: the file is all zeros */
        (void) !write(fd, buf, h->len);
}

static void fill_attr(struct fuse_attr *a, uint64_t ino, const fuse_raw_params *p) {
        memset(a, 0, sizeof *a);
        a->ino = ino;
        a->mode = ino == FUSE_RAW_ROOT_ID ? (S_IFDIR | 0755) : (S_IFREG | 0444);
        a->nlink = ino == FUSE_RAW_ROOT_ID ? 2 : 1;
        a->size = ino == FUSE_RAW_FILE_ID ? p->file_size : 0;
        a->blksize = 4096;
}

_Noreturn void fuse_raw_serve(int fd, const fuse_raw_params *p) {
        static char buf[1 << 20 | 4096];

        for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);
                struct fuse_in_header *in = (struct fuse_in_header *) buf;
                void *arg = buf + sizeof *in;

                if (n < 0 && (errno == EINTR || errno == ENOENT))
                        continue;
                if (n < (ssize_t) sizeof *in)
                        _exit(0); /* unmounted */
                if ((in->opcode == FUSE_GETATTR || in->opcode == FUSE_READ) && p->before_answer)
                        p->before_answer(in->opcode, in->nodeid);
                switch (in->opcode) {
                case FUSE_INIT: {
                        const struct fuse_init_in *ii = arg;
                        struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION,
                                                   .minor = ii->minor < FUSE_KERNEL_MINOR_VERSION ? ii->minor : FUSE_KERNEL_MINOR_VERSION,
                                                   .max_readahead = ii->max_readahead, .max_background = 16,
                                                   .congestion_threshold = 12, .max_write = 4096, .time_gran = 1 };
                        reply(fd, in->unique, 0, &o, sizeof o);
                        break;
                }
                case FUSE_LOOKUP: {
                        struct fuse_entry_out o = { .entry_valid = p->valid_s, .attr_valid = p->valid_s };
                        if (in->nodeid != FUSE_RAW_ROOT_ID || strcmp(arg, "f") != 0) {
                                reply(fd, in->unique, -ENOENT, NULL, 0);
                                break;
                        }
                        o.nodeid = FUSE_RAW_FILE_ID;
                        fill_attr(&o.attr, FUSE_RAW_FILE_ID, p);
                        reply(fd, in->unique, 0, &o, sizeof o);
                        break;
                }
                case FUSE_GETATTR: {
                        struct fuse_attr_out o = { .attr_valid = p->valid_s };
                        fill_attr(&o.attr, in->nodeid, p);
                        reply(fd, in->unique, 0, &o, sizeof o);
                        break;
                }
                case FUSE_OPEN: {
                        struct fuse_open_out o = { .fh = 1 };
                        reply(fd, in->unique, 0, &o, sizeof o);
                        break;
                }
                case FUSE_READ: {
                        const struct fuse_read_in *ri = arg;
                        reply(fd, in->unique, 0, NULL, ri->size);
                        break;
                }
                case FUSE_FORGET:
                case FUSE_BATCH_FORGET:
                        break; /* no reply */
                case FUSE_FLUSH:
                case FUSE_RELEASE:
                        reply(fd, in->unique, 0, NULL, 0);
                        break;
                case FUSE_STATFS: {
                        struct fuse_statfs_out o = { .st = { .bsize = 4096, .namelen = 255 } };
                        reply(fd, in->unique, 0, &o, sizeof o);
                        break;
                }
                case FUSE_DESTROY:
                        reply(fd, in->unique, 0, NULL, 0);
                        _exit(0);
                default:
                        reply(fd, in->unique, -ENOSYS, NULL, 0);
                }
        }
}
