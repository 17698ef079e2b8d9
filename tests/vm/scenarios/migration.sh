#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Memory migration at scale: VM_MIGRATE_MIB (default 1024) MiB of a threads-target
# process, touched on node 0, moved to the edu node (the second edu device's) three ways,
# each on a fresh process, best of VM_MIGRATE_ROUNDS (3); libtune's moves timed by
# place-pid (the migration alone), migratepages by the guest's uptime around the command:
#   stepped   libtune's rate-limited move_pages(2) sessions (place-pid --rate-mib-s 4096
#             in 50 ms ticks: steps of at most 204.8 MiB with 50 ms pauses between them);
#   one call  libtune's single migrate_pages(2) (place-pid --rate-mib-s 0);
#   baseline  numactl's migratepages PID 0 NODE.
# Each must leave >= 95 % of the process's pages on the node (numa_maps). The throughput
# of each and the ratios to migratepages are printed ("VM-MIGRATE: ...").
# shellcheck source-path=SCRIPTDIR source=../guest-lib.sh
. /usr/lib/npu-vm/lib.sh
vm_numa_balancing_off

dir=/tmp/$VM_SCENARIO
mib=${VM_MIGRATE_MIB:-1024}
# shellcheck disable=SC2086 # VM_EDU is a space-separated list of BDF=node words
set -- $VM_EDU
[ $# -ge 1 ] || vm_skip "no edu device"
for e in $VM_EDU; do to=${e#*=}; done # the last edu device's node
accel=edu:$(($# - 1))
[ "$to" != 0 ] || vm_skip "the edu device must not be on node 0"
for tool in place-pid threads-target migratepages; do
	command -v "$tool" >/dev/null || vm_fail "$tool not in the guest (pass it with --file)"
done
need=$((mib + 128))
for node in 0 "$to"; do
	free=$(awk '/MemFree/ { print int($4 / 1024) }' "/sys/devices/system/node/node$node/meminfo")
	[ "$free" -ge "$need" ] || vm_skip "node $node has $free MiB free, $need needed (--mem-per-node)"
done

# Automatic NUMA balancing moves pages on its own (towards the CPUs a task ran on): it
# would skew the setup and the timings. Off for this scenario, back as it was after.
nb=/proc/sys/kernel/numa_balancing
nb_boot=$(cat "$nb" 2>/dev/null)
[ -z "$nb_boot" ] || echo 0 >"$nb"
trap '[ -z "$nb_boot" ] || echo "$nb_boot" >"$nb"' EXIT

free_of() { awk '/MemFree/ { print int($4 / 1024) }' "/sys/devices/system/node/node$1/meminfo"; }

n_targets=0
# start_target: a process with $mib MiB touched on node 0; sets target.
start_target() {
	sync
	echo 3 >/proc/sys/vm/drop_caches # node 0's page cache must not stand in the way
	t_start=$(vm_uptime)
	n_targets=$((n_targets + 1))
	ready=$dir/ready.$n_targets # its own: the previous target's "ready" must not count
	threads-target --control 1 --compute 1 --mib "$mib" --node 0 --timeout 300 >"$ready" 2>&1 &
	target=$!
	vm_track "$target"
	vm_wait_for 120 grep -q '^ready' "$ready" || vm_fail "threads-target ($mib MiB) did not start"
	before=$(vm_pages_pct 0 "$target")
	vm_log "target $target: $mib MiB touched in $(vm_elapsed "$t_start")s, ${before}% on node 0; free MiB per node: $(for n in 0 1 2 3; do printf '%s ' "$(free_of "$n")"; done)"
	[ "$before" -ge 90 ] || vm_fail "setup: only ${before}% of the pages on node 0"
}

# finish_target HOW SECONDS: check where the pages are, record the throughput, stop it.
finish_target() {
	after=$(vm_pages_pct "$to" "$target")
	if [ "$after" -ge 95 ]; then
		vm_ok "$1: ${after}% of $mib MiB on node $to in ${2}s"
	else
		vm_not_ok "$1" "${after}% of the pages on node $to"
	fi
	echo "$1 $2" >>"$dir/times"
	kill -KILL "$target" 2>/dev/null
	wait "$target" 2>/dev/null
}

place() { # RATE: place-pid moving the whole process to the edu node, no settle delay
	timeout 250 place-pid --pid "$target" --kind edu:1234:11e8 --accel "$accel" \
		--control-main --control-cpus 1 --compute-cpus 1 --min-free-mib 0 --settle-ms 0 \
		--rate-mib-s "$1" --tick-ms 50 >"$dir/place-$1.json" 2>&1
}
# migration_s FILE: the migration's own time in place-pid's report, in seconds.
migration_s() { sed -n 's/.*"ms": *\([0-9]*\).*/\1/p' "$1" | tail -n1 | awk '{ printf "%.2f", $1 / 1000 }'; }

: >"$dir/times"
# Each way VM_MIGRATE_ROUNDS times (default 3), interleaved; the best time of each counts
# (TCG on a shared host: another process's burst must not decide the ratio).
rate=4096 # stepped: 4096 MiB/s in 50 ms ticks = at most 204.8 MiB a step
round=0
while [ "$round" -lt "${VM_MIGRATE_ROUNDS:-3}" ]; do
	round=$((round + 1))
	start_target
	place "$rate" || { cat "$dir/place-$rate.json"; vm_fail "place-pid (stepped) failed"; }
	finish_target stepped "$(migration_s "$dir/place-$rate.json")"
	grep -q '"mode": *"move_pages"' "$dir/place-$rate.json" || vm_not_ok "stepped" "place-pid did not step with move_pages"
	vm_log "stepped: $(sed -n 's/.*"steps": *\([0-9]*\).*/\1/p' "$dir/place-$rate.json") steps"

	start_target
	place 0 || { cat "$dir/place-0.json"; vm_fail "place-pid (one call) failed"; }
	finish_target one-call "$(migration_s "$dir/place-0.json")"
	grep -q '"mode": *"migrate_pages"' "$dir/place-0.json" || vm_not_ok "one call" "place-pid did not use migrate_pages"

	start_target
	t0=$(vm_uptime)
	migratepages "$target" 0 "$to" || vm_not_ok "migratepages" "exit status $?"
	finish_target migratepages "$(vm_elapsed "$t0")"
done

awk -v mib="$mib" -v rounds="${VM_MIGRATE_ROUNDS:-3}" '!($1 in t) || $2 < t[$1] { t[$1] = $2 } END {
	base = mib / (t["migratepages"] > 0 ? t["migratepages"] : 0.01)
	for (k in t) {
		tp = mib / (t[k] > 0 ? t[k] : 0.01)
		printf "VM-MIGRATE: %s %d MiB in %.2f s (best of %d) = %.0f MiB/s, %.2fx migratepages\n", k, mib, t[k], rounds, tp, tp / base
	}
}' "$dir/times"
vm_finish
