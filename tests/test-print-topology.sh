#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# npu-tuned --print-topology as a user runs it: on roots that are not sysfs trees it prints
# one line and exits 1; on real captures its JSON has the documented shape.
set -euo pipefail
bin=${NPU_BUILD_ROOT:?}/daemon/npu-tuned
shared=${NPU_SHARED_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Not a sysfs tree: exit 1, exactly one line on stderr, nothing on stdout.
for root in /nonexistent-npu-tuned "$tmp" /etc; do
        set +e
        "$bin" --print-topology --json --root "$root" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        set -e
        [ "$rc" -eq 1 ] || fail "--root $root: exit $rc, want 1"
        [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "--root $root: stderr not one line: $(cat "$tmp/err")"
        [ ! -s "$tmp/out" ] || fail "--root $root: wrote to stdout"
        echo "ok: --root $root -> $(cat "$tmp/err")"
done

# A file that is garbage where a CPU list should be.
mkdir -p "$tmp/bad/sys/devices/system/cpu"
printf 'garbage\n' >"$tmp/bad/sys/devices/system/cpu/online"
set +e
"$bin" --print-topology --root "$tmp/bad" 2>"$tmp/err" >/dev/null
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "garbage online list: exit $rc"
echo "ok: garbage cpu/online -> $(cat "$tmp/err")"

# Usage errors exit 2.
set +e
"$bin" --print-topology --no-such-option 2>/dev/null
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "unknown option: exit $rc, want 2"

# A real capture: sparse node numbers, JSON shape and values.
capture="$shared/fixtures/hwloc-linux/48amd64-4pa2n6c-sparse.tar.bz2"
if [ ! -f "$capture" ]; then
        # The corpus lives beside the source tree, not in it (a tarball's tree has none).
        echo "SKIP (part): no $capture (NPU_SHARED_DIR): the real capture not checked"
        echo "test-print-topology: passed, without the capture"
        exit 0
fi
mkdir -p "$tmp/cap"
tar xjf "$capture" -C "$tmp/cap"
root=$(find "$tmp/cap" -mindepth 1 -maxdepth 1 -type d)
"$bin" --print-topology --json --root "$root" >"$tmp/j"
python3 - "$tmp/j" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ids = [n["id"] for n in j["nodes"]]
assert ids == [0, 1, 2, 33, 34, 45, 72, 73], ids
n33 = j["nodes"][3]
assert n33["cpus"] == "18-23", n33
assert n33["mem_total_kib"] == 16777216, n33
assert len(n33["distances"]) == 8 and n33["distances"][3] == 10, n33
assert j["cpus_online"] == "0-47" and j["accelerators"] == []
print("ok: sparse capture JSON")
PY
echo "test-print-topology: all passed"
