#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# npu-tuned's own reaction times, as it measures them (kernel event timestamp to its last
# sched_setaffinity for the event, per kind), and their handling part (from when it began
# to handle the event: the rest is the wait for the daemon to wake, or for the events
# before it), with the state dir on a disk filesystem and on tmpfs, and the two floor
# pinners' (bench/pinners.sh) measured the same way, as root:
#   bench/reaction.sh [--build DIR] [--runs N]
# Runs bench/placement-latency (an exec whose 4 threads start at once and name themselves
# "work-N"): each run has an exec and new threads. npu-tuned runs twice on tmpfs: under
# the benches' rule (the main thread control, the others compute: the floor-facts job),
# and under one that also makes "work-0" a control thread by its name ("names"), which
# reads each new thread's name before its pin and adds renames that change a role. Prints
# the pinners' summary lines (logged when they stop). npu-tuned runs at its default log
# level: its debug lines are written while an event is handled, so with them on they
# would be part of what is measured. Its quantiles are histogram bounds, at most 1/8 above
# the true value (daemon/placement/reaction-time.h); the floors' are exact.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build runs=50
# shellcheck source=bench/pinners.sh
. "$here/pinners.sh"
bench_args "$@"
bench_begin
# The floor, and the floor that reads and writes what npu-tuned must (bench/pinners.sh).
for p in floor floor-facts; do
        pinner_start "$p" "placement-latency --child" "*/placement-latency"
        "$build/bench/placement-latency" "$runs" 4 >/dev/null || true
        pinner_stop
        echo "$p: $(sed -n 's/.*: reaction times: //p' "$bench_tmp/$p.log")"
        echo "$p handling: $(sed -n 's/.*: handling times: //p' "$bench_tmp/$p.log")"
done
names='{ "control": { "main_thread": true, "names": ["work-0"], "cpus": 1 }, "compute": { "cpus": 1 } }'
for run in npu-ext4 npu-tmpfs npu-tmpfs-names; do
        p=${run%-names}
        if [ "$run" = "$p" ]; then unset npu_threads; else npu_threads=$names; fi
        pinner_start "$p" "placement-latency --child" "*/placement-latency"
        "$build/bench/placement-latency" "$runs" 4 >/dev/null || true
        pinner_stop
        echo "$run ($(fs_of "$( [ "$p" = npu-ext4 ] && echo "$bench_tmp_disk" || echo "$bench_tmp_shm")")): $(sed -n 's/.*Reaction times (kernel event to the last CPU affinity set): \(.*\)\..*/\1/p' "$bench_tmp/$p.log")"
        echo "$run handling: $(sed -n "s/.*Handling times (start of the event's handling to the last CPU affinity set): \(.*\)\..*/\1/p" "$bench_tmp/$p.log")"
done
