#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# GPU and driver behaviour is data: the worked example of docs/data.md (a
# made-up host driver "gpuzilla" that claims NVIDIA display functions) is a
# data-only change, through an /etc/passthru override or --data-dir, and the
# plan then keeps that driver off the cards with a softdep. A data file that
# breaks the schema (drivers.json, kernel.json, a GPU profile) is one line
# naming the file and the field, exit 2, and nothing is written. A GPU
# profile's function layout makes a card that lost a function a warning.
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary
SHIPPED=$SRC/profiles/host/drivers.json

# with_gpuzilla OUT: the shipped file plus the worked example's entry.
with_gpuzilla() {
    python3 - "$SHIPPED" "$1" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["drivers"].append({"module": "gpuzilla", "claims": {"vendor": "10de", "kind": "display"},
                       "why": "gpuzilla (a made-up driver) claims {function}"})
json.dump(doc, open(sys.argv[2], "w"), indent=2)
PY
}
softdeps() { # PLAN_JSON: the softdep lines of passthru-vfio.conf
    python3 -c 'import json,sys
for f in json.load(open(sys.argv[1]))["files"]:
    if f["path"] == "/etc/modprobe.d/passthru-vfio.conf":
        print("\n".join(l for l in f["content"].splitlines() if l.startswith("softdep")))' "$1"
}

R=$T/host
copy_host epyc-4x2080ti "$R"
"$P" --root "$R" plan --vm 101 --gpus all --json > "$T/plain.json" 2> /dev/null
softdeps "$T/plain.json" > "$T/plain.softdeps"
grep -q '^softdep nouveau pre: vfio-pci$' "$T/plain.softdeps" || fail "the shipped data gives no nouveau softdep"
! grep -q gpuzilla "$T/plain.softdeps" || fail "gpuzilla without the data change"

# The admin's override under the root.
mkdir -p "$R/etc/passthru/profiles/host"
with_gpuzilla "$R/etc/passthru/profiles/host/drivers.json"
"$P" --root "$R" plan --vm 101 --gpus all --json > "$T/quirk.json" 2> /dev/null
softdeps "$T/quirk.json" > "$T/quirk.softdeps"
grep -q '^softdep gpuzilla pre: vfio-pci$' "$T/quirk.softdeps" || fail "the override's new driver got no softdep: $(cat "$T/quirk.softdeps")"
diff <(grep -v gpuzilla "$T/quirk.softdeps") "$T/plain.softdeps" > /dev/null || fail "the override changed other softdeps"
grep -q "softdep ... pre: vfio-pci for gpuzilla, " "$T/quirk.json" || fail "the softdep is not among the reasons"
ok "a new host driver in an /etc/passthru override is softdepped"

# The same through --data-dir (a whole data tree).
D=$T/data
mkdir -p "$D/profiles/host"
with_gpuzilla "$D/profiles/host/drivers.json"
copy_host epyc-4x2080ti "$R"
"$P" --root "$R" --data-dir "$D" plan --vm 101 --gpus all --json > "$T/dd.json" 2> /dev/null
softdeps "$T/dd.json" > "$T/dd.softdeps" && grep -q "^softdep gpuzilla pre: vfio-pci$" "$T/dd.softdeps" || fail "--data-dir's driver got no softdep"
ok "the same through --data-dir"

# A broken data file: one line naming the file and the field, exit 2, nothing written.
copy_host epyc-4x2080ti "$R"
mkdir -p "$R/etc/passthru/profiles/host"
python3 - "$SHIPPED" "$R/etc/passthru/profiles/host/drivers.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["drivers"][3]["claims"]["class"] = "audio"
json.dump(doc, open(sys.argv[2], "w"))
PY
before=$(tree_sum "$R")
expect_rc 2 "$P" --root "$R" plan --vm 101 --gpus all > /dev/null 2> "$T/bad.err"
grep -q '^passthru: error: /etc/passthru/profiles/host/drivers.json (under the root): drivers\[3\].claims.class must be 4 lower-case hex digits' "$T/bad.err" \
    || fail "broken data not reported with file and field: $(cat "$T/bad.err")"
[[ $(grep -c '^passthru: error' "$T/bad.err") == 1 ]] || fail "more than one error line"
[[ $(tree_sum "$R") == "$before" && ! -e $R/var/lib/passthru ]] || fail "a broken data file let plan write"
ok "a broken data file is one line naming file and field, exit 2, nothing written"

# GPU profiles are checked the same way. The memory-modded 2080 Ti of the shipped profile's
# vram_note: a copy with vram_gib 22 is used; the same copy with the field misspelt is refused
# (before, the misspelt field was ignored and the memory check silently lost the card).
GSHIPPED=$SRC/profiles/gpus/rtx-2080-ti.json
gpu_override() { # ROOT FIELD VALUE: the shipped 2080 Ti profile, vram_gib taken out and FIELD set to VALUE
    mkdir -p "$1/etc/passthru/profiles/gpus"
    python3 - "$GSHIPPED" "$1/etc/passthru/profiles/gpus/rtx-2080-ti.json" "$2" "$3" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
del doc["vram_gib"]
doc[sys.argv[3]] = json.loads(sys.argv[4])
doc["tdp_watts"] = 250  # a field of earlier releases: still accepted
json.dump(doc, open(sys.argv[2], "w"))
PY
}
copy_host epyc-4x2080ti "$R"
gpu_override "$R" vram_gib 22
"$P" --root "$R" plan --vm 101 --gpus all > "$T/g22.out" 2> /dev/null || fail "plan with a valid GPU profile override failed"
grep -q '88 GiB of VRAM' "$T/g22.out" || fail "the override's vram_gib is not used: $(grep -i vram "$T/g22.out")"
copy_host epyc-4x2080ti "$R"
gpu_override "$R" vram_gb 22
before=$(tree_sum "$R")
expect_rc 2 "$P" --root "$R" plan --vm 101 --gpus all > /dev/null 2> "$T/gbad.err"
grep -q '^passthru: error: /etc/passthru/profiles/gpus/rtx-2080-ti.json (under the root): vram_gb is not a field of passthru.gpu-profile/1$' "$T/gbad.err" \
    || fail "a misspelt GPU profile field is not reported with file and field: $(cat "$T/gbad.err")"
[[ $(grep -c '^passthru: error' "$T/gbad.err") == 1 ]] || fail "more than one error line"
[[ $(tree_sum "$R") == "$before" && ! -e $R/var/lib/passthru ]] || fail "a broken GPU profile let plan write"
ok "a GPU profile override is used, and one that breaks the schema is one line naming file and field, exit 2"

# The function layout of a GPU profile is data too: a card whose audio function is gone from
# the host (what 'echo 1 > .../remove' leaves) is a warning that names the function, and the
# plan passes what the host shows.
remove_function() { # ROOT BDF: the tree after the kernel hot-removed BDF (links to it and its directory)
    local dev
    dev=$(readlink -f "$1/sys/bus/pci/devices/$2")
    find "$1/sys" -lname "*/$2" -delete
    rm -rf "$dev"
}
copy_host identical-pair "$R"
"$P" --root "$R" plan --vm 101 --gpus 0 --json > "$T/fn-whole.json" 2> /dev/null || fail "plan on identical-pair failed"
! grep -q 'the host shows no' "$T/fn-whole.json" || fail "a whole card gave a layout warning"
remove_function "$R" 0000:07:00.1
[[ ! -e $R/sys/bus/pci/devices/0000:07:00.1 && -e $R/sys/bus/pci/devices/0000:07:00.0 ]] || fail "remove_function left the tree wrong"
"$P" --root "$R" plan --vm 101 --gpus 0 > "$T/fn.out" 2> /dev/null || fail "plan with the audio function removed failed"
grep -q "the profile rtx-3090.json lists function 1 (HDMI/DP audio, class 0403), but the host shows no 0000:07:00.1" "$T/fn.out" \
    || fail "no warning for the missing audio function: $(grep -i warn -A2 "$T/fn.out" | head -5)"
"$P" --root "$R" plan --vm 101 --gpus 0 --json > "$T/fn.json" 2> /dev/null
python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
assert d["gpus"][0]["functions"] == ["0000:07:00.0"], d["gpus"][0]["functions"]
assert any("rescan" in w for w in d["warnings"]), d["warnings"]' "$T/fn.json" || fail "the JSON plan does not carry the warning or passes a function the host lacks"
ok "a GPU function the profile lists but the host lacks is a warning naming it, in human and JSON output"

# Kernel releases are data too (profiles/host/kernel.json): on an Intel host with a 6.8 kernel
# the shipped file needs no intel_iommu=on; an override that moves the release past 6.8 does.
KSHIPPED=$SRC/profiles/host/kernel.json
kernel_override() { # ROOT FIELD VALUE: the shipped kernel.json with one field changed, as the root's override
    mkdir -p "$1/etc/passthru/profiles/host"
    python3 - "$KSHIPPED" "$1/etc/passthru/profiles/host/kernel.json" "$2" "$3" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc[sys.argv[3]] = sys.argv[4]
json.dump(doc, open(sys.argv[2], "w"))
PY
}
adds() { python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["kernel_args"]["add"]))' "$1"; }
copy_host turing-4fn "$R"
"$P" --root "$R" plan --vm 101 --gpus all --json > "$T/k0.json" 2> /dev/null
[[ " $(adds "$T/k0.json") " != *" intel_iommu=on "* ]] || fail "the shipped data adds intel_iommu=on on a 6.8 kernel"
copy_host turing-4fn "$R"
kernel_override "$R" intel_iommu_default_on 6.9
"$P" --root "$R" plan --vm 101 --gpus all --json > "$T/k1.json" 2> /dev/null
[[ " $(adds "$T/k1.json") " == *" intel_iommu=on "* ]] || fail "intel_iommu_default_on 6.9 did not add intel_iommu=on: $(adds "$T/k1.json")"
grep -q 'kernels before 6.9 leave off by default' "$T/k1.json" || fail "the reason does not name the release from the data"
"$P" --root "$R" scan > /dev/null 2>&1 || fail "scan with a valid kernel.json override failed"
ok "the Intel IOMMU release comes from profiles/host/kernel.json"

copy_host turing-4fn "$R"
kernel_override "$R" sysfb_simple_framebuffer 5.x
before=$(tree_sum "$R")
for cmd in "plan --vm 101 --gpus all" "scan" "verify --gpus all"; do
    expect_rc 2 "$P" --root "$R" $cmd > /dev/null 2> "$T/kbad.err"
    grep -q '^passthru: error: /etc/passthru/profiles/host/kernel.json (under the root): sysfb_simple_framebuffer must be a kernel release' "$T/kbad.err" \
        || fail "$cmd: broken kernel.json not reported with file and field: $(cat "$T/kbad.err")"
    [[ $(grep -c '^passthru: error' "$T/kbad.err") == 1 ]] || fail "$cmd: more than one error line"
done
[[ $(tree_sum "$R") == "$before" && ! -e $R/var/lib/passthru ]] || fail "a broken kernel.json let a command write"
ok "a broken kernel.json stops plan, scan and verify with one line naming file and field, exit 2"
