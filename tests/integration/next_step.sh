#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The first commands a new user types, on one fixture copy: plan prints its
# next step last, and every passthru command it prints carries --root; a
# pipe reads stdout and stderr in order; apply prints each note once;
# rollback shows what it restores and, without a terminal and without
# --yes, refuses (exit 2) and restores nothing; a rollback with nothing to
# undo is exit 0; verify on the unbooted copy says so first and groups its
# failures per card; verify --vm 101 checks the kernel command line as plain
# verify does, and before apply names the VM it was given.
source "$(dirname "$0")/lib.inc"
need_binary

R=$T/host
copy_host epyc-4x2080ti "$R"

# verify --vm 101 before any apply: the message names the VM, not "give --vm".
own_copy "$R/etc/pve/qemu-server/101.conf"
sed -i '/^hostpci/d' "$R/etc/pve/qemu-server/101.conf"
"$P" --root "$R" verify --vm 101 > "$T/v0.out" 2> "$T/v0.err" || true
grep -q 'give --vm' "$T/v0.out" "$T/v0.err" && fail "verify --vm 101 says 'give --vm': $(grep -h 'give --vm' "$T/v0.out" "$T/v0.err")"
grep -q "VM 101's config passes no PCI device yet" "$T/v0.out" || fail "verify --vm 101 does not name the VM: $(cat "$T/v0.out")"
copy_host epyc-4x2080ti "$R"
ok "verify --vm 101 before apply names VM 101, not 'give --vm VMID'"

# plan: the next step is the last line, names the pending plan, carries --root.
expect_rc 0 "$P" --root "$R" plan "${REQ[@]}" > "$T/plan.out" 2> "$T/plan.err"
last=$(tail -n 1 "$T/plan.out")
[[ $last == "Next step: passthru --root $R apply  ("* ]] || fail "plan: the last line is not the next step: $last"
grep -h -v '^[-+@]' "$T/plan.out" "$T/plan.err" | grep -o 'passthru [^ ]*' | grep -v '^passthru --root$' > "$T/bare" || true
[[ ! -s $T/bare ]] || fail "plan printed passthru commands without --root: $(sort -u "$T/bare" | tr '\n' ' ')"
grep -q 'Apply with' "$T/plan.out" && fail "plan still prints 'Apply with'"
ok "plan --root: the next step comes last and every passthru command carries --root"

# apply --dry-run through one pipe: stdout (the plan, its next step) before the note on stderr.
"$P" --root "$R" apply --dry-run > "$T/dry.all" 2>&1
[[ $(tail -n 1 "$T/dry.all") == "passthru: note: dry run: nothing was written" ]] || fail "dry run: the note is not last: $(tail -n 2 "$T/dry.all")"
[[ $(tail -n 2 "$T/dry.all" | head -n 1) == "$last" ]] || fail "dry run: stdout did not come before stderr: $(tail -n 3 "$T/dry.all")"
ok "a pipe reads stdout before the stderr that follows it"

# apply --yes: each note once, no advice to run apply.
expect_rc 0 "$P" --root "$R" apply --yes > "$T/apply.out" 2> "$T/apply.err"
dup=$(grep -h 'note:' "$T/apply.out" | sed 's/^ *//' | sort | uniq -d)
[[ -z $dup ]] || fail "apply --yes printed a note twice: $dup"
grep -q 'passthru[^ ]* apply\|passthru --root [^ ]* apply' "$T/apply.out" && fail "apply tells the user to run apply: $(grep -h 'apply' "$T/apply.out" | head -3)"
[[ $(tail -n 1 "$T/apply.out") == *"passthru --root $R rollback, then reboot" ]] || fail "apply: the next steps are not last: $(tail -n 1 "$T/apply.out")"
grep -q "^Undo with: passthru --root $R rollback$" "$T/apply.out" || fail "apply: the undo line does not carry --root"
ok "apply --yes: notes once, the next steps last, with --root"

# verify on the copy that has not booted: says so first, failures per card; --vm checks the command line.
"$P" --root "$R" verify > "$T/v1.out" 2> "$T/v1.err" || true
head -n 1 "$T/v1.out" | grep -q '^Not booted with generation 1: ' || fail "verify does not say first that nothing booted: $(head -n 2 "$T/v1.out")"
grep -q '^  card 0000:[0-9a-f:]*:$' "$T/v1.out" || fail "verify does not group the failures per card: $(head -n 12 "$T/v1.out")"
grep -q "^hint: reboot with generation 1 first" "$T/v1.err" || fail "verify: no reboot hint: $(cat "$T/v1.err")"
"$P" --root "$R" verify --vm 101 > "$T/v2.out" 2> /dev/null || true
grep -q "running kernel's command line lacks" "$T/v2.out" || fail "verify --vm 101 skips the kernel command-line check: $(head -n 6 "$T/v2.out")"
head -n 1 "$T/v2.out" | grep -q '^Not booted with generation 1: ' || fail "verify --vm 101 does not say first that nothing booted"
ok "verify: 'not booted' first and per card; --vm 101 checks the kernel command line"

# rollback: shows what it restores, refuses without a terminal and --yes.
S1=$(tree_sum --with-journal "$R")
expect_rc 2 "$P" --root "$R" rollback < /dev/null > "$T/rb.out" 2> "$T/rb.err"
grep -q '^  restore /etc/' "$T/rb.out" || fail "rollback does not show what it restores: $(cat "$T/rb.out")"
grep -q '^passthru: error: refusing to roll back without confirmation: standard input is not a terminal' "$T/rb.err" ||
    fail "rollback refusal not explained: $(cat "$T/rb.err")"
[[ $(tree_sum --with-journal "$R") == "$S1" ]] || fail "the refused rollback changed the tree"
expect_rc 0 "$P" --root "$R" rollback --yes > /dev/null 2>&1
expect_rc 0 "$P" --root "$R" rollback --yes > "$T/rb2.out" 2> /dev/null
grep -q '^Nothing to roll back: no applied generation is active' "$T/rb2.out" || fail "second rollback: $(cat "$T/rb2.out")"
ok "rollback asks (exit 2 without a terminal, nothing restored); nothing to undo is exit 0"

# A mistyped option gets the one it was probably meant to be.
expect_rc 2 "$P" --root "$R" plan --vm 101 --gpu all > /dev/null 2> "$T/typo.err"
grep -q "^passthru: error: plan: unrecognised option '--gpu' (did you mean --gpus?)" "$T/typo.err" || fail "no 'did you mean': $(cat "$T/typo.err")"
ok "--gpu: did you mean --gpus?"

# A read-only root: plan does not record its plan, apply and rollback refuse (exit 2) with the cp -a hint.
RO=$T/ro
copy_host epyc-4x2080ti "$RO"
if unshare -m --propagation private true 2> /dev/null; then
    unshare -m --propagation private bash -c '
        mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 77
        "$2" --root "$1" plan --vm 101 --gpus all > "$3/ro.out" 2> "$3/ro.err"; echo $? > "$3/ro.rc"
        "$2" --root "$1" apply --vm 101 --gpus all --yes > /dev/null 2> "$3/roa.err"; echo $? > "$3/roa.rc"
        "$2" --root "$1" rollback --yes > /dev/null 2> "$3/rorb.err"; echo $? > "$3/rorb.rc"' _ "$RO" "$P" "$T" || true
    if [[ -f $T/ro.rc ]]; then
        [[ $(cat "$T/ro.rc") == 0 ]] || fail "plan on a read-only root: exit $(cat "$T/ro.rc")"
        grep -q "not recorded as the pending plan: $RO is on a read-only file system; copy it somewhere writable first: cp -a" "$T/ro.err" ||
            fail "plan on a read-only root: no note: $(cat "$T/ro.err")"
        [[ $(cat "$T/roa.rc") == 2 && $(cat "$T/rorb.rc") == 2 ]] || fail "apply/rollback on a read-only root: exit $(cat "$T/roa.rc")/$(cat "$T/rorb.rc")"
        grep -q "^hint: copy it somewhere writable first: cp -a" "$T/roa.err" || fail "apply on a read-only root: no cp -a hint: $(cat "$T/roa.err")"
        ok "a read-only root: plan says it did not record, apply and rollback refuse with the cp -a hint"
    else
        echo "note: mount --bind not allowed here: the read-only root is not checked" >&3
    fi
else
    echo "note: no mount namespace here: the read-only root is not checked" >&3
fi

finish "next steps, rollback's question and verify on a copy"
