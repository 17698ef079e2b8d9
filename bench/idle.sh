#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# What each pinner costs while nothing it manages happens: the floor, npu-tuned and tuned
# run side by side (none of them has anything to place) for S seconds, as root:
#   bench/idle.sh [--build DIR] [--seconds S]
# Printed per pinner: CPU time used, context switches (wake-ups: voluntary + involuntary,
# all threads) and RSS. They all see the same process events of the rest of the host;
# the floor wakes for nothing else, so its count is what the host's events alone cost.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build seconds=60
# shellcheck source=bench/pinners.sh
. "$here/pinners.sh"
bench_args "$@"
bench_begin
declare -A pid
stop_all() {
        for p in "${!pid[@]}"; do
                pinner_pid=${pid[$p]}
                pinner_stop
        done
}
trap 'stop_all; rm -rf "$bench_tmp" "$bench_tmp_shm"' EXIT # all three, not the last
wakeups() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n + 0 }'; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
names=(floor npu-tmpfs tuned-default)
for p in "${names[@]}"; do
        pinner_start "$p" "no-such-process-npu-bench" "*/no-such-process-npu-bench"
        pid[$p]=$pinner_pid
        pinner_pid=""
done
sleep 5
declare -A cpu0 wk0
for p in "${names[@]}"; do
        cpu0[$p]=$(cpu_seconds "${pid[$p]}") wk0[$p]=$(wakeups "${pid[$p]}")
done
sleep "$seconds"
echo "idle for $seconds s, side by side (the host's own process events reach all three)"
echo "| pinner | CPU ms | wake-ups | RSS KiB |"
echo "|---|---|---|---|"
for p in "${names[@]}"; do
        cpu=$(awk -v a="${cpu0[$p]}" -v b="$(cpu_seconds "${pid[$p]}")" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
        echo "| $p | $cpu | $(($(wakeups "${pid[$p]}") - wk0[$p])) | $(rss_kib "${pid[$p]}") |"
done
