#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# plan refuses (exit 3, nothing planned) a VM that Proxmox VE's own start code
# would refuse before QEMU runs (docs/facts.md: qm-start), with the fix: more
# vCPUs than the node has CPUs, a hostpci id or mapping the node lacks, huge
# pages the kernel does not offer or memory that is not a whole number of
# them. A VM it creates gets at most as many cores as the node has CPUs.
# OVMF without an efidisk0, which Proxmox VE only warns about, is no refusal.
# On copies of the turing-4fn fixture: 12 CPUs (processor entries), 2 MiB
# and 1 GiB huge pages, VM 101 with 1 socket x 8 cores.
source "$(dirname "$0")/lib.inc"
need_binary

plan() { # ROOT ARGS... -> $T/plan.json, $T/plan.err; sets rc
    set +e
    "$P" --root "$1" plan "${@:2}" --json >"$T/plan.json" 2>"$T/plan.err"
    rc=$?
    set -e
}

# fresh KEY VALUE...: a new copy whose VM 101 config has these keys set (replaced or added).
fresh() {
    copy_host turing-4fn "$T/r"
    local conf=$T/r/etc/pve/qemu-server/101.conf
    own_copy "$conf"
    while [ $# -gt 0 ]; do
        sed -i "/^$1:/d" "$conf"
        echo "$1: $2" >>"$conf"
        shift 2
    done
}

# refused WHAT PATTERN...: exit 3, every PATTERN in the refusal or its hints, no file or command planned.
refused() {
    local what=$1
    shift
    plan "$T/r" --vm 101 --gpus all
    [ "$rc" = 3 ] || { fail "$what: exit $rc, expected 3: $(cat "$T/plan.err")"; return; }
    local p
    for p in "$@"; do
        # the refusal on stderr, its hints (the fix) in the JSON plan
        grep -q -F -- "$p" "$T/plan.err" "$T/plan.json" || fail "$what: neither stderr nor the plan has '$p': $(cat "$T/plan.err")"
    done
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); sys.exit(1 if p["files"] or p["commands"] else 0)' "$T/plan.json" ||
        fail "$what: the refused plan still has changes"
}

fresh
plan "$T/r" --vm 101 --gpus all
[ "$rc" = 0 ] || fail "the fixture as it is: exit $rc: $(cat "$T/plan.err")"

fresh cores 12
plan "$T/r" --vm 101 --gpus all
[ "$rc" = 0 ] || fail "12 cores on 12 CPUs: exit $rc: $(cat "$T/plan.err")"
fresh cores 16
refused "16 cores on 12 CPUs" "VM 101 has 16 vCPUs (1 socket(s) x 16 cores) but this node has 12 CPUs" \
    "MAX 12 vcpus allowed per VM on this node" "qm set 101 --cores 12"
fresh sockets 2 cores 8
refused "2 sockets x 8 cores on 12 CPUs" "VM 101 has 16 vCPUs (2 socket(s) x 8 cores)" "qm set 101 --cores 6"
ok "more vCPUs than the node's CPUs: refused with the fix"

fresh hostpci5 0000:7f:00,pcie=1
refused "a hostpci id of no device" "VM 101's hostpci5 passes 0000:7f:00, which is not on this node's PCI bus" \
    "no PCI device found for '0000:7f:00'" "qm set 101 --delete hostpci5"
fresh hostpci5 mapping=ghost,pcie=1
refused "a mapping this node lacks" "VM 101's hostpci5 uses mapping ghost, which has no entry for node pve" \
    "PCI device mapping not found for 'ghost'"
ok "a hostpci device or mapping the node does not have: refused"

fresh numa 1 hugepages 1024
plan "$T/r" --vm 101 --gpus all
[ "$rc" = 0 ] || fail "1 GiB pages offered, 16384 MiB: exit $rc: $(cat "$T/plan.err")"
rm -r "$T/r/sys/kernel/mm/hugepages/hugepages-1048576kB" # a CPU without pdpe1gb
refused "1 GiB pages not offered" "asks for hugepages of 1024 MiB, which this host's kernel does not offer" \
    "doesn't support hugepages of 1024 MB" "qm set 101 --hugepages 2"
fresh numa 1 hugepages 1024 memory 17000
refused "memory not a whole number of pages" "VM 101 has 17000 MiB of memory, not a multiple of its 1024 MiB huge pages" \
    "qm set 101 --memory 17408"
ok "huge pages the host cannot give: refused"

# OVMF without efidisk0 only warns at qm start (temporary EFI vars): plan adds one, or warns.
fresh
sed -i '/^efidisk0:/d' "$T/r/etc/pve/qemu-server/101.conf"
plan "$T/r" --vm 101 --gpus all
[ "$rc" = 0 ] || fail "no efidisk0: exit $rc: $(cat "$T/plan.err")"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); sys.exit(0 if any(c["argv"][:4]==["qm","set","101","--efidisk0"] for c in p["commands"]) else 1)' "$T/plan.json" ||
    fail "no efidisk0: no qm set --efidisk0 planned"
sed -i '/^scsi0:\|^ide2:/d' "$T/r/etc/pve/qemu-server/101.conf"
rm -f "$T/r/etc/pve/storage.cfg"
plan "$T/r" --vm 101 --gpus all
[ "$rc" = 0 ] || fail "no efidisk0, no storage: exit $rc (Proxmox VE only warns): $(cat "$T/plan.err")"
grep -q "has no efidisk0 and no storage for one was found: OVMF uses a temporary EFI vars disk" "$T/plan.err" "$T/plan.json" ||
    fail "no efidisk0, no storage: no warning: $(cat "$T/plan.err")"
ok "OVMF without efidisk0: an efidisk0 planned, or a warning (not a refusal)"

# A new VM: the profile's 8 cores, fewer on a node that shows 4 CPUs.
copy_host turing-4fn "$T/r"
rm "$T/r/etc/pve/qemu-server/101.conf"
python3 - "$T/r/proc/cpuinfo" <<'PY'
import os, sys
path = sys.argv[1]
blocks = open(path).read().split("\n\n")
tmp = path + ".tmp"
with open(tmp, "w") as f:
    f.write("\n\n".join(b for b in blocks[:4]) + "\n\n")
os.replace(tmp, path)
PY
plan "$T/r" --vm 101 --gpus all
[ "$rc" = 0 ] || fail "a new VM on 4 CPUs: exit $rc: $(cat "$T/plan.err")"
python3 - "$T/plan.json" <<'PY' || fail "a new VM on 4 CPUs: not created with 4 cores"
import json, sys
plan = json.load(open(sys.argv[1]))
create = [c["argv"] for c in plan["commands"] if c["argv"][:2] == ["qm", "create"]]
argv = create[0]
sys.exit(0 if argv[argv.index("--cores") + 1] == "4" else 1)
PY
grep -q "VM 101 gets 4 cores instead of the profile's 8: this node has 4 CPUs" "$T/plan.err" "$T/plan.json" ||
    fail "a new VM on 4 CPUs: no warning: $(cat "$T/plan.err")"
finish "a VM plan creates gets at most the node's CPUs as cores"
