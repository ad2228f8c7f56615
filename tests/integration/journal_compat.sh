#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Journals written by an earlier passthru keep working. The fixture
# tests/fixtures/journals/epyc-4x2080ti-trial is what passthru wrote on a copy
# of hosts/epyc-4x2080ti (apply --vm 101 --gpus all, rollback, apply --trial
# --trial-minutes 7 --vm 101 --gpus all): the files it changed and its
# var/lib/passthru, with what history and verify printed for it then. On a
# fresh copy of the host with that laid over it: history prints the same
# table, history --json the same generations, verify the same checks of
# generation 3, confirm sees the trial, and rollback undoes generation 3 byte
# for byte back to the host as it was.
source "$(dirname "$0")/lib.inc"
need_binary
need jq python3
J=$SRC/tests/fixtures/journals/epyc-4x2080ti-trial
[[ -d $J/root/var/lib/passthru/generations ]] || fatal "the journal fixture $J is missing"
PT() { "$P" --root "$R" --data-dir "$SRC" "$@"; }
# expected FILE: the output passthru printed then, for this root.
expected() { sed "s#@ROOT@#$R#g; s#@SRC@#$SRC#g" "$J/$1"; }

R=$T/host
copy_host epyc-4x2080ti "$R"
start=$(tree_sum "$R")
cp -r "$J/root/." "$R/"
if [[ $(id -u) -ne 0 ]]; then
    # The journal was written as root: rollback restores owner 0, which only
    # root may. Anyone else gets the owners of their own copy.
    for m in "$R"/var/lib/passthru/generations/*/manifest.json; do
        jq --argjson u "$(id -u)" --argjson g "$(id -g)" '.files[].owner = {uid: $u, gid: $g}' "$m" > "$m.new" && mv "$m.new" "$m"
    done
fi

expect_rc 0 PT history > "$T/history.out" 2> "$T/history.err"
diff -u <(expected history.txt) "$T/history.out" > "$T/history.diff" || fail "history differs: $(head -20 "$T/history.diff")"
[[ ! -s $T/history.err ]] || fail "history warns: $(head -3 "$T/history.err")"
ok "history reads the three generations as it did"

# The generations as passthru wrote them; the selected cards may carry more
# members now (name, ids, boot_vga), never other values for the old ones.
expect_rc 0 PT history --json > "$T/history.json"
python3 - "$T/history.json" <(expected history.json) "$(id -u)" "$(id -g)" <<'PY' || fail "history --json differs"
import json, sys
now, then = (json.load(open(p)) for p in sys.argv[1:3])
for g in now["generations"]:
    g["gpus"] = [{k: v for k, v in card.items() if k in ("slot", "functions", "iommu_groups")} for card in g["gpus"]]
if sys.argv[3] != "0":  # the owners rewritten above
    for g in then["generations"]:
        for f in g["files"]:
            f["owner"] = {"uid": int(sys.argv[3]), "gid": int(sys.argv[4])}
if now != then:
    print(json.dumps(now, indent=1, sort_keys=True), file=sys.stderr)
    sys.exit(1)
PY
jq -e '.generations[2].request.trial_minutes == 7 and .generations[1].request == {rollback_to_before: 1}
       and [.generations[2].gpus[].slot] == ["0000:01:00", "0000:41:00", "0000:81:00", "0000:82:00"]
       and (.generations[2].commands | map(.status) | unique) == ["recorded"]' "$T/history.json" > /dev/null ||
    fail "history --json lost the request, the cards or the statuses: $(jq -c '.generations[] | [.request, .gpus]' "$T/history.json")"
ok "history --json: the same generations, requests, cards and statuses"

expect_rc 1 PT verify > "$T/verify.out" 2> /dev/null
diff -u <(expected verify.txt) "$T/verify.out" > "$T/verify.diff" || fail "verify differs: $(head -20 "$T/verify.diff")"
ok "verify checks generation 3's cards and command line as it did"

before=$(tree_sum --with-journal "$R")
expect_rc 3 PT confirm > /dev/null 2> "$T/confirm.err"
grep -q '^passthru: error: not confirmed: this is not the trial boot of generation 3' "$T/confirm.err" ||
    fail "confirm does not see generation 3 as the trial: $(cat "$T/confirm.err")"
[[ $(tree_sum --with-journal "$R") == "$before" ]] || fail "a refused confirm wrote something"
ok "confirm finds the trial of generation 3 (and refuses off its boot)"

expect_rc 0 PT rollback --yes > "$T/rollback.out" 2>&1
grep -q 'grub-editenv /boot/grub/grubenv unset next_entry' "$T/rollback.out" || fail "rollback does not undo grub-reboot: $(cat "$T/rollback.out")"
[[ $(tree_sum "$R") == "$start" ]] || fail "rollback of generation 3 is not byte-identical to the host before"
jq -e '.kind == "rollback" and .undoes == [3] and .request == {rollback_to_before: 3}' "$R/var/lib/passthru/generations/4/manifest.json" > /dev/null ||
    fail "the rollback is not journaled as generation 4 undoing 3"
expect_rc 0 PT history > /dev/null
finish "rollback undoes generation 3 byte for byte; the journal stays readable"
