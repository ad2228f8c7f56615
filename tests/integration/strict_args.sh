#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every word checked: a word a command does not take (a stray word, an unknown
# or abbreviated option, a command's option before the command) is a usage
# error: exit 2, one line on stderr that names the word and gives the
# command's usage, and nothing written under the root (no pending plan, no
# lock, no generation). The host copy has an applied generation and a
# pending plan, so that each command without the stray word would act
# (rollback would restore, apply would apply, confirm would check).
source "$(dirname "$0")/lib.inc"
need_binary

R=$T/host
copy_host epyc-4x2080ti "$R"
"$P" --root "$R" apply --yes "${REQ[@]}" > /dev/null 2>&1 || fatal "setup: apply failed"
"$P" --root "$R" plan --vm 101 --gpus 0 > /dev/null 2>&1 || fatal "setup: plan failed"
[[ -f $R/var/lib/passthru/pending-plan.json ]] || fatal "setup: no pending plan recorded"
"$P" --root "$R" plan "${REQ[@]}" --out "$T/saved.json" > /dev/null 2>&1 || fatal "setup: plan --out failed"
S0=$(tree_sum --with-journal "$R")

# Each row: the word the error must name, then the arguments after --root DIR.
# --root DIR always comes first, so that no row can reach this machine's /.
CASES=(
    "stray-word|scan stray-word"
    "stray-word|scan --json stray-word"
    "stray-word|scan -- stray-word"
    "--bogus|scan --bogus"
    "--operand|apply --yes --operand $T/saved.json"
    "stray-word|plan --vm 101 --gpus all stray-word"
    "stray-word|plan stray-word --vm 101 --gpus all"
    "stray-word|plan --vm 101 --gpus all --out $T/new.json stray-word"
    "--gp|plan --vm 101 --gp all"
    "--out-file|plan --vm 101 --gpus all --out-file $T/new.json"
    "stray-word|apply --dry-run $T/saved.json stray-word"
    "stray-word|apply --yes $T/saved.json stray-word"
    "stray-word|apply --yes --vm 101 --gpus all stray-word"
    "$T/saved.json|apply --yes --plan $T/saved.json $T/saved.json"
    "--ye|apply --ye"
    "stray-word|verify stray-word"
    "stray-word|verify --vm 101 stray-word"
    "stray-word|history stray-word"
    "stray-word|history --json stray-word"
    "stray-word|rollback stray-word"
    "stray-word|rollback --dry-run stray-word"
    "stray-word|rollback --to 1 stray-word"
    "stray-word|rollback --force stray-word"
    "--ro|rollback --ro $R"
    "stray-word|confirm stray-word"
    "--yes|confirm --yes"
    "--json|--json scan"
    "--dry-run|--dry-run rollback"
)

for row in "${CASES[@]}"; do
    word=${row%%|*}
    read -r -a args <<< "${row#*|}"
    rc=0
    "$P" --root "$R" "${args[@]}" > "$T/out" 2> "$T/err" < /dev/null || rc=$?
    what="'${args[*]}'"
    [[ $rc -eq 2 ]] || fail "$what: exit $rc, not 2 (usage)"
    lines=$(wc -l < "$T/err")
    [[ $lines -eq 1 ]] || fail "$what: $lines lines on stderr, not one: $(cat "$T/err")"
    grep -qF "'$word'" "$T/err" || fail "$what: the error does not name '$word': $(cat "$T/err")"
    grep -q '^passthru: error: .*usage: passthru \[--root DIR\]' "$T/err" || fail "$what: the error gives no usage: $(cat "$T/err")"
    [[ $(tree_sum --with-journal "$R") == "$S0" ]] || fatal "$what: the tree changed (journal, pending plan or lock included)"
    [[ ! -e $T/new.json ]] || fatal "$what: wrote $T/new.json"
    ok "$what: exit 2, one line naming '$word', nothing written"
done

# The same words without the stray one are taken (the table's rows fail only
# for the word, not for something else): a read-only command and a dry run.
expect_rc 0 "$P" --root "$R" scan --json > /dev/null 2>&1
expect_rc 0 "$P" --root "$R" rollback --dry-run > /dev/null 2>&1
expect_rc 0 "$P" --root "$R" history --json > /dev/null 2>&1
[[ $(tree_sum --with-journal "$R") == "$S0" ]] || fail "the read-only commands changed the tree"

# Global options may still follow the command, and --opt=VALUE still works.
expect_rc 0 "$P" scan --root "$R" > /dev/null 2>&1
expect_rc 0 "$P" --root="$R" --color=never scan > /dev/null 2>&1
finish "every stray word is refused with exit 2 and nothing written"
