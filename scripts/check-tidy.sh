#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs clang-tidy with the top-level .clang-tidy over every first-party .cpp
# (src/, tests/, packaging/) in a build's compile_commands.json and fails on
# any warning (the config makes every warning an error). Nothing is rewritten.
#   bash scripts/check-tidy.sh [BUILD_DIR]    (default: build; configure it first)
# CLANG_TIDY picks the binary (default: clang-tidy, Debian's package of it).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
tidy=${CLANG_TIDY:-clang-tidy}
[[ -f $build/compile_commands.json ]] || { echo "tidy: no $build/compile_commands.json (configure with cmake first)" >&2; exit 2; }
command -v "$tidy" > /dev/null || { echo "tidy: $tidy is missing (scripts/deps.sh installs clang-tidy)" >&2; exit 2; }
runner=$(command -v run-clang-tidy || true)
files="^$here/(src|tests|packaging)/.*\\.cpp$"
count=$(grep -cE "\"file\": \"$here/(src|tests|packaging)/" "$build/compile_commands.json" || true)
rc=0
if [[ -n $runner ]]; then
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    "$runner" -j "$(nproc)" -quiet -clang-tidy-binary "$(command -v "$tidy")" -p "$build" "$files" > "$log" 2>&1 || rc=$?
    # Keep the findings; drop the runner's per-file command lines and tallies.
    sed -E 's/\x1b\[[0-9;]*m//g' "$log" | grep -vE '^[^ ]*clang-tidy[^ ]* |^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Use -system-headers' || true
else
    python3 -c 'import json,sys,re; [print(e["file"]) for e in json.load(open(sys.argv[1])) if re.match(sys.argv[2], e["file"])]' \
        "$build/compile_commands.json" "$files" | xargs -r -P "$(nproc)" -n 4 "$tidy" --quiet -p "$build" || rc=$?
fi
[[ $rc == 0 ]] || { echo "tidy: clang-tidy found problems (above)" >&2; exit 1; }
echo "tidy: $count files pass .clang-tidy ($("$tidy" --version | grep -o 'version [0-9.]*'))"
