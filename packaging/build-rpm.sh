#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Builds the RPM from packaging/rpm/npu-tuned.spec on this (Debian) host: the source tarball
# from an export of the tree (export-tree.sh: a clean clone's files), `rpmbuild -bb --nodeps`
# (the BuildRequires are openEuler's names, which dpkg does not know) with the systemd and
# meson macros an openEuler build root has (packaging/rpm/macros.build-host). Puts the
# binary RPMs into OUTDIR/TREE/ and reuses them for the same tree. Prints the path of the
# npu-tuned RPM as its last line.
# usage: build-rpm.sh SOURCE_ROOT OUTDIR [--check]   (--check: run the spec's %check too)
set -euo pipefail
src=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
check=--nocheck
[[ ${3:-} == --check ]] && check=
command -v rpmbuild >/dev/null || { echo "build-rpm: SKIP: rpmbuild is not installed (package rpm; tools/install-deps.sh --test)"; exit 77; }

tmp=$(mktemp -d /tmp/npu-rpm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
spec=$src/packaging/rpm/npu-tuned.spec
version=$(sed -n 's/^Version:[[:space:]]*//p' "$spec")
tree=$("$src/packaging/export-tree.sh" "$src" "$tmp/npu-tuned-$version")
dest=$out/$tree${check:+-nocheck}
exec 9>"$out/.lock"
flock 9
rpm=$(ls "$dest"/npu-tuned-"$version"-*.rpm 2>/dev/null | grep -v -e debuginfo -e debugsource | head -1 || true)
if [[ -n $rpm ]]; then
	echo "build-rpm: reusing $rpm (tree $tree)"
	echo "$rpm"
	exit 0
fi
top=$tmp/rpmbuild
mkdir -p "$top/SOURCES"
tar -C "$tmp" -czf "$top/SOURCES/npu-tuned-$version.tar.gz" "npu-tuned-$version"
t0=$(date +%s)
if ! rpmbuild -bb --nodeps $check --load "$src/packaging/rpm/macros.build-host" \
	--define "_topdir $top" --define "_smp_build_ncpus $(nproc)" "$spec" >"$tmp/build.log" 2>&1; then
	tail -60 "$tmp/build.log"
	echo "build-rpm: FAIL: rpmbuild, the log's end above"
	exit 1
fi
mkdir -p "$dest.tmp"
find "$top/RPMS" -name '*.rpm' -exec cp {} "$dest.tmp/" \;
cp "$tmp/build.log" "$dest.tmp/"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
rpm=$(ls "$dest"/npu-tuned-"$version"-*.rpm | grep -v -e debuginfo -e debugsource | head -1)
echo "build-rpm: built $(basename "$rpm") ($(stat -c %s "$rpm") bytes) in $(($(date +%s) - t0)) s (${check:-with %check}, tree $tree)"
echo "$rpm"
