#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The bash completion of npu-tunectl (shell-completion/npu-tunectl) completes commands,
# options and --bus= values, and file names after check-policy. Skips (77) without the
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
dir=$(mktemp -d)
cd "$dir" && touch a.json b.json
want "a.json b.json" npu-tunectl check-policy ""
cd / && rm -rf "$dir"
exit $failed
