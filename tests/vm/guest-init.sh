#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# /init of the test guest (PID 1, busybox sh). Installed by run-vm-test.sh.
# Mounts the API filesystems, runs /scenario.sh with a bounded timeout, prints
#   VM-RESULT: PASS | VM-RESULT: FAIL <reason> | VM-RESULT: SKIP <reason>
# and powers the machine off. Never returns: if poweroff fails the kernel panics
# (panic=-1 + QEMU -no-reboot), which also ends QEMU.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb

mount -t proc -o nosuid,nodev,noexec proc /proc
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
mount -t devtmpfs -o nosuid devtmpfs /dev 2>/dev/null
mount -t tmpfs -o nosuid,nodev,mode=0755 tmpfs /run
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /tmp
mkdir -p /dev/pts /dev/shm
mount -t devpts -o nosuid,noexec devpts /dev/pts 2>/dev/null
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /dev/shm
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 /sys/fs/cgroup 2>/dev/null
ip link set lo up 2>/dev/null
hostname npu-vm

# shellcheck source=/dev/null
. /etc/npu-vm.conf

finish() { # $1 = PASS|FAIL|SKIP, $2 = reason
	echo "VM-RESULT: $1${2:+ $2}"
	sync
	sleep 0.3 # let the UART drain before the power goes
	poweroff -f
	echo o >/proc/sysrq-trigger
	exit 1
}

read -r up _ </proc/uptime
echo "VM-INIT: kernel $(uname -r) up ${up}s; nodes $(cat /sys/devices/system/node/online 2>/dev/null); cpus $(cat /sys/devices/system/cpu/online); scenario timeout ${VM_SCENARIO_TIMEOUT}s"

[ -f /scenario.sh ] || finish FAIL "no /scenario.sh in the initramfs"
cd /root || cd /
# SIGTERM first, SIGKILL 5 s later; everything the scenario leaves behind dies
# with the machine.
timeout -s TERM -k 5 "$VM_SCENARIO_TIMEOUT" sh /scenario.sh </dev/null
rc=$?
read -r end _ </proc/uptime
cd /
elapsed=$(awk -v a="$up" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
echo "VM-INIT: scenario exit status $rc after ${elapsed}s"

reason=
[ -s /run/vm-reason ] && reason=$(head -n1 /run/vm-reason)
case $rc in
0) finish PASS ;;
77) finish SKIP "${reason:-scenario skipped}" ;;
124|137|143)
	if awk -v e="$elapsed" -v t="$VM_SCENARIO_TIMEOUT" 'BEGIN { exit !(e >= t - 1) }'; then
		finish FAIL "scenario timed out after ${VM_SCENARIO_TIMEOUT}s${reason:+ ($reason)}"
	fi
	finish FAIL "${reason:-scenario exit status $rc}" ;;
*) finish FAIL "${reason:-scenario exit status $rc}" ;;
esac
