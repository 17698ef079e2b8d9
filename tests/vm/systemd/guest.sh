#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Inside the systemd guest (run-systemd-guest.sh), as a unit on the serial console: the
# real npu-tuned.service on the real system bus, every step asserted from the kernel
# (knob files, /proc/PID/task/TID/status) as well as from the daemon. One line per step
# ("ok: ..."), then NPU-SYSTEMD-RESULT: PASS or FAIL, then poweroff.
# The steps run once for each way npu-tuned was installed: `meson install` (always), then,
# when the Debian package is there ($T/npu-tuned.deb), the meson files removed, the
# package installed with dpkg, the same steps, and a purge that must leave no file behind.
# The helpers below are called through check and wait_for:
# shellcheck disable=SC2317
set -u
T=/usr/local/lib/npu-test
THP=/sys/kernel/mm/transparent_hugepage/enabled
NB=/proc/sys/kernel/numa_balancing
PLACED_ID=792882e4ff9b463395fb46d8744098d5
failed=0

result() {
	echo "NPU-SYSTEMD-RESULT: $1"
	systemctl poweroff
	exit 0
}
phase=meson
ok() { echo "ok: [$phase] $*"; }
bad() { echo "FAIL: [$phase] $*"; failed=1; }
check() { # check WHAT COMMAND...
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}
# The selected THP word, and a thread's allowed CPUs.
thp() { sed 's/.*\[\(.*\)\].*/\1/' $THP; }
allowed() { sed -n 's/^Cpus_allowed_list:\s*//p' "/proc/$1/task/$2/status"; }
all_threads_on() { # PID CPUS: every thread allowed exactly CPUS
	local t
	for t in "/proc/$1/task/"*; do
		[[ $(allowed "$1" "${t##*/}") == "$2" ]] || return 1
	done
}
by_role() { # PID: main and ctl-* on 0, work-* on 1
	local t c a
	for t in "/proc/$1/task/"*; do
		c=$(cat "$t/comm") a=$(allowed "$1" "${t##*/}")
		case $c in
		threads-target | ctl-*) [[ $a == 0 ]] || return 1 ;;
		work-*) [[ $a == 1 ]] || return 1 ;;
		esac
	done
}
wait_for() { # SECONDS COMMAND...: poll until it succeeds
	local n=$(($1 * 10))
	shift
	while ((n-- > 0)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
substate() { systemctl show -P SubState npu-tuned; }
state_is() { [[ $(substate) == "$1" ]]; }
no_failed_unit() { [[ -z $(systemctl list-units --failed --no-legend) ]]; }
knobs_original() { [[ $(thp) == "$thp0" && $(cat "$NB") == "$nb0" ]]; }
knobs_applied() { [[ $(thp) == never && $(cat "$NB") == 0 ]]; }

echo "guest: up $(cut -d' ' -f1 /proc/uptime) s after boot; waiting for the system"
state=$(timeout 120 systemctl is-system-running --wait)
echo "guest: system $state at $(cut -d' ' -f1 /proc/uptime) s ($(systemd-analyze 2>/dev/null | head -1))"
[[ -r $THP && -r $NB ]] || { echo "no THP or NUMA balancing in this kernel"; result SKIP; }
thp0=$(thp) nb0=$(cat "$NB")
echo "guest: originals: THP $thp0, numa_balancing $nb0"
[[ $thp0 != never && $nb0 != 0 ]] || { bad "the guest's originals already hold the policy's values"; result FAIL; }
install -m 0644 $T/policy.json /etc/npu-tuned/policies.d/50-test.json

service_checks() {
# 1. start: READY (Type=notify: systemctl start returns when it is), the bus answers.
$T/threads-target --control 2 --compute 2 --timeout 300 >/dev/null &
target=$!
sleep 0.5
orig=$(allowed $target $target)
check "systemctl start npu-tuned (READY reached)" systemctl start npu-tuned
check "the unit is active/running: $(systemctl show -P ActiveState npu-tuned)/$(substate), status \"$(systemctl show -P StatusText npu-tuned)\"" \
	test "$(substate)" = running
check "npu-tunectl status answers on the system bus" npu-tunectl status
npu-tunectl status
check "busctl introspect org.nputuned1 /org/nputuned1" busctl introspect org.nputuned1 /org/nputuned1 org.nputuned1.Manager
check "knobs written under the hardened unit: THP $(thp), numa_balancing $(cat "$NB") (CAP_SYS_ADMIN)" knobs_applied
check "threads-target placed by role (kernel: control CPU 0, compute CPU 1)" wait_for 10 by_role $target
npu-tunectl processes
npu-tunectl knobs | head -5
check "npu-tunectl explain: the daemon's placement" \
	sh -c "npu-tunectl --json explain $target | grep -q '\"source\": \"daemon\"'"
check "journalctl MESSAGE_ID=$PLACED_ID has NPU_TUNED_PID=$target" \
	sh -c "journalctl -u npu-tuned MESSAGE_ID=$PLACED_ID -o export | grep -qx 'NPU_TUNED_PID=$target'"

# 2. systemctl reload with a broken policy: refused, the old one kept, PolicyReloaded false.
dbus-monitor --system "type='signal',interface='org.nputuned1.Manager',member='PolicyReloaded'" >/tmp/monitor.log 2>&1 &
mon=$!
sleep 1
echo '{"version": 1, "host": { broken' >/etc/npu-tuned/policies.d/50-test.json
check "systemctl reload npu-tuned" systemctl reload npu-tuned
check "PolicyReloaded(false, ...) signalled" wait_for 10 grep -q 'boolean false' /tmp/monitor.log
grep -A1 'boolean false' /tmp/monitor.log | tail -1
check "still running after the refused reload" state_is running
check "  the old policy kept: THP and numa_balancing unchanged (kernel)" knobs_applied
check "  the old policy kept: threads unchanged (kernel)" by_role $target
kill $mon
install -m 0644 $T/policy.json /etc/npu-tuned/policies.d/50-test.json

# 3. SIGKILL: ExecStopPost (npu-tuned --restore) gives everything back before the restart.
check "systemctl kill -s KILL npu-tuned" systemctl kill -s KILL npu-tuned
check "the unit went through ExecStopPost to auto-restart" wait_for 20 state_is auto-restart
check "after SIGKILL every knob is back (kernel: THP $(thp), numa_balancing $(cat "$NB"))" knobs_original
check "after SIGKILL threads-target has its original CPUs ($orig)" all_threads_on $target "$orig"
check "restarted (Restart=on-failure) and applied again" wait_for 30 state_is running
check "  knobs applied again" wait_for 10 knobs_applied
check "  threads placed again" wait_for 10 by_role $target

# 4. systemctl stop: knobs and affinities restored.
check "systemctl stop npu-tuned" systemctl stop npu-tuned
check "after stop every knob is back (kernel: THP $(thp), numa_balancing $(cat "$NB"))" knobs_original
check "after stop threads-target has its original CPUs ($orig)" all_threads_on $target "$orig"
check "no unit failed" no_failed_unit
systemctl list-units --failed --no-legend
kill $target
wait $target 2>/dev/null
journalctl -u npu-tuned --no-pager -o cat | tail -40
}

# Every file and directory but the kernel's, the journal's and dpkg's own bookkeeping (its
# log, its database's backups): what a package leaves behind shows here.
listing() {
	find / /run -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /var/log \
		-o -path /run/log -o -path /var/lib/dpkg -o -path /var/cache/debconf -o -path /run/systemd/journal \
		-o -path /usr/local/lib/npu-test \) -prune -o -print | sort -u
}

service_checks
if [[ -r $T/npu-tuned.deb ]]; then
	phase=deb
	echo "guest: removing the meson install, installing npu-tuned $(dpkg-deb -f $T/npu-tuned.deb Version) with dpkg"
	# The files meson installed, then their directories that are left empty.
	while read -r f; do [[ -d $f ]] || rm -f "$f"; done <$T/meson-files
	sort -r $T/meson-files | while read -r f; do [[ -d $f ]] && rmdir "$f" 2>/dev/null; done
	rm -rf /run/npu-tuned /etc/npu-tuned
	hash -r # npu-tunectl moves from /usr/local/bin to /usr/bin
	systemctl daemon-reload
	listing >/tmp/before
	check "dpkg -i npu-tuned.deb" dpkg -i $T/npu-tuned.deb
	check "the package enabled the unit: $(systemctl is-enabled npu-tuned)" test "$(systemctl is-enabled npu-tuned)" = enabled
	check "the package started it: $(systemctl is-active npu-tuned)" test "$(systemctl is-active npu-tuned)" = active
	install -m 0644 $T/policy.json /etc/npu-tuned/policies.d/50-test.json
	# The policy came after the package's start: a restart reads it (the steps start it again).
	systemctl stop npu-tuned
	service_checks
	rm -f /etc/npu-tuned/policies.d/50-test.json
	check "dpkg --purge npu-tuned" dpkg --purge npu-tuned
	check "purged: the unit is gone" sh -c '! systemctl cat npu-tuned >/dev/null 2>&1'
	check "purged: /run/npu-tuned is gone" test ! -e /run/npu-tuned
	listing >/tmp/after
	if diff /tmp/before /tmp/after >/tmp/diff; then
		ok "purge left no file behind ($(wc -l </tmp/before) paths the same before dpkg -i and after dpkg --purge)"
	else
		bad "purge: the file listing differs (< before dpkg -i, > after dpkg --purge):"
		cat /tmp/diff
	fi
fi
((failed)) && result FAIL
result PASS
