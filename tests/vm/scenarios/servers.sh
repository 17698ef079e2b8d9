#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Two servers sharing a node: two single-worker vLLM-shaped servers (npt-server as
# /usr/bin/python3) that both use edu:1 (EDU_VISIBLE_DEVICES=1), on node 3, with the
# shipped 10-default.json and the guest drop-in, whose vllm-worker rule wants one control
# and one compute CPU. Node 3 has two CPUs: alone, the first worker gets both (control
# on the first, compute on the second); beside the second, the demand exceeds the node:
# each keeps one CPU of node 3 and borrows one from the nearest node with spare CPUs,
# pools disjoint; when the second exits, the first is re-pinned onto both again. All read back from
# each thread's Cpus_allowed_list.
# shellcheck disable=SC2317,SC2086 # pool_is and split run through vm_wait_for; $policy holds two --policy-dir options, split on purpose
# shellcheck source-path=SCRIPTDIR source=../guest-lib.sh
. /usr/lib/npu-vm/lib.sh

dir=/tmp/$VM_SCENARIO
# shellcheck disable=SC2086 # VM_EDU is a space-separated list of BDF=node words
set -- $VM_EDU
[ $# -ge 2 ] || vm_skip "needs two edu devices (--edu-node 1 --edu-node 3)"
[ "$VM_CPUS_PER_NODE" = 2 ] || vm_skip "written for 2 CPUs per node (got $VM_CPUS_PER_NODE)"
node=${2#*=}
first=$((node * 2))
second=$((first + 1))
mkdir -p "$dir/etc"
cp /usr/share/npu-tuned/site/60-guest-edu.json "$dir/etc/"
policy="--policy-dir /usr/share/npu-tuned/policies --policy-dir $dir/etc"

# pool PID: the union of its threads' CPUs, ascending, comma-separated ("0,6").
pool() {
	vm_threads "$1" | awk '{ n = split($3, parts, ","); for (i = 1; i <= n; i++) { m = split(parts[i], ab, "-")
			for (c = ab[1]; c <= (m > 1 ? ab[2] : ab[1]); c++) s[c] = 1 } }
		END { for (c in s) print c }' | sort -n | tr '\n' ',' | sed 's/,$//'
}
pool_is() { [ "$(pool "$1")" = "$2" ]; }

# worker_of LAUNCHER: its retitled worker's pid (empty until there is one).
worker_of() { vm_children "$1" '^VLLM::Worker' | head -n1; }

start_server() {
	EDU_VISIBLE_DEVICES=1 python3 vllm 1 >/dev/null 2>&1 &
	_l=$!
	vm_track "$_l"
	_one() { [ -n "$(worker_of "$_l")" ]; }
	vm_wait_for 20 _one || return
	sleep 0.5 # its threads after the retitle
	echo "$_l"
}

vm_daemon_start "$dir/daemon.log" $policy --state-dir "$dir/state"
l1=$(start_server)
w1=$(worker_of "$l1")
[ -n "$w1" ] || vm_fail "the first server did not start its worker"
vm_wait_for 20 pool_is "$w1" "$first,$second" || true
vm_expect_eq "first server alone: worker $w1's CPUs" "$(pool "$w1")" "$first,$second"
vm_expect_eq "first server alone: worker $w1's main thread (control)" "$(vm_cpus_of "$w1")" "$first"

l2=$(start_server)
w2=$(worker_of "$l2")
[ -n "$w2" ] || vm_fail "the second server did not start its worker"
# Both re-planned: the first's pool shrunk, and the second pinned. The shipped rules bind
# "auto", so the second's threads are pinned only after its binding watch window (2 s).
split() { [ "$(pool "$w1")" != "$first,$second" ] && [ "$(pool "$w2" | tr ',' '\n' | wc -l)" -le 2 ]; }
vm_wait_for 20 split || true
sleep 1
p1=$(pool "$w1")
p2=$(pool "$w2")
vm_log "two servers: worker $w1 on $p1, worker $w2 on $p2"
# The demand (2 + 2 CPUs) exceeds node 3's two: each keeps one of them and borrows the
# rest from the nearest node with spare CPUs; never a CPU in both pools.
common=$(printf '%s\n%s\n' "$p1" "$p2" | tr ',' '\n' | sort -n | uniq -d | tr '\n' ' ')
vm_expect_eq "two servers on node $node: CPUs in both pools (worker $w1: $p1, worker $w2: $p2)" "$common" ""
for p in "$p1" "$p2"; do
	case ",$p," in
	*",$first,"* | *",$second,"*) vm_ok "pool $p holds a CPU of node $node (the accelerator's)" ;;
	*) vm_not_ok "pool $p" "no CPU of node $node" ;;
	esac
done
vm_threads "$w1"
vm_threads "$w2"

kill "$l2" # its worker dies with it
vm_wait_for 10 sh -c "! kill -0 $w2 2>/dev/null" || vm_fail "the second server's worker did not exit"
vm_wait_for 20 pool_is "$w1" "$first,$second" || true
vm_expect_eq "second server gone: worker $w1 has both CPUs back" "$(pool "$w1")" "$first,$second"
# Roles stay split on the two CPUs; which one is control may differ from the first plan
# (the placer keeps compute threads where they are when their CPU stays in the pool).
control=$(vm_cpus_of "$w1")
case "$control" in
"$first" | "$second") vm_ok "second server gone: worker $w1's main thread (control) on one CPU of node $node: $control" ;;
*) vm_not_ok "second server gone: worker $w1's main thread (control)" "on '$control', not one CPU of node $node" ;;
esac
want=$([ "$control" = "$first" ] && echo "$second" || echo "$first")
compute=$(vm_threads "$w1" | awk -v pid="$w1" '$1 != pid && $2 !~ /^(acl_thread|release_thread|hccl_watchdog_t)$/ { print $3 }' | sort -u | tr '\n' ' ')
vm_expect_eq "second server gone: worker $w1's compute threads (the CPU control does not have)" "$compute" "$want "
vm_daemon_stop TERM
kill "$l1" 2>/dev/null
vm_finish
