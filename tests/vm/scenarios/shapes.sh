#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Server shapes as they really start, on two accelerators on different nodes (edu:0 on
# node 1, edu:1 on node 3: --edu-node 1 --edu-node 3), with the shipped 10-default.json
# and a site drop-in declaring the edu kind (tests/vm/policies/60-guest-edu.json).
# npt-server, installed as /usr/bin/python3, is a vLLM-shaped server: the launcher keeps
# its environment (EDU_VISIBLE_DEVICES=1,0) and starts TP workers by fork+exec; each
# starts a compute thread, retitles itself VLLM::Worker_TP<n> (setproctitle: its environ
# is wiped), then starts acl_thread, release_thread, hccl_watchdog_t and two more compute
# threads. Worker n uses visible[n]: TP0 edu:1 (node 3), TP1 edu:0 (node 1).
#
# Asserted from the kernel (Cpus_allowed_list of every thread): each worker on its own
# accelerator's node, control threads (main, runtime threads) on the node's first CPU,
# compute on its second:
#   1. the daemon already running when the server starts;
#   2. the daemon restarted (SIGTERM: originals back, then a new start that finds the
#      workers by its scan, their environment long wiped: what the first daemon captured
#      at their exec, kept in the state directory, decides, and the log says so);
#   3. the daemon SIGKILLed and started again (affinity records, then the scan);
#   4. --explain of a worker beside the running daemon names the same accelerator, pool
#      and roles;
#   5. workers whose launcher died (npt-server vllm-orphans), found by a fresh start:
#      visible list unknown, so no guess: left alone, and the daemon and --explain say so;
#   6. the server first, then the daemon (a fresh state directory), for two launchers: one
#      no rule matches that keeps its name and environment (npt-launch), and one that
#      wipes its own after starting its workers and a resource tracker that keeps it
#      (npt-server vllm-wiped): every worker right within the binding watch window (2 s)
#      plus 1 s of the daemon's READY; then SIGKILL and a start while the server runs:
#      the same, and the log and --explain say "attributed before the restart";
#   7. a launcher that wiped its own and left no child that kept it (vllm-wiped bare):
#      placed by a daemon that saw the workers exec, right again after its SIGKILL and a
#      start (only the state directory knew); a fresh state directory: no guess.
# shellcheck disable=SC2317,SC2086 # placed_right runs through vm_wait_for; $policy holds two --policy-dir options, split on purpose
# shellcheck source-path=SCRIPTDIR source=../guest-lib.sh
. /usr/lib/npu-vm/lib.sh

dir=/tmp/$VM_SCENARIO
# shellcheck disable=SC2086 # VM_EDU is a space-separated list of BDF=node words
set -- $VM_EDU
[ $# -ge 2 ] || vm_skip "needs two edu devices (--edu-node 1 --edu-node 3)"
[ "$VM_CPUS_PER_NODE" -ge 2 ] || vm_skip "needs 2 CPUs per node to split roles"
node_edu0=${1#*=}
node_edu1=${2#*=}
[ "$node_edu0" != "$node_edu1" ] || vm_skip "the two edu devices must be on different nodes"
mkdir -p "$dir/etc"
cp /usr/share/npu-tuned/site/60-guest-edu.json "$dir/etc/"
policy="--policy-dir /usr/share/npu-tuned/policies --policy-dir $dir/etc"
all=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status)

# node_for_rank R: visible = 1,0, so rank 0 -> edu:1, rank 1 -> edu:0.
node_for_rank() { if [ "$1" = 0 ]; then echo "$node_edu1"; else echo "$node_edu0"; fi; }

# placed_right PID [quiet]: every thread of the worker on its role's CPU.
placed_right() {
	_rank=$(vm_cmdline "$1" | sed -n 's/.*_TP\([0-9]*\).*/\1/p')
	_node=$(node_for_rank "$_rank")
	_control=$((_node * VM_CPUS_PER_NODE))
	_compute=$((_control + 1))
	_ok=0
	_n=0
	while read -r tid comm cpus; do
		case $comm in
		acl_thread | release_thread | hccl_watchdog_t) want=$_control ;;
		*) if [ "$tid" = "$1" ]; then want=$_control; else want=$_compute; fi ;;
		esac
		_n=$((_n + 1))
		if [ "$cpus" != "$want" ]; then
			_ok=1
			[ -n "${2:-}" ] || vm_not_ok "worker $1 (TP$_rank, node $_node) thread $tid ($comm)" "on CPUs $cpus, want $want"
		fi
	done <<EOF
$(vm_threads "$1")
EOF
	[ "$_n" -ge 7 ] || { _ok=1; [ -n "${2:-}" ] || vm_not_ok "worker $1 threads" "$_n, want 7"; }
	return $_ok
}

# all_right WHAT: wait (bounded) until both workers are placed, then assert it.
all_right() {
	for w in $workers; do
		vm_wait_for 30 placed_right "$w" quiet || true
		if placed_right "$w"; then vm_ok "$1: worker $w ($(vm_cmdline "$w")) on its accelerator's node by role"; fi
	done
}

# originals WHAT: every thread of every worker back on all CPUs.
originals() {
	for w in $workers; do
		bad=$(vm_threads "$w" | awk -v all="$all" '$3 != all' | head -n1)
		vm_expect_eq "$1: worker $w's threads have their original affinity (first different)" "$bad" ""
	done
}

# --- 1. the daemon first, then the server ---------------------------------------------
vm_daemon_start "$dir/daemon.log" $policy --state-dir "$dir/state"
EDU_VISIBLE_DEVICES=1,0 python3 vllm 2 >/dev/null 2>&1 &
launcher=$!
vm_track "$launcher"
two_workers() { [ "$(vm_children "$launcher" '^VLLM::Worker_TP' | wc -l)" = 2 ]; }
vm_wait_for 20 two_workers || vm_fail "the server did not start two retitled workers"
sleep 0.5 # the threads after the retitle
workers=$(vm_children "$launcher" | tr '\n' ' ')
vm_log "launcher $launcher, workers $workers"
for w in $workers; do
	env_left=$(tr '\0' '\n' <"/proc/$w/environ" | grep -c EDU_VISIBLE_DEVICES)
	vm_expect_eq "worker $w's environ wiped (setproctitle)" "$env_left" 0
done
all_right "daemon before the server"

# --- 4. --explain beside the running daemon: the same answer --------------------------
for w in $workers; do
	npu-tuned $policy --explain "$w" >"$dir/explain-$w.txt" 2>&1
	rank=$(vm_cmdline "$w" | sed -n 's/.*_TP\([0-9]*\).*/\1/p')
	node=$(node_for_rank "$rank")
	want_accel=edu:$((1 - rank))
	c=$((node * VM_CPUS_PER_NODE))
	grep -q "accelerators:  $want_accel (source: env-inherited, EDU_VISIBLE_DEVICES)" "$dir/explain-$w.txt" &&
		grep -q "control        $c\$" "$dir/explain-$w.txt" && grep -q "compute        $((c + 1))\$" "$dir/explain-$w.txt"
	rc=$?
	[ $rc = 0 ] || cat "$dir/explain-$w.txt"
	vm_expect_eq "--explain $w: $want_accel from the launcher's environment, control $c, compute $((c + 1)), as applied" "$rc" 0
	applied=$(grep "pid $w (rule" "$dir/daemon.log" | tail -n1)
	case $applied in
	*"accelerators $want_accel from env"*) vm_ok "daemon log: pid $w got $want_accel from its environment at exec" ;;
	*) vm_not_ok "daemon log: pid $w" "${applied:-no placement line}" ;;
	esac
done

# --- 2. restart (SIGTERM, start): originals back, then right again from the scan -----
vm_daemon_stop TERM
vm_expect_eq "daemon exit status after SIGTERM" "$VM_DAEMON_RC" 0
originals "after SIGTERM"
vm_daemon_start "$dir/daemon-restarted.log" $policy --state-dir "$dir/state"
all_right "daemon restarted while the server runs"
for w in $workers; do
	rank=$(vm_cmdline "$w" | sed -n 's/.*_TP\([0-9]*\).*/\1/p')
	if grep -q "pid $w (rule \"vllm-worker\", accelerators edu:$((1 - rank)) attributed before the restart (from env))" "$dir/daemon-restarted.log"; then
		vm_ok "restart: worker $w (TP$rank) attributed edu:$((1 - rank)) from what the first daemon captured at its exec"
	else
		vm_not_ok "restart: worker $w (TP$rank)" "$(grep "pid $w (rule" "$dir/daemon-restarted.log")"
	fi
done
if grep -q "from rank" "$dir/daemon-restarted.log"; then
	grep "from rank" "$dir/daemon-restarted.log"
	vm_not_ok "restart" "a worker was attributed by rank as a device index"
else
	vm_ok "restart: no worker attributed by rank alone"
fi

# --- 3. SIGKILL, start again: the records give the originals back, the scan places ----
vm_daemon_stop KILL
vm_daemon_start "$dir/daemon-after-kill.log" $policy --state-dir "$dir/state"
all_right "daemon started after a SIGKILL"
vm_daemon_stop TERM
originals "after the last SIGTERM"
kill "$launcher" 2>/dev/null # its workers die with it (PR_SET_PDEATHSIG)

# --- 5. workers of a dead launcher: no guess --------------------------------------------
EDU_VISIBLE_DEVICES=1,0 python3 vllm-orphans 2 >/dev/null 2>&1 &
dead=$!
vm_wait_for 20 sh -c "! kill -0 $dead 2>/dev/null" || vm_fail "the orphaning launcher did not exit"
wait "$dead"
orphans=$(vm_children 1 '^VLLM::Worker_TP' | tr '\n' ' ')
vm_track $orphans
vm_log "orphaned workers: $orphans"
[ -n "$orphans" ] || vm_fail "no orphaned worker found"
vm_daemon_start "$dir/daemon-orphans.log" $policy --state-dir "$dir/state"
sleep 1
for w in $orphans; do
	vm_expect_eq "orphan $w's parent is init" "$(awk '{ print $4 }' "/proc/$w/stat")" 1
	bad=$(vm_threads "$w" | awk -v all="$all" '$3 != all' | head -n1)
	vm_expect_eq "orphan $w left alone (no thread pinned; first pinned)" "$bad" ""
	if grep -q "Process $w (.*): rank [0-9]* not taken as a device index" "$dir/daemon-orphans.log"; then
		vm_ok "daemon says it does not guess orphan $w's device"
	else
		vm_not_ok "daemon log for orphan $w" "$(grep "$w" "$dir/daemon-orphans.log" | head -n3)"
	fi
	npu-tuned $policy --explain "$w" >"$dir/explain-orphan-$w.txt" 2>&1
	if grep -q "not used as a device index" "$dir/explain-orphan-$w.txt" &&
		grep -q "accelerators:  none" "$dir/explain-orphan-$w.txt"; then
		vm_ok "--explain $w: no accelerator, rank not used as a device index"
	else
		cat "$dir/explain-orphan-$w.txt"
		vm_not_ok "--explain orphan $w" "does not say it refuses to guess"
	fi
done
vm_daemon_stop TERM
# shellcheck disable=SC2086 # a list of pids
kill $orphans 2>/dev/null

# --- 6., 7. the server first, then the daemon ------------------------------------------
# server_up CMD...: start a server with EDU_VISIBLE_DEVICES=1,0, wait for its two
# retitled workers; sets launcher and workers.
server_up() {
	EDU_VISIBLE_DEVICES=1,0 "$@" >/dev/null 2>&1 &
	launcher=$!
	vm_track "$launcher"
	vm_wait_for 20 two_workers || vm_fail "$* did not start two retitled workers"
	sleep 0.5 # the threads after the retitle
	workers=$(vm_children "$launcher" '^VLLM::Worker_TP' | tr '\n' ' ')
	vm_log "$*: launcher $launcher, workers $workers"
}

# right_in_time WHAT: every worker right within the binding watch window plus 1 s of
# the daemon's READY (vm_daemon_start returns after it). What a poll can prove: a worker
# seen wrong by a poll that began at T was placed after T. So the check fails when a poll
# that began later than 3.0 s still saw a worker wrong, not when the first poll that saw
# it right ended late: under TCG (arm64 on x86 most of all) one poll of seven threads'
# affinity takes a few tenths of a second, and the 0.2 s sleep between polls adds to it.
right_in_time() {
	_t0=$(vm_uptime)
	_late=0.00
	for w in $workers; do
		while :; do
			_began=$(vm_elapsed "$_t0")
			placed_right "$w" quiet && break
			_late=$_began
			awk -v t="$_began" 'BEGIN { exit !(t < 10) }' || break
			sleep 0.2
		done
	done
	_took=$(vm_elapsed "$_t0")
	all_right "$1"
	if awk -v t="$_late" 'BEGIN { exit !(t <= 3.0) }'; then
		vm_ok "$1: both workers right within 3.0 s of READY (binding watch window 2 s + 1 s): last seen wrong by a poll begun at ${_late} s, all seen right at ${_took} s"
	else
		vm_not_ok "$1: both workers right" "a poll begun ${_late} s after READY still saw a worker wrong, want <= 3.0"
	fi
}

# said LOG WHAT TEXT EXPLAIN STATE: every worker's placement line in LOG says "accelerators
# edu:N TEXT", and --explain with the state directory STATE says EXPLAIN.
said() {
	for w in $workers; do
		rank=$(vm_cmdline "$w" | sed -n 's/.*_TP\([0-9]*\).*/\1/p')
		line=$(grep "Placed pid $w (rule" "$1" | tail -n1)
		case $line in
		*"accelerators edu:$((1 - rank)) $3)"*) vm_ok "$2: log of worker $w: edu:$((1 - rank)) $3" ;;
		*) vm_not_ok "$2: log of worker $w" "${line:-no placement line}, want edu:$((1 - rank)) $3" ;;
		esac
		npu-tuned $policy --state-dir "$5" --explain "$w" >"$dir/explain-$2-$w.txt" 2>&1
		if grep -q "accelerators:  edu:$((1 - rank)) " "$dir/explain-$2-$w.txt" && grep -q "$4" "$dir/explain-$2-$w.txt"; then
			vm_ok "$2: --explain $w: edu:$((1 - rank)), $4"
		else
			cat "$dir/explain-$2-$w.txt"
			vm_not_ok "$2: --explain $w" "want edu:$((1 - rank)) and '$4'"
		fi
	done
}

# first_then_kill NAME CMD...: the server first, then the daemon; then SIGKILL, a start.
first_then_kill() {
	_name=$1
	shift
	server_up "$@"
	vm_daemon_start "$dir/daemon-$_name.log" $policy --state-dir "$dir/state-$_name"
	right_in_time "$_name: server first"
	# --explain as a fresh start sees it (no state directory): the relatives decide.
	said "$dir/daemon-$_name.log" "$_name" "from env-inherited" "environment:   read (its launcher's" "$dir/none"
	vm_daemon_stop KILL
	vm_daemon_start "$dir/daemon-$_name-killed.log" $policy --state-dir "$dir/state-$_name"
	right_in_time "$_name: SIGKILL and a start"
	said "$dir/daemon-$_name-killed.log" "$_name" "attributed before the restart (from env-inherited)" \
		"attributed before the restart (from env-inherited)" "$dir/state-$_name"
	vm_daemon_stop TERM
	kill "$launcher" 2>/dev/null
	vm_wait_for 10 sh -c "! kill -0 $launcher 2>/dev/null" || true
}
first_then_kill launch npt-launch launch /usr/bin/python3 2
first_then_kill wiped python3 vllm-wiped 2

# 7. Nothing left in /proc holds the list: only what a daemon captured at the exec.
vm_daemon_start "$dir/daemon-bare.log" $policy --state-dir "$dir/state-bare"
server_up python3 vllm-wiped 2 bare
all_right "bare: the daemon first"
vm_daemon_stop KILL
vm_daemon_start "$dir/daemon-bare-killed.log" $policy --state-dir "$dir/state-bare"
right_in_time "bare: SIGKILL and a start"
said "$dir/daemon-bare-killed.log" bare "attributed before the restart (from env)" "attributed before the restart (from env)" \
	"$dir/state-bare"
vm_daemon_stop TERM
vm_daemon_start "$dir/daemon-bare-fresh.log" $policy --state-dir "$dir/state-bare-fresh"
sleep 1
for w in $workers; do
	bad=$(vm_threads "$w" | awk -v all="$all" '$3 != all' | head -n1)
	vm_expect_eq "bare, fresh state directory: worker $w left alone (first pinned)" "$bad" ""
	if grep -q "Process $w (.*): rank [0-9]* not taken as a device index" "$dir/daemon-bare-fresh.log"; then
		vm_ok "bare, fresh state directory: the daemon says it does not guess worker $w's device"
	else
		vm_not_ok "bare, fresh state directory: daemon log for $w" "$(grep "$w" "$dir/daemon-bare-fresh.log" | head -n3)"
	fi
done
vm_daemon_stop TERM
kill "$launcher" 2>/dev/null
vm_finish
