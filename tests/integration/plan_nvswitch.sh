#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# An NVSwitch system (the HGX H100 fixture, docs/facts.md: nvswitch): scan reports the
# switches and their group; plan --gpus all passes the eight GPUs and the four NVSwitches
# (hostpci lines, vfio-pci ids read back by kmod, each with its reason) with the guest's
# needs; a part of the board is refused with exit 3 and nothing planned, or passed
# without the switches with --no-fabric, which says what is lost. Every planned VM
# config passes the independent Proxmox config checker.
source "$(dirname "$0")/lib.inc"
need_binary
need modprobe
CHECK=(python3 "$SRC/tests/integration/pve_conf_check.py")
R=$T/hgx
cp -a "$FIXTURES/hgx-h100" "$R"

# --- scan
"$P" --root "$R" scan >"$T/scan.txt" 2>&1 || fatal "scan failed: $(cat "$T/scan.txt")"
grep -q "^NVSwitch system: 4 NVSwitches" "$T/scan.txt" && ok "scan names the NVSwitch system" || fail "scan: no NVSwitch system line"
[[ $(grep -c "0000:0[3-6]:00 *10de:22a3 .*group 1 " "$T/scan.txt") == 4 ]] && ok "scan lists the four switches in group 1" \
    || fail "scan: switches not listed with their group: $(grep 22a3 "$T/scan.txt")"
"$P" --root "$R" scan --json >"$T/scan.json"
python3 - "$T/scan.json" <<'PY' && ok "scan --json lists nvswitches" || fail "scan --json nvswitches"
import json, sys
s = json.load(open(sys.argv[1]))
sw = s["nvswitches"]
assert [x["slot"] for x in sw] == ["0000:%02x:00" % b for b in range(3, 7)], sw
assert all(x["ids"] == ["10de:22a3"] and x["iommu_groups"] == [1] and not x["other_endpoints"] for x in sw), sw
PY

# json_eval FILE EXPR: EXPR with p = the plan, conf = VM 101's planned config
json_eval() {
    python3 - "$1" "$2" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
conf = next((f["content"] for f in p["files"] if f["path"] == "/etc/pve/qemu-server/101.conf"), "")
vfio = next((f for f in p["files"] if f["path"] == "/etc/modprobe.d/passthru-vfio.conf"), None)
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
conf_out() { # PLAN.json -> VM 101's planned config in $T/101.conf
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(next(f["content"] for f in p["files"] if f["path"]=="/etc/pve/qemu-server/101.conf"), end="")' "$1" >"$T/101.conf"
}

# --- the whole board
expect_rc 0 "$P" --root "$R" plan --vm 101 --gpus all --json >"$T/all.json"
json_eval "$T/all.json" 'len(p["gpus"]) == 8 and [s["slot"] for s in p["nvswitches"]] == ["0000:%02x:00" % b for b in range(3, 7)]' \
    && ok "--gpus all: 8 GPUs and 4 NVSwitches" || fail "--gpus all: wrong selection"
json_eval "$T/all.json" 'sum(1 for l in conf.split("\n") if l.startswith("hostpci")) == 12 and all(("0000:%02x:00" % b) in conf for b in range(3, 7))' \
    && ok "12 hostpci lines, the switches among them" || fail "hostpci lines: $(grep -c hostpci <<<"$(json_eval "$T/all.json" 'print(conf) or True')")"
json_eval "$T/all.json" 'any("NVSwitch 0000:03:00" in r for f in p["files"] for r in f["reasons"])' \
    && ok "the switches' lines carry their reason" || fail "no reason names the NVSwitch"
json_eval "$T/all.json" 'any("full passthrough" in n for n in p["notes"]) and any("Fabric Manager of the same version" in n for n in p["notes"])' \
    && ok "notes: full passthrough and Fabric Manager in the guest" || fail "notes miss the guest's needs"
conf_out "$T/all.json"
"${CHECK[@]}" vm "$T/101.conf" && ok "the 12-device VM config passes the Proxmox config checks" || fail "pve_conf_check rejects the config"
conf=$T/modprobe.d
mkdir -p "$conf"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(next(f["content"] for f in p["files"] if f["path"]=="/etc/modprobe.d/passthru-vfio.conf"), end="")' \
    "$T/all.json" >"$conf/passthru-vfio.conf"
modprobe -C "$conf" --showconfig 2>"$T/kmod.err" | grep -q '^options vfio_pci ids=.*10de:22a3' \
    && ok "kmod reads the NVSwitch id in vfio-pci's ids" || fail "kmod: no 10de:22a3 in vfio_pci ids ($(cat "$T/kmod.err"))"
"$P" --root "$R" plan --vm 101 --gpus all >"$T/all.txt" 2>&1
[[ $(grep -c "^  NVSwitch 0000:0[3-6]:00" "$T/all.txt") == 4 ]] && ok "the human plan lists the switches" || fail "human plan: switches missing"

# --- part of the board
rc=0
"$P" --root "$R" plan --vm 101 --gpus 0,1 >"$T/part.txt" 2>&1 || rc=$?
[[ $rc == 3 ]] && ok "--gpus 0,1 is refused with exit 3" || fail "--gpus 0,1 exited $rc"
grep -q "2 of the 8 GPUs of an NVSwitch system" "$T/part.txt" && grep -q -- "--no-fabric" "$T/part.txt" \
    && ok "the refusal explains and names the way out" || fail "refusal text: $(head -5 "$T/part.txt")"
rc=0
"$P" --root "$R" plan --vm 101 --gpus 0,1 --json >"$T/part.json" 2>/dev/null || rc=$?
json_eval "$T/part.json" 'p["refused"] and not p["files"] and not p["nvswitches"]' && ok "nothing planned when refused" \
    || fail "a refused plan has changes"

expect_rc 0 "$P" --root "$R" plan --vm 101 --gpus 0,1 --no-fabric --json >"$T/nofab.json"
json_eval "$T/nofab.json" 'not p["nvswitches"] and any("--no-fabric" in w and "NVreg_NvLinkDisable=1" in w for w in p["warnings"]) and p["request"]["no_fabric"]' \
    && ok "--no-fabric passes the two GPUs and says NVLink is lost" || fail "--no-fabric plan"
conf_out "$T/nofab.json"
"${CHECK[@]}" vm "$T/101.conf" && ! grep -q "0000:03:00" "$T/101.conf" && ok "--no-fabric config: no switch, passes the checks" \
    || fail "--no-fabric config"

# --- one GPU
expect_rc 0 "$P" --root "$R" plan --vm 101 --gpus 0 --json >"$T/one.json"
json_eval "$T/one.json" 'not p["nvswitches"] and any("one GPU" in n for n in p["notes"])' && ok "one GPU goes alone" || fail "one GPU"

# --- a saved plan keeps --no-fabric
expect_rc 0 "$P" --root "$R" plan --vm 101 --gpus 0,1 --no-fabric --out "$T/saved.json" >/dev/null
json_eval "$T/saved.json" 'p["request"]["no_fabric"] is True' && ok "the saved plan records --no-fabric" || fail "saved plan lost --no-fabric"
finish "NVSwitch systems follow the full-passthrough model"
