#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# What users read speaks of npu-tuned, not of how it was made, and points only at what they
# have. Two checks, each hit printed as FILE:LINE:
#  - words of the project's own making (its development history, the machines the
#    numbers came from, notes outside the repository) in README.md, man/, units/,
#    policies/ and docs/;
#  - paths that a user's installation does not have, in the installed files (man/,
#    units/, policies/) and the README: the source tree's docs/, tests/, ... in the
#    installed files, and ../shared (outside the repository) anywhere. docs/*.md and the
#    README live in the repository and may point at its files.
# The run-by-run history of the measurements lives in bench/RESULTS.md, which is not checked.
# Usage: test-docs-words.sh [SOURCE_ROOT] (default: $NPU_SOURCE_ROOT)
set -u
root=${1:-${NPU_SOURCE_ROOT:?set NPU_SOURCE_ROOT or pass the source root}}
cd "$root" || exit 1

# Case-insensitive extended regular expressions (GNU grep: \b is a word boundary).
words=(
	'\bseed\b'
	'\bseed'"'"'s\b'
	'field report'
	'field-notes'
	'\.\./shared'
	'development (machine|vm|host|box)'
	'this VM\b'
	'this session'
	'earlier sessions?\b'
	'sessions'"'"' host'
	'other developers'
	'lab notebook'
)
# Paths of the source tree (or beside it) that an installation does not have.
paths=(
	'(^|[^A-Za-z0-9_./-])(docs|tests|bench|tools|libtune|daemon|tunectl|fuzz|include|shared)/[A-Za-z0-9_.-]'
	'\.\./'
	'of the source\b'
)

# The files users read: the README, and what meson installs from man/, units/, policies/
# (their meson.build and the policy embedder are not installed).
shipped=(README.md)
for d in man units policies; do
	while IFS= read -r f; do shipped+=("$f"); done < <(find "$d" -type f ! -name meson.build ! -name '*.py' | sort)
done
docs=()
while IFS= read -r f; do docs+=("$f"); done < <(find docs -type f -name '*.md' | sort)
# What packagers and cluster operators read (the words only: these live in the repository).
while IFS= read -r f; do docs+=("$f"); done < <(find debian packaging deploy Containerfile -type f 2>/dev/null | sort)

hits=0
check() { # WHAT REGEX FILE...
	local what=$1 re=$2 out
	shift 2
	out=$(grep -HniE -- "$re" "$@")
	[[ -z $out ]] && return
	while IFS= read -r line; do
		echo "${line%%:*}:$(cut -d: -f2 <<<"$line"): $what /$re/: $(cut -d: -f3- <<<"$line" | sed 's/^[[:space:]]*//' | cut -c1-160)"
		hits=$((hits + 1))
	done <<<"$out"
}
for re in "${words[@]}"; do
	check "internal word" "$re" "${shipped[@]}" "${docs[@]}"
done
installed=("${shipped[@]:1}")
for re in "${paths[@]}"; do
	check "path not installed" "$re" "${installed[@]}"
done
check "path outside the repository" '\.\./shared' README.md "${docs[@]}"

if ((hits)); then
	echo "FAIL: $hits hit(s) in ${#shipped[@]} user-facing and ${#docs[@]} docs/ files"
	exit 1
fi
echo "PASS: no internal words or uninstalled paths in ${#shipped[@]} user-facing and ${#docs[@]} docs/ files"
