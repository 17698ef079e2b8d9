#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Prepare the host for the QEMU NUMA test harness (tests/vm/run-vm-test.sh):
#  - install qemu-system-x86, busybox-static, cpio and numactl if they are missing (and gcc,
#    libc6-dev, xz-utils if there is no cc / xz);
#  - fetch the current Debian 12 kernel package (linux-image-6.1.0-*-amd64) and keep
#    only its vmlinuz, its config and, when it can be extracted, the uncompressed
#    vmlinux (QEMU boots it directly via its PVH note, ~6 s faster under TCG).
#
# Idempotent: once the cache holds a kernel and the tools are present, it only checks.
# Options:  --refresh   re-resolve the current kernel package and fetch it if it changed
#           --force     fetch and extract the kernel again even if it is cached
# Env:      NPU_VM_CACHE  cache dir (default: tests/vm/cache next to this script)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${NPU_VM_CACHE:-$here/cache}
refresh=0
force=0

log() { printf 'vm-setup: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

for arg in "$@"; do
	case $arg in
	--refresh) refresh=1 ;;
	--force) refresh=1 force=1 ;;
	-h|--help) sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $arg" ;;
	esac
done

export DEBIAN_FRONTEND=noninteractive
apt_updated=0
apt_update_once() {
	if [[ $apt_updated == 0 ]]; then
		log "apt-get update"
		apt-get update -q >&2
		apt_updated=1
	fi
}

pkg_installed() {
	[[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]
}

# --- 1. packages ------------------------------------------------------------------
missing=()
for p in qemu-system-x86 busybox-static cpio numactl; do # numactl: migratepages, the baseline of the migration scenario
	pkg_installed "$p" || missing+=("$p")
done
# run-vm-test.sh compiles the small guest helper (vm-helper.c) with cc
command -v "${CC:-cc}" >/dev/null || missing+=(gcc libc6-dev)
# xz unpacks the uncompressed vmlinux from the bzImage (optional, saves boot time)
command -v xz >/dev/null || missing+=(xz-utils)
if ((${#missing[@]})); then
	[[ $(id -u) == 0 ]] || die "need root to install: ${missing[*]}"
	log "installing: ${missing[*]}"
	# Try with the current lists first; update them only when that fails.
	if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; then
		apt_update_once
		apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
	fi
fi
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found after install"
[[ -x /bin/busybox ]] || die "/bin/busybox not found after install"

# --- 2. kernel ----------------------------------------------------------------------
mkdir -p "$cache"
if [[ $refresh == 0 && -s $cache/kernel.version && -s $cache/vmlinuz ]]; then
	log "kernel $(cat "$cache/kernel.version") already in $cache"
	exit 0
fi

resolve_kernel_pkg() {
	# first match only; awk reads all input so nothing dies of SIGPIPE under pipefail
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '!f && $1 == "Depends:" && $2 ~ /^linux-image-6\.1\.0-[0-9]+-amd64$/ { f = $2 }
		     END { print f }'
}
pkg=$(resolve_kernel_pkg)
if [[ -z $pkg ]]; then
	apt_update_once
	pkg=$(resolve_kernel_pkg)
fi
[[ -n $pkg ]] || die "cannot resolve linux-image-6.1.0-*-amd64 from 'apt-cache depends linux-image-amd64'"
ver=${pkg#linux-image-}

if [[ $force == 0 && -s $cache/kernel.version && $(cat "$cache/kernel.version") == "$ver" && -s $cache/vmlinuz ]]; then
	log "kernel $ver already in $cache"
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/npu-vm-setup.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# apt-get download drops to the _apt user when that user can write the directory
chmod 0755 "$tmp"
if [[ $(id -u) == 0 ]] && getent passwd _apt >/dev/null; then chown _apt "$tmp"; fi

log "downloading $pkg"
if ! (cd "$tmp" && apt-get download -q "$pkg" >&2); then
	apt_update_once
	(cd "$tmp" && apt-get download -q "$pkg" >&2)
fi
deb=$(find "$tmp" -maxdepth 1 -name "${pkg}_*.deb" -print -quit)
[[ -n $deb ]] || die "apt-get download produced no .deb for $pkg"

# Only ./boot is needed; skip the ~400 MB of modules.
mkdir "$tmp/x"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" ./boot
[[ -s $tmp/x/boot/vmlinuz-$ver ]] || die "no boot/vmlinuz-$ver in $deb"

# Uncompressed vmlinux: the bzImage payload is one xz stream (CONFIG_KERNEL_XZ);
# QEMU can boot the ELF only if it carries the PVH entry note (CONFIG_PVH).
extract_vmlinux() {
	local bz=$1 out=$2 off
	command -v xz >/dev/null || { log "xz not installed; skipping vmlinux"; return 1; }
	off=$(LC_ALL=C grep -obUaP -m1 '\xfd7zXZ\x00' "$bz" | awk -F: 'NR == 1 { print $1 }') || true
	[[ -n $off ]] || { log "no xz payload in vmlinuz; skipping vmlinux"; return 1; }
	# --single-stream stops at the end of the payload (trailing bytes follow it);
	# process substitution so tail's SIGPIPE does not count as a failure.
	xz -dc --single-stream < <(tail -c "+$((off + 1))" "$bz") >"$out" 2>/dev/null ||
		{ log "xz payload did not decompress; skipping vmlinux"; return 1; }
	[[ $(head -c 4 "$out") == $'\x7fELF' ]] ||
		{ log "payload is not an ELF; skipping vmlinux"; return 1; }
	if command -v readelf >/dev/null; then
		# XEN_ELFNOTE_PHYS32_ENTRY (type 0x12) owned by "Xen" is the PVH entry point
		readelf -n "$out" 2>/dev/null | grep -Eq 'Xen[[:space:]]+0x[0-9a-f]+[[:space:]]+(Unknown note type: \(0x00000012\)|.*PHYS32_ENTRY)' ||
			{ log "vmlinux has no PVH note; skipping vmlinux"; return 1; }
	fi
	return 0
}

cp "$tmp/x/boot/vmlinuz-$ver" "$tmp/vmlinuz"
cp "$tmp/x/boot/config-$ver" "$tmp/config" 2>/dev/null || true
if extract_vmlinux "$tmp/vmlinuz" "$tmp/vmlinux"; then
	mv -f "$tmp/vmlinux" "$cache/vmlinux"
else
	rm -f "$tmp/vmlinux" "$cache/vmlinux"
fi
mv -f "$tmp/vmlinuz" "$cache/vmlinuz"
if [[ -f $tmp/config ]]; then mv -f "$tmp/config" "$cache/config"; fi
printf '%s\n' "$ver" >"$cache/kernel.version.new"
mv -f "$cache/kernel.version.new" "$cache/kernel.version"
log "kernel $ver ready in $cache:" "$(cd "$cache" && echo vmlinu* config)"
