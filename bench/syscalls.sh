#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# System calls per matched process, by name, for each pinner, as root:
#   bench/syscalls.sh [--build DIR] [--runs N] [PINNER...]
# Default pinners: floor floor-facts npu-tmpfs npu-ext4 (bench/pinners.sh). Each one runs
# under `strace -f -c` while N matched processes of 5 threads (bench/placement-latency)
# run one after the other; strace counts every call the pinner makes, the host's own
# events included (a few per second here, the same for all). Prints one row per system
# call (calls per matched process) and the total, with each pinner's total over the
# floor's and over floor-facts'. strace slows every pinner alike; the counts, not the
# times, are what this is for.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build runs=50
# shellcheck source=bench/pinners.sh
. "$here/pinners.sh"
bench_args "$@"
pinners=("${bench_rest[@]}")
[ ${#pinners[@]} -gt 0 ] || pinners=(floor floor-facts npu-tmpfs npu-ext4)
command -v strace >/dev/null || { echo "needs strace (tools/install-deps.sh --bench)"; exit 77; }
bench_begin
for p in "${pinners[@]}"; do
        pinner_start "$p" "placement-latency --child" "*/placement-latency"
        strace -f -c -o "$bench_tmp/$p.strace" -p "$pinner_pid" 2>/dev/null &
        tracer=$!
        sleep 1 # strace attached
        "$build/bench/placement-latency" "$runs" 4 >/dev/null || true
        kill -INT "$tracer"
        wait "$tracer" || true
        pinner_stop
done
# strace -c's table: "% time seconds usecs/call calls errors syscall"; the errors column
# is empty for a call that never failed.
python3 - "$bench_tmp" "$runs" "${pinners[@]}" <<'PY'
import re, sys
tmp, runs, pinners = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
counts = {}
for p in pinners:
    c = {}
    for line in open(f"{tmp}/{p}.strace"):
        f = line.split()
        if len(f) >= 5 and re.match(r"^[0-9.]+$", f[0]) and f[-1] != "total":
            c[f[-1]] = int(f[3])
    counts[p] = c
names = sorted({n for c in counts.values() for n in c}, key=lambda n: -max(c.get(n, 0) for c in counts.values()))
print(f"system calls per matched process of 5 threads ({runs} in a row, strace -f -c)")
print("| system call | " + " | ".join(pinners) + " |")
print("|---|" + "---|" * len(pinners))
for n in names:
    print(f"| {n} | " + " | ".join(f"{counts[p].get(n, 0) / runs:.1f}" for p in pinners) + " |")
tot = {p: sum(counts[p].values()) / runs for p in pinners}
print("| **total** | " + " | ".join(f"**{tot[p]:.1f}**" for p in pinners) + " |")
for base in ("floor", "floor-facts"):
    if base in tot and tot[base] > 0:
        print(f"| / {base} | " + " | ".join(f"{tot[p] / tot[base]:.2f}" for p in pinners) + " |")
PY
