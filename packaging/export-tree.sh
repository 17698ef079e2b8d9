#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The source tree as a clean clone has it, into DIR: the files git tracks, with their
# uncommitted edits (`git stash create` records them without touching the work tree or any
# ref), and nothing else (no build directories, caches or untracked files). Prints the tree
# id, which names what was exported (the package builds cache their results under it).
# usage: export-tree.sh SOURCE_ROOT DIR
set -euo pipefail
src=$1 dir=$2
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || { echo "export-tree: $src is not a git checkout" >&2; exit 77; }
rev=$(git -C "$src" stash create 2>/dev/null || true)
rev=${rev:-HEAD}
mkdir -p "$dir"
git -C "$src" archive "$rev" | tar -x -C "$dir"
git -C "$src" rev-parse "$rev^{tree}"
