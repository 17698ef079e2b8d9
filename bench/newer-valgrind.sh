#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# A valgrind that knows pidfd_open(2) (3.20 and later), for bench/cpu-per-event.sh on a host
# whose own is older (Debian 12 has 3.19): Debian 13's package, its signature checked
# against this host's Debian archive keyring, unpacked (not installed) into DIR.
#   bench/newer-valgrind.sh [DIR]     (default /var/cache/npu-tuned/valgrind)
# Prints the two variables to run the bench with, e.g.
#   eval "$(bench/newer-valgrind.sh)" && bench/cpu-per-event.sh
set -euo pipefail
dir=${1:-/var/cache/npu-tuned/valgrind}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=trixie
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
for tool in curl gpgv xz dpkg-deb sha256sum; do
        command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
if [ ! -x "$dir/usr/bin/valgrind.bin" ]; then
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        curl -sfL "$mirror/dists/$suite/InRelease" -o "$tmp/InRelease"
        gpgv --keyring "$keyring" --output "$tmp/Release" "$tmp/InRelease" 2>/dev/null ||
                { echo "the $suite release file's signature does not check against $keyring" >&2; exit 1; }
        want=$(awk '/^SHA256:/ { s = 1; next } /^[^ ]/ { s = 0 } s && $3 == "main/binary-amd64/Packages.xz" { print $1 }' "$tmp/Release")
        curl -sfL "$mirror/dists/$suite/main/binary-amd64/Packages.xz" -o "$tmp/Packages.xz"
        echo "$want  $tmp/Packages.xz" | sha256sum -c --quiet
        read -r file sum < <(xz -dc "$tmp/Packages.xz" |
                awk '/^Package: / { p = ($2 == "valgrind") } p && /^Filename: / { f = $2 } p && /^SHA256: / { print f, $2; exit }')
        curl -sfL "$mirror/$file" -o "$tmp/valgrind.deb"
        echo "$sum  $tmp/valgrind.deb" | sha256sum -c --quiet
        mkdir -p "$dir"
        dpkg-deb -x "$tmp/valgrind.deb" "$dir"
fi
echo "export VALGRIND=$dir/usr/bin/valgrind.bin VALGRIND_LIB=$dir/usr/libexec/valgrind"
