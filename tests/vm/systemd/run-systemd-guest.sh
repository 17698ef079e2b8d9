#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# npu-tuned as users run it: a Debian 12 guest with systemd as PID 1 (a debootstrap root
# booted as the initramfs, see README.md in this folder), npu-tuned installed with
# `meson install` from BUILD_DIR, the real unit on the real system bus. The steps run in
# one boot (guest.sh); this prints the guest's console and its result line.
#
# With --deb, the same boot then removes the meson install, installs the Debian package
# (packaging/build-deb.sh from SOURCE_ROOT, shared with the package-deb test) with dpkg,
# runs the same steps again and purges it, comparing the file listings (guest.sh).
#
# usage: run-systemd-guest.sh BUILD_DIR THREADS_TARGET [--deb SOURCE_ROOT]
#        run-systemd-guest.sh --prepare   only build the cached root (no QEMU run)
# Exit: 0 PASS, 1 FAIL, 77 SKIP (no QEMU, no cached kernel, no debootstrap or no mirror
# for the first build of the root: the reason is printed).
# Env: NPU_VM_CACHE (default tests/vm/cache): the root is cached in
#      $NPU_VM_CACHE/systemd-guest-bookworm/ (built once, ~60 s); NPU_DEBIAN_MIRROR.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${NPU_VM_CACHE:-$here/../cache}
prepare=0
if [[ ${1:-} == --prepare ]]; then
	prepare=1
else
	build=$(cd "$1" && pwd)
	target=$2
	deb_src=
	[[ ${3:-} == --deb ]] && deb_src=$(cd "$4" && pwd)
fi
say() { printf 'systemd-guest: %s\n' "$*"; }
skip() { say "SKIP: $*"; exit 77; }
fail() { say "FAIL: $*"; exit 1; }

[[ $(id -u) == 0 ]] || skip "needs root (debootstrap, the guest's file owners)"
# the Debian root it boots is debootstrapped for amd64: a cross build's binaries cannot run there
[[ ${NPU_VM_ARCH:-x86_64} == x86_64 ]] || skip "the systemd guest is x86-64 only; this build is for ${NPU_VM_ARCH}"
qemu=$(command -v qemu-system-x86_64 || true)
[[ -n $qemu ]] || skip "qemu-system-x86_64 is not installed (tools/install-deps.sh --test)"
kernel=$cache/vmlinux
[[ -r $kernel ]] || kernel=$cache/vmlinuz
[[ -r $kernel ]] || skip "no guest kernel in $cache (tests/vm/setup.sh)"

# ---- the root, built once and cached ----
guest=$cache/systemd-guest-bookworm
# procps: /bin/kill, which the unit's ExecReload= uses (every Debian install has it).
packages=systemd,systemd-sysv,dbus,udev,kmod,procps,libnuma1,libhwloc15,libjson-c5,libcpupower1,libsystemd0
# A changed package list builds a new root.
base=$guest/base-$(printf %s "$packages" | sha256sum | cut -c1-12).cpio
mkdir -p "$guest"
exec 9>"$guest/.lock"
flock 9
if [[ ! -s $base ]]; then
	command -v debootstrap >/dev/null || skip "debootstrap is not installed (tools/install-deps.sh --test)"
	mirror=${NPU_DEBIAN_MIRROR:-$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}
	mirror=${mirror:-http://deb.debian.org/debian}
	rm -rf "$guest/root"
	say "building the guest root with debootstrap from $mirror (once; ~60 s)"
	t0=$(date +%s)
	debootstrap --variant=minbase \
		--include="$packages" \
		bookworm "$guest/root" "$mirror" >"$guest/debootstrap.log" 2>&1 ||
		skip "debootstrap failed (no mirror reachable?): see $guest/debootstrap.log"
	r=$guest/root
	rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/* "$r"/usr/share/doc "$r"/usr/share/man "$r"/usr/share/locale
	for u in getty@tty1.service serial-getty@ttyS0.service apt-daily.timer apt-daily-upgrade.timer \
		e2scrub_all.timer fstrim.timer systemd-timesyncd.service; do
		ln -sf /dev/null "$r/etc/systemd/system/$u"
	done
	: >"$r/etc/machine-id"
	(cd "$r" && find . | cpio -o -H newc --quiet) >"$base.tmp"
	rm -f "$guest"/base-*.cpio
	mv "$base.tmp" "$base"
	rm -rf "$r"
	say "guest root built in $(($(date +%s) - t0)) s ($(du -m "$base" | cut -f1) MB)"
fi
exec 9>&-
((prepare)) && exit 0

# ---- npu-tuned into it, as meson install puts it ----
tmp=$(mktemp -d /tmp/npu-systemd-guest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
o=$tmp/overlay
meson install -C "$build" --destdir "$o" --no-rebuild --quiet >"$tmp/install.log" 2>&1 ||
	fail "meson install: $(cat "$tmp/install.log")"
# The guest's /lib, /bin, /sbin are links into /usr (merged /usr): a directory of the same
# name in the second archive would replace the link (the kernel's unpacker does that).
for d in lib bin sbin; do
	if [[ -d $o/$d ]]; then
		mkdir -p "$o/usr/$d"
		cp -a "$o/$d/." "$o/usr/$d/"
		rm -rf "${o:?}/$d"
	fi
done
prefix=$(meson introspect --buildoptions "$build" | python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"][0])')
# The system bus reads /usr/share/dbus-1/system.d and /etc/dbus-1/system.d: a build for
# another prefix links its policy in, as an administrator installing it there would.
if [[ $prefix != /usr ]]; then
	mkdir -p "$o/etc/dbus-1/system.d"
	ln -s "$prefix/share/dbus-1/system.d/org.nputuned1.conf" "$o/etc/dbus-1/system.d/org.nputuned1.conf"
fi
# What meson installed (the deb phase removes it before dpkg -i).
(cd "$o" && find . -mindepth 1 | sed 's|^\.||') >"$tmp/meson-files"
mkdir -p "$o/usr/local/lib/npu-test" "$o/etc/systemd/system/multi-user.target.wants" "$o/etc/npu-tuned/policies.d"
install -m 0644 "$tmp/meson-files" "$o/usr/local/lib/npu-test/meson-files"
if [[ -n $deb_src ]]; then
	set +e
	deb_log=$("$deb_src/packaging/build-deb.sh" "$deb_src" "$build/packages/deb" 2>&1)
	deb_rc=$?
	set -e
	say "$(head -n -1 <<<"$deb_log" | tail -3)"
	case $deb_rc in
	0) install -m 0644 "$(tail -1 <<<"$deb_log")" "$o/usr/local/lib/npu-test/npu-tuned.deb" ;;
	77) say "no Debian package phase: build-deb.sh cannot build here (above)" ;;
	*) fail "build-deb.sh exited $deb_rc" ;;
	esac
fi
install -m 0755 "$here/guest.sh" "$o/usr/local/lib/npu-test/guest.sh"
install -m 0755 "$target" "$o/usr/local/lib/npu-test/threads-target"
install -m 0644 "$here/npu-test.service" "$o/etc/systemd/system/npu-test.service"
ln -s ../npu-test.service "$o/etc/systemd/system/multi-user.target.wants/npu-test.service"
install -m 0644 "$here/policy.json" "$o/usr/local/lib/npu-test/policy.json"
(cd "$o" && find . -mindepth 1 | cpio -o -H newc --quiet) >"$tmp/overlay.cpio"
cat "$base" "$tmp/overlay.cpio" >"$tmp/initrd.cpio"

# ---- one boot: 2 NUMA nodes of 2 CPUs (control and compute CPUs on one node) ----
say "booting $(basename "$kernel") with systemd (TCG)"
t0=$(date +%s)
set +e
timeout 420 "$qemu" -accel tcg -cpu max -machine q35 -m 2G -smp 4 \
	-object memory-backend-ram,size=1G,id=m0 -object memory-backend-ram,size=1G,id=m1 \
	-numa node,nodeid=0,cpus=0-1,memdev=m0 -numa node,nodeid=1,cpus=2-3,memdev=m1 \
	-kernel "$kernel" -initrd "$tmp/initrd.cpio" \
	-append "console=ttyS0 loglevel=3 panic=-1 rdinit=/sbin/init systemd.show_status=0 cryptomgr.notests" \
	-nographic -no-reboot -vga none -nic none </dev/null 2>&1 | tr -d '\r' | tee "$tmp/console.log"
rc=${PIPESTATUS[0]}
set -e
say "QEMU exited $rc after $(($(date +%s) - t0)) s"
grep -q '^NPU-SYSTEMD-RESULT: PASS' "$tmp/console.log" && exit 0
grep -q '^NPU-SYSTEMD-RESULT: SKIP' "$tmp/console.log" && exit 77
fail "no PASS line from the guest (see the console above)"
