#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the benches: start and stop the pinners they compare, one at a time, each
# told to place the processes whose command line has PATTERN.
#
#   pinner_start NAME PATTERN EXE_GLOB   (sets pinner_pid; NAME is one of)
#     floor             bench/floor-pinner: every thread on CPU 1
#     floor-facts       the floor that also reads and writes what npu-tuned must before a
#                       pin and splits the roles as npu-tuned's rule does: the main
#                       thread on CPU 0, the others on CPU 1 (floor-pinner --facts), its
#                       journal on the disk under $bench_tmp_disk
#     floor-facts+loop, floor-facts+worker, floor-facts+files (any of the three joined
#                       with +, e.g. floor-facts+loop+worker+files)   floor-facts with
#                       one each of the ways npu-tuned is built: an event loop's read
#                       (epoll_wait, recvmmsg), the mmap_lock reads on a worker thread, a
#                       record file per placed process (floor-pinner --loop, --worker,
#                       --record-files; bench/floor-pinner.c says what each does)
#                       (+tmpfs: its journal or records on tmpfs, under $bench_tmp_shm)
#     floor-shape       floor-facts+loop+worker+files, floor-shape-tmpfs the same +tmpfs
#     npu-ext4          npu-tuned, state dir on the disk under $bench_tmp_disk
#     npu-tmpfs         npu-tuned, state dir on /dev/shm
#     npu-ext4-b, npu-tmpfs-b   the same with $npu_b_bin
#     tuned-default     tuned's [scheduler] plugin: the process on CPU 1
#     tuned-fork        the same with perf_process_fork=true
#     untuned           nothing (pinner_pid stays empty)
#   pinner_stop
#
# Every pinner runs at nice -10 (the unit's), so all compete alike with the rest of the
# host. Needs: $build (the build dir), $bench_tmp (scratch, any fs), $bench_tmp_disk and
# $bench_tmp_shm (scratch dirs on a disk filesystem and on tmpfs); $npu_policy_extra is
# JSON spliced into the npu-tuned rule (e.g. its "threads"), $npu_options a JSON object
# put as the policy's "options" (e.g. its max_managed_processes), $npu_unattributed the
# rule's "unattributed" (default: placed through the allocator on node 0, each process on
# CPUs of its own while there are any); $pinner_wrap (e.g. valgrind
# and its options) goes before the floor's and npu-tuned's command; $npu_bin, when set, is
# the npu-tuned to run, and npu-ext4-b / npu-tmpfs-b run $npu_b_bin (another build, to
# compare two side by side in one run).
# $build is the caller's; $pinner_wrap and $npu_args are split into words on purpose; the
# options bench_args sets are read by the bench that sourced this.
# shellcheck disable=SC2154,SC2086,SC2034
pinner_pid=""
tuned_profile_dir=/etc/tuned

# Options every bench takes, each setting the variable of its name (--runs N: runs=N,
# the flag --raise-pid-max: raise_pid_max=1); what is left goes to the array bench_rest.
# Set the defaults before calling.
bench_args() {
        bench_rest=()
        while [ $# -gt 0 ]; do
                case $1 in
                --build | --runs | --rounds | --threads | --seconds | --spinners | --execs | --matched | --unmatched | \
                        --procs | --scan | --rates | --ticks | --burst)
                        [ $# -ge 2 ] || { echo "bench: $1 needs a value" >&2; exit 2; }
                        printf -v "${1#--}" '%s' "$2"
                        shift 2
                        ;;
                --raise-pid-max) raise_pid_max=1; shift ;;
                --*) echo "bench: unknown option $1 (see the script's header)" >&2; exit 2 ;;
                *) bench_rest+=("$1"); shift ;;
                esac
        done
}

# Scratch dirs on a disk filesystem (/var/tmp) and on tmpfs (/dev/shm), removed at exit
# with the pinner stopped.
bench_begin() {
        bench_tmp=$(mktemp -d /var/tmp/npu-bench.XXXXXX)
        bench_tmp_disk=$bench_tmp
        bench_tmp_shm=$(mktemp -d /dev/shm/npu-bench.XXXXXX)
        trap 'pinner_stop; rm -rf "$bench_tmp" "$bench_tmp_shm"' EXIT
}

fs_of() { df --output=fstype "$1" | tail -1; }

wait_for_line() { # FILE REGEX TIMEOUT_S
        local _
        for _ in $(seq $(($3 * 20))); do
                grep -qE "$2" "$1" 2>/dev/null && return 0
                sleep 0.05
        done
        echo "bench: no \"$2\" in $1 after $3 s:" >&2
        tail -20 "$1" >&2
        return 1
}

npu_policy() { # PATTERN EXE_GLOB RESTORE
        local threads=${npu_threads:-'{ "control": { "main_thread": true, "cpus": 1 }, "compute": { "cpus": 1 } }'} options=""
        local unattributed=${npu_unattributed:-'{ "action": "place", "nodes": "0" }'}
        [ -z "${npu_options:-}" ] || options="\"options\": $npu_options,"
        cat <<JSON
{
  "version": 1,$options
  "host": { "irq": { "housekeeping_cpus_per_node": 0, "steer_accelerator_irqs": false } },
  "processes": [{
    "name": "bench",
    "match": { "exe": "$2", "cmdline": "$1", "user": "root" },
    "accelerators": "none",
    "unattributed": $unattributed,
    "threads": $threads,
    "memory": { "migrate": false },
    "restore_on_stop": ${3:-true}
  }]
}
JSON
}

pinner_start() { # NAME PATTERN EXE_GLOB
        local name=$1 pattern=$2 exe=$3 state
        pinner_pid=""
        pinner_log=$bench_tmp/$name.log
        : >"$pinner_log"
        case $name in
        untuned) return 0 ;;
        floor | floor-facts | floor-facts+* | floor-shape | floor-shape-tmpfs)
                local args=("$exe" "$pattern" 1) shape=() part parts=$name floor_state=$bench_tmp_disk/floor-state
                case $name in
                floor-shape) parts=floor-facts+loop+worker+files ;;
                floor-shape-tmpfs) parts=floor-facts+loop+worker+files+tmpfs ;;
                esac
                if [ "$name" != floor ]; then
                        for part in $(tr + ' ' <<<"${parts#floor-facts}"); do
                                case $part in
                                loop) shape+=(--loop) ;;
                                worker) shape+=(--worker) ;;
                                files) shape+=(--record-files) ;;
                                tmpfs) floor_state=$bench_tmp_shm/floor-state ;;
                                *) echo "bench: no floor-facts part \"$part\" (loop, worker, files, tmpfs)" >&2; return 2 ;;
                                esac
                        done
                        rm -rf "$floor_state" && mkdir -m 0700 "$floor_state"
                        args=(--facts "$floor_state" "${shape[@]}" "$exe" "$pattern" "0,1")
                fi
                nice -n -10 ${pinner_wrap:-} "$build/bench/floor-pinner" "${args[@]}" 2>"$pinner_log" &
                pinner_pid=$!
                wait_for_line "$pinner_log" listening 10
                ;;
        npu-ext4 | npu-tmpfs | npu-ext4-b | npu-tmpfs-b)
                case $name in
                npu-ext4*) state=$bench_tmp_disk/state ;;
                *) state=$bench_tmp_shm/state ;;
                esac
                local bin=${npu_bin:-$build/daemon/npu-tuned}
                case $name in *-b) bin=$npu_b_bin ;; esac
                rm -rf "$state" "$bench_tmp/policies"
                mkdir -m 0700 "$state" && mkdir -m 0755 "$bench_tmp/policies"
                npu_policy "$pattern" "$exe" "${npu_restore:-true}" >"$bench_tmp/policies/bench.json"
                nice -n -10 ${pinner_wrap:-} "$bin" --policy-dir "$bench_tmp/policies" --state-dir "$state" \
                        ${npu_args:-} >"$pinner_log" 2>&1 &
                pinner_pid=$!
                wait_for_line "$pinner_log" "Running:" 60
                ;;
        tuned-default | tuned-fork)
                local profile=npu-tuned-bench-$name f
                # tuned records the profile it runs as the host's: put the host's back after.
                for f in active_profile profile_mode post_loaded_profile; do
                        [ -e "$tuned_profile_dir/$f" ] && cp -p "$tuned_profile_dir/$f" "$bench_tmp/tuned-saved-$f"
                done
                mkdir -p "$tuned_profile_dir/$profile"
                {
                        echo "[main]"
                        echo "summary=npu-tuned bench: one scheduler rule, nothing else"
                        echo "[scheduler]"
                        [ "$name" = tuned-fork ] && echo "perf_process_fork=true"
                        echo "group.infer=0:*:*:${tuned_affinity:-0x2}:${tuned_regex:-$pattern}"
                } >"$tuned_profile_dir/$profile/tuned.conf"
                nice -n -10 tuned --no-dbus --profile "$profile" --log="$pinner_log" --pid="$bench_tmp/tuned.pid" \
                        >>"$pinner_log" 2>&1 &
                pinner_pid=$!
                wait_for_line "$pinner_log" "static tuning from profile '$profile' applied" 60
                ;;
        *)
                echo "bench: unknown pinner $name" >&2
                return 2
                ;;
        esac
}

pinner_stop() {
        local f
        [ -n "$pinner_pid" ] || return 0
        kill "$pinner_pid" 2>/dev/null || true
        wait "$pinner_pid" 2>/dev/null || true
        pinner_pid=""
        # $BENCH_KEEP_LOGS: a directory that keeps each pinner's log (NAME.N.log).
        if [ -n "${BENCH_KEEP_LOGS:-}" ] && [ -e "$pinner_log" ]; then
                bench_kept=$((${bench_kept:-0} + 1))
                cp "$pinner_log" "$BENCH_KEEP_LOGS/${pinner_log##*/}.$bench_kept"
        fi
        if ls -d "$tuned_profile_dir"/npu-tuned-bench-* >/dev/null 2>&1; then
                rm -rf "$tuned_profile_dir"/npu-tuned-bench-*
                for f in "$bench_tmp"/tuned-saved-*; do
                        [ -e "$f" ] && cp -p "$f" "$tuned_profile_dir/${f##*/tuned-saved-}"
                done
        fi
}

# Seconds of CPU (user + system) pid has used, from /proc/PID/stat.
cpu_seconds() {
        awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}
