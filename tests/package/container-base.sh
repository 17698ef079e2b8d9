#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The Containerfile's base image without a registry: a debootstrap'd Debian 12 root of
# the minbase variant (what debian:bookworm-slim is: essential packages and apt, no docs,
# man pages or locales), cached as a tarball in $NPU_VM_CACHE/container-bookworm/
# (~60 s once), imported into podman under the name the Containerfile uses,
# docker.io/library/debian:bookworm-slim, unless an image of that name is there already.
# Exit: 0, or 77 with the reason (no podman, no debootstrap, no mirror).
# Env: NPU_VM_CACHE (default tests/vm/cache), NPU_DEBIAN_MIRROR.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${NPU_VM_CACHE:-$here/../vm/cache}/container-bookworm
name=docker.io/library/debian:bookworm-slim
say() { printf 'container-base: %s\n' "$*"; }
skip() { say "SKIP: $*"; exit 77; }
command -v podman >/dev/null || skip "podman is not installed (tools/install-deps.sh --test)"
if podman image exists "$name"; then
	say "$name is there ($(podman image inspect --format '{{.Id}}' "$name" | cut -c1-12))"
	exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
tarball=$cache/rootfs.tar
if [[ ! -s $tarball ]]; then
	command -v debootstrap >/dev/null || skip "debootstrap is not installed (tools/install-deps.sh --test)"
	mirror=${NPU_DEBIAN_MIRROR:-$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}
	mirror=${mirror:-http://deb.debian.org/debian}
	r=$cache/root
	rm -rf "$r"
	say "debootstrap --variant=minbase bookworm from $mirror (once; ~60 s)"
	t0=$SECONDS
	debootstrap --variant=minbase bookworm "$r" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
		skip "debootstrap failed (no mirror reachable?): see $cache/debootstrap.log"
	rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/*.bin "$r"/var/cache/apt/archives/*.deb \
		"$r"/usr/share/doc/* "$r"/usr/share/man/* "$r"/usr/share/locale/*
	tar -C "$r" --numeric-owner -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
	rm -rf "$r"
	say "root built in $((SECONDS - t0)) s ($(du -m "$tarball" | cut -f1) MB)"
fi
podman import --quiet "$tarball" "$name" >/dev/null
say "imported $tarball as $name"
