#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Prepare the host for the QEMU NUMA test harness (tests/vm/run-vm-test.sh):
#  - install qemu-system-x86, busybox-static, cpio and numactl if they are missing (and gcc,
#    libc6-dev, xz-utils if there is no cc / xz); for an aarch64 guest, the arm64 sysroot
#    (tools/cross/arm64-sysroot.sh: the cross compiler, qemu-system-arm, qemu-user, dtc,
#    and the arm64 busybox and libraries);
#  - fetch the current Debian kernel package of the guest's architecture and series
#    (linux-image-6.1.0-*-amd64 by default) and keep only its vmlinuz, its config and the
#    uncompressed image: on x86-64 the vmlinux when it can be extracted (QEMU boots it
#    directly via its PVH note, ~6 s faster under TCG), on arm64 the gunzipped Image.
#
# Idempotent: once the cache holds a kernel and the tools are present, it only checks.
# Options:  --refresh   re-resolve the current kernel package and fetch it if it changed
#           --force     fetch and extract the kernel again even if it is cached
#           --arch A    the guest's architecture: x86_64 (default) or aarch64
#           --kernel-series S  6.1 (default: Debian 12's) or 5.10 (Debian 11's, fetched
#                       with a private apt list of bullseye; nothing is added to the host's)
# Env:      NPU_VM_CACHE  cache dir (default: tests/vm/cache next to this script); the
#                         x86-64 6.1 kernel lies in it, any other in a subdirectory named
#                         ARCH-SERIES (e.g. aarch64-6.1, x86_64-5.10)
#           NPU_VM_ARCH, NPU_VM_KERNEL_SERIES  defaults of --arch and --kernel-series
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${NPU_VM_CACHE:-$here/cache}
refresh=0
force=0
arch=${NPU_VM_ARCH:-x86_64}
series=${NPU_VM_KERNEL_SERIES:-6.1}

log() { printf 'vm-setup: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

while (($#)); do
	case $1 in
	--refresh) refresh=1 ;;
	--force) refresh=1 force=1 ;;
	--arch) (($# >= 2)) || die "--arch needs an argument"; arch=$2; shift ;;
	--kernel-series) (($# >= 2)) || die "--kernel-series needs an argument"; series=$2; shift ;;
	-h|--help) sed -n '3,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $1" ;;
	esac
	shift
done
case $arch in
x86_64) debarch=amd64 ;;
aarch64) debarch=arm64 ;;
*) die "unknown --arch $arch (x86_64 or aarch64)" ;;
esac
case $series in
6.1) suite= ;;        # the host's own lists (Debian 12)
5.10) suite=bullseye ;;
*) die "unknown --kernel-series $series (6.1 or 5.10)" ;;
esac
# the same rule as run-vm-test.sh
if [[ $arch == x86_64 && $series == 6.1 ]]; then kcache=$cache; else kcache=$cache/$arch-$series; fi

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
if [[ $arch == aarch64 ]]; then
	# cross compiler, qemu-system-arm, qemu-user, dtc; the arm64 busybox and libraries
	"$here/../../tools/cross/arm64-sysroot.sh"
fi
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
mkdir -p "$kcache"
has_kernel() { [[ -s $kcache/kernel.version && (-s $kcache/vmlinuz || -s $kcache/Image) ]]; }
if [[ $refresh == 0 ]] && has_kernel; then
	log "kernel $(cat "$kcache/kernel.version") already in $kcache"
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/npu-vm-setup.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# apt-get download drops to the _apt user when that user can write the directory
chmod 0755 "$tmp"
if [[ $(id -u) == 0 ]] && getent passwd _apt >/dev/null; then chown _apt "$tmp"; fi

# Another release's kernel comes from a private list of that release (its own state and
# cache directories in the temp dir): the host's apt sources stay as they are.
apt_private=()
if [[ -n $suite ]]; then
	mkdir -p "$tmp/apt/lists/partial" "$tmp/apt/cache/archives/partial"
	chown -R _apt "$tmp/apt" 2>/dev/null || true
	mirror=$(grep -rhoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
		awk '!f { f = $1 } END { print f }') || mirror=
	echo "deb [arch=$debarch] ${mirror:-http://deb.debian.org/debian} $suite main" >"$tmp/apt/sources.list"
	apt_private=(-o "Dir::Etc::SourceList=$tmp/apt/sources.list" -o "Dir::Etc::SourceParts=$tmp/apt/none"
		-o "Dir::State::Lists=$tmp/apt/lists" -o "Dir::Cache=$tmp/apt/cache" -o "APT::Architectures::=$debarch")
	log "apt-get update of a private $suite list"
	apt-get "${apt_private[@]}" update -q >&2
fi

resolve_kernel_pkg() {
	# first match only; awk reads all input so nothing dies of SIGPIPE under pipefail
	apt-cache "${apt_private[@]}" depends "linux-image-$debarch:$debarch" 2>/dev/null |
		awk -v re="^linux-image-${series//./\\.}\\.0-[0-9]+-$debarch(:$debarch)?\$" \
		    '!f && $1 == "Depends:" && $2 ~ re { f = $2 } END { sub(/:.*/, "", f); print f }'
}
pkg=$(resolve_kernel_pkg)
if [[ -z $pkg && -z $suite ]]; then
	apt_update_once
	pkg=$(resolve_kernel_pkg)
fi
[[ -n $pkg ]] || die "cannot resolve linux-image-$series.0-*-$debarch from 'apt-cache depends linux-image-$debarch'"
ver=${pkg#linux-image-}

if [[ $force == 0 && $(cat "$kcache/kernel.version" 2>/dev/null) == "$ver" ]] && has_kernel; then
	log "kernel $ver already in $kcache"
	exit 0
fi

log "downloading $pkg"
if ! (cd "$tmp" && apt-get "${apt_private[@]}" download -q "$pkg:$debarch" >&2); then
	[[ -n $suite ]] || apt_update_once
	(cd "$tmp" && apt-get "${apt_private[@]}" download -q "$pkg:$debarch" >&2)
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
if [[ $arch == aarch64 ]]; then
	# Debian's arm64 vmlinuz is the Image itself (6.1); a gzipped one is unpacked once here
	if [[ $(head -c 2 "$tmp/vmlinuz" | od -An -tx1 | tr -d ' ') == 1f8b ]]; then
		gzip -dc <"$tmp/vmlinuz" >"$tmp/Image" || die "boot/vmlinuz-$ver: bad gzip data"
	else
		cp "$tmp/vmlinuz" "$tmp/Image"
	fi
	[[ $(tail -c +57 "$tmp/Image" | head -c 4) == ARMd ]] || die "boot/vmlinuz-$ver is no arm64 Image"
	mv -f "$tmp/Image" "$kcache/Image"
	rm -f "$tmp/vmlinuz" "$kcache/vmlinuz" # the same bytes, or their gzip
elif extract_vmlinux "$tmp/vmlinuz" "$tmp/vmlinux"; then
	mv -f "$tmp/vmlinux" "$kcache/vmlinux"
else
	rm -f "$tmp/vmlinux" "$kcache/vmlinux"
fi
if [[ -f $tmp/vmlinuz ]]; then mv -f "$tmp/vmlinuz" "$kcache/vmlinuz"; fi
if [[ -f $tmp/config ]]; then mv -f "$tmp/config" "$kcache/config"; fi
printf '%s\n' "$ver" >"$kcache/kernel.version.new"
mv -f "$kcache/kernel.version.new" "$kcache/kernel.version"
log "kernel $ver ready in $kcache:" "$(cd "$kcache" && ls)"
