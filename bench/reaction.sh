#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# npu-tuned's own reaction times, as it measures them (kernel event timestamp to its last
# sched_setaffinity for the event, per kind), with the state dir on a disk filesystem and
# on tmpfs, and the two floor pinners' (bench/pinners.sh) measured the same way, as root:
#   bench/reaction.sh [--build DIR] [--runs N]
# Runs bench/placement-latency (an exec whose 4 threads start at once and name themselves
# "work-N") under a rule that makes "work-0" a control thread, so each run has an exec, new
# threads and a rename that changes a role; prints the daemon's summary line (logged at
# debug level when it stops).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build runs=50
# shellcheck source=bench/pinners.sh
. "$here/pinners.sh"
bench_args "$@"
bench_begin
npu_threads='{ "control": { "main_thread": true, "names": ["work-0"], "cpus": 1 }, "compute": { "cpus": 1 } }'
# The floor, and the floor that reads and writes what npu-tuned must (bench/pinners.sh).
for p in floor floor-facts; do
        pinner_start "$p" "placement-latency --child" "*/placement-latency"
        "$build/bench/placement-latency" "$runs" 4 >/dev/null || true
        pinner_stop
        echo "$p: $(sed -n 's/.*reaction times: //p' "$bench_tmp/$p.log")"
done
for p in npu-ext4 npu-tmpfs; do
        npu_args=-v pinner_start "$p" "placement-latency --child" "*/placement-latency"
        "$build/bench/placement-latency" "$runs" 4 >/dev/null || true
        pinner_stop
        echo "$p ($(fs_of "$( [ $p = npu-ext4 ] && echo "$bench_tmp_disk" || echo "$bench_tmp_shm")")): $(sed -n 's/.*Reaction times (kernel event to the last CPU affinity set): \(.*\)\. (.*/\1/p' "$bench_tmp/$p.log")"
        # The histogram bounds a quantile within 1/8 above it; the debug log has each
        # reaction exactly ("pid N: KIND placed US us after the kernel's event").
        echo "$p exact: $(sed -n "s/.*: \(exec\|thread\|rename\) placed \([0-9]*\) us after the kernel's event.*/\1 \2/p" "$bench_tmp/$p.log" |
                sort -k1,1 -k2,2n | awk '
                        function show(k,   i) { if (n[k] == 0) return; printf "%s%s n=%d p50=%dus p99=%dus max=%dus", sep, k, n[k],
                                v[k, int((n[k] - 1) * 0.5) + 1], v[k, int((n[k] - 1) * 0.99) + 1], v[k, n[k]]; sep = "; " }
                        { n[$1]++; v[$1, n[$1]] = $2 }
                        END { show("exec"); show("thread"); show("rename"); print "" }')"
done
