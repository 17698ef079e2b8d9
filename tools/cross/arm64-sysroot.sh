#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Make the arm64 sysroot the cross build (tools/cross/aarch64-linux-gnu.ini) and the arm64
# test guest (tests/vm, NPU_VM_ARCH=aarch64) use: Debian's arm64 -dev packages of every
# library npu-tuned links, their runtime libraries, glibc, the kernel headers and the
# static busybox, each unpacked with `dpkg-deb -x`. A sysroot, not multiarch: Debian's
# libcpupower-dev cannot be installed for two architectures at once (installing the arm64
# one removes the native one).
#
# Adds the arm64 architecture to dpkg (dpkg --add-architecture arm64; apt-get update) when
# it is not there yet, and installs the cross compiler and the emulators when they are
# missing (gcc-aarch64-linux-gnu, qemu-system-arm, qemu-user, device-tree-compiler).
# Idempotent and cached: the .deb files stay in SYSROOT/.debs, and nothing is fetched or
# unpacked again while the resolved package versions are those of SYSROOT/.packages.
#
# usage: tools/cross/arm64-sysroot.sh [--refresh] [SYSROOT]
#   SYSROOT    default: tools/cross/sysroot-aarch64; SYSROOT/sysroot.ini is the first
#              cross file of the build (see aarch64-linux-gnu.ini)
#   --refresh  resolve the package versions again (apt-get update first)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
refresh=0
sysroot=
for arg in "$@"; do
	case $arg in
	--refresh) refresh=1 ;;
	-h|--help) sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "arm64-sysroot: unknown option $arg" >&2; exit 2 ;;
	*) sysroot=$arg ;;
	esac
done
sysroot=${sysroot:-$here/sysroot-aarch64}

log() { printf 'arm64-sysroot: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The roots; their library dependencies come along (resolved below). libcmocka for the unit
# tests under qemu-user, busybox-static for the guest.
roots="libc6-dev libsystemd-dev libnuma-dev libhwloc-dev libcpupower-dev libjson-c-dev
libcmocka-dev busybox-static"

export DEBIAN_FRONTEND=noninteractive
apt_lock=(-o DPkg::Lock::Timeout=300)
as_root=
if [[ $(id -u) != 0 ]]; then
	command -v sudo >/dev/null || die "need root (or sudo) for dpkg --add-architecture and apt-get"
	as_root=sudo
fi

apt_updated=0
apt_update_once() {
	((apt_updated)) && return 0
	log "apt-get update"
	$as_root apt-get "${apt_lock[@]}" update -q >&2
	apt_updated=1
}

# --- 1. the tools on the host -------------------------------------------------------------
missing=()
for p in gcc-aarch64-linux-gnu qemu-system-arm qemu-user device-tree-compiler; do
	[[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
	log "installing ${missing[*]}"
	$as_root apt-get "${apt_lock[@]}" install -y -q --no-install-recommends "${missing[@]}" >&2 || {
		apt_update_once
		$as_root apt-get "${apt_lock[@]}" install -y -q --no-install-recommends "${missing[@]}" >&2
	}
fi

# --- 2. the arm64 architecture in apt -----------------------------------------------------
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	log "dpkg --add-architecture arm64"
	$as_root dpkg --add-architecture arm64
	apt_update_once
fi
((refresh)) && apt_update_once

# --- 3. resolve: the roots and every arm64 library they depend on ---------------------------
resolve() {
	local spec=() r
	for r in $roots; do spec+=("$r:arm64"); done
	# awk reads everything: no SIGPIPE under pipefail
	apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
		--no-replaces --no-enhances "${spec[@]}" 2>/dev/null |
		awk '/^[^ <]/ && /:arm64$/ { sub(/:arm64$/, ""); print }' |
		grep -E '^(lib|linux-libc-dev$|busybox-static$)' | LC_ALL=C sort -u | sed 's/$/:arm64/' |
		xargs -r apt-cache show --no-all-versions 2>/dev/null |
		awk '/^Package:/ { p = $2 } /^Version:/ { print p "=" $2 }' | LC_ALL=C sort -u
}
want=$(resolve)
if [[ -z $want ]]; then
	apt_update_once
	want=$(resolve)
fi
[[ -n $want ]] || die "apt-cache resolves no arm64 packages (is the arm64 architecture in apt's lists?)"

# The first cross file of a build: the sysroot's absolute path for aarch64-linux-gnu.ini.
write_cross_ini() {
	printf "# written by tools/cross/arm64-sysroot.sh\n[constants]\nsysroot = '%s'\n" \
		"$(cd "$sysroot" && pwd)" >"$sysroot/sysroot.ini"
}

if [[ -s $sysroot/.packages && $(cat "$sysroot/.packages") == "$want" ]]; then
	write_cross_ini
	log "$sysroot up to date ($(wc -l <<<"$want") packages)"
	exit 0
fi

# --- 4. download (cached) and unpack --------------------------------------------------------
debs=$sysroot/.debs
mkdir -p "$debs"
# apt-get download drops to the _apt user when that user can write the directory
chmod 0755 "$debs"
if [[ $(id -u) == 0 ]] && getent passwd _apt >/dev/null; then chown _apt "$debs"; fi
get=()
while IFS="=" read -r p v; do
	# a .deb's file name carries the version with ':' (an epoch) as %3a
	ls "$debs/${p}_${v//:/%3a}_arm64.deb" >/dev/null 2>&1 || get+=("$p:arm64=$v")
done <<<"$want"
if ((${#get[@]})); then
	log "downloading ${#get[@]} packages"
	(cd "$debs" && apt-get download -q "${get[@]}" >&2) || {
		apt_update_once
		(cd "$debs" && apt-get download -q "${get[@]}" >&2)
	}
fi

log "unpacking $(wc -l <<<"$want") packages into $sysroot"
find "$sysroot" -mindepth 1 -maxdepth 1 ! -name .debs -exec rm -rf {} +
while IFS="=" read -r p v; do
	deb="$debs/${p}_${v//:/%3a}_arm64.deb"
	[[ -f $deb ]] || die "missing $deb after download"
	dpkg-deb -x "$deb" "$sysroot"
done <<<"$want"

# Absolute symlinks (e.g. usr/lib/aarch64-linux-gnu/libfoo.so -> /lib/...) would point into
# the host: make them relative to the sysroot.
while IFS= read -r -d '' l; do
	t=$(readlink "$l")
	[[ $t == /* ]] || continue
	ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" "$sysroot$t")" "$l"
done < <(find "$sysroot" -path "$debs" -prune -o -type l -print0)

[[ -f $sysroot/usr/include/stdio.h && -f $sysroot/usr/include/json-c/json.h &&
	-x $sysroot/bin/busybox ]] || die "the unpacked sysroot lacks stdio.h, json-c or busybox"
write_cross_ini
printf '%s\n' "$want" >"$sysroot/.packages"
log "ready: $sysroot ($(du -sh --exclude=.debs "$sysroot" | cut -f1))"
