#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The workflow as users type it: `passthru plan --vm 101 --gpus all`, then
# `passthru apply --dry-run` (the same diffs, from the recorded pending plan),
# then `passthru apply --yes`. A pending plan made stale by a hand edit is
# refused with one line and nothing is written; history and scan show a
# pending plan; a request on the command line still wins, with a note.
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary
PENDING=var/lib/passthru/pending-plan.json

for host in "${VARIANTS[@]}"; do
    R=$T/$host
    copy_host "$host" "$R"

    expect_rc 2 "$P" --root "$R" apply --dry-run > /dev/null 2> "$T/none.err"
    grep -q 'there is no pending plan' "$T/none.err" || fail "$host: no pending plan not explained: $(cat "$T/none.err")"
    [[ $(grep -c . "$T/none.err") -le 2 ]] || fail "$host: more than one line and a hint: $(cat "$T/none.err")"

    expect_rc 0 "$P" --root "$R" plan --vm 101 --gpus all > "$T/plan.out" 2> "$T/plan.err"
    [[ $(tail -n 1 "$T/plan.out") == "Next step: passthru --root $R apply  (applies this plan, recorded as the pending plan; it asks first)" ]] ||
        fail "$host: plan's last line does not name the pending plan: $(tail -n 1 "$T/plan.out")"
    [[ -f $R/$PENDING ]] || fail "$host: no pending plan recorded"
    [[ $(stat -c %a "$R/$PENDING") == 600 ]] || fail "$host: pending plan is not mode 0600"
    before=$(tree_sum "$R")

    expect_rc 0 "$P" --root "$R" apply --dry-run > "$T/dry.out" 2> "$T/dry.err"
    cmp -s "$T/plan.out" "$T/dry.out" || fail "$host: apply --dry-run of the pending plan differs from plan: $(diff "$T/plan.out" "$T/dry.out" | head -5)"
    grep -q 'applying the pending plan made .* ago: passthru --root .* plan --vm 101 --gpus all' "$T/dry.err" || fail "$host: dry run does not say which plan"
    [[ $(tree_sum "$R") == "$before" ]] || fail "$host: the dry run changed the tree"

    "$P" --root "$R" history > "$T/hist.out"
    grep -q '^Pending plan: made .* ago .*passthru --root .* plan --vm 101 --gpus all' "$T/hist.out" || fail "$host: history does not show the pending plan"
    "$P" --root "$R" history --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["pending_plan"]["request"]["gpus"] == "all"' \
        || fail "$host: history --json has no pending_plan"
    "$P" --root "$R" scan > "$T/scan.out"
    grep -q '^Pending plan: made' "$T/scan.out" || fail "$host: scan does not show the pending plan"
    ok "$host: plan then apply --dry-run prints the same diffs; history and scan show the pending plan"

    expect_rc 0 "$P" --root "$R" apply --yes > /dev/null 2>&1
    [[ ! -e $R/$PENDING ]] || fail "$host: the applied pending plan is still pending"
    [[ $(generations "$R") == 1 ]] || fail "$host: expected one generation"
    expect_rc 0 "$P" --root "$R" plan --vm 101 --gpus all --exit-code > /dev/null 2>&1
    expect_rc 2 "$P" --root "$R" apply --yes > /dev/null 2> "$T/again.err"
    grep -q 'there is no pending plan' "$T/again.err" || fail "$host: a second apply without a plan is not explained"
    ok "$host: apply --yes applied the pending plan, which is then no longer pending"

    # Stale: a hand edit after the plan.
    copy_host "$host" "$R"
    "$P" --root "$R" plan --vm 101 --gpus all > /dev/null 2>&1
    own_copy "$R/etc/pve/qemu-server/101.conf"
    echo "# edited by hand" >> "$R/etc/pve/qemu-server/101.conf"
    before=$(tree_sum "$R")
    expect_rc 1 "$P" --root "$R" apply --yes > /dev/null 2> "$T/stale.err"
    grep -q '^passthru: error: the pending plan is stale: /etc/pve/qemu-server/101.conf changed since it was made' "$T/stale.err" \
        || fail "$host: stale pending plan not refused clearly: $(cat "$T/stale.err")"
    grep -q '^hint: plan again: passthru --root .* plan --vm 101 --gpus all' "$T/stale.err" || fail "$host: no replan hint"
    [[ $(tree_sum "$R") == "$before" ]] || fail "$host: a stale pending plan changed the tree"
    [[ $(generations "$R") == 0 ]] || fail "$host: a stale pending plan made a generation"
    ok "$host: a pending plan made stale by a hand edit is refused and nothing is written"

    # A request on the command line wins and says so.
    copy_host "$host" "$R"
    "$P" --root "$R" plan --vm 101 --gpus 0 > /dev/null 2>&1
    expect_rc 0 "$P" --root "$R" apply --vm 101 --gpus all --dry-run > "$T/req.out" 2> "$T/req.err"
    grep -q 'the pending plan (passthru --root .* plan --vm 101 --gpus 0) differs from this request: applying the request given here' "$T/req.err" \
        || fail "$host: differing request not reported"
    [[ $(tail -n 1 "$T/req.out") == "Next step: passthru --root $R apply --vm 101 --gpus all  ("* ]] || fail "$host: the dry run did not plan the request given"
    ok "$host: a request on the command line is used, and the pending plan named"
done

# A refused plan is not recorded; a pending file that is not a plan is one line, exit 2.
copy_host consumer-shared "$T/shared"
expect_rc 3 "$P" --root "$T/shared" plan --vm 101 --gpus all > /dev/null 2>&1
[[ ! -e $T/shared/$PENDING ]] || fail "a refused plan was recorded as pending"
mkdir -p "$T/shared/var/lib/passthru"
echo '{"schema": "passthru.pending/1", "plan": {"schema": "passthru.plan/1"}}' > "$T/shared/$PENDING"
expect_rc 2 "$P" --root "$T/shared" apply --dry-run > /dev/null 2> "$T/bad.err"
grep -q '^passthru: error: the pending plan cannot be read' "$T/bad.err" || fail "a broken pending plan not explained: $(cat "$T/bad.err")"
ok "consumer-shared: a refused plan is not recorded; a broken pending file is one line, exit 2"

# Idempotence under --root: the after-step `qm set 101 --efidisk0 ...` is only
# recorded, so the VM config never shows efidisk0 and the same request plans
# the step again. A second apply says so and records no new generation.
for host in "${VARIANTS[@]}"; do
    R=$T/$host-efi
    copy_host "$host" "$R"
    own_copy "$R/etc/pve/qemu-server/101.conf"
    sed -i '/^efidisk0:/d' "$R/etc/pve/qemu-server/101.conf"
    expect_rc 0 "$P" --root "$R" apply --vm 101 --gpus all --yes > "$T/efi1.out" 2>&1
    grep -q "qm set 101 --efidisk0 local-[a-z]*:1" "$T/efi1.out" || fail "$host: no efidisk0 step recorded: $(cat "$T/efi1.out")"
    after=$(tree_sum --with-journal "$R")
    expect_rc 0 "$P" --root "$R" plan --vm 101 --gpus all > "$T/efi-plan.out" 2> /dev/null
    expect_rc 0 "$P" --root "$R" apply --dry-run > "$T/efi-dry.out" 2> "$T/efi-dry.err"
    cmp -s "$T/efi-plan.out" "$T/efi-dry.out" || fail "$host: the dry run of the pending plan differs from plan"
    grep -q 'Nothing to do: the only work left is 1 after-step(s) that generation 1 already recorded' "$T/efi-dry.err" ||
        fail "$host: the dry run does not say the step is already recorded: $(cat "$T/efi-dry.err")"
    expect_rc 0 "$P" --root "$R" apply --yes > "$T/efi2.out" 2>&1
    grep -q '^Nothing to do: the only work left is 1 after-step(s) that generation 1 already recorded' "$T/efi2.out" ||
        fail "$host: re-apply is not a no-op: $(cat "$T/efi2.out")"
    [[ $(generations "$R") == 1 ]] || fail "$host: re-apply recorded a new generation"
    [[ ! -e $R/$PENDING ]] || fail "$host: the pending plan is still pending after the no-op apply"
    expect_rc 0 "$P" --root "$R" apply --vm 101 --gpus all --yes > /dev/null 2>&1
    [[ $(generations "$R") == 1 ]] || fail "$host: a third apply recorded a new generation"
    rm -f "$R/$PENDING"
    [[ $(tree_sum --with-journal "$R") == "$after" ]] || fail "$host: a no-op apply changed the tree or the journal"
    ok "$host: re-applying when only recorded after-steps are left is a no-op (no new generation)"
done

# Several generations: rollback without --to says which one it undoes and how
# to undo all; history says the same.
R=$T/several
copy_host epyc-4x2080ti "$R"
expect_rc 0 "$P" --root "$R" apply --vm 101 --gpus 0 --yes > /dev/null 2>&1
expect_rc 0 "$P" --root "$R" apply --vm 101 --gpus all --yes > /dev/null 2>&1
[[ $(generations "$R") == 2 ]] || fail "several: expected two generations"
"$P" --root "$R" history > "$T/several.hist"
grep -q "^Applied now: generations 1, 2. 'passthru --root .* rollback' undoes 2 only; 'passthru --root .* rollback --to 1' undoes all of them.$" "$T/several.hist" ||
    fail "several: history does not say what rollback undoes: $(tail -3 "$T/several.hist")"
grep -q '^2 .*committed (active)' "$T/several.hist" || fail "several: history does not mark active generations"
expect_rc 0 "$P" --root "$R" rollback --yes > "$T/several.out" 2> "$T/several.err"
grep -q '^Rolling back generation 2:' "$T/several.out" || fail "several: rollback did not undo generation 2"
grep -q "generations 1, 2 are applied; this undoes only the newest, 2; 'passthru --root .* rollback --to 1' undoes all of them" "$T/several.err" ||
    fail "several: rollback does not say how to undo all: $(cat "$T/several.err")"
"$P" --root "$R" history > "$T/several.hist"
grep -q "^Applied now: generation 1. 'passthru --root .* rollback' undoes 1.$" "$T/several.hist" || fail "several: history after one rollback: $(tail -2 "$T/several.hist")"
ok "several generations: rollback names the one it undoes and 'rollback --to 1'; history says the same"
