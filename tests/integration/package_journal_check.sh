#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The maintainer scripts' "still applied" check (packaging/debian/
# journal-check.sh) reads real journals right: nothing on a fresh host; the
# generation and its files after `passthru apply`; nothing after
# `passthru rollback`; an unfinished (pending) generation is reported.
set -euo pipefail
: "${PASSTHRU:?}" "${PASSTHRU_SOURCE_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=../../packaging/debian/journal-check.sh
. "$PASSTHRU_SOURCE_DIR/packaging/debian/journal-check.sh"

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

cp -a "$PASSTHRU_SOURCE_DIR/tests/fixtures/hosts/epyc-4x2080ti" "$tmp/host"
out=$(passthru_applied "$tmp/host")
[[ -z $out ]] || fail "a host without a journal reports: $out"

"$PASSTHRU" --root "$tmp/host" apply --vm 101 --gpus 0,1,2,3 --yes >"$tmp/apply.log" 2>&1 ||
    { cat "$tmp/apply.log" >&2; echo "FAIL: apply on the sample host copy failed" >&2; exit 1; }
out=$(passthru_applied "$tmp/host")
echo "after apply:"
echo "$out"
[[ $(grep -c 'generation' <<<"$out") == 1 ]] || fail "after one apply, expected one applied generation: $out"
grep -q 'generation [0-9]*1, applied:.* /etc/modprobe.d/passthru-vfio.conf' <<<"$out" ||
    fail "the applied generation does not list its files: $out"

"$PASSTHRU" --root "$tmp/host" rollback --yes >"$tmp/rollback.log" 2>&1 ||
    { cat "$tmp/rollback.log" >&2; echo "FAIL: rollback failed" >&2; exit 1; }
out=$(passthru_applied "$tmp/host")
[[ -z $out ]] || fail "after rollback, still reported as applied: $out"

# An interrupted transaction: a manifest left pending.
manifest=$(ls "$tmp"/host/var/lib/passthru/generations/*/manifest.json | head -n 1)
sed -i 's/^  "state": "[a-z-]*"/  "state": "pending"/' "$manifest"
out=$(passthru_applied "$tmp/host")
grep -q 'interrupted (pending)' <<<"$out" || fail "a pending generation is not reported: $out"

# An unreadable manifest counts as applied.
mkdir -p "$tmp/host/var/lib/passthru/generations/9999"
echo '{' >"$tmp/host/var/lib/passthru/generations/9999/manifest.json"
out=$(passthru_applied "$tmp/host")
grep -q 'generation 9999, unreadable manifest' <<<"$out" || fail "an unreadable manifest is not reported: $out"

if ((failures > 0)); then
    exit 1
fi
echo "journal check: ok"
