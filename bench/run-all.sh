#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Every comparison bench, one after the other, as root (tools/install-deps.sh --bench
# installs the peers and tools):
#   bench/run-all.sh [--build DIR] [--quick]
# Prints each bench's table (the same ones bench/RESULTS.md holds) under a heading with the
# date, the kernel and the command. --quick: fewer runs, for a smoke test. Each bench is
# started through $BENCH_WRAP when set (e.g. a lock the host's other users honour: the
# benches pin real processes and listen to every process event).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build quick=""
while [ $# -gt 0 ]; do
        case $1 in
        --build) build=$2; shift 2 ;;
        --quick) quick=1; shift ;;
        *) echo "usage: $0 [--build DIR] [--quick]" >&2; exit 2 ;;
        esac
done
if [ -n "$quick" ]; then
        lat=(--runs 10 --rounds 2) cpu=(--execs 200 --matched 5) srv=(--rounds 1 --seconds 2)
        storm=(--unmatched 1000 --matched 10) idle=(--seconds 5) react=(--runs 10) cput=(--runs 20 --execs 200 --rounds 1)
        prof=(--runs 20 --rounds 1) sysc=(--runs 10)
        scale=(--procs "1 64" --ticks 1 --scan 1000 --rates "2000 0" --seconds 2)
        burst=(--burst "64 256")
else
        lat=(--runs 50 --rounds 5) cpu=(--execs 1000 --matched 20) srv=(--rounds 3 --seconds 5)
        storm=(--unmatched 10000 --matched 100) idle=(--seconds 60) react=(--runs 50) cput=(--runs 100 --execs 1000 --rounds 7)
        prof=(--runs 300 --rounds 2) sysc=(--runs 50)
        scale=()
        burst=(--burst "1024 4096" --raise-pid-max)
fi
run() {
        echo
        echo "### $1"
        echo
        local cmd="bench/$2" a
        for a in "${@:3}"; do cmd+=" $(printf %q "$a")"; done
        echo "\`$cmd\`"
        echo
        ${BENCH_WRAP:-} "$here/$2" --build "$build" "${@:3}"
}
echo "## $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
run "Exec -> every thread placed" placement-latency.sh "${lat[@]}"
run "Reaction time, as each pinner measures it" reaction.sh "${react[@]}"
run "CPU per event (instructions)" cpu-per-event.sh "${cpu[@]}"
run "CPU time per event (system calls included)" cpu-time.sh "${cput[@]}"
run "Where the CPU time per matched process goes" cpu-profile.sh "${prof[@]}"
run "System calls per matched process" syscalls.sh "${sysc[@]}"
run "Fork storm" storm.sh "${storm[@]}"
run "Idle" idle.sh "${idle[@]}"
run "The control thread's wake-up lateness" serving.sh "${srv[@]}"
run "How costs grow with the work" scaling.sh "${scale[@]}"
run "A burst of processes, against floor-facts" scaling.sh "${burst[@]}" burst
