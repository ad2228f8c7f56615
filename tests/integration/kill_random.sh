#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# kill -9 at random moments: unlike apply_faults, which kills at
# each fault point the test-only hook knows, this kills the release binary
# with a real SIGKILL after a random delay, during an apply
# or during the rollback of an applied generation, wherever the process is:
# between system calls, inside a write, an fsync or a rename. Then `rollback`
# (recovery of an interrupted generation, and the rollback of what was
# applied) must bring the tree back byte for byte: contents, modes, owners,
# symlinks, and no temporary file or directory left behind.
# PASSTHRU_KILL_RUNS sets the number of runs (CI: 40, about a minute; a long
# campaign: e.g. 400). The delays spread over the time a clean apply takes.
source "$(dirname "$0")/lib.inc"
need_binary

RUNS=${PASSTHRU_KILL_RUNS:-40}
HOST=epyc-4x2080ti
R=$T/root
copy_host "$HOST" "$R"
S0=$(tree_sum "$R")

# The span of the delays: the longest of three clean applies and of three
# rollbacks here, in milliseconds.
span_apply=0
span_rollback=0
for ((i = 0; i < 3; i++)); do
    t0=$(date +%s%N)
    expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2>&1
    t1=$(date +%s%N)
    expect_rc 0 "$P" --root "$R" rollback --yes > /dev/null 2>&1
    t2=$(date +%s%N)
    span_apply=$(((t1 - t0) / 1000000 > span_apply ? (t1 - t0) / 1000000 : span_apply))
    span_rollback=$(((t2 - t1) / 1000000 > span_rollback ? (t2 - t1) / 1000000 : span_rollback))
done
[[ $(tree_sum "$R") == "$S0" ]] || fail "a clean apply and rollback did not restore the tree"

# killed_after MS CMD...: runs CMD, kills it with SIGKILL after MS
# milliseconds unless it ended before, and waits until it is gone (its
# descriptors, the journal lock's among them, closed); its exit code in RC.
killed_after() {
    local ms=$1 pid
    shift
    "$@" > /dev/null 2>&1 &
    pid=$!
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
    kill -KILL "$pid" 2> /dev/null || true
    RC=0
    wait "$pid" 2> /dev/null || RC=$?
}

# settle: rollback until nothing is left to undo (at most 4 times); every
# rollback must succeed, the last must say there is nothing (exit 0 too).
settle() {
    local i rc
    for ((i = 0; i < 4; i++)); do
        rc=0
        "$P" --root "$R" rollback --yes > "$T/out" 2> "$T/err" || rc=$?
        if [[ $rc -ne 0 ]]; then
            fail "run $run: rollback exit $rc: $(head -1 "$T/err")"
            return 1
        fi
        grep -q '^Nothing to roll back' "$T/out" && return 0
    done
    fail "run $run: still something to roll back after 4 rollbacks"
}

killed=0
for ((run = 0; run < RUNS; run++)); do
    copy_host "$HOST" "$R"
    if ((run % 3 == 2)); then
        phase=rollback
        expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2>&1
        delay=$((RANDOM % (span_rollback + 1)))
        killed_after "$delay" "$P" --root "$R" rollback --yes
    else
        phase=apply
        delay=$((RANDOM % (span_apply + 1)))
        killed_after "$delay" "$P" --root "$R" apply "${REQ[@]}" --yes
    fi
    [[ $RC -eq 137 ]] && killed=$((killed + 1))
    [[ $RC -eq 0 || $RC -eq 137 ]] || fail "run $run: $phase killed after $delay ms: exit $RC"
    settle || break
    if [[ $(tree_sum "$R") != "$S0" ]]; then
        fail "run $run: $phase killed after $delay ms: the tree differs after rollback"
        diff <(cd "$T/pristine/$HOST" && find . -printf '%p %m\n' | LC_ALL=C sort) \
            <(cd "$R" && find . -path ./var/lib/passthru -prune -o -printf '%p %m\n' | LC_ALL=C sort) | head -5 >&2 || true
        break
    fi
done
[[ $run -lt $RUNS || $killed -ge $((RUNS / 4)) ]] || fail "only $killed of $RUNS runs were killed (delays up to $span_apply/$span_rollback ms): the campaign missed the commands"
finish "$RUNS runs of apply or rollback, SIGKILL after a random delay (up to $span_apply ms / $span_rollback ms; $killed killed mid-command): byte-identical after rollback every time"
