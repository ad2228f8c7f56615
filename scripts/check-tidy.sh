#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs clang-tidy with the top-level .clang-tidy over every first-party .cpp
# (src/, tests/, packaging/) in a build's compile_commands.json and fails on
# any warning (the config makes every warning an error). Nothing is rewritten.
#   bash scripts/check-tidy.sh [BUILD_DIR [FUZZ_BUILD_DIR]]   (default: build; configure it first)
# FUZZ_BUILD_DIR, the clang build of scripts/test-fuzz.sh (<build>/fuzz), adds
# the fuzz targets (tests/fuzz/*.cpp), which only that build compiles.
# CLANG_TIDY picks the binary (default: clang-tidy-22, Debian's package of LLVM 22,
# which no longer matches its checks against the code of system headers: about 2.4 times
# less time a file than Debian 12's clang-tidy 14 with the same checks), CLANG the
# clang++ of the same version that precompiles the headers for it (default: the one
# named like CLANG_TIDY). The builds' own databases are not read directly: scripts/tidy-db.py
# makes one file by file (a unity build lists its batches) whose files read the common
# headers precompiled by that clang (tests/README.md has the figures).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
fuzz_build=${2:-}
tidy=${CLANG_TIDY:-clang-tidy-22}
command -v "$tidy" > /dev/null || { echo "tidy: $tidy is missing (scripts/deps.sh installs clang-tidy-22)" >&2; exit 2; }
version=${tidy##*clang-tidy}
clang=${CLANG:-clang++$version}
command -v "$clang" > /dev/null || { echo "tidy: $clang is missing (scripts/deps.sh installs clang-22)" >&2; exit 2; }
runner=$(command -v "run-clang-tidy$version" || true)

# tidy_build DIR REGEX: clang-tidy over the files of DIR's compile_commands.json
# that match REGEX (an extended regular expression of the absolute path);
# prints the findings, returns nonzero on any, and counts the files in $count.
count=0
tidy_build() {
    local build_dir=$1 files=$2 rc=0 log n dir
    [[ -f $build_dir/compile_commands.json ]] || { echo "tidy: no $build_dir/compile_commands.json (configure with cmake first)" >&2; return 2; }
    dir=$build_dir/tidy
    n=$(python3 "$here/scripts/tidy-db.py" "$build_dir" "$dir" "$clang" "$files") || { echo "tidy: cannot make the compile database for $build_dir" >&2; return 2; }
    count=$((count + n))
    if [[ -n $runner ]]; then
        log=$(mktemp)
        "$runner" -j "$(nproc)" -quiet -clang-tidy-binary "$(command -v "$tidy")" -p "$dir" "$files" > "$log" 2>&1 || rc=$?
        # Keep the findings; drop the runner's per-file command lines and tallies.
        sed -E 's/\x1b\[[0-9;]*m//g' "$log" | grep -vE '^[^ ]*clang-tidy[^ ]* |^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Use -system-headers' || true
        rm -f "$log"
    else
        python3 -c 'import json,sys,re; [print(e["file"]) for e in json.load(open(sys.argv[1])) if re.match(sys.argv[2], e["file"])]' \
            "$dir/compile_commands.json" "$files" | xargs -r -P "$(nproc)" -n 4 "$tidy" --quiet -p "$dir" || rc=$?
    fi
    return "$rc"
}

rc=0
tidy_build "$build" "^$here/(src|tests|packaging)/.*\\.cpp$" || rc=$?
if [[ -n $fuzz_build ]]; then
    tidy_build "$fuzz_build" "^$here/tests/fuzz/.*\\.cpp$" || rc=$?
fi
[[ $rc == 0 ]] || { echo "tidy: clang-tidy found problems (above)" >&2; exit 1; }
echo "tidy: $count files pass .clang-tidy ($("$tidy" --version | grep -o 'version [0-9.]*'))"
