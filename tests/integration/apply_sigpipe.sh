#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A closed output never stops a transaction: apply and rollback piped into
# `head -1` (which exits after the first line, so every later write of
# passthru meets a closed pipe) commit their generation every time, 20 runs
# each, and the rollback leaves the tree as it was before the apply.
source "$(dirname "$0")/lib.inc"
need_binary

RUNS=${SIGPIPE_RUNS:-20}
R=$T/host
for ((i = 1; i <= RUNS; i++)); do
    copy_host epyc-4x2080ti "$R"
    S0=$(tree_sum "$R")
    # With pipefail, rc is passthru's status (141 when SIGPIPE killed it).
    rc=0
    "$P" --root "$R" apply --yes "${REQ[@]}" 2>&1 | head -1 > /dev/null || rc=$?
    [[ $rc -eq 0 ]] || fail "run $i: apply | head -1 exited $rc"
    m=$R/var/lib/passthru/generations/1/manifest.json
    grep -q '"state": "committed"' "$m" 2> /dev/null || fail "run $i: apply | head -1 left generation 1 uncommitted"
    rc=0
    "$P" --root "$R" rollback --yes 2>&1 | head -1 > /dev/null || rc=$?
    [[ $rc -eq 0 ]] || fail "run $i: rollback | head -1 exited $rc"
    m=$R/var/lib/passthru/generations/2/manifest.json
    grep -q '"state": "committed"' "$m" 2> /dev/null || fail "run $i: rollback | head -1 left generation 2 uncommitted"
    [[ $(tree_sum "$R") == "$S0" ]] || fail "run $i: the tree after rollback | head -1 differs from before apply"
done
finish "$RUNS applies and $RUNS rollbacks piped into head -1 all committed"
