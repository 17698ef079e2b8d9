#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The field report's memory case, with the shipped policy as an operator runs it: the
# shipped 10-default.json, the Atlas example linked into /etc/npu-tuned/policies.d under
# its own name (50-atlas-800i-a2.json) and a site drop-in 60-site.json that adapts it to
# the guest (edu kind, 1 + 1 CPUs, 10 s settle delay, min_free_mib 256 instead of 8192;
# tests/vm/policies/60-site-memory.json). The drop-in sorts after the example, so its
# values win (the policy order fix), and --check-policy says which file set min_free_mib.
#
# A vLLM-shaped server (visible list 1,0, two TP workers, 96 MiB of "weights" each,
# touched on node 0) while a hog pinned to node 3 leaves it less than 256 MiB free:
# TP0's accelerator (edu:1) is on node 3, so its memory goes to the nearest node with
# room, and the daemon and --explain say why; TP1's (edu:0, node 1) goes to node 1.
# Asserted from /proc/PID/numa_maps: >= 95 % of each worker's anonymous pages on the node
# the daemon chose.
# shellcheck disable=SC2317,SC2086 # moved runs through vm_wait_for; $policy holds two --policy-dir options, split on purpose
# shellcheck source-path=SCRIPTDIR source=../guest-lib.sh
. /usr/lib/npu-vm/lib.sh

dir=/tmp/$VM_SCENARIO
# shellcheck disable=SC2086 # VM_EDU is a space-separated list of BDF=node words
set -- $VM_EDU
[ $# -ge 2 ] || vm_skip "needs two edu devices (--edu-node 1 --edu-node 3)"
node_edu0=${1#*=}
node_edu1=${2#*=}
{ [ "$node_edu0" != 0 ] && [ "$node_edu1" != 0 ]; } || vm_skip "the edu devices must not be on node 0 (memory starts there)"
etc=$dir/etc/npu-tuned/policies.d
mkdir -p "$etc"
ln -s /usr/share/npu-tuned/examples/50-atlas-800i-a2.json "$etc/50-atlas-800i-a2.json"
cp /usr/share/npu-tuned/site/60-site-memory.json "$etc/60-site.json"
policy="--policy-dir /usr/share/npu-tuned/policies --policy-dir $etc"

# --- the policy as the operator checks it -------------------------------------------------
npu-tuned --check-policy /usr/share/npu-tuned/policies "$etc" >"$dir/check.out" 2>"$dir/check.err"
vm_expect_eq "--check-policy of the shipped policies + the site drop-in" "$?" 0
if grep -q "is overridden" "$dir/check.err"; then
	cat "$dir/check.err"
	vm_not_ok "policy order" "a drop-in value is overridden by a later file"
fi
grep -q "^  processes\[vllm-worker\].memory.min_free_mib = 256  <- $etc/60-site.json:" "$dir/check.out"
vm_expect_eq "--check-policy: min_free_mib 256 set by 60-site.json" "$?" 0

# --- node 3 full: a hog pinned there ------------------------------------------------------
# anon_pct PID NODE: % of the process's anonymous pages on NODE (numa_maps): its own
# memory (the weights), not the page cache of the libraries it maps.
anon_pct() { npu-vm-helper numa-pct "$1" "$2" | sed -n 's/.*pct=\([0-9]*\).*/\1/p'; }
free_mib() { awk '/MemFree/ { print int($4 / 1024) }' "/sys/devices/system/node/node$1/meminfo"; }
hog_mb=$(($(free_mib "$node_edu1") - 128))
npu-vm-helper alloc-hold --node "$node_edu1" --mb "$hog_mb" --seconds 300 >"$dir/hog.out" 2>&1 &
hog=$!
vm_track "$hog"
vm_wait_for 60 grep -q READY "$dir/hog.out" || vm_fail "the hog did not start: $(cat "$dir/hog.out")"
vm_log "node $node_edu1: $(free_mib "$node_edu1") MiB free with the hog ($hog_mb MiB)"
[ "$(free_mib "$node_edu1")" -lt 256 ] || vm_fail "setup: node $node_edu1 still has $(free_mib "$node_edu1") MiB free"

# --- the daemon, then the server (its workers' memory first touched on node 0) -------
vm_daemon_start "$dir/daemon.log" $policy --state-dir "$dir/state"
EDU_VISIBLE_DEVICES=1,0 NPT_WORKER_MIB=96 taskset -c 0-1 python3 vllm 2 >/dev/null 2>&1 &
launcher=$!
vm_track "$launcher"
two_workers() { [ "$(vm_children "$launcher" '^VLLM::Worker_TP' | wc -l)" = 2 ]; }
vm_wait_for 20 two_workers || vm_fail "the server did not start two workers"
workers=$(vm_children "$launcher")
for w in $workers; do
	before=$(anon_pct "$w" 0)
	vm_log "worker $w: ${before}% of its anonymous pages on node 0 before the settle delay ends"
	[ "$before" -ge 90 ] || vm_not_ok "setup: worker $w" "only ${before}% of its weights on node 0 before the move"
done
for w in $workers; do
	rank=$(vm_cmdline "$w" | sed -n 's/.*_TP\([0-9]*\).*/\1/p')
	# Where the daemon sends it (its log), and what --explain says beside it.
	vm_wait_for 20 grep -Eq "^npu-tuned: Plac(ing|ed) pid $w " "$dir/daemon.log" || vm_not_ok "worker $w" "the daemon did not place it"
	mem=$(sed -n "s/^npu-tuned: Plac[a-z]* pid $w (rule .*, memory \([0-9,-]*\)\. .*/\1/p" "$dir/daemon.log" | tail -n1)
	npu-tuned $policy --explain "$w" >"$dir/explain-$w.txt" 2>&1
	explained=$(sed -n 's/^  memory nodes:  //p' "$dir/explain-$w.txt")
	if [ "$rank" = 0 ]; then
		# edu:1's node is full: the nearest node with room takes the memory, and both say why
		if [ -n "$mem" ] && [ "$mem" != "$node_edu1" ] && grep -q "pid $w: memory: node $node_edu1 has .* free < 256 MiB minimum; nearest node with room" "$dir/daemon.log"; then
			vm_ok "TP0: node $node_edu1 lacks room, the daemon sends its memory to node $mem"
		else
			vm_not_ok "TP0 memory" "the daemon does not send it off the full node $node_edu1 (memory '$mem')"
		fi
		if grep -q "node $node_edu1 has .* free <" "$dir/explain-$w.txt" && [ -n "$explained" ] && [ "$explained" != "$node_edu1" ]; then
			vm_ok "--explain TP0: node $node_edu1 lacks room, memory to node $explained"
		else
			cat "$dir/explain-$w.txt"
			vm_not_ok "--explain TP0" "does not send memory off the full node $node_edu1 (memory nodes '$explained')"
		fi
		[ "$explained" = "$mem" ] || vm_log "NOTE: --explain (a second opinion, MemFree read later) names node $explained, the daemon chose node $mem"
	else
		vm_expect_eq "TP1: the daemon's memory node (edu:0's)" "$mem" "$node_edu0"
		vm_expect_eq "--explain TP1: memory node (edu:0's)" "$explained" "$node_edu0"
	fi
	moved() { [ -n "$mem" ] && [ "$(anon_pct "$w" "$mem")" -ge 95 ]; }
	vm_wait_for 60 moved || true
	after=$([ -n "$mem" ] && anon_pct "$w" "$mem")
	if [ "${after:-0}" -ge 95 ]; then
		vm_ok "worker $w (TP$rank): ${after}% of its anonymous pages on node $mem, where the daemon sent them"
	else
		cat "/proc/$w/numa_maps"
		vm_not_ok "worker $w (TP$rank) pages on node $mem" "${after}% < 95%"
	fi
done
grep "Memory of pid" "$dir/daemon.log"
vm_daemon_stop TERM
vm_expect_eq "daemon exit status" "$VM_DAEMON_RC" 0
kill "$launcher" "$hog" 2>/dev/null
vm_finish
