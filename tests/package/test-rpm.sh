#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The RPM of packaging/rpm/npu-tuned.spec, built on this host (packaging/build-rpm.sh:
# rpmbuild -bb --nodeps from a clean clone's files), then: rpmlint reports no error (with
# the checked-in rpmlintrc, whose every filter says why; every tag printed), the file list
# is what meson installs plus the license and README, the /etc directories are owned as
# configuration, and the scriptlets enable the unit on install, stop and disable it on
# erase, restart it on upgrade and remove the state directory on erase.
# usage: test-rpm.sh SOURCE_ROOT BUILD_ROOT
set -euo pipefail
src=$1 out=$2/packages/rpm
source "$(dirname "$0")/lib.sh"
command -v rpmlint >/dev/null || skip "rpmlint is not installed (tools/install-deps.sh --test)"
build build-rpm.sh "$src" "$out"
rpm=$artifact

lint=$(rpmlint -r "$src/packaging/rpm/npu-tuned.rpmlintrc" -c "$src/packaging/rpm/rpmlint.toml" \
	"$rpm" "$src/packaging/rpm/npu-tuned.spec" 2>&1 || true)
echo "$lint" | grep -E '^npu-tuned|checked;' | sed 's/^/rpmlint: /'
summary=$(grep -E 'checked; [0-9]+ errors' <<<"$lint" || true)
if [[ $summary =~ checked\;\ 0\ errors ]]; then
	ok "rpmlint: 0 errors (${summary#*checked; })"
else
	bad "rpmlint: ${summary:-no summary line}"
fi

want="/etc/npu-tuned
/etc/npu-tuned/policies.d
/usr/bin/npu-tunectl
/usr/lib/systemd/system/npu-tuned.service
/usr/libexec/npu-tuned-driver-query
/usr/sbin/npu-tuned
/usr/share/bash-completion/completions/npu-tunectl
/usr/share/dbus-1/interfaces/org.nputuned1.Manager.xml
/usr/share/dbus-1/system.d/org.nputuned1.conf
/usr/share/doc/npu-tuned-0.1.0
/usr/share/doc/npu-tuned-0.1.0/README.md
/usr/share/licenses/npu-tuned-0.1.0
/usr/share/licenses/npu-tuned-0.1.0/LICENSE
/usr/share/man/man1/npu-tunectl.1.gz
/usr/share/man/man5/npu-tuned.policy.5.gz
/usr/share/man/man8/npu-tuned.8.gz
/usr/share/npu-tuned
/usr/share/npu-tuned/examples
/usr/share/npu-tuned/examples/50-atlas-800i-a2.json
/usr/share/npu-tuned/examples/50-nvidia-hgx.json
/usr/share/npu-tuned/policies
/usr/share/npu-tuned/policies/10-default.json"
# The build-id links depend on the build; everything else is fixed.
have=$(rpm -qlp "$rpm" | grep -v '^/usr/lib/\.build-id' | sort)
if [[ $have == "$(sort <<<"$want")" ]]; then
	ok "rpm -qlp: the $(wc -l <<<"$want") expected paths, nothing else"
else
	bad "rpm -qlp differs (< expected, > in the RPM):"
	diff <(sort <<<"$want") <(echo "$have") || true
fi
# %config(noreplace) on a directory: rpm keeps the noreplace flag (n) and never lists a
# directory as a config file (-qc).
flags=$(rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpm" | grep ' /etc/npu-tuned/policies.d$' | cut -d' ' -f1)
[[ $flags == *n* ]] && ok "/etc/npu-tuned/policies.d is %config(noreplace) (file flags: $flags)" ||
	bad "/etc/npu-tuned/policies.d flags: '$flags'"
dirs=$(rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$rpm" | grep -E ' /etc/npu-tuned(/policies.d)?$' | cut -c1 | tr -d '\n')
[[ $dirs == dd ]] && ok "the /etc directories are directories the package owns, never their files" || bad "/etc entries: $dirs"
[[ $(rpm -qp --qf '[%{FILEMODES:perms} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILENAMES}\n]' "$rpm" | grep ' /usr/sbin/npu-tuned$') == '-rwxr-xr-x root:root /usr/sbin/npu-tuned' ]] &&
	ok "npu-tuned is root:root 0755" || bad "npu-tuned: $(rpm -qp --qf '[%{FILEMODES:perms} %{FILEUSERNAME} %{FILENAMES}\n]' "$rpm" | grep sbin)"
requires=$(rpm -qp --requires "$rpm")
for lib in libnuma.so.1 libjson-c.so.5 libcpupower.so.1 libsystemd.so.0; do
	grep -q "^$lib()(64bit)" <<<"$requires" && ok "Requires: $lib (from the ELF dependencies)" || bad "Requires lacks $lib"
done
grep -qx 'systemd' <<<"$requires" && ok "Requires(post/preun/postun): systemd (%systemd_requires)" || bad "no Requires on systemd"

scripts=$(rpm -qp --scripts "$rpm")
section() { awk -v s="$1" '/^[a-z]+ scriptlet/ {on = index($0, s " scriptlet") == 1; next} on' <<<"$scripts"; }
has() { # SECTION WHAT REGEX
	if section "$1" | grep -qE -- "$3"; then ok "%$1: $2"; else bad "%$1: no $2 (/$3/)"; fi
}
has postinstall "presets (enables) the unit on first install" 'if \[ \$1 -eq 1 \]|systemctl --no-reload preset npu-tuned.service'
has preuninstall "disables and stops it on erase (ExecStopPost restores)" 'systemctl --no-reload disable --now npu-tuned.service'
has postuninstall "restarts it on upgrade" 'systemctl try-restart npu-tuned.service'
has postuninstall "removes the state directory on erase" '^    rm -rf /run/npu-tuned$'
for s in postinstall preuninstall postuninstall; do
	section "$s" | sh -n && ok "%$s parses (sh -n)" || bad "%$s: sh -n"
done
finish
