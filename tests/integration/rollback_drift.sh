#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# rollback refuses when a file changed since it was applied (exit 1, nothing
# written) unless --force, which keeps the hand edit in the journal; the
# interrupted-generation notice; rollback --dry-run writes nothing.
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary

for host in "${VARIANTS[@]}"; do
    R=$T/$host
    copy_host "$host" "$R"
    S0=$(tree_sum "$R")
    expect_rc 1 "$P" --root "$R" rollback > /dev/null 2> "$T/none.err"
    grep -q 'nothing to roll back' "$T/none.err" || fail "$host: rollback without history not explained"
    expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2>&1
    conf=$R/etc/modprobe.d/passthru-vfio.conf
    [[ -f $conf ]] || fail "$host: $conf was not written"
    echo "# admin edit" >> "$conf"
    S1=$(tree_sum "$R")
    expect_rc 1 "$P" --root "$R" rollback > /dev/null 2> "$T/drift.err"
    grep -q 'changed since generation 1 was applied: /etc/modprobe.d/passthru-vfio.conf' "$T/drift.err" || { cat "$T/drift.err"; fail "$host: drift not reported"; }
    grep -q -- '--force' "$T/drift.err" || fail "$host: no --force hint"
    [[ $(tree_sum "$R") == "$S1" ]] || fail "$host: refused rollback wrote something"
    expect_rc 0 "$P" --root "$R" rollback --force --dry-run > /dev/null 2>&1
    [[ $(tree_sum "$R") == "$S1" ]] || fail "$host: rollback --dry-run wrote something"
    expect_rc 0 "$P" --root "$R" rollback --force > /dev/null 2>&1
    [[ $(tree_sum "$R") == "$S0" ]] || fail "$host: forced rollback did not restore the tree"
    grep -q '# admin edit' "$R/var/lib/passthru/generations/2/before/etc/modprobe.d/passthru-vfio.conf" \
        || fail "$host: the hand edit was not kept in the rollback generation"
    ok "$host: drift refused, --force restores and keeps the edit in the journal"
done
