#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# CPU time per event, system calls included (what the instruction counts of
# bench/cpu-per-event.sh leave out), as root:
#   bench/cpu-time.sh [--build DIR] [--runs N] [--execs N] [--rounds R] [PINNER...]
# For each pinner (default: floor floor-facts floor-shape-tmpfs floor-shape npu-tmpfs
# npu-ext4), in R interleaved rounds: its CPU time (the kernel's se.sum_exec_runtime of
# every thread, /proc/PID/task/*/sched, in microseconds) over an idle stretch, over N matched processes
# of 5 threads (bench/placement-latency, one after the other) and over N unmatched execs
# (/bin/true).
# The host's own events reach every pinner alike: the idle stretch's CPU per second is
# taken out of the other two by their duration. Prints per matched process and per 1000
# unmatched execs, medians over the rounds, and each pinner's over the floor's, floor-facts'
# and (npu-tuned's) the floor of its shape's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build runs=100 execs=1000 rounds=3
# shellcheck source=bench/pinners.sh
. "$here/pinners.sh"
bench_args "$@"
pinners=("${bench_rest[@]}")
[ ${#pinners[@]} -gt 0 ] || pinners=(floor floor-facts floor-shape-tmpfs floor-shape npu-tmpfs npu-ext4)
bench_begin
grep -q sum_exec_runtime /proc/self/sched 2>/dev/null || { echo "needs /proc/PID/sched (CONFIG_SCHED_DEBUG)"; exit 77; }

cpu_us() { # PID: CPU time of all its threads, microseconds
        cat /proc/"$1"/task/*/sched 2>/dev/null | awk '/se.sum_exec_runtime/ { t += $3 } END { printf "%.0f", t * 1000 }'
}
now_us() { awk '{ printf "%.0f", $1 * 1000000 }' /proc/uptime; }

declare -A cost
for round in $(seq "$rounds"); do
        for pinner in "${pinners[@]}"; do
                pinner_start "$pinner" "placement-latency --child" "*/placement-latency"
                sleep 1
                c0=$(cpu_us "$pinner_pid") t0=$(now_us)
                sleep 2
                c1=$(cpu_us "$pinner_pid") t1=$(now_us)
                idle_rate=$(awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) 'BEGIN { print (t > 0 ? c / t : 0) }')
                "$build/bench/placement-latency" "$runs" 4 >/dev/null || true
                c2=$(cpu_us "$pinner_pid") t2=$(now_us)
                for _ in $(seq "$execs"); do /bin/true; done
                c3=$(cpu_us "$pinner_pid") t3=$(now_us)
                pinner_stop
                net() { awk -v c="$1" -v t="$2" -v r="$idle_rate" -v n="$3" -v m="$4" \
                        'BEGIN { v = (c - t * r) * m / n; printf "%.1f", (v > 0 ? v : 0) }'; }
                cost[$pinner-matched-$round]=$(net $((c2 - c1)) $((t2 - t1)) "$runs" 1)
                cost[$pinner-unmatched-$round]=$(net $((c3 - c2)) $((t3 - t2)) "$execs" 1000)
                cost[$pinner-idle-$round]=$(awk -v r="$idle_rate" 'BEGIN { printf "%.0f", r * 1000000 }')
        done
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
col() { # PINNER KIND
        local vals=() r
        for r in $(seq "$rounds"); do vals+=("${cost[$1-$2-$r]}"); done
        median "${vals[@]}"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }
echo "CPU time (us, system calls included), medians of $rounds rounds; $runs matched processes of 5 threads, $execs unmatched execs"
for pinner in "${pinners[@]}"; do
        case $pinner in npu-ext4*) echo "$pinner state dir: $bench_tmp_disk/state ($(fs_of "$bench_tmp_disk"))" ;; npu-tmpfs*) echo "$pinner state dir: $bench_tmp_shm/state ($(fs_of "$bench_tmp_shm"))" ;; esac
done
# Each pinner against the floor, floor-facts (npu-tuned's cost beyond the facts it must
# read) and, for npu-tuned, the floor of its shape on the same filesystem (floor-shape for
# npu-ext4, floor-shape-tmpfs for npu-tmpfs: its cost beyond the facts and the ways it is
# built, bench/floor-pinner.c); "-" where that one did not run.
ran() { local p; for p in "${pinners[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }
shape_of() { case $1 in npu-ext4*) echo floor-shape ;; npu-tmpfs*) echo floor-shape-tmpfs ;; esac; }
of() { # PINNER KIND: its median, 0 when it did not run
        if [ -n "$1" ] && ran "$1"; then col "$1" "$2"; else echo 0; fi
}
echo "| pinner | per matched process us | / floor | / floor-facts | / same-shape floor | per 1000 unmatched execs us | / floor | / floor-facts | idle us/s (host's events) |"
echo "|---|---|---|---|---|---|---|---|---|"
fm=$(of floor matched) fu=$(of floor unmatched) gm=$(of floor-facts matched) gu=$(of floor-facts unmatched)
for pinner in "${pinners[@]}"; do
        m=$(col "$pinner" matched) u=$(col "$pinner" unmatched) sm=$(of "$(shape_of "$pinner")" matched)
        echo "| $pinner | $m | $(ratio "$m" "$fm") | $(ratio "$m" "$gm") | $(ratio "$m" "$sm") | $u | $(ratio "$u" "$fu") | $(ratio "$u" "$gu") | $(col "$pinner" idle) |"
done
