#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Host knobs on a real kernel: THP (enabled, defrag, khugepaged/defrag), the affinity of
# the guest's real IRQs (the edu device has no driver, so no MSI; the PCIe ports' MSIs
# and the IO-APIC IRQs are what the kernel has), NUMA balancing and the ASPM policy
# (tests/vm/policies/70-knobs.json). For each: the file's bytes after the daemon started
# are what the policy asks (IRQs: off the inference CPUs, the non-housekeeping CPUs of the
# edu nodes), after SIGTERM what they were at boot, and again after a SIGKILL followed by
# `npu-tuned --restore`.
# shellcheck disable=SC2317 # applied runs through vm_wait_for
# shellcheck source-path=SCRIPTDIR source=../guest-lib.sh
. /usr/lib/npu-vm/lib.sh

dir=/tmp/$VM_SCENARIO
# shellcheck disable=SC2086 # VM_EDU is a space-separated list of BDF=node words
set -- $VM_EDU
[ $# -ge 2 ] || vm_skip "needs two edu devices (--edu-node 1 --edu-node 3)"
[ "$VM_CPUS_PER_NODE" = 2 ] || vm_skip "written for 2 CPUs per node (got $VM_CPUS_PER_NODE)"
inference="$((${1#*=} * 2 + 1)) $((${2#*=} * 2 + 1))" # the second CPU of each edu node
mkdir -p "$dir/etc"
cp /usr/share/npu-tuned/site/70-knobs.json "$dir/etc/"
thp=/sys/kernel/mm/transparent_hugepage
aspm=/sys/module/pcie_aspm/parameters/policy
nb=/proc/sys/kernel/numa_balancing
[ -w "$thp/enabled" ] || vm_skip "no THP in this kernel"

selected() { sed -n 's/.*\[\(.*\)\].*/\1/p' "$1"; } # "always [madvise] never" -> madvise
snapshot() { # the knobs' state, one "name value" line each
	echo "thp.enabled $(selected "$thp/enabled")"
	echo "thp.defrag $(selected "$thp/defrag")"
	echo "thp.khugepaged_defrag $(cat "$thp/khugepaged/defrag")"
	[ -f "$nb" ] && echo "numa_balancing $(cat "$nb")"
	[ -f "$aspm" ] && echo "aspm.policy $(selected "$aspm")"
	for irq in /proc/irq/[0-9]*; do
		echo "irq.${irq##*/} $(cat "$irq/smp_affinity_list")"
	done
}
snapshot >"$dir/boot"
vm_log "at boot: $(tr '\n' ' ' <"$dir/boot")"
want() { # NAME VALUE: the desired value of the scalar knobs
	case $1 in
	thp.enabled | thp.defrag) echo never ;;
	thp.khugepaged_defrag | numa_balancing) echo 0 ;;
	aspm.policy) echo performance ;;
	esac
}
# movable IRQs: the ones the daemon can move (root may write their affinity)
movable=$(for irq in /proc/irq/[0-9]*; do
	n=${irq##*/}
	cur=$(cat "$irq/smp_affinity_list")
	if echo "$cur" >"$irq/smp_affinity_list" 2>/dev/null; then echo "$n"; fi
done | tr '\n' ' ')
vm_log "IRQs whose affinity can be written: $movable"
[ -n "$movable" ] || vm_skip "no IRQ whose affinity can be written"

# on_inference CPULIST: does the list hold an inference CPU?
on_inference() {
	echo "$1" | awk -v inf="$inference" 'BEGIN { split(inf, x, " ") }
		{ n = split($0, parts, ","); for (i = 1; i <= n; i++) { m = split(parts[i], ab, "-"); a = ab[1]; b = (m > 1) ? ab[2] : a
			for (c = a; c <= b; c++) for (k in x) if (c == x[k]) found = 1 } }
		END { exit !found }'
}

check_applied() {
	snapshot >"$dir/now"
	while read -r name value; do
		case $name in
		irq.*)
			n=${name#irq.}
			case " $movable " in *" $n "*) ;; *) continue ;; esac
			if on_inference "$value"; then
				vm_not_ok "applied: IRQ $n" "affinity $value holds an inference CPU ($inference)"
			else
				vm_ok "applied: IRQ $n affinity $value (was $(awk -v k="$name" '$1 == k { print $2 }' "$dir/boot")), off the inference CPUs"
			fi
			;;
		*) vm_expect_eq "applied: $name" "$value" "$(want "$name")" ;;
		esac
	done <"$dir/now"
}
check_restored() { # WHAT
	snapshot >"$dir/now"
	if cmp -s "$dir/boot" "$dir/now"; then
		vm_ok "$1: every knob as at boot ($(wc -l <"$dir/now") of them)"
	else
		diff "$dir/boot" "$dir/now"
		vm_not_ok "$1" "knobs differ from their boot values"
	fi
}
applied() { snapshot | grep -q "^thp.enabled never"; }

vm_daemon_start "$dir/daemon.log" --policy-dir "$dir/etc" --state-dir "$dir/state"
vm_wait_for 20 applied || true
check_applied
vm_daemon_stop TERM
vm_expect_eq "daemon exit status after SIGTERM" "$VM_DAEMON_RC" 0
check_restored "restored on SIGTERM"

vm_daemon_start "$dir/daemon-killed.log" --policy-dir "$dir/etc" --state-dir "$dir/state"
vm_wait_for 20 applied || true
vm_check "applied again before the SIGKILL" applied
vm_daemon_stop KILL
snapshot | grep -q "^thp.enabled never"
vm_expect_eq "after SIGKILL: the knobs are still the daemon's (nothing restored them)" "$?" 0
npu-tuned --restore --state-dir "$dir/state" >"$dir/restore.log" 2>&1
vm_expect_eq "npu-tuned --restore exit status" "$?" 0
check_restored "restored by --restore after SIGKILL"
vm_finish
