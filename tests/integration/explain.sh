#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# passthru explain VMID on copies of the epyc-4x2080ti fixture, with failed
# starts laid out as Proxmox VE lays them out (var/log/pve/tasks/index and
# tasks/<last hex digit of the start time>/<UPID>) and kernel logs as syslog,
# dmesg and journalctl -k write them:
#   - every row of profiles/failures.json is found in its captured log
#     (tests/fixtures/explain/signatures.txt), tied to this host's card, and
#     is no longer found once that row is deleted from a copy of the data
#     file given with --data-dir (so each check fails without its row);
#   - an unknown failure exits 1 and shows its line; a start that succeeded,
#     is running or was never recorded exits 0 with "nothing to explain";
#   - hostile input: a garbage task index, a huge line, a binary kernel log,
#     a bad VMID: one clear line, the documented exit code, no crash.
source "$(dirname "$0")/lib.inc"
need_binary
need python3

SIGS=$SRC/tests/fixtures/explain/signatures.txt
START=6564A3F2 # the start time of the failed task (hex, as in the UPID)

# new_host DIR: a copy of the fixture whose VM 101 passes card 0000:01:00.
new_host() {
    copy_host epyc-4x2080ti "$1"
    local conf=$1/etc/pve/qemu-server/101.conf
    own_copy "$conf"
    echo "hostpci0: 0000:01:00,pcie=1,x-vga=1" >> "$conf"
}

# lay_task ROOT VMID START STATUS [LINE...]: one qmstart task (lay_pve_task, lib.inc).
lay_task() {
    local root=$1
    shift
    lay_pve_task "$root" qmstart "$@"
}

# lay_signature ROOT ID: the failed start of VM 101 whose log (task or kernel) holds ID's line.
lay_signature() {
    local root=$1 id=$2 where line
    IFS=$'\t' read -r _ where line < <(grep -P "^$id\t" "$SIGS")
    mkdir -p "$root/var/log"
    if [[ $where == task_log ]]; then
        lay_task "$root" 101 "$START" "start failed: QEMU exited with code 1" "$line"
    else
        lay_task "$root" 101 "$START" "start failed: QEMU exited with code 1"
        printf 'Nov 27 19:40:01 pve kernel: [  812.345678] %s\n' "$line" > "$root/var/log/kern.log"
    fi
}

# causes FILE: the ids of the causes in an explain --json document, one a line.
causes() {
    python3 -c 'import json,sys; [print(c["id"]) for c in json.load(open(sys.argv[1]))["causes"]]' "$1"
}

# --- every row, found and tied to the host; gone without its row ----------------
mapfile -t IDS < <(grep -v '^#' "$SIGS" | cut -f1)
rows=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["failures"]))' "$SRC/profiles/failures.json")
[[ ${#IDS[@]} -eq $rows ]] && ok "one captured failure per row ($rows)" || fail "signatures.txt has ${#IDS[@]} rows, failures.json $rows"

for id in "${IDS[@]}"; do
    H=$T/h-$id
    new_host "$H"
    lay_signature "$H" "$id"
    rc=0
    "$P" --root "$H" explain 101 --json > "$T/$id.json" 2> "$T/$id.err" || rc=$?
    if [[ $rc -eq 0 ]] && causes "$T/$id.json" | grep -qx "$id"; then
        ok "$id: found (exit 0)"
    else
        fail "$id: exit $rc, causes: $(causes "$T/$id.json" 2> /dev/null | tr '\n' ' ') $(cat "$T/$id.err")"
    fi
    # Without its row in a copy of the data file, the same log is not explained.
    D=$T/data-$id
    mkdir -p "$D/profiles"
    python3 - "$SRC/profiles/failures.json" "$D/profiles/failures.json" "$id" << 'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["failures"] = [r for r in doc["failures"] if r["id"] != sys.argv[3]]
json.dump(doc, open(sys.argv[2], "w"), indent=2)
PY
    rc=0
    "$P" --root "$H" --data-dir "$D" explain 101 --json > "$T/$id.without.json" 2> /dev/null || rc=$?
    if ! causes "$T/$id.without.json" | grep -qx "$id"; then
        ok "$id: not found without its row (exit $rc)"
    else
        fail "$id: still found without its row"
    fi
done

# Kernel-log failures alone explain nothing without their row: the start is unexplained.
for id in no-interrupt-remapping flr-not-ready; do
    expect_rc 1 "$P" --root "$T/h-$id" --data-dir "$T/data-$id" explain 101 > /dev/null 2>&1
done
ok "a kernel-log failure without its row leaves the start unexplained (exit 1)"

# --- tied to this host ----------------------------------------------------------------
H=$T/h-group-not-viable
out=$("$P" --root "$H" --color never explain 101)
grep -q "CAUSE group-not-viable (task_log)" <<< "$out" && ok "human output names the cause" || fail "no CAUSE line: $out"
# group 12 holds only the card's own functions: the plan with the card binds them, no split
grep -qxE "\s*run:\s+passthru plan --vm 101 --gpus 0000:01:00" <<< "$out" \
    && ok "the fix is the plan command for this VM's card (the group holds only its functions)" || fail "no plan command: $out"
# another device in the card's group: only splitting the group (or another slot) helps
H2=$T/h-group-foreign
cp -a "$H" "$H2"
other=
for d in "$H2"/sys/bus/pci/devices/*; do
    a=${d##*/}
    if [[ $a != 0000:01:00.* && -e $d/iommu_group && $(cat "$d/class") != 0x0604* && $(cat "$d/class") != 0x0600* ]]; then
        other=$a
        break
    fi
done
[[ -n $other ]] || fail "no device to move into the card's group"
devdir=$(readlink -f "$H2/sys/bus/pci/devices/$other")
old_grp=$(readlink -f "$devdir/iommu_group")
rm "$devdir/iommu_group" "$old_grp/devices/$other"
ln -s "$(realpath --relative-to="$devdir" "$H2/sys/kernel/iommu_groups/12")" "$devdir/iommu_group"
ln -s "$(realpath --relative-to="$H2/sys/kernel/iommu_groups/12/devices" "$devdir")" "$H2/sys/kernel/iommu_groups/12/devices/$other"
out2=$("$P" --root "$H2" --color never explain 101)
grep -qxE "\s*run:\s+passthru plan --vm 101 --gpus 0000:01:00 --acs-override" <<< "$out2" \
    && ok "with $other in the card's group the fix adds --acs-override" || fail "no --acs-override with $other in the group: $out2"
grep -qF "IOMMU group 12 of 0000:01:00.0" <<< "$out" && ok "the cause names the card's group" || fail "group not named: $out"
grep -qF "0000:01:00.1 (snd_hda_intel), 0000:01:00.2 (xhci_hcd), 0000:01:00.3 (nvidia-gpu)" <<< "$out" \
    && ok "the cause names the group's other devices and the drivers holding them" || fail "group members not named: $out"
grep -q "Ubuntu-VM" <<< "$out" && ok "the VM's name comes from its config" || fail "VM name missing: $out"
grep -q "no active generation" <<< "$out" && ok "passthru's journal is read" || fail "no journal note: $out"
python3 - "$T/device-from-group.json" << 'PY' && ok "device-from-group names the driver that holds the function" || fail "driver not named"
import json, sys
c = json.load(open(sys.argv[1]))["causes"][0]
assert "it is bound to nouveau, not vfio-pci" in c["cause"], c["cause"]  # the fixture's driver of 01:00.0
assert c["captures"] == {"pci": "0000:01:00.0", "group": "12"}, c["captures"]
assert c["command"] == "passthru plan --vm 101 --gpus 0000:01:00", c["command"]
PY
python3 - "$T/flr-not-ready.json" << 'PY' && ok "a manual fix has no command; JSON schema passthru.explain/1" || fail "flr-not-ready JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "passthru.explain/1" and d["verdict"] == "explained", d
assert d["task"]["failed"] and d["task"]["log_found"] and d["task"]["log"].startswith("/var/log/pve/tasks/2/UPID:pve:")
c = d["causes"][0]
assert c["command"] is None and c["where"] == "kernel_log" and c["captures"]["ms"] == "65535", c
assert d["unplaced"] == ["TASK ERROR: start failed: QEMU exited with code 1"], d["unplaced"]
PY

python3 - "$T/bar-no-space.json" "$T/bar-cannot-reserve.json" << 'PY' && ok "a BAR's size is read from its range and set against the CPU's address bits" || fail "BAR size"
import json, sys
c = json.load(open(sys.argv[1]))["causes"][0]
assert "BAR 1 of 0000:01:00.0, 32 GiB [mem size 0x800000000 64bit pref]" in c["cause"], c["cause"]
assert "physical address bits" in c["cause"] and "unknown" not in c["cause"], c["cause"]
c = json.load(open(sys.argv[2]))["causes"][0]
assert ", 256 MiB [mem 0xc0000000-0xcfffffff 64bit pref]" in c["cause"], c["cause"]
PY

# A message logged twice (QEMU's reset warning per reset) is one cause.
H=$T/twice
new_host "$H"
line=$(grep -P '^no-reset-mechanism\t' "$SIGS" | cut -f3)
lay_task "$H" 101 "$START" "start failed: QEMU exited with code 1" "$line" "$line"
"$P" --root "$H" explain 101 --json > "$T/twice.json" 2> /dev/null || true
[[ $(causes "$T/twice.json" | grep -cx no-reset-mechanism) -eq 1 ]] && ok "a message logged twice is one cause" \
    || fail "twice: $(causes "$T/twice.json" | tr '\n' ' ')"

# A kernel message about a card this VM does not pass says nothing about its start.
H=$T/other-card
new_host "$H"
lay_task "$H" 101 "$START" "start failed: QEMU exited with code 1"
mkdir -p "$H/var/log"
echo "Nov 27 19:40:01 pve kernel: vfio-pci 0000:41:00.0: not ready 65535ms after FLR; giving up" > "$H/var/log/kern.log"
expect_rc 1 "$P" --root "$H" explain 101 > /dev/null 2>&1
ok "a kernel message about another card is not this VM's cause"

# --kernel-log FILE in dmesg, dmesg -x and journalctl -k formats.
H=$T/captured
new_host "$H"
lay_task "$H" 101 "$START" "start failed: QEMU exited with code 1"
line="vfio-pci 0000:01:00.0: BAR 1: can't reserve [mem 0xc0000000-0xcfffffff 64bit pref]"
printf '[    5.000000] pci 0000:00:00.0: something\n[  812.345678] %s\n' "$line" > "$T/dmesg.txt"
printf 'kern  :warn  : [  812.345678] %s\n' "$line" > "$T/dmesg-x.txt"
printf -- '-- Boot 0123 --\nNov 27 19:40:01 pve kernel: %s\n' "$line" > "$T/journal.txt"
printf '%s\n' "$line" > "$T/plain.txt"
for f in dmesg dmesg-x journal plain; do
    rc=0
    "$P" --root "$H" explain 101 --kernel-log "$T/$f.txt" --json > "$T/k-$f.json" 2> /dev/null || rc=$?
    [[ $rc -eq 0 ]] && causes "$T/k-$f.json" | grep -qx bar-cannot-reserve && ok "--kernel-log in $f format" || fail "--kernel-log $f: exit $rc"
done

# --- unknown failures are shown, not hidden ----------------------------------------
H=$T/unknown
new_host "$H"
lay_task "$H" 101 "$START" "start failed: QEMU exited with code 1" "kvm: a failure nobody has seen before"
rc=0
out=$("$P" --root "$H" --color never explain 101 2> "$T/unknown.err") || rc=$?
[[ $rc -eq 1 ]] && ok "an unknown failure exits 1" || fail "unknown failure: exit $rc"
grep -qF "not placed kvm: a failure nobody has seen before" <<< "$out" && ok "its line is shown" || fail "line not shown: $out"
grep -q "does not know" "$T/unknown.err" && ok "stderr says it is unknown" || fail "stderr: $(cat "$T/unknown.err")"

# The log is gone: the index's status is the line.
H=$T/no-log
new_host "$H"
lay_task "$H" 101 "$START" "PCI device '0000:01:00.0' already in use by VMID '102'"
rm -r "$H/var/log/pve/tasks/2"
rc=0
"$P" --root "$H" explain 101 --json > "$T/no-log.json" 2> /dev/null || rc=$?
[[ $rc -eq 0 ]] && causes "$T/no-log.json" | grep -qx pci-in-use && ok "a missing task log: the index's status explains" \
    || fail "missing task log: exit $rc"

# The index was rotated (pve-common renames it to index.1 past 50,000 bytes): the failed
# start is in index.1, the new index holds only another VM's task.
H=$T/rotated
new_host "$H"
lay_task "$H" 101 "$START" "PCI device '0000:01:00.0' already in use by VMID '102'"
mv "$H/var/log/pve/tasks/index" "$H/var/log/pve/tasks/index.1"
lay_task "$H" 102 6564B000 OK
rc=0
"$P" --root "$H" explain 101 --json > "$T/rotated.json" 2> /dev/null || rc=$?
[[ $rc -eq 0 ]] && causes "$T/rotated.json" | grep -qx pci-in-use && ok "a start in the rotated index.1 is found" \
    || fail "rotated index: exit $rc"
"$P" --root "$H" capture "$T/rotated.tar" > /dev/null 2>&1 || fail "capture of the rotated host failed"
tar -tf "$T/rotated.tar" | grep -qx 'var/log/pve/tasks/index.1' && ok "capture takes index.1 too" || fail "capture lacks index.1"

# --- no failed start -------------------------------------------------------------------
H=$T/fine
new_host "$H"
lay_task "$H" 101 6564A000 "start failed: QEMU exited with code 1" "kvm: old failure"
lay_task "$H" 101 "$START" OK
out=$("$P" --root "$H" explain 101) && ok "the latest start succeeded: exit 0" || fail "succeeded start: exit $?"
grep -q "Nothing to explain" <<< "$out" && ok "says there is nothing to explain" || fail "no 'Nothing to explain': $out"
out=$("$P" --root "$H" explain 102) && ok "no start recorded: exit 0" || fail "no start: exit $?"
grep -q "no start task recorded" <<< "$out" && ok "says no start is recorded" || fail "$out"
H=$T/running
new_host "$H"
mkdir -p "$H/var/log/pve/tasks"
echo "UPID:pve:000C3D4F:0437F1B8:$START:qmstart:101:root@pam: 0" > "$H/var/log/pve/tasks/active"
out=$("$P" --root "$H" explain 101) && grep -q "still running" <<< "$out" && ok "a running start is not a failure" || fail "running: $out"

# --- hostile input ---------------------------------------------------------------------
H=$T/garbage
new_host "$H"
mkdir -p "$H/var/log/pve/tasks"
head -c 65536 /dev/urandom > "$H/var/log/pve/tasks/index"
printf '\nUPID:pve:zz\nUPID:pve:000C3D4F:0437F1B8:%s:qmstart:101:root@pam: nothex OK\n' "$START" >> "$H/var/log/pve/tasks/index"
rc=0
out=$("$P" --root "$H" explain 101 2>&1) || rc=$?
[[ $rc -eq 0 ]] && grep -q "no task entry and were skipped" <<< "$out" && ok "a garbage task index: skipped with a note, exit 0" \
    || fail "garbage index: exit $rc: ${out:0:300}"
lay_task "$H" 101 "$START" "start failed: QEMU exited with code 1" "$(head -c 2000000 /dev/zero | tr '\0' 'x')" \
    "$(grep -P '^max-vcpus\t' "$SIGS" | cut -f3)"
rc=0
"$P" --root "$H" explain 101 --json > "$T/huge.json" 2> /dev/null || rc=$?
[[ $rc -eq 0 ]] && causes "$T/huge.json" | grep -qx max-vcpus && ok "a 2 MB line among garbage: cut, and the failure still found" \
    || fail "huge line: exit $rc"
head -c 4096 /dev/urandom > "$T/binary.log"
printf '\0' >> "$T/binary.log"
rc=0
"$P" --root "$H" explain 101 --kernel-log "$T/binary.log" > /dev/null 2> "$T/binary.err" || rc=$?
[[ $rc -eq 2 && $(wc -l < "$T/binary.err") -le 2 ]] && grep -q "is not a kernel log" "$T/binary.err" \
    && ok "a binary kernel log: one line, exit 2" || fail "binary kernel log: exit $rc: $(cat "$T/binary.err")"
expect_rc 2 "$P" --root "$H" explain 101 --kernel-log "$T/does-not-exist" > /dev/null 2>&1
# A log line that is not UTF-8: --json still prints JSON (the bytes become U+FFFD).
H=$T/latin1
new_host "$H"
lay_task "$H" 101 "$START" "start failed: QEMU exited with code 1" "$(printf 'kvm: caf\xe9 \xff\xfe unknown')"
rc=0
"$P" --root "$H" explain 101 --json > "$T/latin1.json" 2> /dev/null || rc=$?
[[ $rc -eq 1 ]] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1], encoding="utf-8")); assert "\ufffd" in json.dumps(d, ensure_ascii=False)' "$T/latin1.json" \
    && ok "a log byte that is not UTF-8: valid JSON, exit 1 (unknown failure)" || fail "non-UTF-8 log: exit $rc: $(head -c 300 "$T/latin1.json")"
# A task list that exists but cannot be read: said, exit 1, never "no failed start".
for kind in fifo dir; do
    H=$T/index-$kind
    new_host "$H"
    mkdir -p "$H/var/log/pve/tasks"
    if [[ $kind == fifo ]]; then mkfifo "$H/var/log/pve/tasks/index"; else mkdir "$H/var/log/pve/tasks/index"; fi
    rc=0
    out=$(timeout 20 "$P" --root "$H" explain 101 2>&1) || rc=$?
    [[ $rc -eq 1 ]] && grep -q "^passthru: error: cannot read Proxmox VE's task list /var/log/pve/tasks/index" <<< "$out" \
        && ! grep -q "Nothing to explain" <<< "$out" && ok "a task index that is a $kind: cannot read it, exit 1" \
        || fail "task index $kind: exit $rc: ${out:0:300}"
done
for bad in abc 99 0101 1234567890 -5 "101 102"; do
    rc=0
    # shellcheck disable=SC2086 # "101 102" is two words on purpose
    "$P" --root "$H" explain $bad > /dev/null 2> "$T/bad.err" || rc=$?
    [[ $rc -eq 2 ]] && grep -q "^passthru: error: " "$T/bad.err" && ok "bad VMID '$bad': exit 2 with an error line" \
        || fail "bad VMID '$bad': exit $rc: $(cat "$T/bad.err")"
done
expect_rc 2 "$P" --root "$H" explain > /dev/null 2>&1
ok "no VMID: exit 2"

# explain changes nothing under the root.
before=$(tree_sum --with-journal "$T/h-group-not-viable")
"$P" --root "$T/h-group-not-viable" explain 101 > /dev/null
[[ $(tree_sum --with-journal "$T/h-group-not-viable") == "$before" ]] && ok "explain writes nothing" || fail "explain changed the root"

finish "explain"
