#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Builds the Debian package the way a Debian 12 build machine does, `dpkg-buildpackage -us
# -uc -b` in an export of the source tree (export-tree.sh: a clean clone's files), and puts
# the .deb, .buildinfo and .changes into OUTDIR/TREE/ (TREE: the exported tree's id). A
# second call for the same tree reuses them (the package tests and the systemd guest share
# one build). Prints the path of the .deb as its last line.
# usage: build-deb.sh SOURCE_ROOT OUTDIR
# Env: DEB_BUILD_OPTIONS (default "nocheck parallel=N": the unit suite, which the package
# build would run, runs in the project's own test run).
set -euo pipefail
src=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null ||
	{ echo "build-deb: SKIP: dpkg-dev and debhelper are not installed (tools/install-deps.sh --test)"; exit 77; }

tmp=$(mktemp -d /tmp/npu-deb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
tree=$("$src/packaging/export-tree.sh" "$src" "$tmp/npu-tuned-$version")
dest=$out/$tree
exec 9>"$out/.lock"
flock 9
deb=$(ls "$dest"/npu-tuned_"$version"_*.deb 2>/dev/null | head -1 || true)
if [[ -n $deb ]]; then
	echo "build-deb: reusing $deb (tree $tree)"
	echo "$deb"
	exit 0
fi
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-nocheck parallel=$(nproc)}
t0=$(date +%s)
if ! (cd "$tmp/npu-tuned-$version" && dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1; then
	tail -60 "$tmp/build.log"
	echo "build-deb: FAIL: dpkg-buildpackage (DEB_BUILD_OPTIONS=$DEB_BUILD_OPTIONS), the log's end above"
	exit 1
fi
mkdir -p "$dest.tmp"
cp "$tmp"/*.deb "$tmp"/*.buildinfo "$tmp"/*.changes "$tmp/build.log" "$dest.tmp/"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
deb=$(ls "$dest"/npu-tuned_"$version"_*.deb | head -1)
echo "build-deb: built $(basename "$deb") ($(stat -c %s "$deb") bytes) in $(($(date +%s) - t0)) s (DEB_BUILD_OPTIONS=$DEB_BUILD_OPTIONS, tree $tree)"
echo "$deb"
