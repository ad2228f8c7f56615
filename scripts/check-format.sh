#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fails when a tracked C++ file differs from what clang-format makes of it with
# the top-level .clang-format. Nothing is rewritten; to fix a file run
#   clang-format -i FILE...
# scripts/test.sh (and so CI) runs it on Debian 12's clang-format 14; it is not a
# CTest test because the Debian 13 half would run clang-format 19, whose output
# differs in places. CLANG_FORMAT picks the binary (default: clang-format-14).
#
# Until the tree is formatted in one commit of its own, the files written before
# .clang-format existed are listed in scripts/format-pending.txt and left out;
# every other file (all new ones) is checked. The tree-wide format commit runs
# clang-format -i over every file and deletes format-pending.txt, and from then
# on every file is checked. A listed file that matches already, or is gone, is
# named (a warning) so the list only shrinks.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
cf=${CLANG_FORMAT:-clang-format-14}
command -v "$cf" > /dev/null || cf=clang-format
command -v "$cf" > /dev/null || { echo "format: clang-format is missing (scripts/deps.sh installs it)" >&2; exit 2; }
pending=scripts/format-pending.txt
declare -A skip=()
if [[ -f $pending ]]; then
    while read -r f; do
        [[ -z $f || $f == \#* ]] || skip[$f]=1
    done < "$pending"
fi
checked=()
rc=0
while IFS= read -r -d '' f; do
    if [[ -n ${skip[$f]:-} ]]; then
        if "$cf" --style=file --dry-run -Werror "$f" > /dev/null 2>&1; then
            echo "format: warning: $f matches .clang-format now; remove it from $pending" >&2
        fi
        unset "skip[$f]"
    else
        checked+=("$f")
    fi
done < <(git ls-files -z '*.cpp' '*.hpp')
for f in "${!skip[@]}"; do
    echo "format: warning: $pending lists $f, which is not a tracked C++ file; remove it" >&2
done
if ((${#checked[@]})); then
    printf '%s\0' "${checked[@]}" | xargs -0 -r "$cf" --style=file --dry-run -Werror || rc=1
fi
[[ $rc == 0 ]] || { echo "format: files differ from .clang-format (above); clang-format -i FILE fixes one" >&2; exit 1; }
left=""
[[ ! -f $pending ]] || left="; $(grep -cv '^#' "$pending") files left for the tree-wide format commit ($pending)"
echo "format: ${#checked[@]} files match .clang-format ($("$cf" --version | grep -o 'version [0-9.]*'))$left"
