#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# plan --out FILE writes only a regular file: a FIFO, a symlink (dangling or
# not) or a device at FILE is refused (exit 3) and left as it was, with no
# temporary file beside it; a regular FILE is replaced; --out - writes the
# JSON plan to standard output (not to a file named "-") and records no
# pending plan. Every target is a node of this test's own directory: the
# device is a private node made with mknod, never this machine's /dev/null.
source "$(dirname "$0")/lib.inc"
need_binary
need mkfifo

R=$T/host
copy_host epyc-4x2080ti "$R"
D=$T/out
mkdir "$D"
S0=$(tree_sum --with-journal "$R")

# refused NAME KIND: plan --out D/NAME exits 3 naming KIND, nothing beside it.
refused() {
    local before
    before=$(cd "$D" && ls -lA --time-style=+ | sha256sum)
    expect_rc 3 "$P" --root "$R" plan --vm 101 --gpus all --out "$D/$1" > /dev/null 2> "$T/err"
    grep -q "$D/$1 is $2, not a regular file" "$T/err" || fail "--out $1: the refusal does not say it is $2: $(cat "$T/err")"
    [[ $(cd "$D" && ls -lA --time-style=+ | sha256sum) == "$before" ]] || fail "--out $1: the directory changed"
}

mkfifo "$D/fifo"
refused fifo "a FIFO"
[[ -p $D/fifo ]] || fail "the FIFO was replaced"

echo keep > "$D/target"
ln -s "$D/target" "$D/link"
refused link "a symbolic link"
[[ -L $D/link && $(cat "$D/target") == keep ]] || fail "the symlink or its target was replaced"
ln -s "$D/nowhere" "$D/dangling"
refused dangling "a symbolic link"
[[ -L $D/dangling && ! -e $D/nowhere ]] || fail "the dangling symlink was replaced or followed"

# A character device of its own (1,3 is what /dev/null is): only where this
# test may make device nodes.
if mknod "$D/null" c 1 3 2> /dev/null; then
    refused null "a character device"
    [[ -c $D/null ]] || fail "the device node was replaced"
    rm -f "$D/null"
else
    echo "note: mknod not permitted here: the device case is left out"
fi
ok "a FIFO, a symlink and a device are refused (exit 3) and left as they were"

echo old > "$D/plan.json"
expect_rc 0 "$P" --root "$R" plan --vm 101 --gpus all --out "$D/plan.json" > /dev/null 2>&1
[[ -f $D/plan.json && ! -L $D/plan.json ]] || fail "a regular --out file was not replaced by a regular file"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$D/plan.json" || fail "--out FILE does not hold a JSON plan"
ok "a regular file is replaced by the plan"

(cd "$D" && "$P" --root "$R" plan --vm 101 --gpus all --out - > "$T/stdout.json" 2> /dev/null) || fail "plan --out - failed"
[[ ! -e $D/- ]] || fail "--out - wrote a file named -"
cmp -s "$T/stdout.json" "$D/plan.json" || fail "--out - does not print the plan --out FILE saves"
[[ ! -e $R/var/lib/passthru/pending-plan.json ]] || fail "--out - recorded a pending plan"
[[ $(tree_sum --with-journal "$R") == "$S0" ]] || fail "plan --out wrote under the root"
finish "--out - prints the JSON plan on stdout"
