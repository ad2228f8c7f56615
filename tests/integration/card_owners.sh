#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every card's owner and users (docs/facts.md: lxc-config, nvidia-nodes) on
# lxc-epyc-4x2080ti: two cards on vfio-pci for VM 101, 82:00 on nvidia (minor 1)
# shared by container 105 (devN:, running) and 106 (mount entry + cgroup2 rule,
# stopped), 81:00 on nvidia (minor 0) untouched.
# - scan --json and the human scan show each card's driver, minor, owner and the
#   lines that reach it; with device nodes made by mknod in the copy, a devN: line
#   counts by the node's numbers (what pve-container stats), not by its name;
# - plan refuses (exit 3) a card a container uses, naming the container and its
#   line with the way out, and a selection that renumbers the minor of a card a
#   container names; the VM's own cards are bound by address, with no nvidia
#   blacklist and no ids= list that would catch the cards that stay.
source "$(dirname "$0")/lib.inc"
need_binary
need jq

H=lxc-epyc-4x2080ti
copy_host "$H" "$T/h"
"$P" --root "$T/h" scan --json >"$T/scan.json" || fatal "scan --json failed"
jq -e '.host.char_majors.nvidia == 195 and .host.char_majors["nvidia-uvm"] == 238' "$T/scan.json" >/dev/null ||
    fail "char_majors: $(jq -c .host.char_majors "$T/scan.json")"
jq -e '[.gpus[:4][] | [.slot, .driver, .nvidia_minor, .owner]] == [
    ["0000:01:00", "vfio-pci", null, "VM 101"], ["0000:41:00", "vfio-pci", null, "VM 101"],
    ["0000:81:00", "nvidia", 0, "host (nvidia)"], ["0000:82:00", "nvidia", 1, "containers 105, 106 (nvidia)"]]' "$T/scan.json" >/dev/null ||
    fail "owners: $(jq -c '[.gpus[:4][] | [.slot, .driver, .nvidia_minor, .owner]]' "$T/scan.json")"
jq -e '[.gpus[3].users[] | [.kind, .vmid, .line, .key, .running, .wildcard]] == [
    ["container", "105", 3, "dev0", true, false],
    ["container", "106", 10, "lxc.cgroup2.devices.allow", false, false],
    ["container", "106", 13, "lxc.mount.entry", false, false]]' "$T/scan.json" >/dev/null ||
    fail "users of 82:00: $(jq -c '.gpus[3].users' "$T/scan.json")"
jq -e '.gpus[0].users == [{"kind": "vm", "vmid": "101", "config": "/etc/pve/qemu-server/101.conf", "line": 6, "key": "hostpci0",
    "value": "0000:01:00,pcie=1", "pending": false, "wildcard": false, "via": "address 0000:01:00", "running": false}]' "$T/scan.json" >/dev/null ||
    fail "users of 01:00: $(jq -c '.gpus[0].users' "$T/scan.json")"
jq -e '.gpus[3].users[0].via | test("^/dev/nvidia1 \\(no node on the host")' "$T/scan.json" >/dev/null ||
    fail "without nodes a devN: line is not read by its name: $(jq -c '.gpus[3].users[0].via' "$T/scan.json")"
"$P" --root "$T/h" scan >"$T/scan.txt" || fail "scan failed"
grep -q '^GPU owners' "$T/scan.txt" || fail "human scan: no GPU owners section"
grep -qE '^  3 +0000:82:00 +driver nvidia +/dev/nvidia1 +containers 105, 106 \(nvidia\)' "$T/scan.txt" || fail "human scan: no owner row for 82:00"
grep -qF '  GPU 3: container 105 (running) /etc/pve/lxc/105.conf:3 dev0: /dev/nvidia1,gid=44 -> /dev/nvidia1' "$T/scan.txt" ||
    fail "human scan: no user line of container 105"
ok "scan: drivers, minors, majors, owners and the lines that reach each card, in JSON and text"

# Device nodes as the host has them, made in the copy (git cannot store them); here
# /dev/nvidia1 carries minor 0, so container 105's dev0 reaches 81:00, as PVE would.
if mknod "$T/h/dev-probe" c 1 3 2>/dev/null; then
    rm -f "$T/h/dev-probe"
    mkdir -p "$T/h/dev"
    mknod "$T/h/dev/nvidia0" c 195 1
    mknod "$T/h/dev/nvidia1" c 195 0
    mknod "$T/h/dev/nvidiactl" c 195 255
    "$P" --root "$T/h" scan --json >"$T/nodes.json" || fail "scan --json with nodes failed"
    jq -e '.gpus[2].users[0] | .vmid == "105" and .key == "dev0" and .via == "/dev/nvidia1 = c 195:0"' "$T/nodes.json" >/dev/null ||
        fail "with nodes: dev0 is not read by the node's numbers: $(jq -c '.gpus[2].users' "$T/nodes.json")"
    rm -f "$T/h/dev/nvidia0" "$T/h/dev/nvidia1" "$T/h/dev/nvidiactl"
    ok "scan: a devN: line counts by the numbers of the host's node"
else
    echo "note: mknod not permitted here: the device-node case is left out"
fi

# --- plan never takes a card from a guest that uses it -----------------------
plan_rc() { # ARGS... -> $T/plan.txt, $RC
    RC=0
    "$P" --root "$T/h" plan "$@" >"$T/plan.txt" 2>"$T/plan.err" || RC=$?
}
sum=$(tree_sum "$T/h")
plan_rc --vm 101 --gpus all
[ "$RC" = 3 ] || fail "--gpus all: exit $RC, want 3"
grep -qF 'GPU 0000:82:00 (TU102 [GeForce RTX 2080 Ti Rev. A]) is used by container 105 (running): /etc/pve/lxc/105.conf:3: dev0: /dev/nvidia1,gid=44' "$T/plan.txt" ||
    fail "--gpus all: container 105 is not named: $(cat "$T/plan.txt")"
grep -qF 'stop it (pct stop 105), then remove the line first: pct set 105 --delete dev0' "$T/plan.txt" || fail "--gpus all: no way out for 105"
grep -qF 'remove line 13 (lxc.mount.entry) from /etc/pve/lxc/106.conf first' "$T/plan.txt" || fail "--gpus all: no way out for 106"
plan_rc --vm 102 --gpus 0000:81:00
[ "$RC" = 3 ] || fail "81:00: exit $RC, want 3"
grep -qF 'is /dev/nvidia1 now and becomes /dev/nvidia0 after the reboot' "$T/plan.txt" || fail "81:00: the minor shift is not said: $(cat "$T/plan.txt")"
for ct in 105 106; do
    grep -qF "; container $ct names it by its number" "$T/plan.txt" || fail "81:00: container $ct is not named"
done
[ "$(tree_sum "$T/h")" = "$sum" ] || fail "a refused plan changed the tree"
ok "plan: a card a container uses, and a selection that renumbers its card, are refused (exit 3) with the line and the way out"

plan_rc --vm 101 --gpus 0,1 --json
[ "$RC" = 0 ] || fail "VM 101's own cards: exit $RC: $(head -5 "$T/plan.err")"
jq -r '.files[].content // ""' "$T/plan.txt" >"$T/planned.txt"
if grep -E '^(blacklist nvidia|install nvidia)' "$T/planned.txt"; then
    fail "an nvidia blacklist is planned while 81:00 and 82:00 stay on nvidia"
fi
jq -e '.binding == "address"' "$T/plan.txt" >/dev/null || fail "VM 101's cards are not bound by address"
if grep -E 'ids=.*10de:1e07' "$T/planned.txt"; then fail "an ids= list would claim the cards that stay on nvidia"; fi
ok "plan: VM 101's own cards are bound by address, with no nvidia blacklist (the softdep only orders vfio-pci first)"
finish "card owners"
