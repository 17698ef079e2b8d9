#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Install what npu-tuned needs on Debian 12: to build and run it (no argument), or also
# everything the test suite uses (--test: cmocka, hwloc's lstopo, dbus and busctl, debootstrap
# and QEMU for the multi-NUMA guest tests, clang for the fuzzer, strace to kill the daemon at
# a chosen syscall, Prometheus's node exporter and promtool for the metrics, debhelper, lintian,
# rpm and rpmlint to build and check the packages, podman and runc for the container image), or
# what bench/run-all.sh compares against (--bench: the peer tuned with
# perf's Python module it needs to follow new processes, valgrind for instruction counts,
# strace). Idempotent; uses sudo when not root.
set -eu

build="meson ninja-build pkg-config gcc libsystemd-dev libnuma-dev libhwloc-dev libcpupower-dev libjson-c-dev"
test="libcmocka-dev hwloc dbus systemd debootstrap bash-completion clang libclang-rt-dev python3 bzip2 tar util-linux procps qemu-system-x86 busybox-static cpio xz-utils numactl irqbalance strace prometheus prometheus-node-exporter debhelper dpkg-dev lintian file rpm rpmlint debugedit podman runc python3-yaml"

bench="python3 procps tuned linux-perf valgrind strace"

pkgs=$build
case "${1:-}" in
--test) pkgs="$build $test" ;;
--bench) pkgs="$build $bench" ;;
"") ;;
*) echo "usage: $0 [--test|--bench]" >&2; exit 2 ;;
esac

fetch_vm_kernel() {
        # The multi-NUMA tests boot a real Debian kernel under QEMU: fetch it once.
        [ "${1:-}" = --test ] || return 0
        "$(dirname "$0")/../tests/vm/setup.sh"
}

quiet_tuned() {
        # The benches start tuned themselves, with their own profile; the package's service
        # would tune the host with its recommended one meanwhile.
        [ "${1:-}" = --bench ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ] || return 0
        $as_root systemctl disable --now tuned.service >/dev/null 2>&1 || true
}

quiet_prometheus() {
        # The metrics test runs a node exporter of its own on 127.0.0.1 and a free port; the
        # packages' services (a Prometheus server scraping the host, the exporter on :9100
        # and its timers) have no business running on a test machine.
        [ "${1:-}" = --test ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ] || return 0
        $as_root systemctl disable --now prometheus.service prometheus-node-exporter.service \
                'prometheus-node-exporter-*.timer' >/dev/null 2>&1 || true
}

missing=""
for p in $pkgs; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
        fetch_vm_kernel "${1:-}"
        exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
        as_root=""
elif command -v sudo >/dev/null 2>&1; then
        as_root="sudo"
else
        echo "$0: need root (or sudo) to install:$missing" >&2
        exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -q
# shellcheck disable=SC2086
$as_root apt-get install -y -q --no-install-recommends $missing
fetch_vm_kernel "${1:-}"
quiet_tuned "${1:-}"
quiet_prometheus "${1:-}"
