/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Pure parsers for kernel and driver text files: no I/O, bounded, total on garbage
 * (a negative errno, never a crash). The readers in topology.c/accel.c feed them. */

#include <stddef.h>
#include <stdint.h>

/* "Node 0 MemTotal:  33554432 kB" lines of /sys/devices/system/node/nodeN/meminfo, or the
 * "MemTotal:  ... kB" lines of /proc/meminfo. Both keys must be present; -EBADMSG if not. */
int tune_parse_meminfo(const char *text, uint64_t *ret_total_kib, uint64_t *ret_free_kib);

/* A distance row "10 21 21 21". Returns the count in *ret_n (<= max), -EINVAL on garbage,
 * -E2BIG if there are more than max entries. Each value must be 1..255. */
int tune_parse_distances(const char *text, int *ret, size_t max, size_t *ret_n);

/* /proc/driver/nvidia/gpus/<BDF>/information: "Device Minor:   3". -ENOENT if absent. */
int tune_parse_nvidia_minor(const char *text, int *ret_minor);
/* ... and "GPU UUID:  GPU-...": copies into buf (NUL terminated), -ENOENT if absent. */
int tune_parse_nvidia_uuid(const char *text, char *buf, size_t size);

/* A PCI id file ("0x19e5\n") into a 16-bit value; class files into 24 bits. */
int tune_parse_hex_u32(const char *text, uint32_t max, uint32_t *ret);

/* The next of a list of decimal numbers separated by blanks and newlines ("0 4 5\n"): 1
 * with the number in *ret and *text moved past it, 0 at the end of the text, -EINVAL on
 * anything that is not such a number, -ERANGE above max (at most ULONG_MAX / 10, so the
 * number cannot wrap before the check). *text is left where it was on an error. */
int tune_parse_next_ulong(const char **text, unsigned long max, unsigned long *ret);

/* The value of one hexadecimal digit, either case; -1 if c is not one. */
int tune_parse_hex_digit(char c);

/* A decimal integer with optional surrounding whitespace ("-1\n"). */
int tune_parse_int(const char *text, long min, long max, long *ret);

/* A PCI address "0000:c1:00.0" (domain:bus:device.function); normalises to lower case. */
int tune_parse_pci_address(const char *text, char ret[static 13]);

/* In a "key: value" text, find the line whose key is `key` and return a pointer to the
 * value (after ':' and blanks) and its length up to the end of line. -ENOENT if none. */
int tune_find_key(const char *text, const char *key, const char **ret_value, size_t *ret_len);
/* The value of the line whose key (klen bytes) starts at p, as tune_find_key() gives it:
 * blanks, then ':', then the value with the blanks around it trimmed. -ENOENT when no ':'
 * follows the key (another key that starts the same). */
int tune_key_value(const char *p, size_t klen, const char **ret_value, size_t *ret_len);
