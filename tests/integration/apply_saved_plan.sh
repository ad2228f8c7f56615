#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# apply --plan FILE (a plan saved by `plan --out`): dry run identical to the
# plan; applied as reviewed; refused with exit 1 and nothing written when a
# target file changed since planning ("replan"); a broken plan file is bad
# input (exit 2); --plan together with request options is a usage error.
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary

for host in "${VARIANTS[@]}"; do
    R=$T/$host
    copy_host "$host" "$R"
    S0=$(tree_sum "$R")
    "$P" --root "$R" plan "${REQ[@]}" --out "$T/saved.json" > "$T/plan.out"
    expect_rc 0 "$P" --root "$R" apply --plan "$T/saved.json" --dry-run > "$T/dry.out" 2> /dev/null
    cmp "$T/plan.out" "$T/dry.out" || fail "$host: dry run of the saved plan differs from plan"
    [[ $(tree_sum "$R") == "$S0" && ! -e $R/var/lib/passthru ]] || fail "$host: dry run wrote something"

    # Stale: one target edited after planning.
    target=$(python3 -c 'import json,sys; print([f["path"] for f in json.load(open(sys.argv[1]))["files"] if f["action"] == "modify"][0])' "$T/saved.json")
    own_copy "$R$target"
    echo "# edited after planning" >> "$R$target"
    S1=$(tree_sum "$R")
    expect_rc 1 "$P" --root "$R" apply --plan "$T/saved.json" --yes > /dev/null 2> "$T/stale.err"
    grep -q "is stale: $target changed since it was made" "$T/stale.err" || { cat "$T/stale.err"; fail "$host: stale plan not explained"; }
    grep -q '^hint: replan' "$T/stale.err" || fail "$host: no replan hint"
    [[ $(tree_sum "$R") == "$S1" && ! -e $R/var/lib/passthru ]] || fail "$host: stale plan wrote something"
    ok "$host: a plan made stale by an edit is refused (exit 1), nothing written"

    # A file the plan creates appeared meanwhile.
    copy_host "$host" "$R"
    created=$(python3 -c 'import json,sys; print([f["path"] for f in json.load(open(sys.argv[1]))["files"] if f["action"] == "create"][0])' "$T/saved.json")
    mkdir -p "$(dirname "$R$created")"; echo "# by hand" > "$R$created"
    expect_rc 1 "$P" --root "$R" apply --plan "$T/saved.json" --yes > /dev/null 2> "$T/stale2.err"
    grep -q "is stale: $created changed" "$T/stale2.err" || fail "$host: created-meanwhile file not detected"

    # The reviewed plan, applied as it is.
    copy_host "$host" "$R"
    expect_rc 0 "$P" --root "$R" apply --plan "$T/saved.json" --yes > /dev/null 2>&1
    python3 - "$T/saved.json" "$R" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
for f in plan["files"]:
    got = open(sys.argv[2] + f["path"]).read()
    assert got == f["content"], f["path"]
PY
    expect_rc 0 "$P" --root "$R" rollback --yes > /dev/null 2>&1
    [[ $(tree_sum "$R") == "$S0" ]] || fail "$host: rollback after a saved-plan apply differs"
    ok "$host: saved plan applied exactly, rolled back byte for byte"
done

echo '{"schema": "passthru.plan/1"' > "$T/broken.json"
expect_rc 2 "$P" --root "$R" apply --plan "$T/broken.json" --dry-run > /dev/null 2> "$T/broken.err"
grep -q '^passthru: error: --plan' "$T/broken.err" || fail "broken plan file not reported"
expect_rc 2 "$P" --root "$R" apply --plan "$T/missing.json" --dry-run > /dev/null 2>&1
expect_rc 2 "$P" --root "$R" apply --plan "$T/saved.json" --vm 101 --dry-run > /dev/null 2>&1
expect_rc 2 "$P" --root "$R" apply --dry-run > /dev/null 2>&1
ok "bad plan files and option mixes are usage errors (exit 2)"
