#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# npu-tuned beside what already lives on a host, on a real 4-node kernel with cgroup v2
# (the guest's /init mounts it). Policy: tests/vm/coexist-policies/edu-coexist.json (edu
# device on node 3 = CPUs 6-7 is the accelerator; control 1 CPU, compute 1 CPU; memory to
# a node with 64 MiB free after 1 s; reconcile every 300 ms).
#
# Phase "cpuset", asserted from each thread's Cpus_allowed_list and from numa_maps:
#   1. the worker starts in the root cgroup with 256 MiB on node 0 and is placed on node 3;
#   2. it is moved into a cgroup whose cpuset holds part of node 3 (CPU 6) and CPU 3 of
#      node 1, memory nodes 1-2 only: compute on 6 (near the device), control on 3, and
#      >= 95 % of its pages on nodes 1-2 (node 3 is not allowed);
#   3. the cpuset is rewritten to 2,7 (on 6.1 the kernel resets every mask to the cpuset):
#      compute on 7, control on 2;
#   4. rewritten to 4-5 (node 2 only, nothing near the device): control 4, compute 5, and
#      --explain says its cpuset has no CPU near the accelerator, with the fix.
# shellcheck disable=SC2317 # the check functions run through vm_wait_for
# shellcheck source-path=SCRIPTDIR source=../guest-lib.sh
. /usr/lib/npu-vm/lib.sh
vm_numa_balancing_off

for tool in npu-tuned threads-target; do
	command -v "$tool" >/dev/null || vm_fail "$tool not in the guest (pass it with --file)"
done
[ "$VM_NODES" -ge 4 ] && [ "$VM_CPUS_PER_NODE" = 2 ] || vm_skip "needs 4 nodes of 2 CPUs (got $VM_NODES x $VM_CPUS_PER_NODE)"
# shellcheck disable=SC2086 # VM_EDU is a space-separated list of BDF=node words
set -- $VM_EDU
[ "${1#*=}" = 3 ] || vm_skip "needs the edu device on node 3 (--edu-node 3)"
cg=/sys/fs/cgroup
[ -e $cg/cgroup.controllers ] || vm_skip "no cgroup v2 at $cg"
grep -qw cpuset $cg/cgroup.controllers || vm_skip "the kernel's cgroup v2 has no cpuset controller"
echo +cpuset >$cg/cgroup.subtree_control || vm_fail "cannot enable the cpuset controller"
pod=$cg/kubepods.slice/kubepods-pod1c6e2f0a_8d4b_4e2a_9f31_0a1b2c3d4e5f.slice
ctr=$pod/cri-containerd-4f1c2a9b3d7e5f60718293a4b5c6d7e8f9012345678901234567890abcdef012.scope
mkdir -p $ctr || vm_fail "cannot create $ctr"
for d in $cg/kubepods.slice $pod; do echo +cpuset >"$d/cgroup.subtree_control"; done

# roles PID CONTROL COMPUTE: every thread on its role's CPU (main and ctl-*: control)
roles() {
	for task in /proc/"$1"/task/*; do
		comm=$(cat "$task/comm") || return 1
		allowed=$(awk '/^Cpus_allowed_list:/ { print $2 }' "$task/status") || return 1
		case $comm in work-*) want=$3 ;; *) want=$2 ;; esac
		[ "$allowed" = "$want" ] || return 1
	done
}
expect_roles() { # WHAT PID CONTROL COMPUTE
	if vm_wait_for 20 roles "$2" "$3" "$4"; then
		vm_ok "$1: control on $3, compute on $4 (every thread)"
	else
		for task in /proc/"$2"/task/*; do
			echo "  ${task##*/} $(cat "$task/comm"): $(awk '/^Cpus_allowed_list:/ { print $2 }' "$task/status")"
		done
		vm_not_ok "$1" "threads not on control $3 / compute $4"
	fi
}
pct_on() { # PID NODE...: % of pages on these nodes, from one read of numa_maps
	_p=$1; shift
	awk -v nodes=" $* " '{ for (i = 1; i <= NF; i++) if ($i ~ /^N[0-9]+=/) {
		split($i, kv, "="); sz = 4; n = substr(kv[1], 2)
		for (j = 1; j <= NF; j++) if ($j ~ /^kernelpagesize_kB=/) { split($j, p, "="); sz = p[2] }
		total += kv[2] * sz; if (index(nodes, " " n " ")) on += kv[2] * sz } }
		END { if (total == 0) print 0; else printf "%d\n", on * 100 / total }' "/proc/$_p/numa_maps"
}

npu-tuned --check-policy /etc/npu-tuned/test-policies || vm_fail "the test policy does not validate"
mkdir -p /run/npu-tuned
npu-tuned --policy-dir /etc/npu-tuned/test-policies --state-dir /run/npu-tuned -v >/tmp/daemon.log 2>&1 &
daemon=$!
vm_wait_for 30 grep -q "Running:" /tmp/daemon.log || { cat /tmp/daemon.log; vm_fail "npu-tuned did not start"; }

# --- 1. placed on the device's node ----------------------------------------------------
threads-target --control 2 --compute 2 --mib 256 --node 0 --timeout 200 >/tmp/ready &
target=$!
vm_wait_for 20 grep -q '^ready' /tmp/ready || vm_fail "threads-target did not start"
expect_roles "root cgroup" "$target" 6 7

# --- 2. into a pod's cpuset: part of node 3, memory nodes 1-2 ----------------------------
echo 3,6 >$ctr/cpuset.cpus && echo 1-2 >$ctr/cpuset.mems || vm_fail "cannot write the cpuset"
echo "$target" >$ctr/cgroup.procs || vm_fail "cannot move the worker into $ctr"
expect_roles "cpuset 3,6 (part of node 3)" "$target" 3 6
mem_allowed() { [ "$(pct_on "$target" 1 2)" -ge 95 ]; }
vm_wait_for 40 mem_allowed || true
pct=$(pct_on "$target" 1 2)
if [ "$pct" -ge 95 ]; then vm_ok "$pct% of the pages on the allowed nodes 1-2"; else
	cat "/proc/$target/numa_maps"; vm_not_ok "pages on nodes 1-2" "$pct% < 95%"; fi
# 95% on nodes 1-2 can come a step before the migration ends (it moves in steps, the
# loop running between them): the last pages on node 3 leave with the last step.
none_on_3() { [ "$(vm_pages_pct 3 "$target")" = 0 ]; }
vm_wait_for 40 none_on_3 || true
vm_expect_eq "pages on node 3 (not in cpuset.mems)" "$(vm_pages_pct 3 "$target")" 0
grep -q "pid $target (pod 1c6e2f0a-8d4b-4e2a-9f31-0a1b2c3d4e5f container containerd://4f1c2a9b3d7e)" /tmp/daemon.log &&
	vm_ok "the log names the pod and the container beside the pid" || vm_not_ok "pod/container in the log" "not found"

# --- 3. the cpuset is rewritten ----------------------------------------------------------
echo 2,7 >$ctr/cpuset.cpus || vm_fail "cannot rewrite the cpuset"
expect_roles "cpuset rewritten to 2,7" "$target" 2 7

# --- 4. nothing near the device ----------------------------------------------------------
echo 4-5 >$ctr/cpuset.cpus || vm_fail "cannot rewrite the cpuset"
expect_roles "cpuset 4-5 (node 2 only)" "$target" 4 5
npu-tuned --policy-dir /etc/npu-tuned/test-policies --explain "$target" >/tmp/explain.txt 2>&1
cat /tmp/explain.txt
grep -q "its cpuset has no CPU on its accelerators' node(s) 3: placed inside its cpuset, on node(s) 2" /tmp/explain.txt &&
	grep -q "single-numa-node" /tmp/explain.txt &&
	vm_ok "explain: no CPU near the accelerator in its cpuset, with the fix" ||
	vm_not_ok "explain for a far cpuset" "no such reason"
grep -q "container:     pod 1c6e2f0a" /tmp/explain.txt && vm_ok "explain names the pod" || vm_not_ok "explain pod" "missing"
vm_expect_eq "cgroup cpuset.cpus untouched" "$(cat $ctr/cpuset.cpus)" "4-5"

kill -TERM "$daemon"
vm_wait_for 20 sh -c "! kill -0 $daemon 2>/dev/null" || vm_not_ok "daemon stop" "still running 20 s after SIGTERM"
echo "--- daemon log ---"
cat /tmp/daemon.log
kill "$target" 2>/dev/null
vm_finish
