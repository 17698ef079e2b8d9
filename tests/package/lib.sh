# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the package tests: one line per check, and the build step they share.
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; failed=1; }
skip() { echo "SKIP: $*"; exit 77; }
finish() { if ((failed)); then echo "FAIL"; exit 1; fi; echo "PASS"; }

# build SCRIPT SOURCE_ROOT OUTDIR: runs packaging/SCRIPT (a build-*.sh), prints its output,
# skips where it skips, and sets $artifact to the path it printed last.
build() {
	local log rc t0=$SECONDS
	set +e
	log=$("$2/packaging/$1" "$2" "$3" 2>&1)
	rc=$?
	set -e
	echo "$log" | tail -n 40
	((rc == 77)) && skip "$1 cannot build here (above)"
	((rc == 0)) || { echo "FAIL: $1 exited $rc"; exit 1; }
	artifact=$(tail -1 <<<"$log")
	echo "artifact: $(basename "$artifact"), $(stat -c %s "$artifact") bytes, $((SECONDS - t0)) s to build or find"
}
