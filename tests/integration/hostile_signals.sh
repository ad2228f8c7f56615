#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Signals while the network lock-out guard waits (apply --apply-network
# --confirm-timeout): SIGINT and SIGTERM restore the previous network at once
# and undo the generation (exit 1); SIGHUP (the session went away) does not
# stop the guard: a confirm from a new connection still keeps the change;
# and when the applying process dies all the same (SIGKILL) the detached
# restorer puts the previous /etc/network/interfaces back at the deadline,
# leaving the generation interrupted for rollback, as any kill.
source "$(dirname "$0")/lib.inc"
need_binary

net=(--vm 101 --gpus all --bond enp66s0f0,enp66s0f1 --address 192.168.1.252/24 --gateway 192.168.1.1)
route=$'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\nvmbr0\t00000000\t0101A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n'
orig=$FIXTURES/epyc-4x2080ti/etc/network/interfaces

# start_guard NAME [TIMEOUT]: a fresh root $T/NAME and an apply waiting in its guard (pid in GUARD).
start_guard() {
    R=$T/$1
    copy_host epyc-4x2080ti "$R"
    mkdir -p "$R/proc/net"
    printf '%s' "$route" > "$R/proc/net/route"
    S0=$(tree_sum "$R")
    "$P" --root "$R" apply --yes "${net[@]}" --apply-network --confirm-timeout "${2:-60}" > "$T/$1.out" 2>&1 &
    GUARD=$!
    for _ in $(seq 1 300); do
        [[ -f $R/var/lib/passthru/network-confirm.pending ]] && break
        sleep 0.05
    done
    [[ -f $R/var/lib/passthru/network-confirm.pending ]] || fatal "$1: the guard never waited: $(tail -3 "$T/$1.out")"
    cmp -s "$R/etc/network/interfaces" "$orig" && fatal "$1: the guard waits but the new network file is not in place"
    return 0
}

no_handshake_left() {
    local f
    for f in "$R"/var/lib/passthru/network-confirm.*; do
        [[ -e $f ]] && fail "$1: $(basename "$f") left behind"
    done
    return 0
}

# SIGINT, SIGTERM: restored at once, exit 1, the tree as before.
for sig in INT TERM QUIT; do
    start_guard "sig$sig"
    kill -s "$sig" "$GUARD"
    rc=0
    timeout 20 tail --pid="$GUARD" -f /dev/null || fail "SIG$sig: the apply did not end"
    wait "$GUARD" || rc=$?
    [[ $rc -eq 1 ]] || fail "SIG$sig during the guard: exit $rc, expected 1: $(tail -3 "$T/sig$sig.out")"
    grep -q "interrupted by SIG$sig: restoring the previous network configuration" "$T/sig$sig.out" \
        || fail "SIG$sig: the guard did not say it restores: $(tail -3 "$T/sig$sig.out")"
    cmp -s "$R/etc/network/interfaces" "$orig" || fail "SIG$sig: the previous interfaces file is not back"
    [[ $(tree_sum "$R") == "$S0" ]] || fail "SIG$sig: the host tree is not as before the apply"
    no_handshake_left "SIG$sig"
done
stop_if_failed
ok "SIGINT, SIGTERM, SIGQUIT while the guard waits: previous network back at once, generation undone (exit 1)"

# SIGHUP: the guard goes on; a confirm from a new connection keeps the change.
start_guard hup
kill -s HUP "$GUARD"
sleep 0.6
kill -0 "$GUARD" 2> /dev/null || fail "SIGHUP ended the apply while its guard waited: $(tail -3 "$T/hup.out")"
"$P" --root "$R" confirm > "$T/confirm.out" 2>&1 || fail "confirm after the hang-up: $(cat "$T/confirm.out")"
rc=0
wait "$GUARD" || rc=$?
[[ $rc -eq 0 ]] || fail "confirmed after SIGHUP: exit $rc: $(tail -3 "$T/hup.out")"
cmp -s "$R/etc/network/interfaces" "$orig" && fail "confirmed after SIGHUP: the new network file is gone"
no_handshake_left hup
stop_if_failed
ok "SIGHUP while the guard waits: it goes on waiting, and a confirm keeps the change (exit 0)"

# SIGHUP, then SIGKILL: the detached restorer restores at the deadline.
start_guard kill 10
kill -s HUP "$GUARD"
sleep 0.3
kill -9 "$GUARD"
wait "$GUARD" 2> /dev/null || true
start=$SECONDS
while [[ -e $R/var/lib/passthru/network-confirm.pending || -e $R/var/lib/passthru/network-confirm.restoring ]] \
    && ((SECONDS - start < 20)); do
    sleep 0.2
done
cmp -s "$R/etc/network/interfaces" "$orig" || fail "killed apply: the previous interfaces file is not back at the deadline"
no_handshake_left kill
"$P" --root "$R" rollback --yes > "$T/rollback.out" 2>&1 || fail "rollback after the killed apply: $(tail -3 "$T/rollback.out")"
[[ $(tree_sum "$R") == "$S0" ]] || fail "killed apply, rolled back: the host tree is not as before"
finish "SIGKILL while the guard waits: the previous network is back at the deadline; rollback undoes the rest"
