#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# On the live root, apply and rollback need euid 0: as another user they
# print one clear line and exit 2 before reading or writing anything. The
# check comes first, so this test never reaches this machine's /etc.
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary
need setpriv
[[ $(id -u) -eq 0 ]] || skip "needs root to switch to an unprivileged user"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_nobody "$P" --version > /dev/null 2>&1 || skip "the binary is not executable by nobody"

for args in "apply --vm 101 --gpus all --yes" "rollback" "rollback --to 1 --force"; do
    rc=0
    # shellcheck disable=SC2086
    as_nobody "$P" --root / $args > "$T/out" 2> "$T/err" || rc=$?
    [[ $rc -eq 2 ]] || fail "'$args' as nobody: exit $rc, expected 2"
    [[ $(grep -c '^passthru: error: ' "$T/err") -eq 1 ]] || fail "'$args': not one error line"
    grep -q 'must run as root' "$T/err" || fail "'$args': unclear message"
    [[ ! -s $T/out ]] || fail "'$args': printed a plan or more before refusing"
done
ok "apply and rollback on the live root as a normal user: one line, exit 2"
# The dry run needs no root, but a live dry run would scan this machine: not here.
