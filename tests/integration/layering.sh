#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The layering check (scripts/check-layering.py) passes on the tree, and fails
# on a copy of src/ with one planted violation of each rule: an include
# pointing up, a plan room including another room, and a host path opened
# outside HostFs.
set -euo pipefail
SRC=${PASSTHRU_SOURCE_DIR:?PASSTHRU_SOURCE_DIR must point at the repository}
check=$SRC/scripts/check-layering.py
T=$(mktemp -d "${TMPDIR:-/tmp}/passthru-layering.XXXXXX")
trap 'rm -rf "$T"' EXIT

python3 "$check" "$SRC/src"

plant() {  # plant NAME FILE LINE: a copy of src/ with LINE appended to FILE must fail, naming FILE
    rm -rf "$T/src"
    cp -r "$SRC/src" "$T/src"
    echo "$3" >> "$T/src/$2"
    local rc=0
    python3 "$check" "$T/src" > "$T/out" 2>&1 || rc=$?
    [[ $rc -eq 1 ]] || { cat "$T/out"; echo "FAIL: $1: check exited $rc on a planted violation"; exit 1; }
    grep -q "^layering: $2:" "$T/out" || { cat "$T/out"; echo "FAIL: $1: $2 not named"; exit 1; }
    echo "ok: $1 caught"
}
plant "include upward" scan/inventory.cpp '#include "plan/plan.hpp"'
plant "room into room" plan/network/routes.cpp '#include "plan/vm/profile.hpp"'
plant "fopen outside HostFs" scan/inventory.cpp 'static FILE* f = fopen("/etc/hostname", "r");'
plant "std::filesystem outside HostFs" apply/verify.cpp 'static bool e = std::filesystem::exists("/etc");'
plant "program run outside CommandRunner" cli/help.cpp 'static int r = std::system("true");'
