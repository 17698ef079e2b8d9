#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Exec -> every thread placed, for each pinner in turn (bench/pinners.sh), as root:
#   bench/placement-latency.sh [--build DIR] [--runs N] [--rounds R] [--threads T] [PINNER...]
# Default pinners: floor floor-facts npu-ext4 npu-tmpfs tuned-default tuned-fork. Each round starts
# every pinner once, in a rotating order, and times N/R runs under it, so the host's load
# falls on all of them alike; the table pools the rounds. A run that has a thread not on
# a single CPU after 2 s counts as failed ("runs with a thread never placed").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build runs=50 rounds=5 threads=4
# shellcheck source=bench/pinners.sh
. "$here/pinners.sh"
bench_args "$@"
bench_begin
pinners=("${bench_rest[@]}")
[ ${#pinners[@]} -gt 0 ] || pinners=(floor floor-facts npu-ext4 npu-tmpfs tuned-default tuned-fork)
mkdir "$bench_tmp/out"
per_round=$(((runs + rounds - 1) / rounds))
echo "exec -> all $((threads + 1)) threads on one CPU; $runs runs per pinner in $rounds interleaved rounds"
echo "npu-ext4 state dir: $bench_tmp_disk/state ($(fs_of "$bench_tmp_disk")); npu-tmpfs: $bench_tmp_shm/state ($(fs_of "$bench_tmp_shm"))"
for round in $(seq "$rounds"); do
        n=${#pinners[@]}
        for i in $(seq 0 $((n - 1))); do
                p=${pinners[$(((i + round) % n))]}
                pinner_start "$p" "placement-latency --child" "*/placement-latency"
                "$build/bench/placement-latency" --raw "$per_round" "$threads" >>"$bench_tmp/out/$p.txt" || true
                pinner_stop
        done
done
python3 "$here/stats.py" --scale 1e-3 --unit us --baseline "${pinners[0]}" --baseline floor-facts "$bench_tmp/out" "${pinners[@]}"
