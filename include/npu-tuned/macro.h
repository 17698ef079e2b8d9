/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _pure_ __attribute__((pure))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* Hand ownership of a pointer to someone else; the cleanup handler then sees NULL. */
#define TAKE_PTR(p)                            \
        ({                                     \
                __typeof__(p) _p_ = (p);       \
                (p) = NULL;                    \
                _p_;                           \
        })
#define TAKE_FD(fd)                            \
        ({                                     \
                int _fd_ = (fd);               \
                (fd) = -EBADF;                 \
                _fd_;                          \
        })

/* Room for one more item in array, of which n are used and cap allocated: a full array
 * doubles, an empty one gets first items. 0, or -ENOMEM with array and cap as they were.
 * One growth policy for every list the library builds, not one hand-written per list. */
#define TUNE_GROW(array, cap, n, first)                                                            \
        ({                                                                                         \
                int _grow_r_ = 0;                                                                  \
                if ((n) >= (cap)) {                                                                \
                        __typeof__(cap) _grow_cap_ = (cap) ? (cap) * 2 : (first);                  \
                        __typeof__(array) _grow_a_ = reallocarray((array), _grow_cap_, sizeof *(array)); \
                        if (_grow_a_) {                                                            \
                                (array) = _grow_a_;                                                \
                                (cap) = _grow_cap_;                                                \
                        } else                                                                     \
                                _grow_r_ = -ENOMEM;                                                \
                }                                                                                  \
                _grow_r_;                                                                          \
        })

/* calloc(n, size) through malloc: glibc's calloc never takes a block from the per-thread
 * cache (tcache) that malloc serves small blocks from, and costs several times as many
 * instructions for the small zeroed structs and arrays the handling of every matched
 * process allocates (a job, a plan's scratch arrays, a watcher entry). NULL (errno ENOMEM)
 * when n * size overflows. */
static inline void *tune_alloc0(size_t n, size_t size) {
        void *p;

        if (size > 0 && n > SIZE_MAX / size) {
                errno = ENOMEM;
                return NULL;
        }
        p = malloc(n * size);
        if (!p)
                return NULL;
        /* Opaque to the compiler, which would fold malloc and memset back into calloc. */
        __asm__ __volatile__("" : : "r"(p) : "memory");
        return memset(p, 0, n * size);
}

static inline void freep(void *p) {
        free(*(void **) p);
}
static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
static inline void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Define a foo_freep() for a foo_free() that accepts NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
        static inline void func##p(type *p) {   \
                if (*p)                         \
                        func(*p);               \
        }

static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

/* read(), again when a signal interrupted it: the count (0 at the end), or a negative
 * errno, so that the callers' loops need not each handle EINTR. */
static inline ssize_t tune_read_retry(int fd, void *buf, size_t size) {
        ssize_t n;

        do
                n = read(fd, buf, size);
        while (n < 0 && errno == EINTR);
        return n < 0 ? negative_errno() : n;
}

#define streq(a, b) (strcmp((a), (b)) == 0)

/* src into dst[size], cut to fit and NUL-terminated (size > 0): snprintf("%s") without
 * the format machinery, for names copied once per thread. */
static inline void tune_copy_string(char *dst, size_t size, const char *src) {
        size_t n = strnlen(src, size - 1);
        memcpy(dst, src, n);
        dst[n] = 0;
}

/* v in decimal, right-aligned in buf and NUL-terminated; returns where its digits start.
 * For the paths, CPU lists and records built on every placement, where snprintf costs
 * some hundreds of instructions a number. */
#define TUNE_DECIMAL_MAX 21 /* UINT64_MAX's 20 digits and the NUL */
static inline char *tune_format_decimal(char buf[static TUNE_DECIMAL_MAX], uint64_t v) {
        /* Two digits a division: half the divisions of one a digit, for the start times and
         * addresses of 10 to 15 digits in each attribution file. */
        static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                    "8081828384858687888990919293949596979899";
        char *p = buf + TUNE_DECIMAL_MAX - 1;

        *p = 0;
        while (v >= 100) {
                p -= 2;
                memcpy(p, pairs + 2 * (v % 100), 2);
                v /= 100;
        }
        if (v >= 10) {
                p -= 2;
                memcpy(p, pairs + 2 * v, 2);
        } else
                *--p = (char) ('0' + v);
        return p;
}
/* The same for a signed v: buf has room for the sign. */
static inline char *tune_format_signed(char buf[static TUNE_DECIMAL_MAX + 1], int64_t v) {
        char *p = tune_format_decimal(buf + 1, v < 0 ? (uint64_t) -(v + 1) + 1 : (uint64_t) v);

        if (v < 0)
                *--p = '-';
        return p;
}
#define startswith_lit(s, lit) (strncmp((s), (lit), sizeof(lit) - 1) == 0)
