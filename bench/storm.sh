#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# A fork storm and what it costs each pinner (bench/pinners.sh), one after the other, as
# root:
#   bench/storm.sh [--build DIR] [--unmatched N] [--matched M] [PINNER...]
# (default: floor floor-facts npu-tmpfs tuned-default tuned-fork). Each pinner is started, its RSS
# read, then bench/fork-storm runs N unmatched + M matched short-lived processes; printed:
# matched processes never placed, the pinner's CPU time during the storm (user + system),
# overruns of its event socket (ENOBUFS; tuned's perf ring loses events silently), its
# RSS after start and after the storm, and its storm CPU over floor-facts' when that ran.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build unmatched=10000 matched=100
# shellcheck source=bench/pinners.sh
. "$here/pinners.sh"
bench_args "$@"
bench_begin
pinners=("${bench_rest[@]}")
[ ${#pinners[@]} -gt 0 ] || pinners=(floor floor-facts npu-tmpfs tuned-default tuned-fork)
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# tuned runs python under nice: the pinner's pid is the interpreter's own.
echo "fork storm: $unmatched unmatched + $matched matched processes"
echo "| pinner | matched missed | CPU s in the storm | / floor-facts | overruns | RSS after start KiB | RSS after storm KiB | storm s |"
echo "|---|---|---|---|---|---|---|---|"
ff_cpu=""
for p in "${pinners[@]}"; do
        pinner_start "$p" "placement-latency --child" "*/placement-latency"
        sleep 1
        rss0=$(rss_kib "$pinner_pid") cpu0=$(cpu_seconds "$pinner_pid")
        out=$("$build/bench/fork-storm" "$unmatched" "$matched" "$build/bench/placement-latency")
        sleep 2
        cpu1=$(cpu_seconds "$pinner_pid") rss1=$(rss_kib "$pinner_pid")
        case $p in
        floor | floor-facts | floor-facts+* | floor-shape*) over=$(grep -c overrun "$pinner_log" || true) ;;
        npu-*) over=$(grep -c "events were lost" "$pinner_log" || true) ;;
        *) over=n/a ;;
        esac
        missed=$(sed -n 's/.*missed \([0-9]*\).*/\1/p' <<<"$out")
        secs=$(sed -n 's/.* in \([0-9.]*\) s;.*/\1/p' <<<"$out")
        cpu=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.2f", b - a }')
        [ "$p" = floor-facts ] && ff_cpu=$cpu
        vs_ff=$(awk -v a="$cpu" -v b="$ff_cpu" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
        echo "| $p | $missed/$matched | $cpu | $vs_ff | $over | $rss0 | $rss1 | $secs |"
        pinner_stop
done
