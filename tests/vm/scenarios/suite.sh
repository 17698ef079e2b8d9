#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Several scenarios in ONE booted guest (booting dominates a scenario's cost): runs each
# of $VM_SUITE (names of /usr/lib/npu-vm/scenarios/NAME.sh, copied in with --file) in
# turn, each in its own shell with VM_SCENARIO=NAME (every VM-CHECK line carries
# "[NAME]"), bounded by VM_SUITE_EACH seconds (default 150). A scenario keeps its files in
# /tmp/NAME/; when it fails, the suite prints every *.log there (the daemon's log) after
# its output. The last lines are one "VM-SCENARIO: NAME PASS|FAIL|SKIP in S s" per
# scenario: the timings for the record.
# shellcheck source-path=SCRIPTDIR source=../guest-lib.sh
. /usr/lib/npu-vm/lib.sh

[ -n "${VM_SUITE:-}" ] || vm_fail "VM_SUITE names no scenario"
each=${VM_SUITE_EACH:-150}
summary=/tmp/suite-summary
: >"$summary"
failed=0
passed=0
for name in $VM_SUITE; do
	script=/usr/lib/npu-vm/scenarios/$name.sh
	[ -f "$script" ] || vm_fail "no scenario $name ($script)"
	mkdir -p "/tmp/$name"
	echo "=== scenario $name ==="
	t0=$(vm_uptime)
	# Its output goes to a file that tail shows as it grows: not a pipe, which whatever the
	# scenario leaves running in the background would hold open.
	: >"/tmp/$name/output"
	tail -f "/tmp/$name/output" &
	tail=$!
	VM_SCENARIO=$name timeout -s TERM -k 5 "$each" sh "$script" </dev/null >"/tmp/$name/output" 2>&1
	rc=$?
	sleep 1.2 # tail -f polls once a second
	kill "$tail" 2>/dev/null
	wait "$tail" 2>/dev/null
	took=$(vm_elapsed "$t0")
	case $rc in
	0) verdict=PASS; passed=$((passed + 1)) ;;
	77) verdict=SKIP ;;
	*)
		verdict=FAIL
		failed=$((failed + 1))
		[ "$rc" = 124 ] || [ "$rc" = 143 ] && _vm_reason "[$name] timed out after ${each}s"
		_vm_reason "[$name] exit status $rc"
		for log in /tmp/"$name"/*.log; do
			[ -f "$log" ] || continue
			echo "--- [$name] $log ---"
			cat "$log"
		done
		;;
	esac
	echo "VM-SCENARIO: $name $verdict in ${took}s" | tee -a "$summary"
	# Whatever the scenario left running (it lists its daemons and servers in
	# /tmp/NAME/pids) must not disturb the next one.
	# shellcheck disable=SC2013 # words: a line may hold several pids
	for pid in $(cat "/tmp/$name/pids" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
	sleep 0.2
done
echo "--- suite summary ---"
cat "$summary"
[ "$failed" = 0 ] || exit 1
[ "$passed" -gt 0 ] || vm_skip "every scenario skipped"
exit 0
