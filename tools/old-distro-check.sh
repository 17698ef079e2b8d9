#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build npu-tuned and run its tests against an older distribution's libraries and tools:
# a Debian 11 (bullseye) chroot, as a stand-in for the openEuler 22.03 / Ubuntu 20.04-22.04
# generation of hosts (gcc 10, glibc 2.31, kernel headers 5.10, meson 0.56, systemd 247,
# json-c 0.15, hwloc 2.4, cmocka 1.1.5). It runs every suite that tests the code against the
# libraries (unit, topology, knobs, cli, bus); the suites that test this machine's kernel
# (live, knobs-live) and the guests (vm) are the host build's.
#
# Usage: tools/old-distro-check.sh [--keep]     (root; Debian's package registry reachable)
# Env:   NPU_OLD_DISTRO_CACHE  where the chroot is kept between runs (default
#        /var/cache/npu-tuned/bullseye-chroot; delete it to start afresh)
#        NPU_SHARED_DIR        hwloc's captures (default: ../shared next to the source tree)
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
suite=bullseye
mirror=http://deb.debian.org/debian
root=${NPU_OLD_DISTRO_CACHE:-/var/cache/npu-tuned/$suite-chroot}
shared=${NPU_SHARED_DIR:-$src/../shared}
keep=0
[ "${1:-}" = --keep ] && keep=1

log() { printf 'old-distro: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (debootstrap, chroot, mounts)"; exit 77; }
command -v debootstrap >/dev/null || die "debootstrap is not installed (tools/install-deps.sh --test)"

# What the build and the suites run need, by Debian 11's names. Given to apt-get inside the
# chroot, not to debootstrap's --include, which cannot resolve virtual packages (automake's).
build_pkgs="meson ninja-build pkg-config gcc libc6-dev libsystemd-dev libnuma-dev libhwloc-dev libcpupower-dev libjson-c-dev libcmocka-dev"
test_pkgs="python3 python3-yaml hwloc bzip2 xz-utils dbus systemd bash-completion procps binutils util-linux"

mounts=()
cleanup() {
	local i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
	[ "$keep" = 1 ] || rm -rf "$root/src"
}
trap cleanup EXIT
bind() { # bind SRC DEST-inside-chroot
	mkdir -p "$root$2"
	mount --bind "$1" "$root$2"
	mounts+=("$root$2")
}

if [ ! -x "$root/usr/bin/meson" ]; then
	log "debootstrap $suite into $root (about 2 minutes)"
	rm -rf "$root"
	mkdir -p "$root"
	debootstrap --variant=minbase "$suite" "$root" "$mirror" >&2
	echo "deb $mirror $suite main" >"$root/etc/apt/sources.list"
	chroot "$root" apt-get update -q >&2
fi
# Every run: a no-op when all are there, and a kept chroot gains what this list gained.
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -q --no-install-recommends $build_pkgs $test_pkgs >&2 ||
	die "installing the build and test packages in the $suite chroot failed"

# The chroot's root a mount point of its own: the tests that unshare a mount namespace
# (journal-fields) change its propagation.
mount --bind "$root" "$root"
mounts+=("$root")
mount -t proc proc "$root/proc"
mounts+=("$root/proc")
# /sys with its cgroup mounts (systemd-analyze verify builds a manager on them).
mkdir -p "$root/sys"
mount --rbind /sys "$root/sys"
mount --make-rslave "$root/sys"
mounts+=("$root/sys")
bind /dev /dev
[ -d "$shared" ] && bind "$shared" /shared

log "copying the working tree (tracked and untracked, not ignored) to $root/src"
rm -rf "$root/src"
mkdir -p "$root/src"
(cd "$src" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) |
	(umask 022 && tar -xf - -C "$root/src" --no-same-permissions)

versions=$(chroot "$root" dpkg-query -W -f '${Package} ${Version}\n' meson gcc libc6 libsystemd0 libjson-c5 libhwloc15 libcmocka0 linux-libc-dev)
log "versions: $(echo "$versions" | tr '\n' ',' | sed 's/,$//; s/,/, /g')"

chroot "$root" sh -c 'cd /src && meson setup build -Dwerror=true >/dev/null && ninja -C build' >&2 ||
	die "the build failed against $suite's libraries"
# The tests find hwloc's captures at the source tree's ../shared: /shared in the chroot.
chroot "$root" sh -c \
	'cd /src && meson test -C build --print-errorlogs --no-suite vm --no-suite live --no-suite knobs-live --no-suite slow' >&2 ||
	{ python3 "$src/tools/test-summary.py" "$root/src/build/meson-logs/testlog.json" >&2 || true; die "tests failed on $suite"; }
python3 "$src/tools/test-summary.py" "$root/src/build/meson-logs/testlog.json"
echo "old-distro: $suite: build and tests passed"
