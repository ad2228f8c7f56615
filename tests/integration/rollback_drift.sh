#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# rollback refuses when a file changed since it was applied (exit 1, nothing
# written) unless --force, which keeps the hand edit in the journal; the
# interrupted-generation notice; rollback --dry-run writes nothing. Crash
# recovery runs the same check: a file edited after the crash is refused
# (exit 1, --dry-run too) unless --force, which keeps the edit under the
# generation's kept/ before restoring.
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary
need_fault_hook

for host in "${VARIANTS[@]}"; do
    R=$T/$host
    copy_host "$host" "$R"
    S0=$(tree_sum "$R")
    expect_rc 0 "$P" --root "$R" rollback --yes > "$T/none.out" 2> /dev/null
    grep -q '^Nothing to roll back: no generation was ever recorded' "$T/none.out" || fail "$host: rollback without history not explained"
    expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2>&1
    conf=$R/etc/modprobe.d/passthru-vfio.conf
    [[ -f $conf ]] || fail "$host: $conf was not written"
    echo "# admin edit" >> "$conf"
    S1=$(tree_sum "$R")
    expect_rc 1 "$P" --root "$R" rollback --yes > /dev/null 2> "$T/drift.err"
    grep -q 'changed since generation 1 was applied: /etc/modprobe.d/passthru-vfio.conf' "$T/drift.err" || { cat "$T/drift.err"; fail "$host: drift not reported"; }
    grep -q -- '--force' "$T/drift.err" || fail "$host: no --force hint"
    [[ $(tree_sum "$R") == "$S1" ]] || fail "$host: refused rollback wrote something"
    expect_rc 0 "$P" --root "$R" rollback --force --dry-run > /dev/null 2>&1
    [[ $(tree_sum "$R") == "$S1" ]] || fail "$host: rollback --dry-run wrote something"
    expect_rc 0 "$P" --root "$R" rollback --yes --force > /dev/null 2>&1
    [[ $(tree_sum "$R") == "$S0" ]] || fail "$host: forced rollback did not restore the tree"
    grep -q '# admin edit' "$R/var/lib/passthru/generations/2/before/etc/modprobe.d/passthru-vfio.conf" \
        || fail "$host: the hand edit was not kept in the rollback generation"
    ok "$host: drift refused, --force restores and keeps the edit in the journal"
done

# Recovery: an apply killed before it touched any host file (at the fault
# point of its first write under /etc), then the admin edits the VM config.
# The interrupted generation names 101.conf, whose content is now neither
# what it was before nor what the apply would have written.
host=epyc-4x2080ti
R=$T/recovery
copy_host "$host" "$R"
S0=$(tree_sum "$R")
PASSTHRU_TEST_FAULT_TRACE=1 "$PF" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2> "$T/trace.all"
n=$(awk '$1 == "fault-point" && $3 != "journal-pre-image" && $4 ~ /^\/etc\// { print $2; exit }' "$T/trace.all")
[[ -n $n ]] || fail "recovery: no fault point writes under /etc"
copy_host "$host" "$R"
expect_rc 137 env PASSTHRU_TEST_FAULT="kill@$n" "$PF" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2>&1
[[ $(tree_sum "$R") == "$S0" ]] || fail "recovery: the killed apply already changed the host"
vmconf=$R/etc/pve/qemu-server/101.conf
own_copy "$vmconf"
echo "# admin edit after the crash" >> "$vmconf"
S1=$(tree_sum --with-journal "$R")
for dry in --dry-run ""; do
    # shellcheck disable=SC2086
    expect_rc 1 "$P" --root "$R" rollback --yes $dry > /dev/null 2> "$T/rec.err"
    grep -q 'changed since generation 1 was interrupted: /etc/pve/qemu-server/101.conf' "$T/rec.err" \
        || fail "recovery ${dry:-without --dry-run}: the edit after the crash was not reported: $(head -3 "$T/rec.err")"
    grep -q -- '--force' "$T/rec.err" || fail "recovery: no --force hint"
    [[ $(tree_sum --with-journal "$R") == "$S1" ]] || fail "recovery ${dry:-without --dry-run}: a refused recovery wrote something"
done
expect_rc 0 "$P" --root "$R" rollback --force --dry-run > /dev/null 2> "$T/rec.err"
grep -q '101.conf was changed since generation 1 was interrupted' "$T/rec.err" || fail "recovery --force --dry-run: no warning"
[[ $(tree_sum --with-journal "$R") == "$S1" ]] || fail "recovery --force --dry-run wrote something"
expect_rc 0 "$P" --root "$R" rollback --yes --force > /dev/null 2>&1
[[ $(tree_sum "$R") == "$S0" ]] || fail "recovery --force did not restore the tree"
grep -q '# admin edit after the crash' "$R/var/lib/passthru/generations/1/kept/etc/pve/qemu-server/101.conf" \
    || fail "recovery --force: the edit after the crash was not kept"
ok "recovery: a file edited after the crash is refused (--dry-run too); --force restores and keeps the edit"
