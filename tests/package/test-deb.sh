#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The Debian package from a clean clone's files (packaging/build-deb.sh: dpkg-buildpackage
# -us -uc -b), then: lintian reports no error (every tag printed), the .deb holds exactly
# the files meson installs plus Debian's doc files, its Depends come from the shared
# libraries, and its maintainer scripts enable and start the unit on install, stop it on
# remove and remove the state directory on purge. Installing it on a systemd machine, and
# purging it, is tested in the systemd guest (vm-systemd-unit).
# usage: test-deb.sh SOURCE_ROOT BUILD_ROOT
set -euo pipefail
src=$1 out=$2/packages/deb
source "$(dirname "$0")/lib.sh"
command -v lintian >/dev/null || skip "lintian is not installed (tools/install-deps.sh --test)"
build build-deb.sh "$src" "$out"
deb=$artifact
dir=$(dirname "$deb")

# lintian on the .changes (the binary package and the build's metadata). Running as root is
# only a notice; informational tags are printed too, so what is tolerated is visible.
lint=$(lintian --display-info --fail-on none "$dir"/*.changes 2>&1 | grep -v 'running with root privileges')
[[ -n $lint ]] && echo "$lint" | sed 's/^/lintian: /'
errors=$(grep -c '^E: ' <<<"$lint" || true)
if ((errors == 0)); then
	ok "lintian: 0 errors, $(grep -c '^W: ' <<<"$lint" || true) warnings, $(grep -c '^I: ' <<<"$lint" || true) info"
else
	bad "lintian: $errors errors"
fi

want="/etc/npu-tuned/policies.d/
/lib/systemd/system/npu-tuned.service
/usr/bin/npu-tunectl
/usr/libexec/npu-tuned-driver-query
/usr/sbin/npu-tuned
/usr/share/bash-completion/completions/npu-tunectl
/usr/share/dbus-1/interfaces/org.nputuned1.Manager.xml
/usr/share/dbus-1/system.d/org.nputuned1.conf
/usr/share/doc/npu-tuned/changelog.gz
/usr/share/doc/npu-tuned/copyright
/usr/share/man/man1/npu-tunectl.1.gz
/usr/share/man/man5/npu-tuned.policy.5.gz
/usr/share/man/man8/npu-tuned.8.gz
/usr/share/npu-tuned/examples/50-atlas-800i-a2.json
/usr/share/npu-tuned/examples/50-nvidia-hgx.json
/usr/share/npu-tuned/policies/10-default.json"
# Files, and the one directory that must exist though empty (the admin's drop-ins).
have=$(dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|' | grep -v '/$' ; dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|' | grep -x '/etc/npu-tuned/policies.d/')
have=$(sort <<<"$have")
if [[ $have == "$(sort <<<"$want")" ]]; then
	ok "contents: the $(wc -l <<<"$want") expected paths, nothing else"
else
	bad "contents differ (< expected, > in the .deb):"
	diff <(sort <<<"$want") <(echo "$have") || true
fi
tmp=$(mktemp -d /tmp/npu-deb-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -x "$deb" "$tmp/root"
dpkg-deb -e "$deb" "$tmp/control"
[[ $(stat -c %a "$tmp/root/usr/sbin/npu-tuned") == 755 && $(stat -c %U:%G "$tmp/root/usr/sbin/npu-tuned") == root:root ]] &&
	ok "npu-tuned is root:root 0755" || bad "npu-tuned mode $(stat -c '%a %U:%G' "$tmp/root/usr/sbin/npu-tuned")"
grep -qx "ExecStart=/usr/sbin/npu-tuned" "$tmp/root/lib/systemd/system/npu-tuned.service" &&
	ok "the unit starts /usr/sbin/npu-tuned" || bad "the unit's ExecStart: $(grep ExecStart= "$tmp/root/lib/systemd/system/npu-tuned.service")"
if file "$tmp/root/usr/sbin/npu-tuned" | grep -q ', stripped'; then
	ok "npu-tuned is stripped (debugging symbols in the -dbgsym package)"
else
	bad "npu-tuned is not stripped: $(file "$tmp/root/usr/sbin/npu-tuned")"
fi

depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libnuma1 libjson-c5 libcpupower1 libsystemd0; do
	[[ ,$depends, =~ [,\ ]$lib[\ ,] ]] && ok "Depends: $lib (from the shared libraries)" || bad "Depends lacks $lib: $depends"
done
[[ $(dpkg-deb -f "$deb" Recommends) == dbus ]] && ok "Recommends: dbus" || bad "Recommends: $(dpkg-deb -f "$deb" Recommends)"

script_has() { # SCRIPT WHAT REGEX
	if grep -qE -- "$3" "$tmp/control/$1"; then ok "$1: $2"; else bad "$1: no $2 (/$3/)"; fi
}
script_has postinst "enables the unit on install" "deb-systemd-helper enable 'npu-tuned.service'"
script_has postinst "starts it (restart on upgrade)" "deb-systemd-invoke \\\$_dh_action 'npu-tuned.service'"
script_has prerm "stops it on remove (ExecStopPost restores)" "deb-systemd-invoke stop 'npu-tuned.service'"
script_has postrm "removes the state directory on purge" '^	rm -rf /run/npu-tuned$'
script_has postrm "forgets the unit's enablement on purge" "deb-systemd-helper purge 'npu-tuned.service'"
for s in postinst prerm postrm; do
	sh -n "$tmp/control/$s" && ok "$s parses (sh -n)" || bad "$s: sh -n"
done
finish
