#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The GPU vendor policy is data (profiles/host/vendors.json): a second vendor is
# one row there plus its driver rows in drivers.json, through /etc/passthru
# overrides, with no code change. On turing-4fn (an Intel iGPU at 0000:00:02.0
# beside an NVIDIA card at 0000:01:00), a row for Intel (8086) and an i915 row
# claiming Intel display functions with blacklist make scan list the iGPU as a
# card of a handled vendor, --gpus all take it, and passing it alone blacklist
# i915 (no Intel GPU stays) but not the NVIDIA drivers (the NVIDIA card stays).
# Without the overrides none of that happens.
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary
need python3

R=$T/host
IGPU=0000:00:02.0

# overrides ROOT: vendors.json and drivers.json with Intel's rows added, as the root's overrides.
overrides() {
    mkdir -p "$1/etc/passthru/profiles/host"
    python3 - "$SRC/profiles/host" "$1/etc/passthru/profiles/host" <<'PY'
import json, sys
src, out = sys.argv[1], sys.argv[2]
vendors = json.load(open(src + "/vendors.json"))
vendors["vendors"].append({"id": "8086", "name": "Intel", "gpus_all": True, "drivers": "i915/xe"})
json.dump(vendors, open(out + "/vendors.json", "w"))
drivers = json.load(open(src + "/drivers.json"))
drivers["drivers"].append({"module": "i915", "claims": {"vendor": "8086", "kind": "display"},
                           "why": "i915 claims {function}", "blacklist": True})
drivers["drivers"].append({"module": "intelfb", "vendor": "8086", "why": "the Intel framebuffer driver",
                           "blacklist": True, "framebuffer": True})
json.dump(drivers, open(out + "/drivers.json", "w"))
PY
}
# conf PLAN_JSON: passthru-vfio.conf as the plan writes it
conf() {
    python3 -c 'import json,sys
for f in json.load(open(sys.argv[1]))["files"]:
    if f["path"] == "/etc/modprobe.d/passthru-vfio.conf":
        print(f["content"])' "$1"
}
# selected PLAN_JSON: the slots of the cards the plan selected, one a line
selected() {
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print("\n".join(c["slot"] for c in d["gpus"]))' "$1"
}

# The shipped data: the iGPU is no card of a handled vendor.
copy_host turing-4fn "$R"
"$P" --root "$R" scan > "$T/scan0.txt" 2> /dev/null || fail "scan with the shipped data failed"
grep -q "0000:00:02 .*clean (not NVIDIA) boot VGA" "$T/scan0.txt" || fail "the shipped data: the iGPU is not marked '(not NVIDIA)': $(grep 0000:00:02 "$T/scan0.txt")"
"$P" --root "$R" plan --vm 101 --gpus all --json > "$T/all0.json" 2> /dev/null
[[ $(selected "$T/all0.json") == 0000:01:00 ]] || fail "the shipped data: --gpus all selected $(selected "$T/all0.json")"
"$P" --root "$R" plan --vm 101 --gpus "$IGPU" --json > "$T/igpu0.json" 2> /dev/null
! conf "$T/igpu0.json" | grep -q '^blacklist' || fail "the shipped data blacklists a driver for the iGPU: $(conf "$T/igpu0.json" | grep blacklist)"
ok "with the shipped data the iGPU is not NVIDIA's: --gpus all leaves it, and passing it blacklists nothing"

# Intel's rows through the root's overrides.
copy_host turing-4fn "$R"
overrides "$R"
"$P" --root "$R" scan > "$T/scan1.txt" 2> /dev/null || fail "scan with the overrides failed"
! grep -q "(not " "$T/scan1.txt" || fail "with Intel's row a card is still marked: $(grep '(not ' "$T/scan1.txt")"
"$P" --root "$R" scan --json > "$T/scan1.json" 2> /dev/null
python3 -c 'import json,sys
g = [c for c in json.load(open(sys.argv[1]))["gpus"] if c["slot"] == "0000:00:02"]
sys.exit(0 if g and g[0]["nvidia"] else 1)' "$T/scan1.json" || fail "scan --json: the iGPU is no card of a handled vendor"
"$P" --root "$R" plan --vm 101 --gpus all --json > "$T/all1.json" 2> /dev/null
[[ $(selected "$T/all1.json" | sort | tr '\n' ' ') == "0000:00:02 0000:01:00 " ]] || fail "--gpus all with Intel's row selected: $(selected "$T/all1.json")"
ok "with Intel's row, scan lists the iGPU as a handled vendor's card and --gpus all selects it"

"$P" --root "$R" plan --vm 101 --gpus "$IGPU" --json > "$T/igpu1.json" 2> /dev/null
conf "$T/igpu1.json" > "$T/igpu1.conf"
grep -q '^blacklist i915$' "$T/igpu1.conf" || fail "passing the iGPU alone did not blacklist i915: $(grep blacklist "$T/igpu1.conf")"
grep -q '^blacklist intelfb$' "$T/igpu1.conf" || fail "the framebuffer row that names Intel is not blacklisted"
! grep -Eq '^blacklist (nouveau|nvidia|nova_core|nvidiafb)$' "$T/igpu1.conf" || fail "the NVIDIA drivers are blacklisted although the NVIDIA card stays"
grep -q 'blacklists i915, intelfb: no Intel GPU stays on the host' "$T/igpu1.json" || fail "the blacklist reason does not name the vendor"
ok "passing the iGPU alone blacklists Intel's drivers, not NVIDIA's, which stays"

"$P" --root "$R" plan --vm 101 --gpus 0000:01:00 --json > "$T/nv1.json" 2> /dev/null
conf "$T/nv1.json" > "$T/nv1.conf"
grep -q '^blacklist nouveau$' "$T/nv1.conf" || fail "passing the NVIDIA card alone no longer blacklists nouveau"
! grep -Eq '^blacklist (i915|intelfb)$' "$T/nv1.conf" || fail "Intel's drivers are blacklisted although the iGPU stays"
ok "passing the NVIDIA card alone blacklists NVIDIA's drivers, not Intel's"

finish "GPU vendor policy as data"
