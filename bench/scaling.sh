#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# How npu-tuned's costs grow with the work, beside the floor pinner (bench/pinners.sh), as
# root:
#   bench/scaling.sh [--build DIR] [--procs LIST] [--ticks K] [--scan LIST]
#                    [--rates LIST] [--seconds S] [--burst LIST] [--raise-pid-max] [PART...]
# PART is managed, scan, rate or burst (default: the first three), each printing one table:
#   managed  PROCS processes (LIST, default "1 64 512 4096") of 8 threads each, and one row
#            of 64 processes of 64 threads, all matching one rule (bench/scale-managed):
#            time until every thread is on one CPU, the pinner's CPU for that, its CPU per
#            reconcile tick with all of them managed (K ticks, default 3, of the period the
#            policy has, printed), its RSS then. The floor has no tick.
#   scan     npu-tuned started with LIST (default "10000 100000") idle processes already
#            running (bench/idle-procs): time from its exec to the end of its start-up scan
#            and to READY ("Running:"), its CPU and RSS then; the first row has only the
#            host's own processes. The floor scans nothing at start.
#   rate     fork + exit at the rates in LIST (processes/s, default "1000 2000 5000 10000 0
#            0:exec"; 0 is as fast as the generator can, ":exec" makes each child exec
#            /bin/true, 3 events instead of 2), S s each (default 5), 1 in 100 of them
#            matched (bench/placement-latency's child): the rate reached, overruns of the
#            pinner's event socket (ENOBUFS), matched processes missed, the pinner's CPU.
#   burst    PROCS processes (LIST, default "1024 4096") of 8 threads each started at once,
#            as in managed, beside floor-facts (and npu-tmpfs-b when $npu_b_bin is set): the
#            time until every thread is placed and the pinner's CPU for it, against
#            floor-facts' in the same run, and how each pinner's CPU grows from the first
#            row to the last (linear: the ratio of the process counts). Times and CPU are
#            compared only where both pinners placed every thread (one that left threads
#            unplaced did less work); each size ends with a line saying who placed all.
# A row that needs more pids than kernel.pid_max leaves (or more memory than half of what
# is available) is made smaller, and says so; with --raise-pid-max, pid_max is raised for
# the run instead and put back at exit. Every process the bench starts is gone when it
# exits, Ctrl-C included. The npu-tuned state dir is on tmpfs (printed).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build procs="1 64 512 4096" burst="1024 4096" ticks=3 scan="10000 100000" rates="1000 2000 5000 10000 0 0:exec" seconds=5
raise_pid_max=""
# shellcheck source=bench/pinners.sh
. "$here/pinners.sh"
bench_args "$@"
bench_begin
parts=("${bench_rest[@]}")
[ ${#parts[@]} -gt 0 ] || parts=(managed scan rate)

idle_pid="" pid_max_saved="" pid_max_set=""
cleanup() {
        if [ -n "$idle_pid" ]; then # it may have died of the same Ctrl-C
                kill "$idle_pid" 2>/dev/null || true
                wait "$idle_pid" 2>/dev/null || true
        fi
        pinner_stop
        # Only if it is still ours: a test that changed it meanwhile puts back its own (a
        # run that put back a test's passing 4096 left it for the next run to keep).
        if [ -n "$pid_max_saved" ] && [ "$(cat /proc/sys/kernel/pid_max)" = "$pid_max_set" ]; then
                echo "$pid_max_saved" >/proc/sys/kernel/pid_max || true
        fi
        rm -rf "$bench_tmp" "$bench_tmp_shm"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "-" }'; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
overruns() { # PINNER: lines its log has for lost events so far
        case $1 in
        floor | floor-facts | floor-facts+* | floor-shape*) grep -c overrun "$pinner_log" || true ;;
        *) grep -c "events were lost" "$pinner_log" || true ;;
        esac
}
# PINNER: processes its resyncs after overruns placed so far, where its log says (the floor's).
resync_placed() {
        case $1 in
        floor | floor-facts | floor-facts+* | floor-shape*) sed -n 's/^floor-pinner: resync [0-9]*: \([0-9]*\) processes placed.*/\1/p' "$pinner_log" | awk '{ n += $1 } END { print n + 0 }' ;;
        *) echo "n/a" ;;
        esac
}
# Tasks (threads) on the host now: the total of /proc/loadavg's "running/total".
tasks_now() { awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg; }

# How many of WANT units of PER tasks and KIB memory each fit now, in $fit_n (not printed:
# a subshell could not note the pid_max to put back); raises pid_max for them with
# --raise-pid-max. Says why if fewer, or that pid_max was raised.
fit() { # WANT PER KIB
        local want=$1 per=$2 kib=$3 max free threads mem n
        max=$(cat /proc/sys/kernel/pid_max)
        threads=$(cat /proc/sys/kernel/threads-max)
        free=$((max - $(tasks_now) - 1000))
        if [ $((want * per)) -gt "$free" ] && [ -n "$raise_pid_max" ]; then
                local need=$(($(tasks_now) + want * per + 2000))
                [ -n "$pid_max_saved" ] || pid_max_saved=$max
                [ "$need" -le 4194304 ] || need=4194304
                echo "$need" >/proc/sys/kernel/pid_max
                pid_max_set=$need
                echo "(kernel.pid_max raised from $pid_max_saved to $need for this row, put back at exit)"
                free=$((need - $(tasks_now) - 1000))
        fi
        [ $((threads - $(tasks_now) - 1000)) -ge "$free" ] || free=$((threads - $(tasks_now) - 1000))
        mem=$(($(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo) / 2))
        n=$want
        [ $((n * per)) -le "$free" ] || n=$((free / per))
        [ $((n * kib)) -le "$mem" ] || n=$((mem / kib))
        [ "$n" -ge "$want" ] || echo "(reduced from $want to $n: kernel.pid_max $(cat /proc/sys/kernel/pid_max) and threads-max $threads leave $free tasks, half the available memory is $mem KiB)"
        fit_n=$n
}

echo "host: $(nproc) CPUs, $(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), kernel.pid_max $(cat /proc/sys/kernel/pid_max), $(tasks_now) tasks, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "npu-tuned state dir: $bench_tmp_shm/state ($(fs_of "$bench_tmp_shm"))"
# With the rule's default (placed through the allocator), each process gets CPUs of its
# own, and on a small host all but the first few are refused: here every process shares
# all CPUs, as the floor's do.
shared_cpus="{ \"action\": \"place\", \"cpus\": \"0-$(($(nproc) - 1))\" }"

part_managed() {
        local rows=() row p n t out tick_ms lost0 floor_ms="" floor_cpu="" placed cpu
        mkdir -p "$bench_tmp/pp"
        npu_options='{ "max_managed_processes": 8192 }'
        npu_unattributed=$shared_cpus
        npu_policy "scale-managed --child" "*/scale-managed" true >"$bench_tmp/pp/bench.json"
        tick_ms=$("$build/daemon/npu-tuned" --policy-dir "$bench_tmp/pp" --print-policy |
                python3 -c 'import json, sys; print(json.load(sys.stdin)["options"]["reconcile_interval_ms"])')
        for n in $procs; do rows+=("$n 8"); done
        rows+=("64 64")
        echo
        echo "managed processes: every thread of PROCS processes started at once placed on one CPU; then"
        echo "npu-tuned's CPU per reconcile tick (every $tick_ms ms, the policy's reconcile_interval_ms), over $ticks ticks"
        echo "(policy options: $npu_options, the default 4096 being the top row itself; \"unattributed\": $shared_cpus,"
        echo "every process's control thread on its first CPU, the others on its second, as the floor puts all on CPU 1;"
        echo "CPU per tick: the window's CPU less the host's events at the rate of a tick-long window before the processes)"
        echo "| processes x threads | pinner | all placed ms | threads never placed | CPU to place ms, stat / schedstat | CPU per tick ms | same, host's events in | RSS KiB | overruns | placed ms / floor | CPU / floor |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|"
        for row in "${rows[@]}"; do
                read -r n t <<<"$row"
                fit "$n" "$t" $((t * 40))
                n=$fit_n
                for p in floor npu-tmpfs; do
                        pinner_start "$p" "scale-managed --child" "*/scale-managed"
                        sleep 1
                        lost0=$(overruns "$p")
                        if [ "$p" = floor ]; then
                                out=$("$build/bench/scale-managed" "$pinner_pid" "$n" "$t" 0 0)
                        else
                                out=$("$build/bench/scale-managed" "$pinner_pid" "$n" "$t" "$tick_ms" "$ticks")
                        fi
                        placed=$(kv placed_ms "$out") cpu=$(kv place_run_ms "$out")
                        [ "$(kv never "$out")" = 0 ] || placed="never all (gave up after $(kv placed_ms "$out") ms)"
                        if [ "$p" = floor ]; then
                                floor_ms=$placed floor_cpu=$cpu
                                tick="n/a" tick_all="n/a"
                        else
                                tick=$(awk -v u="$(kv tick_cpu_us "$out")" 'BEGIN { printf "%.2f", u / 1000 }')
                                tick_all=$(awk -v u="$(kv window_cpu_us "$out")" 'BEGIN { printf "%.2f", u / 1000 }')
                        fi
                        echo "| $(kv procs "$out") x $t | $p | $placed | $(kv never "$out")/$(kv threads "$out") | $(kv place_cpu_ms "$out") / $cpu | $tick | $tick_all | $(kv rss_kib "$out") | $(($(overruns "$p") - lost0)) | $(ratio "$placed" "$floor_ms") | $(ratio "$cpu" "$floor_cpu") |"
                        [ -z "$(kv fork_errno "$out")" ] || echo "(fork failed at $(kv procs "$out") processes: errno $(kv fork_errno "$out"))"
                        pinner_stop
                done
        done
        npu_options="" npu_unattributed=""
}

part_scan() {
        local n got line t_exec t_scan t_ready base_cpu="" base_rss="" cpu rss
        echo
        echo "start-up scan: npu-tuned started beside N idle processes (and the host's own); from its exec to"
        echo "the end of the scan (\"Watching processes\") and to READY (\"Running:\"), its CPU and RSS then."
        echo "The floor scans nothing at start (it sees only processes that exec later): n/a."
        echo "| idle processes | processes in /proc | exec -> scan done ms | exec -> READY ms | CPU s | RSS KiB | CPU - host-only row, s | RSS - host-only row, KiB |"
        echo "|---|---|---|---|---|---|---|---|"
        for n in 0 $scan; do
                got=0
                if [ "$n" -gt 0 ]; then
                        fit "$n" 1 25
                        n=$fit_n
                        "$build/bench/idle-procs" "$n" >"$bench_tmp/idle.out" &
                        idle_pid=$!
                        wait_for_line "$bench_tmp/idle.out" "^ready" 600
                        got=$(sed -n 's/^ready \([0-9]*\).*/\1/p' "$bench_tmp/idle.out")
                        grep -q "(" "$bench_tmp/idle.out" && echo "($(cat "$bench_tmp/idle.out"))"
                        sleep 2
                fi
                pinner_wrap="$here/stamped.sh" pinner_start npu-tmpfs "no-such-process-npu-bench" "*/no-such-process-npu-bench"
                cpu=$(cpu_seconds "$pinner_pid") rss=$(rss_kib "$pinner_pid")
                t_exec=$(awk '$2 == "exec" { print $1; exit }' "$pinner_log")
                t_scan=$(awk '/Watching processes/ { print $1; exit }' "$pinner_log")
                t_ready=$(awk '/Running:/ { print $1; exit }' "$pinner_log")
                line=(/proc/[0-9]*)
                if [ -z "$base_cpu" ]; then base_cpu=$cpu base_rss=$rss; fi
                awk -v n="$got" -v l="${#line[@]}" -v e="$t_exec" -v s="$t_scan" -v r="$t_ready" -v c="$cpu" -v m="$rss" \
                        -v bc="$base_cpu" -v bm="$base_rss" \
                        'BEGIN { printf "| %d | %d | %.0f | %.0f | %.2f | %d | %.2f | %d |\n", n, l, (s - e) * 1000, (r - e) * 1000, c, m, c - bc, m - bm }'
                pinner_stop
                if [ -n "$idle_pid" ]; then
                        kill "$idle_pid"
                        wait "$idle_pid" || true
                        idle_pid=""
                fi
        done
}

part_rate() {
        local r rate mode per label count p out lost0 cpu0 cpu1 secs reached missed lost
        declare -A best
        echo
        echo "events per second: fork + exit (\":exec\": fork + exec /bin/true + exit) at a target rate for ${seconds} s each,"
        echo "1 in 100 processes matched (npu-tuned: \"unattributed\": $shared_cpus); each pinner started afresh for each rate"
        echo "| target processes/s | pinner | reached processes/s | events/s | overruns | matched missed | pinner CPU % of one CPU |"
        echo "|---|---|---|---|---|---|---|"
        npu_unattributed=$shared_cpus
        for r in $rates; do
                rate=${r%%:*} mode=exit per=2 label=""
                [ "$r" = "${r%:exec}" ] || mode=exec per=3 label=", exec"
                if [ "$rate" -gt 0 ]; then count=$((rate * seconds)); elif [ $mode = exec ]; then count=$((2500 * seconds)); else count=$((12000 * seconds)); fi
                for p in floor npu-tmpfs; do
                        pinner_start "$p" "placement-latency --child" "*/placement-latency"
                        sleep 1
                        lost0=$(overruns "$p") cpu0=$(cpu_seconds "$pinner_pid")
                        out=$("$build/bench/fork-storm" $((count - count / 100)) $((count / 100)) "$build/bench/placement-latency" "$rate" $mode)
                        sleep 1
                        cpu1=$(cpu_seconds "$pinner_pid")
                        lost=$(($(overruns "$p") - lost0))
                        secs=$(sed -n 's/.* in \([0-9.]*\) s;.*/\1/p' <<<"$out")
                        reached=$(sed -n 's/.*; \([0-9]*\) processes\/s.*/\1/p' <<<"$out")
                        missed=$(sed -n 's/.*missed \([0-9]*\).*/\1/p' <<<"$out")
                        echo "| ${rate/#0/flat out}${label} | $p | $reached | $((reached * per)) | $lost | $missed/$((count / 100)) | $(awk -v a="$cpu0" -v b="$cpu1" -v s="$secs" 'BEGIN { printf "%.0f", (b - a) / s * 100 }') |"
                        if [ "$lost" -eq 0 ] && [ "$missed" -eq 0 ] && [ $((reached * per)) -gt "${best[$p]:-0}" ]; then
                                best[$p]=$((reached * per))
                        fi
                        pinner_stop
                done
        done
        npu_unattributed=""
        for p in floor npu-tmpfs; do
                echo "$p: highest event rate with no overrun and no matched process missed: ${best[$p]:-none} events/s"
        done
}

part_burst() {
        local n p out placed cpu ff_ms ff_cpu pinners=(floor-facts npu-tmpfs) first_n="" line lost resync0 who
        declare -A first_cpu last_cpu
        [ -z "${npu_b_bin:-}" ] || pinners+=(npu-tmpfs-b)
        mkdir -p "$bench_tmp/pp"
        # $burst_npu_options: other policy options for npu-tuned (e.g. its receive buffer).
        npu_options=${burst_npu_options:-'{ "max_managed_processes": 8192 }'}
        npu_unattributed=$shared_cpus
        echo
        echo "a burst: PROCS processes of 8 threads started at once, every thread placed (policy options: $npu_options,"
        echo "\"unattributed\": $shared_cpus; the control thread on its first CPU, the others on its second, as floor-facts splits them)"
        echo "(overruns: of the pinner's event socket; floor-facts' resyncs after them walk /proc once each: the processes they placed in brackets)"
        echo "| processes x threads | pinner | all placed ms | threads never placed | CPU to place ms, stat / schedstat | RSS KiB | overruns | placed ms / floor-facts | CPU / floor-facts |"
        echo "|---|---|---|---|---|---|---|---|---|"
        for n in $burst; do
                fit "$n" 8 320
                n=$fit_n
                [ -n "$first_n" ] || first_n=$n
                ff_ms="" ff_cpu="" who=""
                for p in "${pinners[@]}"; do
                        pinner_start "$p" "scale-managed --child" "*/scale-managed"
                        sleep 1
                        lost0=$(overruns "$p") resync0=$(resync_placed "$p")
                        out=$("$build/bench/scale-managed" "$pinner_pid" "$n" 8 0 0)
                        placed=$(kv placed_ms "$out") cpu=$(kv place_run_ms "$out")
                        lost=$(($(overruns "$p") - lost0))
                        [ "$(resync_placed "$p")" = n/a ] || lost="$lost ($(($(resync_placed "$p") - resync0)))"
                        # Left threads unplaced: its time and CPU are no measure of the job.
                        if [ "$(kv never "$out")" != 0 ]; then
                                placed="never all (gave up after $(kv placed_ms "$out") ms)" cpu="-"
                                who+=", $p no ($(kv never "$out") of $(kv threads "$out") threads never)"
                        else
                                who+=", $p yes"
                        fi
                        if [ "$p" = floor-facts ]; then ff_ms=$placed ff_cpu=$cpu; fi
                        [ -n "${first_cpu[$p]:-}" ] || first_cpu[$p]=$cpu
                        last_cpu[$p]=$cpu
                        echo "| $(kv procs "$out") x 8 | $p | $placed | $(kv never "$out")/$(kv threads "$out") | $(kv place_cpu_ms "$out") / $(kv place_run_ms "$out") | $(kv rss_kib "$out") | $lost | $(ratio "$placed" "$ff_ms") | $(ratio "$cpu" "$ff_cpu") |"
                        pinner_stop
                done
                echo "$n x 8: all placed:${who#,}"
        done
        for p in "${pinners[@]}"; do
                line="$p: CPU to place grew $(ratio "${last_cpu[$p]}" "${first_cpu[$p]}")x from $first_n to $n processes"
                line+=" (linear: $(ratio "$n" "$first_n")x)"
                [ "${first_cpu[$p]}" != - ] && [ "${last_cpu[$p]}" != - ] || line+=" (-: a row left threads unplaced)"
                echo "$line"
        done
        npu_options="" npu_unattributed=""
}

for part in "${parts[@]}"; do
        case $part in
        managed | scan | rate | burst) "part_$part" ;;
        *) echo "bench: unknown part $part (managed, scan, rate or burst)" >&2; exit 2 ;;
        esac
done
