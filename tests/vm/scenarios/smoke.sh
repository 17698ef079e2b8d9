#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Smoke test of the VM harness itself: the guest kernel shows the NUMA topology
# and the edu devices the harness configured, and the kernel features the
# daemon relies on (numa_maps, migrate_pages, proc connector) really work.
# shellcheck source-path=SCRIPTDIR source=../guest-lib.sh
. /usr/lib/npu-vm/lib.sh

last=$((VM_NODES - 1))

# --- topology -------------------------------------------------------------------
vm_expect_eq "nodes online" "$(cat /sys/devices/system/node/online)" "0-$last"
vm_expect_eq "cpus online" "$(cat /sys/devices/system/cpu/online)" "0-$((VM_SMP - 1))"
n=0
while [ "$n" -le "$last" ]; do
	d=/sys/devices/system/node/node$n
	vm_expect_eq "node$n cpulist" "$(cat "$d/cpulist")" "$(vm_node_cpulist "$n")"
	kb=$(awk '/MemTotal:/ { print $4 }' "$d/meminfo")
	# the kernel keeps some of each node for itself; ask for >= 75 %
	if [ "$kb" -ge $((VM_MEM_PER_NODE_MB * 1024 * 3 / 4)) ]; then
		vm_ok "node$n MemTotal ${kb} kB"
	else
		vm_not_ok "node$n MemTotal" "${kb} kB < 75% of ${VM_MEM_PER_NODE_MB} MB"
	fi
	n=$((n + 1))
done

# --- edu devices (vendor 0x1234, device 0x11e8) on their nodes -------------------
want=0
for spec in $VM_EDU; do
	bdf=${spec%=*}
	node=${spec#*=}
	want=$((want + 1))
	d=/sys/bus/pci/devices/$bdf
	if [ ! -d "$d" ]; then
		vm_not_ok "edu $bdf" "not in /sys/bus/pci/devices"
		continue
	fi
	vm_expect_eq "$bdf vendor:device" "$(cat "$d/vendor"):$(cat "$d/device")" "0x1234:0x11e8"
	vm_expect_eq "$bdf numa_node" "$(cat "$d/numa_node")" "$node"
	vm_expect_eq "$bdf local_cpulist" "$(cat "$d/local_cpulist")" "$(vm_node_cpulist "$node")"
done
got=0
for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor"):$(cat "$d/device")" = "0x1234:0x11e8" ] && got=$((got + 1))
done
vm_expect_eq "edu device count" "$got" "$want"

# --- kernel features ----------------------------------------------------------------
if grep -q ' anon=[0-9]* .*N[0-9]*=' /proc/self/numa_maps; then
	vm_ok "/proc/self/numa_maps readable with anon= and N<node>= fields"
else
	cat /proc/self/numa_maps
	vm_not_ok "/proc/self/numa_maps" "unreadable or no anon VMA with N<node>= fields"
fi

if [ -f /boot/config ]; then
	vm_check "CONFIG_PROC_EVENTS=y" grep -qx 'CONFIG_PROC_EVENTS=y' /boot/config
fi
vm_check "proc connector delivers EXEC events" npu-vm-helper proc-connector --timeout-ms 10000

vm_check "migrate_pages moves 64 MiB node0 -> node$last (>= 95%)" \
	npu-vm-helper migrate-test --mb 64 --from 0 --to "$last" --min-pct 95

vm_finish
