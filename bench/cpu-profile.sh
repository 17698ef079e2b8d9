#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Where each pinner's CPU time goes per matched process, as root:
#   bench/cpu-profile.sh [--build DIR] [--runs N] [--rounds R] [PINNER...]
# For each pinner (default: floor-facts floor-shape-tmpfs npu-tmpfs: the floor of
# npu-tuned's shape on the same filesystem), in R interleaved rounds:
# perf(1) samples its threads on the CPU clock (-F 10000, kernel and user) while
# bench/placement-latency runs N matched processes of 5 threads; then prints, per matched
# process in microseconds (the rounds pooled), the time in each system call (the
# __x64_sys_* entry and all it calls: a wait for events is the wake-up after it too),
# in user space by object, and in all. Sampling has its own cost: the sum is above
# bench/cpu-time.sh's figure; compare the pinners with each other, within one run. On a
# paravirtualized guest a sample taken while interrupts are held off is charged where they
# are let on again, so one system call's row can hold another's time: read the sums.
# Needs perf (linux-perf) and a kernel with the x86-64 syscall entry names (else exit 77).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build runs=300 rounds=2
# shellcheck source=bench/pinners.sh
. "$here/pinners.sh"
bench_args "$@"
pinners=("${bench_rest[@]}")
[ ${#pinners[@]} -gt 0 ] || pinners=(floor-facts floor-shape-tmpfs npu-tmpfs)
command -v perf >/dev/null || { echo "needs perf (apt-get install linux-perf)"; exit 77; }
[ "$(uname -m)" = x86_64 ] || { echo "reads the x86-64 system call entry names; this is $(uname -m)"; exit 77; }
bench_begin

for round in $(seq "$rounds"); do
        for pinner in "${pinners[@]}"; do
                pinner_start "$pinner" "placement-latency --child" "*/placement-latency"
                sleep 1
                perf record -q -F 10000 -e cpu-clock -g -p "$pinner_pid" -o "$bench_tmp/$pinner-$round.data" \
                        >/dev/null 2>&1 &
                perf_pid=$!
                sleep 0.5
                "$build/bench/placement-latency" "$runs" 4 >/dev/null || true
                kill -INT "$perf_pid"
                wait "$perf_pid" || true
                pinner_stop
        done
done

# PINNER: "CATEGORY NANOSECONDS" lines, each round's, summed by the awk below.
categories() {
        local r data total
        for r in $(seq "$rounds"); do
                data=$bench_tmp/$1-$r.data
                total=$(perf report -i "$data" --stdio -g none 2>/dev/null | awk '/^# Event count/ { print $NF }')
                echo "all ${total:-0}"
                perf report -i "$data" --children --sort sym --stdio -g none 2>/dev/null |
                        awk -v t="${total:-0}" '$3 == "[k]" && $4 ~ /^__x64_sys_/ { sub(/%/, "", $1); sub(/^__x64_sys_/, "", $4); print $4, $1 * t / 100 }'
                perf report -i "$data" --no-children --sort dso --stdio -g none 2>/dev/null |
                        awk -v t="${total:-0}" '$1 ~ /%$/ && $2 != "[kernel.kallsyms]" { sub(/%/, "", $1); print "user:" $2, $1 * t / 100 }'
        done
}
declare -A ns
names=()
for pinner in "${pinners[@]}"; do
        while read -r cat v; do
                [ -n "${ns[$pinner/$cat]:-}" ] || names+=("$cat")
                ns[$pinner/$cat]=$(awk -v a="${ns[$pinner/$cat]:-0}" -v b="$v" 'BEGIN { print a + b }')
        done < <(categories "$pinner")
done
mapfile -t names < <(printf '%s\n' "${names[@]}" | grep -vx all | sort -u)
per() { awk -v v="${ns[$1/$2]:-0}" -v n="$((runs * rounds))" 'BEGIN { printf "%.1f", v / n / 1000 }'; }
echo "CPU time per matched process (us, perf samples of the pinner's threads, $rounds rounds of $runs processes of 5 threads)"
printf '| where |'; printf ' %s |' "${pinners[@]}"; echo
printf '|---|'; printf -- '---|%.0s' "${pinners[@]}"; echo
# A row is kept where its average over the pinners is at least 0.2 us.
keep() {
        local p s=0
        for p in "${pinners[@]}"; do s=$(awk -v a="$s" -v b="$(per "$p" "$1")" 'BEGIN { print a + b }'); done
        awk -v s="$s" -v n="${#pinners[@]}" 'BEGIN { exit !(s / n >= 0.2) }'
}
for cat in all "${names[@]}"; do
        [ "$cat" = all ] || keep "$cat" || continue
        case $cat in all) label="all" ;; user:*) label="user space: ${cat#user:}" ;; *) label="$cat(2)" ;; esac
        printf '| %s |' "$label"
        for p in "${pinners[@]}"; do printf ' %s |' "$(per "$p" "$cat")"; done
        echo
done
echo "(rows under 0.2 us per pinner on average are left out; a system call's row holds all it called, a wait its wake-up)"
