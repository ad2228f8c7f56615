#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The maintainer scripts' "still applied" check (packaging/debian/
# journal-check.sh) reads real journals right: nothing on a fresh host; the
# generation and its files after `passthru apply`; nothing after
# `passthru rollback`; an unfinished (pending) generation is reported.
source "$(dirname "$0")/lib.inc"
need_binary
# shellcheck source=../../packaging/debian/journal-check.sh
. "$PASSTHRU_SOURCE_DIR/packaging/debian/journal-check.sh"

cp -a "$FIXTURES/epyc-4x2080ti" "$T/host"
out=$(passthru_applied "$T/host")
[[ -z $out ]] || fail "a host without a journal reports: $out"

"$PASSTHRU" --root "$T/host" apply --vm 101 --gpus 0,1,2,3 --yes >"$T/apply.log" 2>&1 ||
    { cat "$T/apply.log" >&2; fatal "apply on the sample host copy failed"; }
out=$(passthru_applied "$T/host")
echo "after apply:"
echo "$out"
[[ $(grep -c 'generation' <<<"$out") == 1 ]] || fail "after one apply, expected one applied generation: $out"
grep -q 'generation [0-9]*1, applied:.* /etc/modprobe.d/passthru-vfio.conf' <<<"$out" ||
    fail "the applied generation does not list its files: $out"

"$PASSTHRU" --root "$T/host" rollback --yes >"$T/rollback.log" 2>&1 ||
    { cat "$T/rollback.log" >&2; fatal "rollback failed"; }
out=$(passthru_applied "$T/host")
[[ -z $out ]] || fail "after rollback, still reported as applied: $out"

# An interrupted transaction: a manifest left pending.
manifest=$(ls "$T"/host/var/lib/passthru/generations/*/manifest.json | head -n 1)
sed -i 's/^  "state": "[a-z-]*"/  "state": "pending"/' "$manifest"
out=$(passthru_applied "$T/host")
grep -q 'interrupted (pending)' <<<"$out" || fail "a pending generation is not reported: $out"

# An unreadable manifest counts as applied.
mkdir -p "$T/host/var/lib/passthru/generations/9999"
echo '{' >"$T/host/var/lib/passthru/generations/9999/manifest.json"
out=$(passthru_applied "$T/host")
grep -q 'generation 9999, unreadable manifest' <<<"$out" || fail "an unreadable manifest is not reported: $out"

finish "journal check"
