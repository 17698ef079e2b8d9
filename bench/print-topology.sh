#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# How long `npu-tuned --print-topology --json` takes on the largest capture of hwloc's corpus
# (256ppc-8n8s4t: 256 CPUs, 8 nodes) and on the others. Prints milliseconds per run
# (median and max of N runs) and the peak RSS.
# Usage: bench/print-topology.sh [BUILD_DIR] [RUNS]
set -euo pipefail
build=${1:-build}
runs=${2:-50}
shared=${NPU_SHARED_DIR:-$(dirname "$0")/../../shared}
bin=$build/daemon/npu-tuned
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for tarball in "$shared"/fixtures/hwloc-linux/*.tar.bz2; do
        name=$(basename "$tarball" .tar.bz2)
        mkdir -p "$tmp/$name"
        tar xjf "$tarball" -C "$tmp/$name"
        root=$(find "$tmp/$name" -mindepth 1 -maxdepth 1 -type d | head -n1)
        times=()
        for _ in $(seq "$runs"); do
                s=$(date +%s%N)
                "$bin" --print-topology --json --root "$root" >/dev/null
                e=$(date +%s%N)
                times+=($(( (e - s) / 1000 )))
        done
        sorted=$(printf '%s\n' "${times[@]}" | sort -n)
        median=$(echo "$sorted" | sed -n "$(( (runs + 1) / 2 ))p")
        max=$(echo "$sorted" | tail -n1)
        rss=$(/usr/bin/time -f %M "$bin" --print-topology --json --root "$root" 2>&1 >/dev/null | tail -n1)
        printf '%-36s median %6.2f ms  max %6.2f ms  peak RSS %s KiB\n' "$name" \
                "$(echo "$median / 1000" | bc -l)" "$(echo "$max / 1000" | bc -l)" "$rss"
done
