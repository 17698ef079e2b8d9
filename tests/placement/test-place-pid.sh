#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# place-pid on this machine's kernel: a threads-target process (named control and compute
# threads, 32 MiB on node 0, one more compute thread 1.5 s later) placed by an explicit
# rule on node 0 (control 1 CPU, compute 1 CPU). Asserted from the kernel's own view
# (/proc/PID/task/*/status Cpus_allowed_list), not from place-pid's report.
#
# usage: test-place-pid.sh PLACE_PID THREADS_TARGET        exit 0 / 1 / 77 (skip)
set -euo pipefail

place_pid=$1
threads_target=$2
tmp=$(mktemp -d)
target_pid=
cleanup() {
	[[ -n $target_pid ]] && kill -KILL "$target_pid" 2>/dev/null || true
	rm -rf -- "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -s $tmp/out.json ]] && cat "$tmp/out.json" >&2; exit 1; }

node0=$(cat /sys/devices/system/node/node0/cpulist 2>/dev/null || cat /sys/devices/system/cpu/online)
mine=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status)
# The first two CPUs of node 0 that this shell may use (list format expanded).
expand() { local IFS=,; for r in $1; do if [[ $r == *-* ]]; then seq "${r%-*}" "${r#*-}"; else echo "$r"; fi; done; }
usable=$(comm -12 <(expand "$node0" | sort) <(expand "$mine" | sort) | sort -n | head -2 | xargs)
if [[ $(wc -w <<<"$usable") -lt 2 ]]; then
	echo "SKIP: node 0 has fewer than 2 CPUs this test may use (node0: $node0, allowed: $mine)"
	exit 77
fi
read -r control_cpu compute_cpu <<<"$usable"

"$threads_target" --control 2 --compute 2 --mib 32 --node 0 --late-ms 1500 --timeout 60 >"$tmp/ready" &
target_pid=$!
for _ in $(seq 50); do
	grep -q '^ready' "$tmp/ready" && break
	sleep 0.1
done
grep -q "^ready $target_pid\$" "$tmp/ready" || fail "threads-target did not start"

timeout 30 "$place_pid" --pid "$target_pid" --unattributed-nodes 0 \
	--control-glob 'ctl-*' --control-main --control-cpus 1 \
	--compute-glob 'work-*' --compute-cpus 1 \
	--min-free-mib 1 --settle-ms 2000 --rate-mib-s 64 --tick-ms 50 >"$tmp/out.json" ||
	fail "place-pid exited $?"
grep -Eq '"action": ?"place"' "$tmp/out.json" || fail "not placed"
grep -Eq '^  "error": ?""' "$tmp/out.json" || fail "place-pid reported an error"

n=0
for task in /proc/"$target_pid"/task/*; do
	tid=${task##*/}
	comm=$(cat "$task/comm")
	allowed=$(awk '/^Cpus_allowed_list:/ { print $2 }' "$task/status")
	case $comm in
	ctl-*) want=$control_cpu ;;
	work-*) want=$compute_cpu ;;
	*) [[ $tid == "$target_pid" ]] && want=$control_cpu || fail "unexpected thread $tid ($comm)" ;;
	esac
	[[ $allowed == "$want" ]] || fail "thread $tid ($comm) on CPUs $allowed, want $want"
	echo "ok: thread $tid ($comm) on CPU $allowed"
	n=$((n + 1))
done
[[ $n -eq 6 ]] || fail "saw $n threads, want 6 (main, ctl-0, ctl-1, work-0, work-1, work-late-0)"
echo "PASS: control threads on CPU $control_cpu, compute threads on CPU $compute_cpu (work-late-0 too)"
