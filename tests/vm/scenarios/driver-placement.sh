#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The driver as an attribution source, with the daemon on a real 4-node kernel. The policy
# (tests/vm/driver-policies/edu-driver.json) takes threads-target's accelerators from what
# it runs on, and leaves it alone without one; threads-target runs with no visible-devices
# variable and opens no device. A stand-in NVML (tests/driver/stub-nvml.c, installed as
# /usr/local/lib/npu-stub/libnvidia-ml.so.1) reports the edu device's bus id, in NVML's
# eight-digit upper-case form, and threads-target's pid on it.
#
# Asserted from kernel state: every thread's Cpus_allowed_list is the edu node's CPUs by
# role; and from the daemon's log: "from the driver (nvml)". Then, with the stand-in's
# library made group-writable, a new daemon does not load it and leaves the next worker
# alone.
# shellcheck disable=SC2317 # roles_placed runs through vm_wait_for
# shellcheck source-path=SCRIPTDIR source=../guest-lib.sh
. /usr/lib/npu-vm/lib.sh

for tool in npu-tuned threads-target /usr/local/libexec/npu-tuned-driver-query; do
	command -v "$tool" >/dev/null || vm_fail "$tool not in the guest (pass it with --file)"
done
[ "$VM_CPUS_PER_NODE" -ge 2 ] || vm_skip "needs 2 CPUs per node to split roles (got $VM_CPUS_PER_NODE)"
# shellcheck disable=SC2086 # VM_EDU is a space-separated list of BDF=node words
set -- $VM_EDU
[ $# -ge 1 ] || vm_skip "no edu device (--edu-node N)"
bdf=${1%=*}
edu_node=${1#*=}
[ "$edu_node" != 0 ] || vm_skip "the edu device must not be on node 0"
control_cpu=$((edu_node * VM_CPUS_PER_NODE))
compute_cpu=$((control_cpu + 1))

# The library and every directory above it root's and nobody else's to write.
lib=/usr/local/lib/npu-stub
chown -R 0:0 /usr /usr/local /usr/local/lib "$lib"
chmod 755 /usr /usr/local /usr/local/lib "$lib"
chmod 644 "$lib/libnvidia-ml.so.1"
# NVML's form of the bus id: an eight-digit domain, upper case.
domain=${bdf%%:*}
echo "0000${domain}:${bdf#*:}" | tr 'a-f' 'A-F' >"$lib/stub-nvml-buses"
vm_log "stand-in NVML reports $(cat "$lib/stub-nvml-buses") (edu $bdf on node $edu_node)"

npu-tuned --check-policy /etc/npu-tuned/test-policies || vm_fail "the test policy does not validate"
mkdir -p /run/npu-tuned
vm_daemon_start /tmp/daemon.log --policy-dir /etc/npu-tuned/test-policies --state-dir /run/npu-tuned \
	--driver-query=/usr/local/libexec/npu-tuned-driver-query --driver-library-dir "$lib"

# The worker; its pid given to the stand-in at once (the first query comes after the
# first look at its device files, 0.5 s after its match).
env -i PATH=/usr/local/bin:/usr/bin:/bin threads-target --control 2 --compute 2 --timeout 200 >/tmp/ready &
target=$!
vm_track "$target"
echo "0 $target" >"$lib/stub-nvml-pids"
vm_wait_for 20 grep -q '^ready' /tmp/ready || vm_fail "threads-target did not start"
original=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status)
vm_wait_for 30 vm_roles_placed "$target" "$control_cpu" "$compute_cpu" || true
n=0
for task in /proc/"$target"/task/*; do
	comm=$(cat "$task/comm")
	case $comm in
	ctl-*) want=$control_cpu ;;
	work-*) want=$compute_cpu ;;
	*) want=$control_cpu ;;
	esac
	vm_expect_eq "thread ${task##*/} ($comm) Cpus_allowed_list" "$(awk '/^Cpus_allowed_list:/ { print $2 }' "$task/status")" "$want"
	n=$((n + 1))
done
vm_expect_eq "threads (main, ctl-0, ctl-1, work-0, work-1)" "$n" 5
vm_check "the log says the accelerator came from the driver" grep -q "edu:0 from the driver (nvml)" /tmp/daemon.log
vm_daemon_stop TERM
vm_expect_eq "daemon exit status" "$VM_DAEMON_RC" 0
vm_expect_eq "main thread restored" "$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/"$target"/status)" "$original"
kill "$target" 2>/dev/null
echo "--- daemon log ---"
cat /tmp/daemon.log

# A library someone else may write is not loaded: the next worker stays alone.
chmod 664 "$lib/libnvidia-ml.so.1"
vm_daemon_start /tmp/daemon2.log --policy-dir /etc/npu-tuned/test-policies --state-dir /run/npu-tuned \
	--driver-query=/usr/local/libexec/npu-tuned-driver-query --driver-library-dir "$lib"
env -i PATH=/usr/local/bin:/usr/bin:/bin threads-target --control 2 --compute 2 --timeout 200 >/tmp/ready2 &
target=$!
vm_track "$target"
echo "0 $target" >"$lib/stub-nvml-pids"
vm_wait_for 20 grep -q '^ready' /tmp/ready2 || vm_fail "threads-target did not start"
vm_wait_for 20 grep -q "No accelerator driver library" /tmp/daemon2.log || true
vm_check "a group-writable library is refused" grep -q "not root's alone: not loading it" /tmp/daemon2.log
vm_expect_eq "the unattributed worker is left alone" "$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/"$target"/status)" "$original"
vm_daemon_stop TERM
kill "$target" 2>/dev/null
echo "--- second daemon log ---"
cat /tmp/daemon2.log
vm_finish
