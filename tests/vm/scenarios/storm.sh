#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# A fork storm inside the guest while the daemon runs: VM_STORM_N (default 3000) short
# processes (fork + exec of /bin/true, several at a time) with VM_STORM_WORKERS (default
# 4: one per CPU pair of the guest) vLLM-shaped workers (npt-server as /usr/bin/python3, "vllm-worker R": exec, then a
# retitle to VLLM::Worker_TP<R> 150 ms later) started among them, spread over the
# storm. None may be missed: each worker's main thread ends up pinned (its
# Cpus_allowed_list is no longer every CPU) and the daemon logged a placement of its pid.
# The daemon's event and overrun counts are printed: an overrun is allowed (the resync
# must find what the lost events said), a missed worker is not.
# shellcheck disable=SC2317 # pinned runs through vm_wait_for
# shellcheck source-path=SCRIPTDIR source=../guest-lib.sh
. /usr/lib/npu-vm/lib.sh

dir=/tmp/$VM_SCENARIO
n=${VM_STORM_N:-3000}
k=${VM_STORM_WORKERS:-4}
mkdir -p "$dir/etc"
cp /usr/share/npu-tuned/site/60-guest-edu.json "$dir/etc/"
all=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status)

vm_daemon_start "$dir/daemon.log" --policy-dir /usr/share/npu-tuned/policies --policy-dir "$dir/etc" \
	--state-dir "$dir/state"
t0=$(vm_uptime)
every=$((n / k))
i=0
r=0
: >"$dir/workers"
while [ "$i" -lt "$n" ]; do
	/bin/true &
	a=$!
	/bin/true &
	b=$!
	/bin/true &
	c=$!
	/bin/true &
	d=$!
	/bin/true &
	e=$!
	i=$((i + 5))
	if [ $((i % every)) -lt 5 ] && [ "$r" -lt "$k" ]; then
		EDU_VISIBLE_DEVICES=1,0 python3 vllm-worker "$((r % 2))" >/dev/null 2>&1 &
		echo $! >>"$dir/workers"
		r=$((r + 1))
	fi
	wait "$a" "$b" "$c" "$d" "$e" # the short ones; the workers run on
done 2>/dev/null
storm=$(vm_elapsed "$t0")
workers=$(tr '\n' ' ' <"$dir/workers")
# shellcheck disable=SC2086 # a list of pids
vm_track $workers
vm_log "storm: $n short processes and $r workers in ${storm}s"

pinned() { [ "$(vm_cpus_of "$1")" != "$all" ]; }
missed=0
for w in $workers; do
	vm_wait_for 30 pinned "$w" || true
	if pinned "$w" && grep -q "pid $w (rule \"vllm-worker\"" "$dir/daemon.log"; then
		vm_ok "worker $w found in the storm and placed: $(vm_threads "$w" | awk '{ print $2 "=" $3 }' | sort -u | tr '\n' ' ')"
	else
		missed=$((missed + 1))
		vm_not_ok "worker $w" "missed in the storm (main thread on $(vm_cpus_of "$w"))"
	fi
done
vm_expect_eq "workers missed in a storm of $n processes" "$missed" 0
grep -i "overrun\|resync\|ENOBUFS" "$dir/daemon.log" | tail -n 3
vm_daemon_stop TERM
# shellcheck disable=SC2086 # a list of pids
kill $workers 2>/dev/null
vm_finish
