#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fails when a tracked C++ file differs from what clang-format makes of it with
# the top-level .clang-format. Nothing is rewritten; to fix a file run
#   clang-format -i FILE...
# scripts/test.sh (and so CI) runs it on Debian 12's clang-format 14; it is not a
# CTest test because the Debian 13 half would run clang-format 19, whose output
# differs in places. CLANG_FORMAT picks the binary (default: clang-format-14).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
cf=${CLANG_FORMAT:-clang-format-14}
command -v "$cf" > /dev/null || cf=clang-format
command -v "$cf" > /dev/null || { echo "format: clang-format is missing (scripts/deps.sh installs it)" >&2; exit 2; }
mapfile -d '' files < <(git ls-files -z '*.cpp' '*.hpp')
rc=0
printf '%s\0' "${files[@]}" | xargs -0 -r "$cf" --style=file --dry-run -Werror || rc=1
[[ $rc == 0 ]] || { echo "format: files differ from .clang-format (above); clang-format -i FILE fixes one" >&2; exit 1; }
echo "format: ${#files[@]} files match .clang-format ($("$cf" --version | grep -o 'version [0-9.]*'))"
