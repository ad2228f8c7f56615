#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# apply's own Lows of hostile input:
#  - apply over a trial that is not confirmed is refused (exit 3, nothing
#    written): else confirm found nothing to confirm while the trial's
#    watchdog still rebooted into the default entry;
#  - a local file (--plan, --node-scan, --kernel-log) is looked at before it is
#    opened: a FIFO's writer is not woken (as opening /dev/watchdog would arm it);
#  - confirm takes the request in a trial's manifest only as the trial applied
#    it (its cards, the guest configs it wrote): an edited one is refused;
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

# --- confirm takes a trial's request only as the trial applied it ---------------
# confirm plans from the request in the trial's manifest: an edited request (other
# cards, another VM profile) became the default. The request must agree with what the
# generation recorded: its cards, and guest configs the trial wrote. Exit 3,
# nothing written; the manifest put back, confirm goes through.
R=$T/confirm
copy_host qemu-intel-vfio "$R"
rm "$R"/etc/default/grub.d/passthru.cfg "$R"/etc/modprobe.d/passthru-vfio.conf "$R"/etc/modules-load.d/vfio.conf
run_rc "$P" --root "$R" apply --trial --vm 101 --gpus 0000:04:00 --yes
[[ $RC -eq 0 ]] || fatal "apply --trial on the QEMU host: exit $RC: $(head -2 "$T/err")"
own_copy "$R/proc/cmdline"
echo "console=ttyS0 panic=-1 intel_iommu=on iommu=pt passthru.trial systemd.wants=passthru-trial.timer" > "$R/proc/cmdline"
m=$R/var/lib/passthru/generations/1/manifest.json
cp "$m" "$T/manifest.orig"
for edit in 'r["gpus"] = "0000:00:01,0000:04:00"' 'r["vm_profile"] = "windows"'; do
    python3 - "$T/manifest.orig" "$m" "$edit" << 'PY2'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["request"]
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"), indent=2)
PY2
    S1=$(tree_sum --with-journal "$R")
    run_rc "$P" --root "$R" confirm
    [[ $RC -eq 3 ]] || fail "confirm of an edited request ($edit): exit $RC, expected 3: $(head -2 "$T/err")"
    grep -q "is not what that trial applied" "$T/err" || fail "confirm of an edited request ($edit): not explained: $(head -2 "$T/err")"
    [[ $(tree_sum --with-journal "$R") == "$S1" ]] || fail "confirm of an edited request ($edit) wrote something"
done
cp "$T/manifest.orig" "$m"
run_rc "$P" --root "$R" confirm
[[ $RC -eq 0 ]] && grep -q '^Applied as generation 2: ' "$T/out" || fail "confirm of the trial as applied: exit $RC: $(head -2 "$T/err")"
stop_if_failed
ok "confirm of a trial whose manifest holds another request: exit 3, nothing written; as applied: confirmed"

# --- local files are checked before they are opened --------------------------
R=$T/local
copy_host epyc-4x2080ti "$R"
for opt in "apply --yes --plan" "plan --mapping m --gpus all --node-scan gpu7=" "explain 101 --kernel-log"; do
    fifo=$T/fifo.$RANDOM
    mkfifo "$fifo"
    rm -f "$T/woken"
    # the writer's open returns only once someone opens the FIFO for reading
    (exec 3> "$fifo" && echo woken > "$T/woken") &
    writer=$!
    args=($opt)
    last=${args[-1]}
    unset 'args[-1]'
    if [[ $last == *= ]]; then args+=("$last$fifo"); else args+=("$last" "$fifo"); fi
    run_rc timeout 20 "$P" --root "$R" "${args[@]}"
    [[ $RC -eq 2 ]] || fail "$opt FIFO: exit $RC, expected 2: $(head -2 "$T/err")"
    grep -q 'not a regular file' "$T/err" || fail "$opt FIFO: not explained: $(head -2 "$T/err")"
    sleep 0.2
    [[ -e $T/woken ]] && fail "$opt FIFO: the FIFO was opened before it was checked (its writer woke)"
    kill "$writer" 2> /dev/null || true
    wait "$writer" 2> /dev/null || true
done
stop_if_failed
ok "--plan, --node-scan, --kernel-log of a FIFO: exit 2 without opening it"

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
