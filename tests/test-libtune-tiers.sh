#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The tiers of libtune hold (libtune/tiers.ini), and a wrong-way include fails: both the
# check of the sources (tools/libtune-tiers.py check) and the compiler, which sees only a
# tier's allowed headers (the include farm the build compiles each tier with).
# Arguments: the C compiler command.
set -euo pipefail
src=${NPU_SOURCE_ROOT:?}
farm=${NPU_BUILD_ROOT:?}/libtune/tier-include
tool=$src/tools/libtune-tiers.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cc=("$@")
[ ${#cc[@]} -gt 0 ] || fail "no compiler given"
syntax() { # TIER FILE
        "${cc[@]}" -fsyntax-only -D_GNU_SOURCE -std=gnu11 -I"$farm/$1" -I"$src/libtune/$1" "$2"
}

# The tree as it is passes.
python3 "$tool" check "$src" || fail "the tree itself violates its tiers"

# A copy with a planted wrong-way include (basic includes a policy header) fails, naming
# the file, line and tiers.
plant() { # NAME: a fresh copy of libtune/ and include/ in $tmp/NAME
        mkdir -p "$tmp/$1"
        cp -r "$src/libtune" "$src/include" "$tmp/$1/"
}
plant src-up
sed -i '0,/^#include "npu-tuned\//s//#include "npu-tuned\/policy.h"\n&/' "$tmp/src-up/libtune/basic/parse.c"
if python3 "$tool" check "$tmp/src-up" 2>"$tmp/err"; then fail "check passed a basic source including policy.h"; fi
grep -q '^libtune/basic/parse.c:[0-9]*: basic includes npu-tuned/policy.h of tier policy' "$tmp/err" ||
        fail "check did not name the wrong-way include: $(cat "$tmp/err")"
echo "ok: check refuses $(cat "$tmp/err")"

# The same in a public header (cpuset.h is basic).
plant hdr-up
sed -i 's|#include "npu-tuned/macro.h"|&\n#include "npu-tuned/plan.h"|' "$tmp/hdr-up/include/npu-tuned/cpuset.h"
if python3 "$tool" check "$tmp/hdr-up" 2>"$tmp/err"; then fail "check passed cpuset.h including plan.h"; fi
grep -q 'include/npu-tuned/cpuset.h:[0-9]*: basic includes npu-tuned/plan.h of tier placement' "$tmp/err" ||
        fail "check did not name the header: $(cat "$tmp/err")"
echo "ok: check refuses $(cat "$tmp/err")"

# An external library the tier does not list: included, or linked.
plant lib-include
sed -i '0,/^#include </s//#include <numa.h>\n&/' "$tmp/lib-include/libtune/basic/parse.c"
if python3 "$tool" check "$tmp/lib-include" 2>"$tmp/err"; then fail "check passed a basic source including numa.h"; fi
grep -q '^libtune/basic/parse.c:[0-9]*: basic includes <numa.h> of libnuma' "$tmp/err" ||
        fail "check did not name the library include: $(cat "$tmp/err")"
echo "ok: check refuses $(cat "$tmp/err")"
plant lib-link
sed -i 's|dependencies : \[cpupower_dep\]|dependencies : [cpupower_dep, jsonc_dep]|' "$tmp/lib-link/libtune/knobs/meson.build"
if python3 "$tool" check "$tmp/lib-link" 2>"$tmp/err"; then fail "check passed knobs linking json-c"; fi
grep -q '^libtune/knobs/meson.build: links jsonc_dep' "$tmp/err" || fail "check did not name the link: $(cat "$tmp/err")"
echo "ok: check refuses $(cat "$tmp/err")"

# A header in no tier, a stray source, a cycle: the table is refused.
plant loose
touch "$tmp/loose/include/npu-tuned/orphan.h"
if python3 "$tool" include-farm "$tmp/loose" "$tmp/farm" 2>"$tmp/err"; then fail "a header in no tier was accepted"; fi
grep -q 'orphan.h is in no tier' "$tmp/err" || fail "orphan header: $(cat "$tmp/err")"
echo "ok: include-farm refuses $(cat "$tmp/err")"
plant cycle
sed -i '/^\[basic\]/,/^uses/s/^uses =.*/uses = knobs/' "$tmp/cycle/libtune/tiers.ini"
if python3 "$tool" check "$tmp/cycle" 2>"$tmp/err"; then fail "a cycle in the table was accepted"; fi
echo "ok: check refuses $(cat "$tmp/err")"

# The compiler: the real source compiles with its tier's headers; the planted one does not,
# because policy.h is not on a basic source's include path at all.
syntax basic "$src/libtune/basic/parse.c" || fail "libtune/basic/parse.c does not compile against basic's headers"
if syntax basic "$tmp/src-up/libtune/basic/parse.c" 2>"$tmp/err"; then
        fail "a basic source including policy.h compiled"
fi
grep -q 'npu-tuned/policy.h' "$tmp/err" || fail "compile failed for another reason: $(cat "$tmp/err")"
echo "ok: the compiler refuses it: $(grep -m1 'policy.h' "$tmp/err")"
# And a higher tier may include a lower tier's header.
printf '#include "npu-tuned/policy.h"\n#include "npu-tuned/plan.h"\n' >"$tmp/up.c"
syntax placement "$tmp/up.c" || fail "placement may include policy.h and plan.h"
echo "ok: placement compiles with policy.h and plan.h"
