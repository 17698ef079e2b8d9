#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# What each pinner costs while nothing it manages happens: the floor, npu-tuned and tuned
# run side by side (none of them has anything to place) for S seconds, as root:
#   bench/idle.sh [--build DIR] [--seconds S]
# Printed per pinner: CPU time used, context switches (wake-ups: voluntary + involuntary,
# all threads) and RSS. They all see the same process events of the rest of the host;
# the floor wakes for nothing else, so its count is what the host's events alone cost.
# Then S more seconds with strace attached to the floor and npu-tuned, to tell their own
# wake-ups from the host's: every return from the call each sleeps in (npu-tuned's
# epoll_wait, the floor's recv) is sorted by what it brought, a process-event datagram
# from the connector socket or something else (a timer, a signal, the bus). The issue's
# target is 0 of the latter (no systemd watchdog here: WATCHDOG_USEC is not set).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build seconds=60
# shellcheck source=bench/pinners.sh
. "$here/pinners.sh"
bench_args "$@"
bench_begin
declare -A pid
stop_all() {
        for p in "${!pid[@]}"; do
                pinner_pid=${pid[$p]}
                pinner_stop
        done
}
trap 'stop_all; rm -rf "$bench_tmp" "$bench_tmp_shm"' EXIT # all three, not the last
wakeups() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n + 0 }'; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
names=(floor npu-tmpfs tuned-default)
for p in "${names[@]}"; do
        pinner_start "$p" "no-such-process-npu-bench" "*/no-such-process-npu-bench"
        pid[$p]=$pinner_pid
        pinner_pid=""
done
sleep 5
declare -A cpu0 wk0
for p in "${names[@]}"; do
        cpu0[$p]=$(cpu_seconds "${pid[$p]}") wk0[$p]=$(wakeups "${pid[$p]}")
done
sleep "$seconds"
echo "idle for $seconds s, side by side (the host's own process events reach all three)"
echo "| pinner | CPU ms | wake-ups | RSS KiB |"
echo "|---|---|---|---|"
for p in "${names[@]}"; do
        cpu=$(awk -v a="${cpu0[$p]}" -v b="$(cpu_seconds "${pid[$p]}")" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
        echo "| $p | $cpu | $(($(wakeups "${pid[$p]}") - wk0[$p])) | $(rss_kib "${pid[$p]}") |"
done

# "FD KIND" for each open fd of pid: connector (a NETLINK_CONNECTOR socket), socket, timer,
# signal or other.
fd_kinds() {
        local f l
        for f in /proc/"$1"/fd/*; do
                l=$(readlink "$f") || continue
                case $l in
                socket:*)
                        l=${l#socket:[}
                        if awk -v i="${l%]}" '$2 == 11 && $NF == i { f = 1 } END { exit !f }' /proc/net/netlink; then
                                echo "${f##*/} connector"
                        else
                                echo "${f##*/} socket"
                        fi
                        ;;
                *timerfd*) echo "${f##*/} timer" ;;
                *signalfd*) echo "${f##*/} signal" ;;
                *) echo "${f##*/} other" ;;
                esac
        done
}
# Sorts the returns of the waits in an strace log (see the header): an epoll_wait return
# opens a wake-up that the calls up to the next one fill; a pinner without epoll sleeps in
# recv, and each return of it is a wake-up of its own. The last wait, whose calls the
# trace ends before, and the call strace detached from are left out.
wake_split() { # FD_KINDS STRACE_LOG
        awk 'FNR == NR { kind[$1] = $2; next }
        function done() { if (!open) return; n++; if (dgram) d++; else if (timer) t++; else if (sig) s++; else x++; open = 0 }
        !/^[a-z_0-9]+\(/ || /<detached|<unfinished|= \?/ { next }
        {
                name = $0; sub(/\(.*/, "", name)
                fd = $0; sub(/^[^(]*\(/, "", fd); sub(/[,)].*/, "", fd)
                ret = $0; sub(/.*\) += /, "", ret); ret += 0
                if (name ~ /^epoll_/) { done(); epoll = open = 1; dgram = timer = sig = 0; next }
                if (!epoll && name ~ /^recv/) { open = 1; dgram = timer = sig = 0 }
                if (name ~ /^recv/ && kind[fd] == "connector" && ret > 0) dgram = 1
                if (name == "read" && kind[fd] == "timer") timer = 1
                if (name == "read" && kind[fd] == "signal") sig = 1
                if (!epoll) done()
        }
        END { printf "%d | %d | %d | %d | %d | %d", n, d, n - d, t, s, x }' "$1" "$2"
}
echo
echo "the same, $seconds s more with strace attached: each return from the wait, with or without a process-event"
echo "datagram (the floor reads one datagram per recv, npu-tuned all that are queued with one recvmmsg)"
echo "| pinner | returns from its wait | with a datagram | without (its own wake-ups) | of which timer | signal | other |"
echo "|---|---|---|---|---|---|---|"
declare -A tracer
for p in floor npu-tmpfs; do
        fd_kinds "${pid[$p]}" >"$bench_tmp/$p.fds"
        strace -qq -p "${pid[$p]}" -e 'trace=/^(epoll_.*|recv.*|read)$' -o "$bench_tmp/$p.strace" &
        tracer[$p]=$!
done
sleep "$seconds"
for p in floor npu-tmpfs; do
        kill "${tracer[$p]}"
        wait "${tracer[$p]}" 2>/dev/null || true
        echo "| $p | $(wake_split "$bench_tmp/$p.fds" "$bench_tmp/$p.strace") |"
done
