#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# apply's own Lows of hostile input:
#  - apply over a trial that is not confirmed is refused (exit 3, nothing
#    written): else confirm found nothing to confirm while the trial's
#    watchdog still rebooted into the default entry;
#  - apply --dry-run of a tampered pending plan refuses before it prints any
#    of the plan's diffs (the diffs are not passthru's).
source "$(dirname "$0")/lib.inc"
need_binary
need python3

run_rc() {
    RC=0
    "$@" > "$T/out" 2> "$T/err" || RC=$?
}

# --- apply over an unconfirmed trial ------------------------------------------
R=$T/trial
copy_host epyc-4x2080ti "$R"
run_rc "$P" --root "$R" apply --trial --vm 101 --gpus all --yes
[[ $RC -eq 0 ]] || fatal "apply --trial: exit $RC: $(head -2 "$T/err")"
S1=$(tree_sum --with-journal "$R")
run_rc "$P" --root "$R" apply --vm 101 --gpus 0 --yes
[[ $RC -eq 3 ]] || fail "apply over an unconfirmed trial: exit $RC, expected 3: $(head -2 "$T/err")"
grep -q 'is a trial boot that is not confirmed' "$T/err" || fail "apply over the trial: not explained: $(head -2 "$T/err")"
[[ $(tree_sum --with-journal "$R") == "$S1" ]] || fail "apply over the trial wrote something"
stop_if_failed
ok "apply over an unconfirmed trial: exit 3, nothing written"

# --- apply --dry-run of a tampered pending plan -------------------------------
R=$T/pending
copy_host epyc-4x2080ti "$R"
run_rc "$P" --root "$R" plan --vm 101 --gpus all
[[ $RC -eq 0 ]] || fatal "plan: exit $RC: $(head -2 "$T/err")"
pend=$R/var/lib/passthru/pending-plan.json
python3 - "$pend" << 'PY'
import json, sys
p = json.load(open(sys.argv[1]))
doc = p.get("plan", p)
f = doc["files"][0]
f["content"] = f["content"] + "\nTAMPERED-LINE\n"
import hashlib
f["after_sha256"] = hashlib.sha256(f["content"].encode()).hexdigest()
json.dump(p, open(sys.argv[1] + ".new", "w"))
PY
mv "$pend.new" "$pend"
run_rc "$P" --root "$R" apply --dry-run
[[ $RC -eq 3 ]] || fail "apply --dry-run of a tampered pending plan: exit $RC, expected 3: $(head -2 "$T/err")"
grep -q 'TAMPERED-LINE' "$T/out" "$T/err" && fail "apply --dry-run printed the tampered plan's diff before refusing"
finish "apply --dry-run of a tampered pending plan refuses before printing any of it (exit 3)"
