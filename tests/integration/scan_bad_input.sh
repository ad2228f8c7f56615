#!/usr/bin/env bash
# scan on bad input: one clear line and exit 2 for a root that is missing or
# holds no sysfs; a garbled or missing attribute leaves the device listed with
# that field null and a warning; never a crash, never a write.
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary

expect_usage() { # ROOT DESCRIPTION
    set +e
    "$PASSTHRU" --root "$1" scan >"$T/out" 2>"$T/err"
    rc=$?
    set -e
    [[ $rc -eq 2 ]] || fail "$2: exit $rc, expected 2"
    [[ ! -s "$T/out" ]] || fail "$2: printed on stdout"
    [[ $(grep -c '^passthru: error: ' "$T/err") -eq 1 ]] || fail "$2: expected one error line, got: $(cat "$T/err")"
    ! grep -qiE 'terminate|abort|what\(\)|segmentation' "$T/err" || fail "$2: crashed: $(cat "$T/err")"
}

expect_usage "$T/does-not-exist" "missing root"
mkdir -p "$T/empty"
expect_usage "$T/empty" "root without sysfs"
echo "not a directory" > "$T/file"
expect_usage "$T/file" "root that is a file"

# A copy of a real fixture with garbage and missing attributes.
root="$T/root"
cp -a "$FIXTURES/turing-4fn" "$root"
dev="$root/sys/bus/pci/devices/0000:01:00.0"
printf 'garbage\n' > "$dev/class"
rm -f "$dev/numa_node"
printf '\377\376' > "$root/sys/bus/pci/devices/0000:01:00.1/vendor"
rm -f "$root/sys/bus/pci/devices/0000:01:00.2/iommu_group"
before=$(cd "$root" && find . -printf '%p %s %m %l\n' | sort | sha256sum)
"$PASSTHRU" --root "$root" scan --json >"$T/scan.json" 2>"$T/err" || fail "scan of a garbled tree failed: $(cat "$T/err")"
after=$(cd "$root" && find . -printf '%p %s %m %l\n' | sort | sha256sum)
[[ "$before" == "$after" ]] || fail "scan changed the root"
python3 - "$T/scan.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
devs = {d["address"]: d for d in doc["devices"]}
vga = devs["0000:01:00.0"]
assert vga["class"] is None, vga["class"]
assert vga["numa_node"] is None
assert vga["vendor"] == "10de"
assert devs["0000:01:00.1"]["vendor"] is None
assert devs["0000:01:00.2"]["iommu_group"] == 1, "group still known from /sys/kernel/iommu_groups"
msgs = [p["message"] for p in doc["problems"] if p["severity"] == "warning"]
assert any("0000:01:00.0" in m and "'class'" in m for m in msgs), msgs
assert any("0000:01:00.1" in m and "'vendor'" in m for m in msgs), msgs
PY
ok "scan handles bad roots and garbled attributes"
