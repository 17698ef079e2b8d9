#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Exec -> all threads placed, with the real daemon. As root:
#   bench/placement-latency.sh [BUILD_DIR] [RUNS] [THREADS]
set -euo pipefail
build=${1:-build}
runs=${2:-100}
threads=${3:-4}
tmp=$(mktemp -d)
trap 'kill "$daemon" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -m 0755 "$tmp/policies" && mkdir -m 0700 "$tmp/state"
cat >"$tmp/policies/bench.json" <<'JSON'
{
  "version": 1,
  "host": { "irq": { "housekeeping_cpus_per_node": 0, "steer_accelerator_irqs": false } },
  "processes": [{
    "name": "latency-child",
    "match": { "exe": "*/placement-latency", "cmdline": " --child ", "user": "root" },
    "accelerators": "none",
    "unattributed": { "action": "place", "nodes": "0" },
    "threads": {
      "control": { "main_thread": true, "cpus": 1 },
      "compute": { "cpus": 1 }
    },
    "memory": { "migrate": false },
    "restore_on_stop": false
  }]
}
JSON
"$build/daemon/npu-tuned" --policy-dir "$tmp/policies" --state-dir "$tmp/state" >"$tmp/log" 2>&1 &
daemon=$!
for _ in $(seq 100); do grep -q "Running:" "$tmp/log" && break; sleep 0.05; done
grep -q "Running:" "$tmp/log" || { cat "$tmp/log"; exit 1; }
"$build/bench/placement-latency" "$runs" "$threads"
ps -o rss=,cputime= -p "$daemon" | awk '{ print "daemon RSS " $1 " KiB, CPU time " $2 }'
