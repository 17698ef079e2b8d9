#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The daemon on a real 4-node kernel. npu-tuned runs with tests/vm/policies/edu-placement.json:
# QEMU's edu device (1234:11e8) on the edu node is declared an accelerator kind, and
# processes running threads-target are its workers (control: the main thread and "ctl-*",
# one CPU; compute: the rest, one CPU; memory to a node with 64 MiB free after a 10 s
# settle delay, at 256 MiB/s). threads-target starts AFTER the daemon, with 256 MiB
# touched on node 0 and one more compute thread born 1 s later.
#
# Asserted from kernel state, not from the daemon's report:
#   - every thread's Cpus_allowed_list is the edu node's CPUs by role, the late one too;
#   - >= 95 % of the process's pages are on the edu node per /proc/PID/numa_maps;
#   - after SIGTERM every thread has its original affinity back (the rule restores).
# shellcheck disable=SC2317 # roles_placed and mem_on_edu run through vm_wait_for
# shellcheck source-path=SCRIPTDIR source=../guest-lib.sh
. /usr/lib/npu-vm/lib.sh
vm_numa_balancing_off

for tool in npu-tuned threads-target; do
	command -v "$tool" >/dev/null || vm_fail "$tool not in the guest (pass it with --file)"
done
[ "$VM_CPUS_PER_NODE" -ge 2 ] || vm_skip "needs 2 CPUs per node to split roles (got $VM_CPUS_PER_NODE)"
# shellcheck disable=SC2086 # VM_EDU is a space-separated list of BDF=node words
set -- $VM_EDU
[ $# -ge 1 ] || vm_skip "no edu device (--edu-node N)"
edu_node=${1#*=}
[ "$edu_node" != 0 ] || vm_skip "the edu device must not be on node 0 (memory starts there)"
first=$((edu_node * VM_CPUS_PER_NODE))
control_cpu=$first
compute_cpu=$((first + 1))

# --- the daemon -----------------------------------------------------------------------
npu-tuned --check-policy /etc/npu-tuned/test-policies || vm_fail "the test policy does not validate"
mkdir -p /run/npu-tuned
npu-tuned --policy-dir /etc/npu-tuned/test-policies --state-dir /run/npu-tuned -v >/tmp/daemon.log 2>&1 &
daemon=$!
vm_wait_for 30 grep -q "Running:" /tmp/daemon.log || { cat /tmp/daemon.log; vm_fail "npu-tuned did not start"; }
vm_log "npu-tuned running (pid $daemon)"

# --- the worker -----------------------------------------------------------------------
threads-target --control 2 --compute 2 --mib 256 --node 0 --late-ms 1000 --timeout 200 >/tmp/ready &
target=$!
vm_wait_for 20 grep -q '^ready' /tmp/ready || vm_fail "threads-target did not start"
original=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status)
before=$(vm_pages_pct 0 "$target")
vm_log "worker $target: ${before}% of its pages on node 0 before the settle delay ends"
[ "$before" -ge 90 ] || vm_fail "setup: only ${before}% of the pages on node 0 before the migration"

sleep 2 # the late thread is born at 1 s
vm_wait_for 20 vm_roles_placed "$target" "$control_cpu" "$compute_cpu" || true
n=0
for task in /proc/"$target"/task/*; do
	comm=$(cat "$task/comm")
	allowed=$(awk '/^Cpus_allowed_list:/ { print $2 }' "$task/status")
	case $comm in
	ctl-*) want=$control_cpu ;;
	work-*) want=$compute_cpu ;;
	*) want=$control_cpu ;;
	esac
	vm_expect_eq "thread ${task##*/} ($comm) Cpus_allowed_list" "$allowed" "$want"
	n=$((n + 1))
done
vm_expect_eq "threads (main, ctl-0, ctl-1, work-0, work-1, work-late-0)" "$n" 6

# --- memory: after the 10 s settle delay, 256 MiB at 256 MiB/s -------------------------
mem_on_edu() { [ "$(vm_pages_pct "$edu_node" "$target")" -ge 95 ]; }
vm_wait_for 60 mem_on_edu || true
after=$(vm_pages_pct "$edu_node" "$target")
if [ "$after" -ge 95 ]; then
	vm_ok "${after}% of the pages on node $edu_node (>= 95%)"
else
	cat "/proc/$target/numa_maps"
	vm_not_ok "pages on node $edu_node" "${after}% < 95%"
fi

# --- stop: originals back -------------------------------------------------------------
kill -TERM "$daemon"
vm_wait_for 20 sh -c "! kill -0 $daemon 2>/dev/null" || vm_not_ok "daemon stop" "still running 20 s after SIGTERM"
wait "$daemon"
vm_expect_eq "daemon exit status" "$?" 0
for task in /proc/"$target"/task/*; do
	vm_expect_eq "thread ${task##*/} ($(cat "$task/comm")) restored" \
		"$(awk '/^Cpus_allowed_list:/ { print $2 }' "$task/status")" "$original"
done
echo "--- daemon log ---"
cat /tmp/daemon.log
kill "$target" 2>/dev/null
vm_finish
