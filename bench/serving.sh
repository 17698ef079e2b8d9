#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The effect users buy: a control thread that must wake every millisecond beside compute
# threads saturating every CPU they get (bench/serving-lateness), untuned, under npu-tuned
# (a rule that gives the main thread the control CPU and the rest the compute CPU) and
# under tuned (a [scheduler] rule: it matches processes, not threads, so the best it can
# do is bind the whole process to the inference CPUs, here all of them), as root:
#   bench/serving.sh [--build DIR] [--rounds R] [--seconds S] [--spinners N]
# Rounds rotate the order; the table pools the wake-ups of all rounds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build rounds=3 seconds=5 spinners=6
# shellcheck source=bench/pinners.sh
. "$here/pinners.sh"
bench_args "$@"
bench_begin
mkdir "$bench_tmp/out"
tuned_affinity=0x$(printf '%x' $(((1 << $(nproc)) - 1)))
pinners=(untuned npu-tmpfs tuned-default)
echo "control thread lateness, $spinners spinners on $(nproc) CPUs, ${seconds} s x $rounds rounds per config"
for round in $(seq "$rounds"); do
        n=${#pinners[@]}
        for i in $(seq 0 $((n - 1))); do
                p=${pinners[$(((i + round) % n))]}
                pinner_start "$p" "serving-lateness" "*/serving-lateness"
                "$build/bench/serving-lateness" --raw --spinners "$spinners" --seconds "$seconds" >>"$bench_tmp/out/$p.txt"
                pinner_stop
        done
done
python3 "$here/stats.py" --scale 1e-3 --unit us --pcts 50,99,99.9,100 --ratio-pct 99 --baseline untuned "$bench_tmp/out" "${pinners[@]}"
