#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# npu-tuned --print-topology --json on the generated machines (tests/fixtures/gen-fakeroot.py):
# every node, CPU set and accelerator must match the machine as designed (the generator's
# manifest), plus the facts stated outright (Atlas NPUs on nodes 0,0,2,2; the reference
# deployment's free memory; an NPU whose firmware says -1 is reported as null, never node 0).
set -euo pipefail
src=${NPU_SOURCE_ROOT:?}
bin=${NPU_BUILD_ROOT:?}/daemon/npu-tuned
base=/dev/shm
[ -w "$base" ] || base=${TMPDIR:-/tmp}
tmp=$(mktemp -d "$base/npu-topo-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check() { # NAME MACHINE [generator options...]
        local name=$1 machine=$2
        shift 2
        python3 "$src/tests/fixtures/gen-fakeroot.py" "$machine" "$tmp/$name" "$@" >/dev/null
        "$bin" --print-topology --json --root "$tmp/$name" >"$tmp/$name.json"
        python3 - "$tmp/$name" "$tmp/$name.json" "$name" <<'PY'
import json, sys
root, out, name = sys.argv[1:]
m = json.load(open(f"{root}/npu-tuned-fixture.json"))
j = json.load(open(out))
def fail(msg):
    print(f"FAIL {name}: {msg}")
    sys.exit(1)

def cpus(s):
    r = set()
    for part in filter(None, s.split(",")):
        a, _, b = part.partition("-")
        r.update(range(int(a), int(b or a) + 1))
    return r

online = cpus(m["cpus"]["online"])
if cpus(j["cpus_online"]) != online: fail(f"online {j['cpus_online']} != {m['cpus']['online']}")
if cpus(j["cpus_usable"]) != cpus(m["cpus"]["usable"]): fail(f"usable {j['cpus_usable']} != {m['cpus']['usable']}")
nodes = {n["id"]: n for n in j["nodes"]}
# The generator's cgroup restricts CPUs only: every node may take memory; no overlap.
if j["mems_usable"] != sorted(nodes): fail(f"mems_usable {j['mems_usable']}")
if j["nodes_overlap"] is not False: fail("nodes_overlap")
if sorted(nodes) != sorted(int(k) for k in m["nodes"]): fail(f"nodes {sorted(nodes)}")
for k, want in m["nodes"].items():
    got = nodes[int(k)]
    if cpus(got["cpus"]) != cpus(want["cpulist"]) & online: fail(f"node {k} cpus {got['cpus']}")
    if got["mem_total_kib"] != want["mem_total_kb"] or got["mem_free_kib"] != want["mem_free_kb"]: fail(f"node {k} memory")
    if got["distances"] != want["distance"]: fail(f"node {k} distances {got['distances']}")
acc = {a["pci"]: a for a in j["accelerators"]}
if sorted(acc) != sorted(a["bdf"] for a in m["accelerators"]): fail(f"accelerators {sorted(acc)}")
for want in m["accelerators"]:
    got = acc[want["bdf"]]
    if got["kind"] != want["kind"] or got["index"] != want["index"]: fail(f"{want['bdf']} kind/index {got}")
    want_node = None if want["numa_node"] == -1 else want["numa_node"]  # JSON null = unknown
    if got["numa_node"] != want_node: fail(f"{want['bdf']} node {got['numa_node']} != {want['numa_node']}")
    if got["vendor"] != want["vendor"] or got["device"] != want["device"]: fail(f"{want['bdf']} ids")
    if cpus(got["local_cpus"]) != cpus(want["local_cpulist"]): fail(f"{want['bdf']} local cpus {got['local_cpus']}")
    if got["device_node"] != "/" + want["dev"]: fail(f"{want['bdf']} device node {got['device_node']}")
# What the issue states outright, independent of the manifest.
if name.startswith("atlas"):
    by_index = {a["index"]: a for a in j["accelerators"]}
    assert len(by_index) == 4, by_index
    want_nodes = [0, None, 2, 2] if name == "atlas-unknown" else [0, 0, 2, 2]
    if [by_index[i]["numa_node"] for i in range(4)] != want_nodes:
        fail(f"NPU nodes {[by_index[i]['numa_node'] for i in range(4)]} != {want_nodes}")
    if nodes[0]["mem_free_kib"] != 3355443 or nodes[4]["mem_free_kib"] != 29360128: fail("reference free memory")
    if name == "atlas-unknown" and cpus(by_index[1]["local_cpus"]) != online: fail("unknown-node NPU must report all online CPUs")
if name == "hgx":
    gpus = sorted(j["accelerators"], key=lambda a: a["index"])
    assert [g["kind"] for g in gpus] == ["nvidia"] * 8
    assert all(g["index_source"] == "nvidia-device-minor" and g.get("uuid", "").startswith("GPU-") for g in gpus)
    assert [g["numa_node"] for g in gpus] == [0, 0, 0, 0, 1, 1, 1, 1], [g["numa_node"] for g in gpus]
print(f"ok {name}: {len(nodes)} nodes, {len(acc)} accelerators")
PY
}

check atlas atlas-800i-a2
check atlas-unknown atlas-800i-a2-unknown-node
check atlas-offline atlas-800i-a2 --offline 0,24-47,100 --cgroup-cpus 0-11,96-119
check hgx nvidia-hgx
check hgx-nosmt nvidia-hgx --offline 112-223
check hgx-cgroup nvidia-hgx --cgroup-cpus 0-3,112-115
check minimal minimal-1node --offline 3 --cgroup-cpus 1-3
# A policy's NUMA override names the node the firmware did not: --print-topology shows it
# (and says it came from the policy), with that node's CPUs as the device's local CPUs.
mkdir -m 0755 "$tmp/override"
printf '{"version": 1, "accelerators": {"numa_node_overrides": [{"pci": "0000:c2:00.0", "node": 0}]}}\n' \
        >"$tmp/override/50-override.json"
chmod 0644 "$tmp/override/50-override.json"
"$bin" --print-topology --json --root "$tmp/atlas-unknown" --policy-dir "$tmp/override" >"$tmp/override.json"
python3 - "$tmp/override.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
a = next(x for x in j["accelerators"] if x["pci"] == "0000:c2:00.0")
assert a["numa_node"] == 0 and a.get("numa_node_source") == "policy" and a["local_cpus"] == "0-23", a
assert all("numa_node_source" not in x for x in j["accelerators"] if x["pci"] != "0000:c2:00.0")
print("ok atlas-unknown + policy override: 0000:c2:00.0 on node 0 (from the policy), CPUs 0-23")
PY
echo "test-topology-fixtures: all passed"
