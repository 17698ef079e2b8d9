#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Build the policy fuzz target with clang (ASan + UBSan, its own build directory) and run it
# for SECONDS (default 60) over the seed corpus: the shipped policies, the test policies and
# fuzz/corpus/. Exits non-zero on any finding (crash, leak, UB, timeout, out of memory);
# the reproducer is left in $BUILD/fuzz-artifacts/. Prints libFuzzer's final stats
# (stat::number_of_executed_units, stat::average_exec_per_sec).
#   BUILD=dir    build directory (default: build-fuzz in the source tree)
set -eu

seconds=${1:-60}
case $seconds in
''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac
src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$src/build-fuzz}

# clang links libFuzzer and the sanitizers from compiler-rt, which Debian only recommends.
if ! printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' |
        clang -fsanitize=fuzzer,address,undefined -x c - -o /dev/null 2>/dev/null; then
        echo "$0: clang cannot link -fsanitize=fuzzer,address,undefined: install clang's compiler-rt" \
                "(Debian: apt-get install clang libclang-rt-dev)" >&2
        exit 1
fi
if [ ! -f "$build/build.ninja" ]; then
        CC=clang meson setup "$build" "$src" -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false \
                -Dtests=disabled -Dc_args=-fno-sanitize-recover=all >/dev/null
fi
ninja -C "$build" fuzz/fuzz-policy

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/seeds" "$build/fuzz-artifacts"
cp "$src"/policies/*.json "$src"/tests/policy/*.json "$src"/fuzz/corpus/* "$work/seeds/"

# halt_on_error: UBSan findings abort like ASan's; detect_leaks: a leak is a finding.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
"$build/fuzz/fuzz-policy" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -dict="$src/fuzz/policy.dict" -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/" \
        "$work/corpus" "$work/seeds"
