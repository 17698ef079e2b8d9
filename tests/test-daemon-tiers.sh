#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The daemon's folders hold their order (daemon/tiers.ini), and a wrong-way include fails:
# both the check of the sources (tools/daemon-tiers.py check) and the compiler, which sees
# only a folder's own and its lower folders' headers (daemon/meson.build).
# Arguments: the C compiler command.
set -euo pipefail
src=${NPU_SOURCE_ROOT:?}
build=${NPU_BUILD_ROOT:?}
tool=$src/tools/daemon-tiers.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cc=("$@")
[ ${#cc[@]} -gt 0 ] || fail "no compiler given"
syntax() { # FOLDER FILE: compile FILE with FOLDER's include path, as the build does
        local inc=()
        while read -r d; do inc+=(-I"$src/daemon/$d"); done < <(python3 "$tool" uses "$src" "$1")
        "${cc[@]}" -fsyntax-only -D_GNU_SOURCE -std=gnu11 "${inc[@]}" -I"$src/include" -I"$build" \
                $(pkg-config --cflags json-c libsystemd) "$2"
}
plant() { # NAME: a fresh copy of daemon/ and tools/ in $tmp/NAME
        mkdir -p "$tmp/$1"
        cp -r "$src/daemon" "$src/tools" "$tmp/$1/"
}

# The tree as it is passes, and every folder is in the table.
python3 "$tool" check "$src" || fail "the tree itself violates its folders' order"
for d in "$src"/daemon/*/; do
        python3 "$tool" uses "$src" "$(basename "$d")" >/dev/null || fail "daemon/$(basename "$d") is not in the table"
done
echo "ok: the tree holds its order"

# A planted wrong-way include: knobs (below placement) includes placement.h.
plant up
sed -i '0,/^#include "/s//#include "placement.h"\n&/' "$tmp/up/daemon/knobs/knobs.c"
if python3 "$tool" check "$tmp/up" 2>"$tmp/err"; then fail "check passed knobs including placement.h"; fi
grep -q '^daemon/knobs/knobs.c:[0-9]*: knobs includes placement.h of folder placement' "$tmp/err" ||
        fail "check did not name the wrong-way include: $(cat "$tmp/err")"
echo "ok: check refuses $(head -1 "$tmp/err")"

# The circle the folders replaced: events calling the bus.
plant events-up
sed -i '0,/^#include "/s//#include "bus-server.h"\n&/' "$tmp/events-up/daemon/events/events.c"
if python3 "$tool" check "$tmp/events-up" 2>"$tmp/err"; then fail "check passed events including bus-server.h"; fi
grep -q 'events includes bus-server.h of folder bus' "$tmp/err" || fail "events -> bus: $(cat "$tmp/err")"
echo "ok: check refuses $(head -1 "$tmp/err")"

# The client may use common/ only.
plant client
sed -i '0,/^#include "/s//#include "manager.h"\n&/' "$tmp/client/daemon/common/bus-client.c"
mkdir -p "$tmp/client/tunectl" && cp "$src/tunectl/npu-tunectl.c" "$tmp/client/tunectl/"
sed -i '0,/^#include "/s//#include "watcher.h"\n&/' "$tmp/client/tunectl/npu-tunectl.c"
if python3 "$tool" check "$tmp/client" 2>"$tmp/err"; then fail "check passed common and the client including the server"; fi
grep -q 'daemon/common/bus-client.c:[0-9]*: common includes manager.h of folder core' "$tmp/err" &&
        grep -q 'tunectl/npu-tunectl.c:[0-9]*: npu-tunectl includes watcher.h of folder watcher' "$tmp/err" ||
        fail "client: $(cat "$tmp/err")"
echo "ok: check refuses the client's: $(tail -1 "$tmp/err")"

# Only the manager's files name the Manager.
plant manager
sed -i '0,/^#include "/s//struct Manager;\ntypedef struct Manager Manager;\nint placement_peek(Manager *m);\n&/' \
        "$tmp/manager/daemon/placement/placement.c"
if python3 "$tool" check "$tmp/manager" 2>"$tmp/err"; then fail "check passed placement naming the Manager"; fi
grep -q 'daemon/placement/placement.c:[0-9]*: names the Manager' "$tmp/err" || fail "Manager: $(cat "$tmp/err")"
echo "ok: check refuses $(head -1 "$tmp/err")"

# A folder missing from the table, a header in two folders, a cycle.
plant loose
mkdir "$tmp/loose/daemon/extra" && touch "$tmp/loose/daemon/extra/x.c"
if python3 "$tool" check "$tmp/loose" 2>"$tmp/err"; then fail "a folder missing from the table was accepted"; fi
grep -q 'daemon/extra/ is not a folder of daemon/tiers.ini' "$tmp/err" || fail "loose: $(cat "$tmp/err")"
echo "ok: check refuses $(cat "$tmp/err")"
plant twice
cp "$tmp/twice/daemon/common/log.h" "$tmp/twice/daemon/knobs/log.h"
if python3 "$tool" check "$tmp/twice" 2>"$tmp/err"; then fail "a header in two folders was accepted"; fi
grep -q 'log.h: a header of that name is in' "$tmp/err" || fail "twice: $(cat "$tmp/err")"
echo "ok: check refuses $(head -1 "$tmp/err")"
plant cycle
sed -i '/^\[common\]/,/^uses/s/^uses =.*/uses = core/' "$tmp/cycle/daemon/tiers.ini"
if python3 "$tool" check "$tmp/cycle" 2>"$tmp/err"; then fail "a cycle in the table was accepted"; fi
echo "ok: check refuses $(cat "$tmp/err")"

# The compiler: the real source compiles with its folder's include path; the planted one
# does not, because placement/ is not on knobs' include path at all.
syntax knobs "$src/daemon/knobs/knobs.c" || fail "daemon/knobs/knobs.c does not compile with knobs' include path"
if syntax knobs "$tmp/up/daemon/knobs/knobs.c" 2>"$tmp/err"; then fail "knobs including placement.h compiled"; fi
grep -q 'placement.h' "$tmp/err" || fail "compile failed for another reason: $(cat "$tmp/err")"
echo "ok: the compiler refuses it: $(grep -m1 'placement.h' "$tmp/err")"
if syntax events "$tmp/events-up/daemon/events/events.c" 2>"$tmp/err"; then fail "events including bus-server.h compiled"; fi
grep -q 'bus-server.h' "$tmp/err" || fail "compile failed for another reason: $(cat "$tmp/err")"
echo "ok: the compiler refuses events -> bus: $(grep -m1 'bus-server.h' "$tmp/err")"
# A higher folder may include a lower one's header.
printf '#include "knobs.h"\n#include "placement.h"\n#include "bus-server.h"\n' >"$tmp/up.c"
syntax core "$tmp/up.c" || fail "core may include knobs.h, placement.h and bus-server.h"
echo "ok: core compiles with knobs.h, placement.h and bus-server.h"
