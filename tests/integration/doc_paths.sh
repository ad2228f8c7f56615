#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# No dangling paths (scripts/check-paths.py): every repository path that a comment or a
# document cites exists. The check passes on the tree, and on a small planted tree it
# names file:line of each dangling mention in a C++ comment, a shell comment, a Python
# docstring, Markdown text and a Markdown link (relative to its document), while it
# leaves alone what is no mention: a path in a C++ string or raw string, a placeholder,
# a glob, another project's file cited as PROJECT:PATH, a path inside a longer path;
# and a path that leaves the repository through ../ counts as dangling even where it
# exists beside it.
source "$(dirname "$0")/lib.inc"
check=$SRC/scripts/check-paths.py

out=$(python3 "$check" "$SRC" 2>&1) || fatal "dangling paths in the tree:"$'\n'"$out"
ok "every cited path of the tree exists"

R=$T/repo
mkdir -p "$R/src/plan" "$R/docs" "$R/tests/integration" "$R/scripts"
touch "$R/docs/here.md" "$R/src/plan/real.cpp"
cat > "$R/src/plan/x.cpp" <<'EOF'
// The plan (docs/here.md) and plan/real.cpp exist; docs/gone.md does not.
static const char* a = "docs/string-only.md";
static const char* b = R"(docs/raw-only.md)";
/* a block comment: src/plan/old_name.cpp
   over two lines: tests/integration/NAME.sh, src/plan/*.cpp, <build>/x */
EOF
# (printf, so this file's own comments cite no missing path)
printf '%s\n' '# upstream: pve-common:src/PVE/Gone.pm, and $T/docs/tmp.md is a temp path' \
    'echo "docs/echoed.md"  # but scripts/''gone.py is cited' > "$R/tests/integration/t.sh"
cat > "$R/scripts/p.py" <<'EOF'
"""A docstring that cites tests/fixtures/gone/
and /usr/share/docs/elsewhere.md."""
EOF
cat > "$R/docs/d.md" <<'EOF'
See [here](here.md), [there](there.md#anchor) and [the web](https://example.org/docs/x.md).
A link is relative to its document: [wrong](docs/here.md), though docs/here.md exists.
Paths: `src/plan/real.cpp`, `bench/gone.md`.
Outside: ../shared/reference/STYLE.md and ../x/docs/here.md.
EOF
mkdir -p "$T/shared/reference" && touch "$T/shared/reference/STYLE.md"  # beside the repo, still out
rc=0
python3 "$check" "$R" > "$T/out" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || { cat "$T/out"; fatal "the planted tree: exit $rc, not 1"; }
want="paths: docs/d.md:1: there.md#anchor does not exist
paths: docs/d.md:2: docs/here.md does not exist
paths: docs/d.md:3: bench/gone.md does not exist
paths: docs/d.md:4: ../shared/reference/STYLE.md does not exist
paths: scripts/p.py:1: tests/fixtures/gone/ does not exist
paths: src/plan/x.cpp:1: docs/gone.md does not exist
paths: src/plan/x.cpp:4: src/plan/old_name.cpp does not exist
paths: tests/integration/t.sh:2: scripts/gone.py does not exist"
if [[ $(cat "$T/out") == "$want" ]]; then
    ok "each planted dangling path named with file:line, nothing else"
else
    diff <(echo "$want") "$T/out" >&3 || true
    fail "the planted tree's findings differ from the eight planted ones"
fi
finish "no dangling paths"
