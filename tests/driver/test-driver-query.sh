#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# npu-tuned-driver-query against a stand-in NVML (stub-nvml.c): the lines it prints (the
# pid 0 dropped, the eight-digit domain written as sysfs does, the library's own stdout
# kept out), and the libraries it refuses to load: a file or a directory above it that
# someone other than root owns or may write, a link into such a directory.
set -euo pipefail
query=${1:?the npu-tuned-driver-query binary}
stub=${2:?the stub NVML}
stub_dcmi=${3:?the stub DCMI}
stub_dcmi_v1=${4:?the stub DCMI without dcmi_get_device_pcie_info_v2}
stub_dir=$(dirname "$stub")/driver
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root: the library must be root's to be loaded"; exit 77; }
# The query walks every directory above the library: where the build tree lies below one
# that others may write (a checkout under /tmp), the stubs go into a directory of root's
# under /run instead; only when that is not root's alone either is there nowhere to test.
# untrusted_above DIR: the first directory above DIR that is not root's alone, or nothing.
untrusted_above() {
        local d=$1 owner mode
        while [ "$d" != / ]; do
                d=$(dirname "$d")
                read -r owner mode < <(stat -c '%u %a' "$d")
                if [ "$owner" != 0 ] || (( 8#$mode & 8#022 )); then
                        echo "$d (uid $owner, mode $mode)"
                        return
                fi
        done
}
mkdir -p "$stub_dir"
lib=$(realpath "$(mktemp -d "$stub_dir/lib.XXXXXX")")
other=$(mktemp -d /tmp/npu-tuned-untrusted.XXXXXX)
trap 'rm -rf "$lib" "$other"' EXIT
above=$(untrusted_above "$lib")
if [ -n "$above" ]; then
        rm -rf "$lib"
        lib=$(realpath "$(mktemp -d /run/npu-tuned-driver-test.XXXXXX)")
        above_run=$(untrusted_above "$lib")
        if [ -n "$above_run" ]; then
                echo "SKIP: $above is above the build tree and $above_run above /run's: no library below either may be loaded"
                exit 77
        fi
        echo "the build tree lies below $above, which others may write: the stubs are loaded from $lib"
fi
chmod 755 "$lib"
install -m 644 "$stub" "$lib/libnvidia-ml.so.1"

run() { # expected exit status, then the query's arguments
        local want=$1
        shift
        set +e
        "$query" "$@" >"$lib.out" 2>"$lib.err"
        rc=$?
        set -e
        [ "$rc" -eq "$want" ] || fail "$*: exit $rc, want $want; stderr: $(cat "$lib.err")"
}
trap 'rm -rf "$lib" "$lib.out" "$lib.err" "$other"' EXIT

run 0 --library-dir "$lib"
printf 'via nvml\n4242 0000:10:00.0\n5151 0000:1a:00.0\n' | cmp -s - "$lib.out" || fail "output: $(cat "$lib.out")"
grep -q 'stub NVML: hello on stdout' "$lib.err" || fail "the library's own stdout went nowhere: $(cat "$lib.err")"
echo "ok: the stub's processes, as sysfs addresses"

printf '0 31337\n1 31338\n1 0\n0 4194305\n' >"$lib/stub-nvml-pids"
run 0 --library-dir "$lib"
printf 'via nvml\n31337 0000:10:00.0\n31338 0000:1a:00.0\n' | cmp -s - "$lib.out" || fail "output: $(cat "$lib.out")"
rm -f "$lib/stub-nvml-pids"
echo "ok: pids 0 and above the kernel's limit dropped"

# Refused: a library others may write, a directory others may write, a file not root's.
chmod 664 "$lib/libnvidia-ml.so.1"
run 2 --library-dir "$lib"
[ ! -s "$lib.out" ] || fail "printed lines from a group-writable library: $(cat "$lib.out")"
grep -q 'not loading it' "$lib.err" || fail "no reason given: $(cat "$lib.err")"
chmod 644 "$lib/libnvidia-ml.so.1"
chmod 775 "$lib"
run 2 --library-dir "$lib"
[ ! -s "$lib.out" ] || fail "printed lines from a group-writable directory"
chmod 755 "$lib"
chown 65534 "$lib/libnvidia-ml.so.1"
run 2 --library-dir "$lib"
chown 0 "$lib/libnvidia-ml.so.1"
echo "ok: a library or directory someone else could write is not loaded"

# A link to a library in a directory others may write (as /tmp).
chmod 1777 "$other"
mv "$lib/libnvidia-ml.so.1" "$other/libnvidia-ml.so.1"
ln -s "$other/libnvidia-ml.so.1" "$lib/libnvidia-ml.so.1"
run 2 --library-dir "$lib"
grep -q 'not loading it' "$lib.err" || fail "a link into /tmp was followed: $(cat "$lib.err")"
rm "$lib/libnvidia-ml.so.1"
mv "$other/libnvidia-ml.so.1" "$lib/libnvidia-ml.so.1.550.54"
ln -s libnvidia-ml.so.1.550.54 "$lib/libnvidia-ml.so.1"
run 0 --library-dir "$lib"
grep -q '^4242 0000:10:00.0$' "$lib.out" || fail "a link beside it (as the driver installs it) was refused"
echo "ok: a link into an untrusted directory is refused, one beside it is followed"

# No library at all; and a relative directory is not taken.
run 2 --library-dir "$other"
grep -q 'no driver library answered' "$lib.err" || fail "$(cat "$lib.err")"
run 1 --library-dir relative/dir
echo "ok: no library, exit 2"

# DCMI: the chips' addresses with their domain, the pid -1 and the MCU's failure skipped,
# 32 of the 33 processes; NVML's lines first when both are there.
install -m 644 "$stub_dcmi" "$lib/libdcmi.so"
run 0 --library-dir "$lib"
{
        printf 'via nvml\n4242 0000:10:00.0\n5151 0000:1a:00.0\nvia dcmi\n120731 0000:c1:00.0\n120732 0000:c1:00.0\n'
        for i in $(seq 0 31); do echo "$((200000 + i)) 0001:41:00.0"; done
} | cmp -s - "$lib.out" || fail "NVML and DCMI: $(cat "$lib.out")"
rm "$lib/libnvidia-ml.so.1" "$lib/libnvidia-ml.so.1.550.54"
install -m 644 "$stub_dcmi_v1" "$lib/libdcmi.so"
run 0 --library-dir "$lib"
grep -q '^200000 0000:41:00.0$' "$lib.out" || fail "an older DCMI (no domain): $(cat "$lib.out")"
[ "$(head -1 "$lib.out")" = "via dcmi" ] || fail "DCMI alone: $(head -1 "$lib.out")"
install -m 644 "$stub" "$lib/libnvidia-ml.so.1"
rm "$lib/libdcmi.so"
echo "ok: DCMI: each chip's PCI address (domain 0000 taken without the _v2 call), at most 32 processes a chip"

# A library that hangs is the daemon's to kill; here: it does not answer within 2 s.
touch "$lib/stub-nvml-hang"
set +e
timeout 2 "$query" --library-dir "$lib" >"$lib.out" 2>/dev/null
rc=$?
set -e
rm -f "$lib/stub-nvml-hang"
[ "$rc" -eq 124 ] || fail "the hanging stub: exit $rc, want 124 (timeout)"
[ ! -s "$lib.out" ] || fail "the hanging stub printed lines"
echo "ok: the hang switch works (the daemon's deadline is tested with the daemon)"
