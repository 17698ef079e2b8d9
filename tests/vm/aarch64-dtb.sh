#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The device tree of an aarch64 test guest (QEMU `virt`) with its pxb-pcie expander
# bridges visible, each on its NUMA node. Used by run-vm-test.sh.
#
# usage: aarch64-dtb.sh IN.dtb OUT.dtb BUS_NR:NODE...
#   IN.dtb   what `qemu-system-aarch64 -machine virt,...,dumpdtb=IN.dtb` wrote for the very
#            machine that will boot (same options, pxb-pcie devices included)
#   BUS_NR:NODE  one per pxb-pcie, in ascending order: its bus_nr and its numa_node
#
# Why: on `virt` booted from a device tree, QEMU describes one PCIe host bridge
# (pcie@10000000, buses 0-255, domain 0). A pxb-pcie is a host bridge of its own, not a
# PCI-to-PCI bridge, so Linux never scans the buses behind it: the device on it stays
# invisible. (With UEFI and ACPI the firmware describes the pxb, but then the guest sees
# one NUMA node.) So the tree gets, per pxb, a pci-host-ecam-generic node of its own:
#   - buses BUS_NR..BUS_NR+31 (its slice of the one ECAM window), PCI domain i+1;
#   - numa-node-id = NODE, which Linux hands down to every device below it (numa_node,
#     local_cpulist);
#   - a 32 MiB slice of the 32-bit MMIO window, the ITS as MSI parent, the INTx map;
# and the first host bridge keeps buses 0..first BUS_NR-1 and the MMIO below the slices,
# so no two bridges claim the same ECAM or MMIO range. A device behind pxb i is then
# DOMAIN:BUS_NR+1:00.0, e.g. 0001:21:00.0 for the first (bus_nr 32).
set -euo pipefail

prog=aarch64-dtb
die() { printf '%s: %s\n' "$prog" "$*" >&2; exit 1; }
(($# >= 3)) || die "usage: $0 IN.dtb OUT.dtb BUS_NR:NODE..."
in=$1 out=$2
shift 2
command -v dtc >/dev/null || die "dtc not installed (package device-tree-compiler)"

dts=$(dtc -q -I dtb -O dts "$in") || die "dtc cannot read $in"
# The first host bridge's block, as QEMU writes it (one property a line).
host=$(awk '/^\tpcie@10000000 \{$/ { f = 1 } f { print } f && /^\t\};$/ { exit }' <<<"$dts")
[[ -n $host ]] || die "no pcie@10000000 in $in (not a virt machine?)"
prop() { # NAME: the property's whole line from the host bridge's block
	awk -v n="$1" '$1 == n { print; exit }' <<<"$host"
}
expect_prop() { # NAME VALUE: the line QEMU 7.2 writes; anything else is a layout this script does not know
	[[ $(prop "$1") == $'\t\t'"$1 = $2;" ]] || die "unexpected $1 in pcie@10000000: '$(prop "$1")'"
}
expect_prop reg '<0x40 0x10000000 0x00 0x10000000>'
expect_prop bus-range '<0x00 0xff>'
msi_map=$(prop msi-map)
[[ -n $msi_map ]] || die "pcie@10000000 has no msi-map (gic-version=3 with its ITS expected)"
ranges=$(prop ranges)
[[ $ranges == *'0x2000000 0x00 0x10000000 0x00 0x10000000 0x00 0x2eff0000'* ]] ||
	die "unexpected 32-bit MMIO window in pcie@10000000: '$ranges'"

ecam=0x4010000000   # the ECAM window: 1 MiB per bus
mmio_base=0x20000000 # the pxb slices start here, 32 MiB each; the first bridge keeps 0x10000000-0x1fffffff
first_bus=
nodes=()
i=0
for spec in "$@"; do
	[[ $spec =~ ^([0-9]+):([0-9]+)$ ]] || die "bad BUS_NR:NODE '$spec'"
	bus=${BASH_REMATCH[1]} node=${BASH_REMATCH[2]}
	((bus % 32 == 0 && bus >= 32 && bus <= 224)) || die "bus_nr $bus: want a multiple of 32 in 32..224"
	[[ -z $first_bus ]] && first_bus=$bus
	cfg=$((ecam + (bus << 20)))
	mmio=$((mmio_base + i * 0x2000000))
	nodes+=("$(printf '\tpcie@%x {
		compatible = "pci-host-ecam-generic";
		device_type = "pci";
		#address-cells = <0x03>;
		#size-cells = <0x02>;
		linux,pci-domain = <%d>;
		numa-node-id = <%d>;
		bus-range = <0x%x 0x%x>;
		reg = <0x%x 0x%x 0x00 0x2000000>;
		ranges = <0x2000000 0x00 0x%x 0x00 0x%x 0x00 0x2000000>;
		dma-coherent;
%s
%s
%s
%s
	};' "$cfg" $((i + 1)) "$node" "$bus" $((bus + 31)) $((cfg >> 32)) $((cfg & 0xffffffff)) \
		"$mmio" "$mmio" "$msi_map" "$(prop '#interrupt-cells')" "$(prop interrupt-map-mask)" \
		"$(prop interrupt-map)")")
	i=$((i + 1))
done
((mmio_base + i * 0x2000000 <= 0x3eff0000)) || die "too many pxb slices for the 32-bit MMIO window"

{
	# the first bridge shrunk to the buses and MMIO below the pxbs
	awk -v buses="$first_bus" '
		/^\tpcie@10000000 \{$/ { f = 1 }
		f && $1 == "reg" { sub(/0x10000000>;$/, sprintf("0x%x>;", buses * 1048576)) }
		f && $1 == "bus-range" { sub(/0xff>;$/, sprintf("0x%x>;", buses - 1)) }
		f && $1 == "ranges" { sub(/0x2000000 0x00 0x10000000 0x00 0x10000000 0x00 0x2eff0000/,
		                          "0x2000000 0x00 0x10000000 0x00 0x10000000 0x00 0x10000000") }
		f && /^\t\};$/ { f = 0 }
		{ print }' <<<"$dts"
	printf '\n/ {\n'
	printf '%s\n' "${nodes[@]}"
	printf '};\n'
} >"$out.dts"
dtc -q -I dts -O dtb -o "$out" "$out.dts" || die "dtc cannot compile $out.dts"
rm -f "$out.dts"
