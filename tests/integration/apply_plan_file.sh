#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# apply FILE is apply --plan FILE: it applies exactly the plan in FILE, never
# the host's pending plan, also when the pending plan differs (four cards
# saved to all.json, one card pending: apply all.json applies the four). FILE
# together with --plan or with the request options is a usage error (exit 2,
# nothing written), and FILE gets every check --plan gets (a missing or
# broken file is exit 2, a stale one exit 1).
source "$(dirname "$0")/lib.inc"
need_binary

R=$T/host
conf=$R/etc/pve/qemu-server/101.conf
PENDING=$R/var/lib/passthru/pending-plan.json

# setup: a fresh copy with the four cards saved to all.json and one card
# (--gpus 0) recorded as the pending plan.
setup() {
    copy_host epyc-4x2080ti "$R"
    "$P" --root "$R" plan --vm 101 --gpus all --out "$T/all.json" > "$T/all.out" 2> /dev/null || fatal "plan --out failed"
    "$P" --root "$R" plan --vm 101 --gpus 0 > /dev/null 2>&1 || fatal "plan --gpus 0 failed"
    [[ -f $PENDING ]] || fatal "plan --gpus 0 recorded no pending plan"
    python3 - "$PENDING" "$T/all.json" <<'PY' || fatal "setup: the pending plan is not the one-card plan or all.json not the four-card one"
import json, sys
pending = json.load(open(sys.argv[1]))["plan"]
saved = json.load(open(sys.argv[2]))
assert pending["request"]["gpus"] == "0" and saved["request"]["gpus"] == "all"
assert pending["files"] != saved["files"]
PY
    SJ=$(tree_sum --with-journal "$R")
}

setup
# The dry run of FILE shows FILE's plan, byte for byte what plan printed.
expect_rc 0 "$P" --root "$R" apply --dry-run "$T/all.json" > "$T/dry.out" 2> /dev/null
cmp -s "$T/all.out" "$T/dry.out" || fail "apply --dry-run all.json does not show the plan saved in all.json"
[[ $(tree_sum --with-journal "$R") == "$SJ" ]] || fail "apply --dry-run FILE wrote something"

# The one that matters: apply all.json applies all.json's four cards.
expect_rc 0 "$P" --root "$R" apply --yes "$T/all.json" > "$T/apply.out" 2> "$T/apply.err"
python3 - "$T/all.json" "$R" <<'PY' || fail "the tree does not hold the plan of all.json"
import json, sys
plan = json.load(open(sys.argv[1]))
for f in plan["files"]:
    with open(sys.argv[2] + f["path"]) as got:
        assert got.read() == f["content"], f["path"]
PY
n=$(grep -c '^hostpci[0-9]*:' "$conf" || true)
[[ $n -eq 4 ]] || fail "101.conf passes $n card(s), not the four of all.json"
m=$R/var/lib/passthru/generations/1/manifest.json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["request"]["gpus"] == "all", d["request"]' "$m" \
    || fail "generation 1 does not record the request of all.json"
grep -q 'applying the pending plan' "$T/apply.err" && fail "apply FILE took the pending plan"
ok "apply all.json with a one-card pending plan applied the four cards of all.json"

setup
# FILE with --plan, with the request options, or two files: exit 2, nothing written.
expect_rc 2 "$P" --root "$R" apply --yes --plan "$T/all.json" "$T/all.json" > /dev/null 2>&1
expect_rc 2 "$P" --root "$R" apply --yes "$T/all.json" --vm 101 --gpus all > /dev/null 2>&1
expect_rc 2 "$P" --root "$R" apply --yes "$T/all.json" "$T/all.json" > /dev/null 2>&1
# --plan's checks: a missing and a broken FILE are bad input.
expect_rc 2 "$P" --root "$R" apply --yes "$T/missing.json" > /dev/null 2> "$T/missing.err"
grep -qF "$T/missing.json" "$T/missing.err" || fail "a missing FILE is not named"
echo '{"schema": "passthru.plan/1"' > "$T/broken.json"
expect_rc 2 "$P" --root "$R" apply --yes "$T/broken.json" > /dev/null 2>&1
[[ $(tree_sum --with-journal "$R") == "$SJ" ]] || fail "a refused apply FILE wrote something"
ok "FILE with --plan, with a request, twice, missing or broken: exit 2, nothing written"

# A stale FILE is refused as a stale --plan FILE is (exit 1, nothing written).
copy_host epyc-4x2080ti "$R"
"$P" --root "$R" plan --vm 101 --gpus all --out "$T/stale.json" > /dev/null 2>&1
own_copy "$conf"
echo "# edited after planning" >> "$conf"
S1=$(tree_sum --with-journal "$R")
expect_rc 1 "$P" --root "$R" apply --yes "$T/stale.json" > /dev/null 2> "$T/stale.err"
grep -q 'is stale' "$T/stale.err" || fail "a stale FILE is not reported stale"
[[ $(tree_sum --with-journal "$R") == "$S1" ]] || fail "a stale FILE wrote something"
finish "apply FILE applies FILE and nothing else"
