#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# /usr/sbin/npu-tuned in the guest of vm-old-kernel (tests/meson.build): the daemon as it
# runs on Linux 4.19 or 4.14 (Kylin V10, CentOS 7, openEuler 20.03), where pidfd_open,
# openat2 and ioctl(PAGEMAP_SCAN) do not exist: tests/enosys-run.c makes them fail so.
# exec keeps the PID, so the scenario signals the daemon itself.
exec /usr/bin/enosys-run pidfd_open,openat2,pagemap_scan -- /usr/libexec/npu-tuned "$@"
