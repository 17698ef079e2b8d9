#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# CPU per event, as instructions (callgrind: stable on a loaded host), the floor pinner
# against npu-tuned, as root:
#   bench/cpu-per-event.sh [--build DIR] [--execs N] [--matched M]
# Each pinner runs under callgrind, collecting only inside its event handler (npu-tuned:
# the watcher's watcher_on_event; the floor: handle), while this script runs N unmatched execs
# (/bin/true from a shell loop: a fork, an exec and an exit each) and then M matched
# processes of 5 threads (bench/placement-latency). Prints instructions per exec event
# (the matching decision), per event of any kind, and per matched process (everything the
# handler did for it, with its threads' events), and npu-tuned's over the floor's. The
# host's own processes add events to both runs alike; system calls are not in these
# counts (the matched path's are listed by strace in bench/RESULTS.md).
# Valgrind 3.19 (Debian 12) does not know pidfd_open (system call 434): under it npu-tuned
# has no pidfds, as on a kernel before 5.3. A match at an exec reads /proc/PID/stat once
# either way (since the session of 2026-12-03 (second), bench/RESULTS.md); what a real run
# does beside is its pidfd's own handling (a poll when the match is made and one when the
# main thread exits; an event source when it exits before its other threads).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build execs=1000 matched=20
# shellcheck source=bench/pinners.sh
. "$here/pinners.sh"
bench_args "$@"
bench_begin
# $VALGRIND: another valgrind to run (e.g. a newer one unpacked from its package, with
# VALGRIND_LIB set). Valgrind before 3.20 has no pidfd_open(2): under it npu-tuned falls
# back to reading /proc/PID/stat where it would poll a pidfd, and floor-facts places
# nothing at exec (it has no fallback), so both counts would be of another path.
valgrind=${VALGRIND:-valgrind}
command -v "$valgrind" >/dev/null || { echo "needs valgrind (tools/install-deps.sh --bench)"; exit 77; }
if ! "$valgrind" --tool=none -q perl -e 'exit(syscall(434, 0 + $$, 0) >= 0 ? 0 : 1)' 2>/dev/null; then
        echo "$valgrind has no pidfd_open(2) (valgrind < 3.20): the counts below are of the pinners' paths without pidfds, not of what runs outside valgrind"
fi

# HANDLER: the event handler (its calls are the events), then any function that does work
# the handler left for later (npu-tuned's attribution files, written after the batch of
# events in hand): their cost counts with the handler's.
measure() { # PINNER PHASE HANDLER...
        local pinner=$1 phase=$2 toggles="" h
        shift 2
        local out=$bench_tmp/$pinner-$phase.cg
        for h in "$@"; do toggles+=" --toggle-collect=$h"; done
        pinner_wrap="$valgrind --tool=callgrind --collect-atstart=no$toggles --callgrind-out-file=$out"
        pinner_start "$pinner" "placement-latency --child" "*/placement-latency"
        sleep 1
        if [ "$phase" = unmatched ]; then
                for _ in $(seq "$execs"); do /bin/true; done
        else
                "$build/bench/placement-latency" "$matched" 4 >/dev/null || true
        fi
        sleep 2
        pinner_stop
        # $BENCH_KEEP_LOGS (bench/pinners.sh) keeps the profiles too, for callgrind_annotate.
        [ -z "${BENCH_KEEP_LOGS:-}" ] || cp "$out" "$BENCH_KEEP_LOGS/"
        python3 "$here/callgrind-calls.py" "$out" "$@" |
                awk '{ split($3, ir, "="); total += ir[2] } NR == 1 { name = $1; calls = $2 } END { print name, calls, "ir=" total }'
}

declare -A ir
for phase in unmatched matched; do
        for pinner in floor floor-facts npu-tmpfs; do
                case $pinner in floor*) handlers=(handle) ;; *) handlers=(watcher_on_event on_attribution_due) ;; esac
                read -r _ calls total _ < <(measure "$pinner" "$phase" "${handlers[@]}")
                ir[$pinner-$phase]=${total#ir=}
                ir[$pinner-$phase-calls]=${calls#calls=}
        done
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
div() { awk -v a="$1" -v b="$2" -v m="${3:-1}" 'BEGIN { printf "%.0f", (b > 0 ? a * m / b : 0) }'; }
f_u=$(div "${ir[floor-unmatched]}" "$execs" 1000) n_u=$(div "${ir[npu-tmpfs-unmatched]}" "$execs" 1000)
f_e=$(div "${ir[floor-unmatched]}" "${ir[floor-unmatched-calls]}") n_e=$(div "${ir[npu-tmpfs-unmatched]}" "${ir[npu-tmpfs-unmatched-calls]}")
g_u=$(div "${ir[floor-facts-unmatched]}" "$execs" 1000)
g_e=$(div "${ir[floor-facts-unmatched]}" "${ir[floor-facts-unmatched-calls]}")
# The host's own processes keep sending events meanwhile: take them out of the matched
# phase at the unmatched phase's cost per event. Each matched run makes 11 events the
# floor subscribes to (fork, exec, 4 thread forks, 5 exits) and 15 for npu-tuned (which
# also takes the 4 threads' renames).
net() { # TOTAL CALLS PER_EVENT OWN_EVENTS_PER_RUN
        awk -v t="$1" -v c="$2" -v e="$3" -v k="$4" -v m="$matched" \
                'BEGIN { bg = c - k * m; if (bg < 0) bg = 0; printf "%.0f", (t - bg * e) / m }'
}
f_m=$(net "${ir[floor-matched]}" "${ir[floor-matched-calls]}" "$f_e" 11)
g_m=$(net "${ir[floor-facts-matched]}" "${ir[floor-facts-matched-calls]}" "$g_e" 11)
n_m=$(net "${ir[npu-tmpfs-matched]}" "${ir[npu-tmpfs-matched-calls]}" "$n_e" 15)
echo "instructions in the event handler (callgrind Ir): $execs unmatched execs, then $matched matched processes of 5 threads"
echo "| | floor | floor-facts | npu-tuned | npu-tuned / floor | npu-tuned / floor-facts |"
echo "|---|---|---|---|---|---|"
echo "| per 1000 unmatched execs (fork + exec + exit each) | $f_u | $g_u | $n_u | $(ratio "$n_u" "$f_u") | $(ratio "$n_u" "$g_u") |"
echo "| per event, any kind (unmatched phase) | $f_e | $g_e | $n_e | $(ratio "$n_e" "$f_e") | $(ratio "$n_e" "$g_e") |"
echo "| per matched process, with its threads' events (the host's events taken out) | $f_m | $g_m | $n_m | $(ratio "$n_m" "$f_m") | $(ratio "$n_m" "$g_m") |"
echo "(events handled: floor ${ir[floor-unmatched-calls]} and ${ir[floor-matched-calls]}, floor-facts ${ir[floor-facts-unmatched-calls]} and ${ir[floor-facts-matched-calls]}, npu-tuned ${ir[npu-tmpfs-unmatched-calls]} and ${ir[npu-tmpfs-matched-calls]} in the two phases; the host's other processes add some to each)"
