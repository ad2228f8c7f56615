#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A second concurrent apply (or rollback) is refused while the journal lock
# is held (here by flock(1) from the test), with a clear message and nothing
# written; a pending generation under a held lock is not called interrupted.
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary
need_fault_hook
need flock

# Starts a process that holds the journal lock and waits until it does. The
# holder blocks (flock without -n), so the probe below, which takes the lock
# for an instant, can never make it give up.
hold_lock() {
    (flock 9 && exec sleep 30) 9> "$1/var/lib/passthru/lock" &
    holder=$!
    for _ in $(seq 100); do
        if ! flock -n "$1/var/lib/passthru/lock" true 2> /dev/null; then
            return 0
        fi
        sleep 0.1
    done
    fail "the test could not take the journal lock"
}

for host in "${VARIANTS[@]}"; do
    R=$T/$host
    copy_host "$host" "$R"
    S0=$(tree_sum "$R")
    mkdir -p "$R/var/lib/passthru"
    hold_lock "$R"
    expect_rc 1 "$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2> "$T/lock.err"
    grep -q 'another passthru apply or rollback is running' "$T/lock.err" || { cat "$T/lock.err"; fail "$host: no clear message"; }
    [[ $(tree_sum "$R") == "$S0" ]] || fail "$host: the refused apply wrote something"
    [[ ! -e $R/var/lib/passthru/generations ]] || fail "$host: the refused apply made a generation"
    expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --dry-run > /dev/null 2>&1 # the dry run needs no lock
    kill "$holder"; wait "$holder" 2> /dev/null || true
    ok "$host: concurrent apply refused while the lock is held"

    # A generation that is pending while another process holds the lock is a
    # running apply, not an interrupted one.
    # Killed at its first command, when the files are written and the generation is pending.
    cp -a "$R" "$T/trace-root"
    PASSTHRU_TEST_FAULT_TRACE=1 "$PF" --root "$T/trace-root" apply "${REQ[@]}" --yes > /dev/null 2> "$T/trace.all"
    rm -rf "$T/trace-root"
    cmd_point=$(grep '^fault-point ' "$T/trace.all" | grep -n ' command ' | head -1 | cut -d: -f1)
    [[ -n $cmd_point ]] || fail "$host: no command among the fault points"
    PASSTHRU_TEST_FAULT=kill@$cmd_point "$PF" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2>&1 || true
    grep -q '"state": "pending"' "$R"/var/lib/passthru/generations/1/manifest.json || fail "$host: no pending generation to test with"
    hold_lock "$R"
    "$P" --root "$R" history > "$T/h.out" 2> "$T/h.err"
    ! grep -q 'was interrupted' "$T/h.err" || fail "$host: a running apply was called interrupted"
    grep -q 'pending (running)' "$T/h.out" || fail "$host: history does not show the running generation"
    expect_rc 1 "$P" --root "$R" rollback --yes > /dev/null 2>&1
    kill "$holder"; wait "$holder" 2> /dev/null || true
    "$P" --root "$R" history > /dev/null 2> "$T/h.err"
    grep -q 'was interrupted' "$T/h.err" || fail "$host: interrupted generation not reported once the lock is free"
    expect_rc 0 "$P" --root "$R" rollback --yes > /dev/null 2>&1
    [[ $(tree_sum "$R") == "$S0" ]] || fail "$host: recovery after the lock test differs"
    ok "$host: pending under a held lock = running; once free = interrupted, recovered"
done
