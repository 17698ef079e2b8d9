#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Reading a test root while the host renames files: openat2(RESOLVE_IN_ROOT) answers EAGAIN
# whenever a rename anywhere raced one of its ".." steps, and every sysfs device link has
# them. tune_open() retries; without that, a busy CI machine read a GPU's vendor as 0 (the
# ASan run of test-topology-fixtures failed that way). The reading under a rename storm must
# be byte-identical to the quiet one.
set -euo pipefail
src=${NPU_SOURCE_ROOT:?}
bin=${NPU_BUILD_ROOT:?}/daemon/npu-tuned
base=/dev/shm
[ -w "$base" ] || base=${TMPDIR:-/tmp}
tmp=$(mktemp -d "$base/npu-race-XXXXXX")
storm=
trap '[ -z "$storm" ] || kill "$storm" 2>/dev/null; rm -rf "$tmp"' EXIT

python3 "$src/tests/fixtures/gen-fakeroot.py" nvidia-hgx "$tmp/root" >/dev/null
"$bin" --print-topology --json --root "$tmp/root" >"$tmp/quiet.json"

# Renames outside the root: they touch nothing the daemon reads, yet bump the kernel's
# global rename sequence that RESOLVE_IN_ROOT checks.
touch "$tmp/a"
python3 -c '
import os, sys
a, b = sys.argv[1] + "/a", sys.argv[1] + "/b"
while True:
    os.rename(a, b); os.rename(b, a)
' "$tmp" &
storm=$!

runs=20 differ=0
for i in $(seq 1 $runs); do
        "$bin" --print-topology --json --root "$tmp/root" >"$tmp/busy.json"
        cmp -s "$tmp/quiet.json" "$tmp/busy.json" || differ=$((differ + 1))
done
kill "$storm"; wait "$storm" 2>/dev/null || true; storm=
if [ "$differ" -ne 0 ]; then
        echo "FAIL: $differ of $runs readings under a rename storm differ from the quiet one"
        diff "$tmp/quiet.json" "$tmp/busy.json" | head -20
        exit 1
fi
echo "ok: $runs readings under a rename storm match the quiet one"
