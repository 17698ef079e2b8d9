#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The bash completion of npu-tunectl (shell-completion/npu-tunectl) completes commands,
# options (before or after the command) and --bus= values, file names after check-policy,
# and pids after explain from the npu-tunectl on the bus the line names. Skips (77) without the
# bash-completion package.
set -u
lib=/usr/share/bash-completion/bash_completion
[[ -r $lib ]] || { echo "SKIP: bash-completion is not installed (tools/install-deps.sh --test)"; exit 77; }
# shellcheck source=/dev/null
. "$lib"
# shellcheck source=/dev/null
. "$NPU_SOURCE_ROOT/shell-completion/npu-tunectl"
failed=0
complete_line() { # WORDS...: COMPREPLY for the last word
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="$*"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_npu_tunectl
	echo "${COMPREPLY[*]}"
}
want() { # WANT WORDS...
	local want=$1 got
	shift
	got=$(complete_line "$@")
	if [[ $got == "$want" ]]; then echo "ok: '$*' -> '$got'"; else echo "FAIL: '$*' -> '$got', want '$want'"; failed=1; fi
}
want "status" npu-tunectl st
want "reload rescan release" npu-tunectl re
want "check-policy" npu-tunectl --json ch
want "--json" npu-tunectl --js
want "system session" npu-tunectl --bus=s
want "policy" npu-tunectl po
want "monitor" npu-tunectl mo
want "doctor" npu-tunectl do
want "--root" npu-tunectl doctor --ro
# doctor's options take a directory, and their value is not the command.
want "--json" npu-tunectl --root /tmp doctor --js
# Options after the command too (npu-tunectl permutes them).
want "--json" npu-tunectl status --js
# As bash splits "npu-tunectl --bus=session st" at "=": the value of --bus is not the command.
COMP_WORDS=(npu-tunectl --bus = session st) COMP_CWORD=4 COMP_LINE="npu-tunectl --bus=session st" COMP_POINT=28
COMPREPLY=()
_npu_tunectl
if [[ "${COMPREPLY[*]}" == status ]]; then echo "ok: --bus=session split at =, then st -> status"
else echo "FAIL: --bus=session split at =, then st -> '${COMPREPLY[*]}'"; failed=1; fi
want "status" npu-tunectl --bus session st
# The pids come from the npu-tunectl on PATH, told the line's --bus=.
bin=$(mktemp -d)
printf '#!/bin/sh\necho "$@" >> %s/args\necho "[{\\"pid\\": 4242}]"\n' "$bin" > "$bin/npu-tunectl"
chmod +x "$bin/npu-tunectl"
PATH="$bin:$PATH" want "4242" npu-tunectl explain --bus=session ""
if grep -q -- "--bus=session --json processes" "$bin/args"; then echo "ok: the pids are asked on --bus=session"
else echo "FAIL: npu-tunectl was run as: $(cat "$bin/args")"; failed=1; fi
rm -rf "$bin"
dir=$(mktemp -d)
cd "$dir" && touch a.json b.json
want "a.json b.json" npu-tunectl check-policy ""
mkdir sub
want "sub" npu-tunectl doctor --root ""
cd / && rm -rf "$dir"
exit $failed
