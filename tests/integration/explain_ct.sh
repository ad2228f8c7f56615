#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# passthru explain CTID for a container, on copies of lxc-epyc-4x2080ti (82:00
# on nvidia at minor 1, used by container 105; module 550.163.01): explain
# reads the container's vzstart task (pct start's) as pve-common lays it out,
# and each container row of profiles/failures.json (a missing devN: node, a
# failed mount entry, NVML's version mismatch, NVRM's API mismatch in the
# kernel log) is found with this host's fix (the cards' nodes, the module's
# version, the container's id) and is gone once its row is deleted from a copy
# of the data file (--data-dir). The kernel's NVRM message explains a container
# whose start succeeded too (its users fail, not its start).
source "$(dirname "$0")/lib.inc"
need_binary
need python3

SIGS=$SRC/tests/fixtures/explain/signatures.txt
START=6564A3F2

# lay_ct_task ROOT CTID STATUS [LINE...]: one vzstart task (pct start; lay_pve_task, lib.inc).
lay_ct_task() {
    local root=$1 id=$2
    shift 2
    lay_pve_task "$root" vzstart "$id" "$START" "$@"
}

causes() {
    python3 -c 'import json,sys; [print(c["id"]) for c in json.load(open(sys.argv[1]))["causes"]]' "$1"
}

# without_row ID DIR: a data dir whose failures.json lacks row ID.
without_row() {
    mkdir -p "$2/profiles"
    python3 - "$SRC/profiles/failures.json" "$2/profiles/failures.json" "$1" << 'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["failures"] = [r for r in doc["failures"] if r["id"] != sys.argv[3]]
json.dump(doc, open(sys.argv[2], "w"), indent=2)
PY
}

# case ID STATUS FIX: the row's captured line in container 105's start (task log or
# kernel log) is found with FIX in its fix, and not found without the row.
case_row() {
    local id=$1 status=$2 fix=$3 where line H=$T/h-$1
    IFS=$'\t' read -r _ where line < <(grep -P "^$id\t" "$SIGS")
    copy_host lxc-epyc-4x2080ti "$H"
    mkdir -p "$H/var/log"
    if [[ $where == task_log ]]; then
        lay_ct_task "$H" 105 "$status" "$line"
    else
        lay_ct_task "$H" 105 "$status"
        printf 'Dec  2 10:40:01 pve kernel: [  812.345678] %s\n' "$line" > "$H/var/log/kern.log"
    fi
    rc=0
    "$P" --root "$H" explain 105 --json > "$T/$id.json" 2> "$T/$id.err" || rc=$?
    if [[ $rc -eq 0 ]] && causes "$T/$id.json" | grep -qx "$id"; then
        python3 - "$T/$id.json" "$id" "$fix" << 'PY' || fail "$id: the fix is not this host's: $(cat "$T/$id.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["guest"] == "container" and doc["vm_name"] == "ollama", doc
assert doc["task"]["upid"].split(":")[5] == "vzstart", doc["task"]
c = [c for c in doc["causes"] if c["id"] == sys.argv[2]][0]
assert sys.argv[3] in c["fix"] or sys.argv[3] in c["cause"], c
PY
        ok "$id: found in container 105's start, with this host's fix"
    else
        fail "$id: exit $rc, causes: $(causes "$T/$id.json" 2> /dev/null | tr '\n' ' ') $(cat "$T/$id.err")"
    fi
    without_row "$id" "$T/data-$id"
    rc=0
    "$P" --root "$H" --data-dir "$T/data-$id" explain 105 --json > "$T/$id.without.json" 2> /dev/null || rc=$?
    if causes "$T/$id.without.json" | grep -qx "$id"; then
        fail "$id: still found without its row"
    else
        ok "$id: not found without its row (exit $rc)"
    fi
}

FAILED="startup for container '105' failed"
case_row ct-device-missing "Device /dev/nvidia1 does not exist" "0000:81:00 /dev/nvidia0, 0000:82:00 /dev/nvidia1"
case_row ct-mount-entry-failed "$FAILED" "pct set 105 --devN /dev/nvidia-uvm"
case_row nvml-version-mismatch "$FAILED" "NVIDIA-Linux-x86_64-550.163.01.run --no-kernel-module"
case_row nvrm-api-mismatch "$FAILED" "userspace 535.104.05 and the module 550.163.01"
# The container started; its users meet the module's refusal: still explained.
case_row nvrm-api-mismatch OK "passthru verify --ct 105"

# The human output names the container and its start task.
out=$("$P" --root "$T/h-ct-device-missing" --color never explain 105)
grep -qF "Explaining container 105 (ollama)'s last start: failed: Device /dev/nvidia1 does not exist" <<< "$out" ||
    fail "human output does not name the container: $out"
# A VM's explain is unchanged: VM 101 of the same host reads qmstart tasks, not 105's vzstart.
out=$("$P" --root "$T/h-ct-device-missing" --color never explain 101)
grep -qF "Nothing to explain: VM 101 has no failed start." <<< "$out" || fail "VM 101 read a container's task: $out"
finish "explain for containers"
