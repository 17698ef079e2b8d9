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

# In a suite (scenarios/suite.sh), VM_SCENARIO names the scenario in every result line.
_vm_tag() { [ -z "${VM_SCENARIO:-}" ] || printf '[%s] ' "$VM_SCENARIO"; }

vm_ok() {
	VM_CHECKS=$((VM_CHECKS + 1))
	echo "VM-CHECK: ok $(_vm_tag)$*"
}

# vm_not_ok WHAT DETAIL
vm_not_ok() {
	VM_CHECKS=$((VM_CHECKS + 1))
	VM_FAILS=$((VM_FAILS + 1))
	echo "VM-CHECK: FAIL $(_vm_tag)$1: $2"
	_vm_reason "$(_vm_tag)$1: $2"
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

# vm_wait_for SECONDS CMD [ARGS...]: poll CMD every 0.2 s until it succeeds; bounded by
# the clock (uptime), not by a count: under TCG one poll of a heavy CMD can take seconds.
vm_wait_for() {
	read -r _up _ </proc/uptime
	_deadline=$((${_up%.*} + $1))
	shift
	while :; do
		"$@" && return 0
		read -r _up _ </proc/uptime
		[ "${_up%.*}" -lt "$_deadline" ] || return 1
		sleep 0.2
	done
}

# vm_roles_placed PID CONTROL COMPUTE: is every thread of threads-target PID on its role's
# CPU (its main thread and ctl-* on CONTROL, work-* on COMPUTE)?
vm_roles_placed() {
	for _task in /proc/"$1"/task/*; do
		_comm=$(cat "$_task/comm") || return 1
		_allowed=$(awk '/^Cpus_allowed_list:/ { print $2 }' "$_task/status") || return 1
		case $_comm in
		ctl-*) _want=$2 ;;
		work-*) _want=$3 ;;
		*) [ "${_task##*/}" = "$1" ] || return 1; _want=$2 ;;
		esac
		[ "$_allowed" = "$_want" ] || return 1
	done
}

# vm_node_cpulist NODE: the cpulist the harness configured for NODE ("0-1", or "2").
vm_node_cpulist() {
	_a=$(($1 * VM_CPUS_PER_NODE))
	_b=$((_a + VM_CPUS_PER_NODE - 1))
	if [ "$_a" = "$_b" ]; then echo "$_a"; else echo "$_a-$_b"; fi
}

# vm_numa_balancing_off: kernel.numa_balancing=0, for a scenario that asserts where every
# page ends up. With it on, the kernel may scan a process that has run for a second and
# unmap its pages for hinting faults; move_pages(2) cannot move such a page (Linux 6.1:
# it queries as absent) until the process touches it again, and a test process never
# does: about one fresh boot in ten failed "pages on node 3: 2% < 95%" that way. What the
# placement does with such pages is tested on purpose, with the scan forced, in
# scenarios/placement.sh.
vm_numa_balancing_off() {
	[ -w /proc/sys/kernel/numa_balancing ] || return 0
	echo 0 >/proc/sys/kernel/numa_balancing || vm_fail "cannot turn kernel.numa_balancing off"
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

vm_fail() { _vm_reason "$(_vm_tag)$*"; echo "vm: FAIL: $(_vm_tag)$*"; exit 1; }
vm_skip() { _vm_reason "$(_vm_tag)$*"; echo "vm: SKIP: $(_vm_tag)$*"; exit 77; }

# vm_uptime: seconds since boot, 10 ms resolution (busybox date has no %N).
vm_uptime() { read -r _u _ </proc/uptime; echo "$_u"; }
# vm_elapsed T0: seconds since vm_uptime said T0, "12.34".
vm_elapsed() { awk -v a="$1" -v b="$(vm_uptime)" 'BEGIN { printf "%.2f", b - a }'; }

# vm_cpus_of PID [TID]: the kernel's Cpus_allowed_list of a task. Shell builtins only: no
# fork per thread (the scenarios poll this).
vm_cpus_of() {
	_cpus=
	while read -r _k _v; do
		[ "$_k" = Cpus_allowed_list: ] && { _cpus=$_v; break; }
	done <"/proc/$1/task/${2:-$1}/status" 2>/dev/null
	echo "$_cpus"
}

# vm_threads PID: one "TID COMM CPUS" line per thread, as the kernel has them.
vm_threads() {
	for _t in /proc/"$1"/task/*; do
		_comm=
		_cpus=
		read -r _comm <"$_t/comm" 2>/dev/null
		while read -r _k _v; do
			[ "$_k" = Cpus_allowed_list: ] && { _cpus=$_v; break; }
		done <"$_t/status" 2>/dev/null
		echo "${_t##*/} $_comm $_cpus"
	done
}

# vm_cmdline PID: its command line, NULs as spaces ("" when gone).
vm_cmdline() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; }

# vm_children PID [CMDLINE-ERE]: its child processes (ascending), those whose command line
# matches the ERE if one is given (busybox here has no pgrep). The stat files are read
# with shell builtins: a fork per process would take seconds under TCG.
vm_children() {
	for _p in /proc/[0-9]*; do
		_line=
		read -r _line <"$_p/stat" 2>/dev/null || continue
		_rest=${_line##*) } # after the comm, which may hold spaces and parentheses
		_rest=${_rest#* }   # after the state
		[ "${_rest%% *}" = "$1" ] || continue
		[ -z "${2:-}" ] || vm_cmdline "${_p#/proc/}" | grep -Eq "$2" || continue
		echo "${_p#/proc/}"
	done | sort -n
}

# vm_track PID...: remember processes for the suite to kill after the scenario.
vm_track() { [ -z "${VM_SCENARIO:-}" ] || echo "$@" >>"/tmp/$VM_SCENARIO/pids"; }

# vm_daemon_start LOG ARGS...: npu-tuned ARGS in the background (-v, output to LOG), then
# wait (bounded) for it to say it runs. Sets VM_DAEMON to its pid; fails the scenario,
# with the log, if it does not come up.
vm_daemon_start() {
	_log=$1
	shift
	npu-tuned -v "$@" >"$_log" 2>&1 &
	VM_DAEMON=$!
	vm_track "$VM_DAEMON"
	if ! vm_wait_for 60 grep -q "Running:" "$_log"; then
		cat "$_log"
		vm_fail "npu-tuned $* did not start"
	fi
	vm_wait_for 30 grep -q "Watching processes" "$_log" || true
}

# vm_daemon_stop [SIGNAL]: stop VM_DAEMON (default TERM) and wait for it (bounded); its
# exit status is in VM_DAEMON_RC (137 after KILL).
vm_daemon_stop() {
	kill "-${1:-TERM}" "$VM_DAEMON" 2>/dev/null
	vm_wait_for 30 sh -c "! kill -0 $VM_DAEMON 2>/dev/null" || vm_not_ok "daemon stop" "pid $VM_DAEMON still runs 30 s after SIG${1:-TERM}"
	wait "$VM_DAEMON"
	# shellcheck disable=SC2034 # for the scenario
	VM_DAEMON_RC=$?
}

# vm_finish: exit 0 if every check passed, else 1.
vm_finish() {
	echo "vm: $VM_CHECKS checks, $VM_FAILS failed"
	[ "$VM_FAILS" = 0 ] || exit 1
	exit 0
}
