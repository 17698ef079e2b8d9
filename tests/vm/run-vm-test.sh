#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Run a test scenario inside a QEMU (TCG) guest with a real kernel, several NUMA
# nodes and QEMU "edu" PCI devices (1234:11e8) attached to chosen nodes.
#
# usage: run-vm-test.sh --scenario FILE [options]
#   --scenario FILE        shell script (busybox sh) run in the guest as /scenario.sh
#   --file HOST[:GUEST]    copy a file or directory into the guest (repeatable);
#                          GUEST defaults to /usr/local/bin/BASENAME. The shared
#                          libraries of every ELF copied (ldd) come along.
#   --env NAME=VALUE       export NAME=VALUE to the scenario (repeatable)
#   --timeout SEC          bound on the whole QEMU run (default 300); the scenario
#                          itself gets SEC minus a boot margin
#   --smp N                vCPUs (default 8), split evenly over the nodes
#   --nodes N              NUMA nodes (default 4)
#   --mem-per-node MB      memory per node (default 512)
#   --edu-node N|none      add an edu device local to node N (repeatable;
#                          default: one on the last node); "none": no device
#   --append ARG           extra kernel command-line argument (repeatable)
#   --log FILE             also write the guest console (CR stripped) to FILE
#   --keep                 keep the temporary directory (initramfs, console log)
#   --arch A               the guest's architecture: x86_64 (default; q35) or aarch64
#                          (virt, GICv3; binaries and libraries from the arm64 sysroot)
#   -h, --help
#
# Exit status: 0 PASS, 1 FAIL / timeout / no result line, 2 usage error,
#              77 SKIP (the guest said so, or the host lacks QEMU, the kernel or
#              a tool; the reason is printed).
# Env: NPU_VM_CACHE (kernel cache, default tests/vm/cache), NPU_VM_KERNEL (kernel
#      image to boot instead), NPU_VM_HELPER (prebuilt npu-vm-helper), CC,
#      NPU_VM_ARCH (default of --arch), NPU_VM_KERNEL_SERIES (6.1 by default, or 5.10:
#      the kernel setup.sh --kernel-series fetched), NPU_VM_SYSROOT (aarch64: the sysroot
#      of tools/cross/arm64-sysroot.sh, default tools/cross/sysroot-aarch64),
#      NPU_VM_CC (aarch64: the compiler of the helper, default aarch64-linux-gnu-gcc).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prog=run-vm-test
cache=${NPU_VM_CACHE:-$here/cache}

say() { printf '%s: %s\n' "$prog" "$*"; }
usage_error() { printf '%s: %s (see --help)\n' "$prog" "$*" >&2; exit 2; }
skip() { say "SKIP: $*"; exit 77; }
fail() { say "FAIL: $*"; exit 1; }

scenario=
files=()
envs=()
timeout_s=300
smp=8
nodes=4
mem_per_node=512
edu_nodes=()
edu_default=1
appends=()
log_copy=
keep=0
arch=${NPU_VM_ARCH:-x86_64}
series=${NPU_VM_KERNEL_SERIES:-6.1}

need_arg() { (($# >= 2)) || usage_error "$1 needs an argument"; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

while (($#)); do
	case $1 in
	--scenario) need_arg "$@"; scenario=$2; shift ;;
	--file) need_arg "$@"; files+=("$2"); shift ;;
	--env) need_arg "$@"; envs+=("$2"); shift ;;
	--timeout) need_arg "$@"; timeout_s=$2; shift ;;
	--smp) need_arg "$@"; smp=$2; shift ;;
	--nodes) need_arg "$@"; nodes=$2; shift ;;
	--mem-per-node) need_arg "$@"; mem_per_node=$2; shift ;;
	--edu-node)
		need_arg "$@"
		edu_default=0
		[[ $2 == none ]] || edu_nodes+=("$2")
		shift ;;
	--append) need_arg "$@"; appends+=("$2"); shift ;;
	--log) need_arg "$@"; log_copy=$2; shift ;;
	--keep) keep=1 ;;
	--arch) need_arg "$@"; arch=$2; shift ;;
	-h|--help) sed -n '3,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) usage_error "unknown argument: $1" ;;
	esac
	shift
done

# --- validate ---------------------------------------------------------------------
[[ -n $scenario ]] || usage_error "--scenario is required"
[[ -f $scenario ]] || usage_error "scenario not found: $scenario"
for v in timeout_s smp nodes mem_per_node; do
	if ! is_uint "${!v}" || ((${!v} == 0)); then usage_error "bad --${v//_/-}: ${!v}"; fi
done
((timeout_s >= 30)) || usage_error "--timeout must be >= 30 s (boot alone takes ~5-10 s)"
((nodes <= 64)) || usage_error "at most 64 nodes"
((smp % nodes == 0)) || usage_error "--smp $smp is not a multiple of --nodes $nodes"
((edu_default)) && edu_nodes=("$((nodes - 1))")
((${#edu_nodes[@]} <= 7)) || usage_error "at most 7 edu devices"
for n in "${edu_nodes[@]}"; do
	if ! is_uint "$n" || ((n >= nodes)); then
		usage_error "bad --edu-node $n (nodes are 0..$((nodes - 1)))"
	fi
done
for e in "${envs[@]}"; do
	[[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage_error "bad --env $e (want NAME=VALUE)"
done
cpus_per_node=$((smp / nodes))
# Leave the guest's scenario a margin for boot and poweroff inside the host bound:
# a quarter of it, at least 15 s, at most 60 s.
margin=$((timeout_s / 4))
margin=$((margin < 15 ? 15 : margin > 60 ? 60 : margin))
scenario_timeout=$((timeout_s - margin))

case $arch in
x86_64) elf_machine=003e console_dev=ttyS0 ;; # e_machine EM_X86_64
aarch64) elf_machine=00b7 console_dev=ttyAMA0 ;; # EM_AARCH64
*) usage_error "unknown --arch $arch (x86_64 or aarch64)" ;;
esac
[[ $series =~ ^[0-9]+\.[0-9]+$ ]] || usage_error "bad NPU_VM_KERNEL_SERIES $series"
# setup.sh's rule: the x86-64 6.1 kernel at the top of the cache, others in ARCH-SERIES
if [[ $arch != x86_64 || $series != 6.1 ]]; then cache=$cache/$arch-$series; fi
setup_cmd="tests/vm/setup.sh$([[ $arch == x86_64 ]] || echo " --arch $arch")$([[ $series == 6.1 ]] || echo " --kernel-series $series")"

# --- host capabilities (77 = truly absent, with the reason) -------------------------
qemu=$(command -v "qemu-system-$arch" || true)
[[ -n $qemu ]] || skip "qemu-system-$arch not installed (run $setup_cmd)"
kernel=${NPU_VM_KERNEL:-}
if [[ -z $kernel ]]; then
	for k in "$cache/vmlinux" "$cache/Image" "$cache/vmlinuz"; do
		if [[ -s $k ]]; then kernel=$k; break; fi
	done
fi
[[ -n $kernel && -s $kernel ]] || skip "no guest kernel in $cache (run $setup_cmd)"
busybox=
sysroot=
if [[ $arch == aarch64 ]]; then
	sysroot=${NPU_VM_SYSROOT:-$here/../../tools/cross/sysroot-aarch64}
	[[ -x $sysroot/bin/busybox ]] || skip "no arm64 sysroot with busybox in $sysroot (run $setup_cmd)"
	sysroot=$(cd "$sysroot" && pwd)
	busybox=$sysroot/bin/busybox
	command -v qemu-aarch64 >/dev/null || skip "qemu-aarch64 (qemu-user) not installed: it lists the arm64 busybox's applets (run $setup_cmd)"
	command -v dtc >/dev/null || skip "dtc not installed (package device-tree-compiler; run $setup_cmd)"
else
	for b in /bin/busybox /usr/bin/busybox; do
		if [[ -x $b ]] && ! ldd "$b" >/dev/null 2>&1; then busybox=$b; break; fi
	done
fi
[[ -n $busybox ]] || skip "no static busybox (install busybox-static; run tests/vm/setup.sh)"
command -v cpio >/dev/null || skip "cpio not installed (run tests/vm/setup.sh)"
command -v timeout >/dev/null || skip "coreutils timeout not found"

# --- temp dir, cleanup --------------------------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/npu-vm.XXXXXX")
qemu_pid=
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if [[ -n $qemu_pid ]] && kill -0 "$qemu_pid" 2>/dev/null; then
		kill -TERM "$qemu_pid" 2>/dev/null || true
		sleep 1
		kill -KILL "$qemu_pid" 2>/dev/null || true
	fi
	if ((keep)); then say "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'say "interrupted"; exit 1' INT TERM HUP

root=$tmp/root
mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib,usr/lib64,usr/local/bin,usr/lib/npu-vm} \
	"$root"/{proc,sys,dev,run,tmp,root,etc,boot,var}
ln -s usr/bin "$root/bin"
ln -s usr/sbin "$root/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
ln -s /run "$root/var/run"
ln -s /tmp "$root/var/tmp"

# --- busybox and its applets ----------------------------------------------------------
cp "$busybox" "$root/usr/bin/busybox"
busybox_run=("$busybox")
[[ $arch == x86_64 ]] || busybox_run=("qemu-$arch" "$busybox")
while read -r applet; do
	[[ -n $applet && ! -e $root/$applet && ! -L $root/$applet ]] || continue
	mkdir -p "$root/$(dirname "$applet")"
	ln -s /usr/bin/busybox "$root/$applet"
done < <("${busybox_run[@]}" --list-full)

# --- copy files, with the shared libraries of ELF files ---------------------------------
declare -A libs_done=()
is_elf() { [[ -f $1 && $(head -c 4 "$1" 2>/dev/null) == $'\x7fELF' ]]; }

# elf_machine FILE: e_machine as 4 hex digits (little-endian ELF: bytes 18-19)
elf_machine() { od -An -tx1 -j18 -N2 "$1" | awk '{ print $2 $1 }'; }

# copy_lib PATH-IN-GUEST SOURCE
copy_lib() {
	[[ -z ${libs_done[$1]:-} ]] || return 0
	libs_done[$1]=1
	mkdir -p "$root$(dirname "$1")"
	cp -L "$2" "$root$1"
}

# add_sysroot_libs FILE: another architecture's ELF: its interpreter and the DT_NEEDED
# libraries, recursively, found in the sysroot's library directories (ldd cannot run it).
sysroot_libdirs=(lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu lib usr/lib)
add_sysroot_libs() {
	local f=$1 interp needed n d found
	interp=$(readelf -lW "$f" 2>/dev/null | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p')
	if [[ -n $interp ]]; then
		[[ -e $sysroot$interp ]] || fail "$f wants the loader $interp, which $sysroot lacks"
		copy_lib "$interp" "$sysroot$interp"
	fi
	needed=$(readelf -dW "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
	for n in $needed; do
		[[ -z ${libs_done[needed:$n]:-} ]] || continue
		libs_done[needed:$n]=1
		found=
		for d in "${sysroot_libdirs[@]}"; do
			if [[ -e $sysroot/$d/$n ]]; then found=/$d/$n; break; fi
		done
		[[ -n $found ]] || fail "$f needs $n, which is not in $sysroot (run tools/cross/arm64-sysroot.sh)"
		copy_lib "$found" "$sysroot$found"
		add_sysroot_libs "$sysroot$found"
	done
	# glibc dlopen()s libgcc_s for pthread_cancel/pthread_exit: no DT_NEEDED names it
	if [[ -z ${libs_done[libgcc_s]:-} && -e $sysroot/lib/aarch64-linux-gnu/libgcc_s.so.1 ]]; then
		libs_done[libgcc_s]=1
		copy_lib /lib/aarch64-linux-gnu/libgcc_s.so.1 "$sysroot/lib/aarch64-linux-gnu/libgcc_s.so.1"
	fi
}

# add_libs FILE: copy what `ldd FILE` lists (and the loader) to the same paths.
add_libs() {
	local f=$1 out line lib m
	m=$(elf_machine "$f")
	# an x86-64 migratepages in an aarch64 guest would fail there as "not found", far from the cause
	[[ $m == "$elf_machine" ]] || fail "$f is an ELF for machine 0x$m, the $arch guest runs 0x$elf_machine"
	if [[ $arch != x86_64 ]]; then
		add_sysroot_libs "$f"
		return 0
	fi
	out=$(ldd "$f" 2>&1) || {
		[[ $out == *"not a dynamic executable"* || $out == *"statically linked"* ]] && return 0
		fail "ldd $f: $out"
	}
	while read -r line; do
		case $line in
		*"=> not found"*) fail "$f needs ${line%% *}, which ldd cannot find" ;;
		*" => /"*) lib=${line#* => }; lib=${lib%% (*} ;;
		/*) lib=${line%% (*} ;;
		*) continue ;; # linux-vdso.so.1 and friends
		esac
		[[ -z ${libs_done[$lib]:-} ]] || continue
		libs_done[$lib]=1
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done <<<"$out"
	# glibc dlopen()s libgcc_s for pthread_cancel/pthread_exit; ldd cannot see it
	if [[ -z ${libs_done[libgcc_s]:-} ]]; then
		libs_done[libgcc_s]=1
		# (awk reads everything: an early exit would SIGPIPE ldconfig under pipefail)
		lib=$(/sbin/ldconfig -p 2>/dev/null |
			awk '!f && /libgcc_s\.so\.1 .*x86-64/ { f = $NF } END { print f }') || lib=""
		if [[ -n $lib && -f $lib ]]; then
			mkdir -p "$root$(dirname "$lib")"
			cp -L "$lib" "$root$lib"
		fi
	fi
}

# add_file HOSTPATH GUESTPATH
add_file() {
	local src=$1 dst=$2 f
	[[ $dst == /* ]] || usage_error "guest path must be absolute: $dst"
	[[ -e $src ]] || usage_error "--file: no such file or directory: $src"
	mkdir -p "$root$(dirname "$dst")"
	if [[ -d $src ]]; then
		mkdir -p "$root$dst"
		cp -RL "$src/." "$root$dst/"
		while IFS= read -r -d '' f; do
			if is_elf "$f"; then add_libs "$f"; fi
		done < <(find "$src" -type f -print0)
	else
		cp -L "$src" "$root$dst"
		if is_elf "$src"; then add_libs "$src"; fi
	fi
}

# The helper (migrate/numa_maps/proc-connector probes) is always there.
helper=${NPU_VM_HELPER:-}
if [[ -z $helper ]]; then
	cc=${CC:-cc}
	cc_args=()
	if [[ $arch != x86_64 ]]; then
		cc=${NPU_VM_CC:-$arch-linux-gnu-gcc}
		cc_args=("--sysroot=$sysroot")
	fi
	command -v "$cc" >/dev/null || skip "no C compiler ($cc) to build npu-vm-helper; set NPU_VM_HELPER"
	helper=$tmp/npu-vm-helper
	"$cc" "${cc_args[@]}" -O2 -Wall -Wextra -o "$helper" "$here/vm-helper.c" || fail "cannot build npu-vm-helper"
fi
add_file "$helper" /usr/bin/npu-vm-helper

for spec in "${files[@]}"; do
	if [[ $spec == *:/* ]]; then
		add_file "${spec%:/*}" "/${spec##*:/}"
	else
		add_file "$spec" "/usr/local/bin/$(basename "$spec")"
	fi
done

cp "$scenario" "$root/scenario.sh"
cp "$here/guest-init.sh" "$root/init"
cp "$here/guest-lib.sh" "$root/usr/lib/npu-vm/lib.sh"
chmod 0755 "$root/init" "$root/scenario.sh"
if [[ -f $cache/config ]]; then cp "$cache/config" "$root/boot/config"; fi
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
printf '127.0.0.1 localhost npu-vm\n::1 localhost\n' >"$root/etc/hosts"

# --- machine description (QEMU options, and the same facts for the guest) -------------
sq() { printf "'%s'" "${1//\'/\'\\\'\'}"; } # single-quote for sh

if [[ $arch == aarch64 ]]; then
	# pauth-impdef: QEMU's own pointer-authentication hash, far cheaper under TCG than QARMA
	machine=(-machine "virt,gic-version=3" -cpu "max,pauth-impdef=on")
else
	machine=(-machine q35 -cpu max)
fi
qargs=(-accel tcg "${machine[@]}" -nodefaults -no-user-config
	-m "$((nodes * mem_per_node))M" -smp "$smp")
for ((n = 0; n < nodes; n++)); do
	first=$((n * cpus_per_node))
	last=$((first + cpus_per_node - 1))
	qargs+=(-object "memory-backend-ram,size=${mem_per_node}M,id=m$n"
		-numa "node,nodeid=$n,cpus=$first-$last,memdev=m$n")
done
edu_desc=()
pxbs=()
for i in "${!edu_nodes[@]}"; do
	bus_nr=$((32 * (i + 1)))
	n=${edu_nodes[$i]}
	# the pxb's root port gets bus bus_nr+1; the edu device is 00.0 on it. On aarch64 each
	# pxb is a host bridge of its own in the device tree, PCI domain i+1 (aarch64-dtb.sh).
	domain=0
	[[ $arch == x86_64 ]] || domain=$((i + 1))
	qargs+=(-device "pxb-pcie,id=pxb$i,bus_nr=$bus_nr,numa_node=$n,bus=pcie.0"
		-device "pcie-root-port,id=rp$i,bus=pxb$i,chassis=$((i + 1))"
		-device "edu,bus=rp$i")
	edu_desc+=("$(printf '%04x:%02x:00.0=%d' "$domain" $((bus_nr + 1)) "$n")")
	pxbs+=("$bus_nr:$n")
done
if [[ $arch == aarch64 && ${#pxbs[@]} -gt 0 ]]; then
	"$qemu" "${qargs[@]}" -machine "dumpdtb=$tmp/virt.dtb" -display none >/dev/null 2>&1 ||
		fail "qemu-system-aarch64 could not dump the machine's device tree"
	"$here/aarch64-dtb.sh" "$tmp/virt.dtb" "$tmp/guest.dtb" "${pxbs[@]}" || fail "cannot make the guest's device tree"
	qargs+=(-dtb "$tmp/guest.dtb")
fi

{
	echo "# written by run-vm-test.sh"
	echo "VM_NODES=$nodes"
	echo "VM_SMP=$smp"
	echo "VM_CPUS_PER_NODE=$cpus_per_node"
	echo "VM_MEM_PER_NODE_MB=$mem_per_node"
	echo "VM_EDU=$(sq "${edu_desc[*]}")"
	echo "VM_SCENARIO_TIMEOUT=$scenario_timeout"
	for e in "${envs[@]}"; do echo "export ${e%%=*}=$(sq "${e#*=}")"; done
} >"$root/etc/npu-vm.conf"

# cryptomgr.notests: the kernel's crypto self-tests are no part of any scenario, and under TCG
# one of them once spun a vCPU (soft lockup in cryptomgr_test) until the timeout.
cmdline="console=$console_dev loglevel=3 panic=-1 rdinit=/init cryptomgr.notests"
for a in "${appends[@]}"; do cmdline+=" $a"; done

# Uncompressed: QEMU loads it directly, and the kernel unpacks it faster under TCG.
(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) >"$tmp/initrd.cpio"

qargs+=(-kernel "$kernel" -initrd "$tmp/initrd.cpio" -append "$cmdline"
	-display none -serial stdio -monitor none -no-reboot)

say "kernel $kernel, $nodes nodes x $cpus_per_node cpus x ${mem_per_node}M," \
	"edu: ${edu_desc[*]:-none}, initrd $(($(stat -c %s "$tmp/initrd.cpio") / 1024)) KiB," \
	"timeout ${timeout_s}s (scenario ${scenario_timeout}s)"
say "scenario $scenario"

# --- boot -------------------------------------------------------------------------------
console=$tmp/console.log
mkfifo "$tmp/console.fifo"
sed -u 's/\r$//' <"$tmp/console.fifo" | tee "$console" &
tee_pid=$!
t0=$(date +%s.%N)
timeout -k 10 "$timeout_s" "$qemu" "${qargs[@]}" </dev/null >"$tmp/console.fifo" 2>&1 &
qemu_pid=$!
qemu_rc=0
wait "$qemu_pid" || qemu_rc=$?
qemu_pid=
wait "$tee_pid" || true
t1=$(date +%s.%N)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
if [[ -n $log_copy ]]; then cp "$console" "$log_copy"; fi

# --- verdict ------------------------------------------------------------------------------
checks_ok=$(grep -c '^VM-CHECK: ok' "$console" || true)
checks_fail=$(grep -c '^VM-CHECK: FAIL' "$console" || true)
result=$(grep -a '^VM-RESULT: ' "$console" | tail -n1 || true)
say "QEMU exit status $qemu_rc after ${wall}s; checks: $checks_ok ok, $checks_fail failed"
if ((qemu_rc == 124 || qemu_rc == 137)); then
	fail "timed out after ${timeout_s}s${result:+ (last result line: $result)}"
fi
case $result in
"VM-RESULT: PASS") say "PASS"; exit 0 ;;
"VM-RESULT: SKIP"*) skip "guest: ${result#VM-RESULT: SKIP }" ;;
"VM-RESULT: FAIL"*) fail "guest: ${result#VM-RESULT: FAIL }" ;;
*) fail "no VM-RESULT line from the guest (QEMU exit status $qemu_rc)" ;;
esac
