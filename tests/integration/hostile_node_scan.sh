#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A --node-scan document comes from another node, and a vendors.json row from
# an admin's override: neither may write what the checked grammar refuses, nor
# decide a device's safety class.
#  - every text field plan reads of a scan (device_name, driver, kernel, a group's
#    type) passes its grammar: a line break in device_name, which became lines of
#    /etc/pve/mapping/pci.cfg (a map line of its own), is refused (exit 2);
#  - a card's verdict is recomputed from the scan's devices and groups: "clean"
#    while its group holds the NVMe controller, or a device and a group that do
#    not agree, is refused (exit 2);
#  - a scan stands for another node: this host's own name, or a name that is
#    no Proxmox VE node's (pve-node, at most 63 characters), is refused (exit 2);
#  - a vendors.json override naming a storage class as a vendor's switch_class
#    is refused (exit 2): the NVMe controllers never become "NVSwitch".
# Nothing is written in any case.
source "$(dirname "$0")/lib.inc"
need_binary
need python3

R=$T/root
copy_host epyc-4x2080ti "$R"
"$P" --root "$R" scan --json > "$T/scan.json" || fatal "scan --json failed"

# edit NAME PYTHON: $T/NAME.json is the scan with PYTHON applied to s (the document).
edit() {
    python3 - "$T/scan.json" "$T/$1.json" "$2" << 'PY'
import json, sys
s = json.load(open(sys.argv[1]))
dev = {d["address"]: d for d in s["devices"]}
grp = {g["group"]: g for g in s["iommu_groups"]}
exec(sys.argv[3])
json.dump(s, open(sys.argv[2], "w"))
PY
}

# refused NAME WHAT: plan with the edited scan exits 2 naming WHAT, and writes nothing.
refused() {
    local rc=0
    "$P" --root "$R" plan --mapping gpus --gpus all --node-scan "gpu7=$T/$1.json" > "$T/$1.out" 2> "$T/$1.err" || rc=$?
    [[ $rc -eq 2 ]] || fail "$1: exit $rc, expected 2: $(head -2 "$T/$1.err")"
    grep -q -e "$2" "$T/$1.err" || fail "$1: the refusal does not name $2: $(head -2 "$T/$1.err")"
    [[ $(tree_sum --with-journal "$R") == "$S0" ]] || fail "$1: something was written"
}

# The unedited scan maps (the test can pass).
"$P" --root "$R" plan --mapping gpus --gpus all --node-scan "gpu7=$T/scan.json" > "$T/good.out" 2>&1 \
    || fatal "the unedited scan is refused: $(tail -3 "$T/good.out")"
grep -q 'description' "$T/good.out" || fatal "the plan writes no mapping description: $(tail -3 "$T/good.out")"
S0=$(tree_sum --with-journal "$R") # with the pending plan the good one recorded

edit name 'dev["0000:01:00.0"]["device_name"] = "TU102\n\tmap id=1e0f:0001,node=gpu7,path=0000:c1:00.0"'
refused name 'devices\[22\]\.device_name\|device_name'
edit driver 'dev["0000:01:00.0"]["driver"] = "nouveau\nblacklist x"'
refused driver 'driver'
edit kernel 's["host"]["kernel"] = "6.8.12-4-pve\n"'
refused kernel 'kernel'
edit gtype 'grp[12]["type"] = "DMA\u001b[2K"'
refused gtype 'type'
stop_if_failed
ok "a line break or escape in any text field of a node scan: exit 2, nothing written"

# 01:00 says clean, but the NVMe controller c1:00.0 is moved into its group 12.
edit clean 'n = dev["0000:c1:00.0"]; grp[n["iommu_group"]]["devices"].remove("0000:c1:00.0"); n["iommu_group"] = 12; grp[12]["devices"].append("0000:c1:00.0")'
refused clean "says 'clean'.*0000:c1:00.0"
edit disagree 'dev["0000:c1:00.0"]["iommu_group"] = 12'
refused disagree 'whose devices do not list it'
edit notgpu 's["gpus"][0]["slot"] = "0000:c1:00"; s["gpus"][0]["functions"] = ["0000:c1:00.0"]; s["gpus"][0]["iommu_groups"] = [dev["0000:c1:00.0"]["iommu_group"]]'
refused notgpu 'is no display device'
stop_if_failed
ok "a card the scan's own devices and groups contradict (clean beside an NVMe, not a display): exit 2"

# The node names a scan may stand for: another node's, as Proxmox VE names nodes. This
# host's own name (the fixture's /etc/hostname is pve, in any case) would put a document's
# cards in place of the host's own scan; a name longer than a DNS label (63) or with a
# character pve-node refuses is no node's. Exit 2, nothing written.
name_refused() { # name_refused NODE WHAT
    local rc=0
    "$P" --root "$R" plan --mapping gpus --gpus all --node-scan "$1=$T/scan.json" > "$T/node.out" 2> "$T/node.err" || rc=$?
    [[ $rc -eq 2 ]] || fail "--node-scan ${1:0:20}...: exit $rc, expected 2: $(head -2 "$T/node.err")"
    grep -q -e "$2" "$T/node.err" || fail "--node-scan ${1:0:20}...: the refusal does not say '$2': $(head -2 "$T/node.err")"
    [[ $(tree_sum --with-journal "$R") == "$S0" ]] || fail "--node-scan ${1:0:20}...: something was written"
}
# This host's own name with its own scan is the cluster workflow (every node's scan is
# given): accepted, and mapped from the live scan; a document for it that differs is not.
edit lessgpus 'g = s["gpus"].pop(); fs = set(g["functions"])
s["devices"] = [d for d in s["devices"] if d["address"] not in fs]
for x in s["iommu_groups"]: x["devices"] = [d for d in x["devices"] if d not in fs]
s["iommu_groups"] = [x for x in s["iommu_groups"] if x["devices"]]'
"$P" --root "$R" plan --mapping gpus --gpus all --node-scan "pve=$T/lessgpus.json" > /dev/null 2> "$T/node.err" && fail "a document for this host that differs from its scan is accepted"
grep -q "pve is this host (its /etc/hostname), and the document differs from its own scan" "$T/node.err" \
    || fail "the refusal of a differing document for this host: $(head -2 "$T/node.err")"
[[ $(tree_sum --with-journal "$R") == "$S0" ]] || fail "a differing document for this host: something was written"
name_refused "$(printf 'n%.0s' {1..64})" 'at most 63'
name_refused gpu_7 'is not a Proxmox VE node name'
"$P" --root "$R" plan --mapping gpus --gpus all --node-scan "$(printf 'n%.0s' {1..63})=$T/scan.json" > /dev/null 2> "$T/node.err" \
    || fail "a node name of 63 characters is refused: $(head -2 "$T/node.err")"
"$P" --root "$R" plan --mapping gpus --gpus all --node-scan "PVE=$T/scan.json" > /dev/null 2> "$T/node.err" \
    || fail "this host's own scan under its own name is refused: $(head -2 "$T/node.err")"
stop_if_failed
ok "--node-scan for this host's own name: its own scan accepted, a differing one exit 2; a name beyond a DNS label (63): exit 2"

# A vendor row that makes the NVMe vendor (1e0f) a switch of storage class 0108.
mkdir -p "$R/etc/passthru/profiles/host"
python3 - "$SRC/profiles/host/vendors.json" "$R/etc/passthru/profiles/host/vendors.json" << 'PY'
import json, sys
v = json.load(open(sys.argv[1]))
v["vendors"].append({"id": "1e0f", "name": "KIOXIA", "gpus_all": True, "drivers": "nvme", "switch_class": "0108"})
json.dump(v, open(sys.argv[2], "w"))
PY
S0=$(tree_sum --with-journal "$R")
for cmd in "scan" "plan --vm 101 --gpus all"; do
    rc=0
    # shellcheck disable=SC2086
    "$P" --root "$R" $cmd > "$T/vendor.out" 2> "$T/vendor.err" || rc=$?
    [[ $rc -eq 2 ]] || fail "$cmd with a storage switch_class: exit $rc, expected 2: $(head -2 "$T/vendor.err")"
    grep -q 'switch_class' "$T/vendor.err" || fail "$cmd: the refusal does not name switch_class: $(head -2 "$T/vendor.err")"
    grep -q 'NVSwitch' "$T/vendor.out" && fail "$cmd: the NVMe controllers are called NVSwitch"
done
[[ $(tree_sum --with-journal "$R") == "$S0" ]] || fail "a storage switch_class: something was written"
finish "a vendors.json override naming a storage class as switch_class: scan and plan exit 2, nothing written"
