#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The layering check (scripts/check-layering.py) passes on the tree, and fails
# on a copy of src/ with one planted violation at a time: an include pointing
# up, a plan room including another room, a host path opened outside HostFs,
# a program run outside CommandRunner, a std::regex.
source "$(dirname "$0")/lib.inc"
check=$SRC/scripts/check-layering.py

python3 "$check" "$SRC/src"

plant() {  # plant NAME FILE LINE: a copy of src/ with LINE appended to FILE must fail, naming FILE
    [[ -d $T/src ]] || cp -r "$SRC/src" "$T/src"
    cp "$SRC/src/$2" "$T/src/$2.orig"
    echo "$3" >> "$T/src/$2"
    local rc=0
    python3 "$check" "$T/src" > "$T/out" 2>&1 || rc=$?
    mv "$T/src/$2.orig" "$T/src/$2"
    [[ $rc -eq 1 ]] || { cat "$T/out"; fail "$1: check exited $rc on a planted violation"; return; }
    grep -q "^layering: $2:" "$T/out" || { cat "$T/out"; fail "$1: $2 not named"; return; }
    ok "$1 caught"
}
plant "include upward" scan/inventory.cpp '#include "plan/plan.hpp"'
plant "room into room" plan/network/routes.cpp '#include "plan/vm/profile.hpp"'
plant "fopen outside HostFs" scan/inventory.cpp 'static FILE* f = fopen("/etc/hostname", "r");'
plant "std::filesystem outside HostFs" apply/verify.cpp 'static bool e = std::filesystem::exists("/etc");'
plant "program run outside CommandRunner" cli/help.cpp 'static int r = std::system("true");'
plant "std::regex include" format/interfaces.cpp '#include <regex>'
plant "std::regex use" scan/inventory.cpp 'static bool b = std::regex_match(std::string("x"), std::regex("x"));'
