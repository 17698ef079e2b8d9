# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# Helpers for scenarios (busybox sh). In a scenario:   . /usr/lib/npu-vm/lib.sh
# Installed by run-vm-test.sh; also sources /etc/npu-vm.conf (VM_* variables).
#
# Result lines:  VM-CHECK: ok <what>
#                VM-CHECK: FAIL <what>: <detail>
# The first failure becomes the reason in "VM-RESULT: FAIL <reason>".

# shellcheck source=/dev/null
. /etc/npu-vm.conf

VM_FAILS=0
VM_CHECKS=0

vm_log() { echo "vm: $*"; }

_vm_reason() { [ -s /run/vm-reason ] || echo "$*" >/run/vm-reason; }

vm_ok() {
	VM_CHECKS=$((VM_CHECKS + 1))
	echo "VM-CHECK: ok $*"
}

# vm_not_ok WHAT DETAIL
vm_not_ok() {
	VM_CHECKS=$((VM_CHECKS + 1))
	VM_FAILS=$((VM_FAILS + 1))
	echo "VM-CHECK: FAIL $1: $2"
	_vm_reason "$1: $2"
}

# vm_check WHAT CMD [ARGS...]: ok if CMD exits 0; its output is shown.
vm_check() {
	_what=$1
	shift
	if "$@"; then vm_ok "$_what"; else vm_not_ok "$_what" "'$*' exited $?"; fi
}

# vm_expect_eq WHAT GOT WANT
vm_expect_eq() {
	if [ "$2" = "$3" ]; then vm_ok "$1 = $3"; else vm_not_ok "$1" "got '$2', want '$3'"; fi
}

# vm_wait_for SECONDS CMD [ARGS...]: poll CMD every 0.2 s until it succeeds; bounded.
vm_wait_for() {
	_n=$(($1 * 5))
	shift
	while [ "$_n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.2
		_n=$((_n - 1))
	done
	return 1
}

# vm_node_cpulist NODE: the cpulist the harness configured for NODE ("0-1", or "2").
vm_node_cpulist() {
	_a=$(($1 * VM_CPUS_PER_NODE))
	_b=$((_a + VM_CPUS_PER_NODE - 1))
	if [ "$_a" = "$_b" ]; then echo "$_a"; else echo "$_a-$_b"; fi
}

# vm_pages_pct NODE PID: the % of the process's pages (all VMAs, by page size) that
# /proc/PID/numa_maps shows on NODE: the kernel's own word on where memory is.
vm_pages_pct() {
	awk -v n="N$1=" '{ for (i = 1; i <= NF; i++) if ($i ~ /^N[0-9]+=/) {
		split($i, kv, "="); sz = 4
		for (j = 1; j <= NF; j++) if ($j ~ /^kernelpagesize_kB=/) { split($j, p, "="); sz = p[2] }
		total += kv[2] * sz; if (index($i, n) == 1) on += kv[2] * sz } }
		END { if (total == 0) print 0; else printf "%d\n", on * 100 / total }' "/proc/$2/numa_maps"
}

vm_fail() { _vm_reason "$*"; echo "vm: FAIL: $*"; exit 1; }
vm_skip() { _vm_reason "$*"; echo "vm: SKIP: $*"; exit 77; }

# vm_finish: exit 0 if every check passed, else 1.
vm_finish() {
	echo "vm: $VM_CHECKS checks, $VM_FAILS failed"
	[ "$VM_FAILS" = 0 ] || exit 1
	exit 0
}
