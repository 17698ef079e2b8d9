#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# What npu-tuned --print-topology reports on a real kernel, against what the harness built:
# every node with its CPUs and a distance row, and each edu device (declared an accelerator
# kind by tests/vm/policies/edu-placement.json) at its PCI address on its node. On aarch64
# the devices sit in PCI domains 1, 2, ... (one host bridge each), so the address is read,
# never assumed to start with 0000.
# shellcheck source-path=SCRIPTDIR source=../guest-lib.sh
. /usr/lib/npu-vm/lib.sh

command -v npu-tuned >/dev/null || vm_fail "npu-tuned not in the guest (pass it with --file)"
policies=/etc/npu-tuned/test-policies
npu-tuned --print-topology --json --policy-dir "$policies" >/tmp/topology.json 2>/tmp/topology.err ||
	{ cat /tmp/topology.err; vm_fail "npu-tuned --print-topology --json failed"; }
cat /tmp/topology.json
# one object a line: nodes, then accelerators (json-c writes them without newlines)
tr '{' '\n' </tmp/topology.json >/tmp/objects

last=$((VM_NODES - 1))
n=0
while [ "$n" -le "$last" ]; do
	line=$(grep "^\"id\":$n," /tmp/objects)
	vm_expect_eq "node $n cpus" "$(echo "$line" | sed -n 's/.*"cpus":"\([^"]*\)".*/\1/p')" "$(vm_node_cpulist "$n")"
	row=$(echo "$line" | sed -n 's/.*"distances":\[\([^]]*\)\].*/\1/p' | tr -d ' ')
	vm_expect_eq "node $n distances: $VM_NODES entries" "$(echo "$row" | tr ',' '\n' | grep -c .)" "$VM_NODES"
	n=$((n + 1))
done
vm_expect_eq "cpus_online" "$(sed -n 's/.*"cpus_online":"\([^"]*\)".*/\1/p' /tmp/topology.json)" "0-$((VM_SMP - 1))"

want=0
for spec in $VM_EDU; do
	bdf=${spec%=*}
	node=${spec#*=}
	want=$((want + 1))
	line=$(grep "\"pci\":\"$bdf\"" /tmp/objects)
	if [ -z "$line" ]; then
		vm_not_ok "edu $bdf" "not among the accelerators"
		continue
	fi
	vm_expect_eq "$bdf kind" "$(echo "$line" | sed -n 's/.*"kind":"\([^"]*\)".*/\1/p')" edu
	vm_expect_eq "$bdf numa_node" "$(echo "$line" | sed -n 's/.*"numa_node":\([0-9-]*\).*/\1/p')" "$node"
done
vm_expect_eq "accelerators" "$(grep -c '"kind":' /tmp/objects)" "$want"

# The table a person reads names the same address.
npu-tuned --print-topology --policy-dir "$policies" >/tmp/topology.txt 2>&1
for spec in $VM_EDU; do
	vm_check "table row for ${spec%=*}" grep -q " ${spec%=*} " /tmp/topology.txt
done
vm_finish
