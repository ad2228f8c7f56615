#!/usr/bin/env bash
# scan on bad input: one clear line and exit 2 for a root that is missing or
# holds no sysfs; a garbled or missing attribute leaves the device listed with
# that field null and a warning; never a crash, never a write.
set -euo pipefail
: "${PASSTHRU:?}" "${PASSTHRU_SOURCE_DIR:?}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/passthru-scan-bad.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

expect_usage() { # ROOT DESCRIPTION
    set +e
    "$PASSTHRU" --root "$1" scan >"$tmp/out" 2>"$tmp/err"
    rc=$?
    set -e
    [[ $rc -eq 2 ]] || fail "$2: exit $rc, expected 2"
    [[ ! -s "$tmp/out" ]] || fail "$2: printed on stdout"
    [[ $(grep -c '^passthru: error: ' "$tmp/err") -eq 1 ]] || fail "$2: expected one error line, got: $(cat "$tmp/err")"
    ! grep -qiE 'terminate|abort|what\(\)|segmentation' "$tmp/err" || fail "$2: crashed: $(cat "$tmp/err")"
}

expect_usage "$tmp/does-not-exist" "missing root"
mkdir -p "$tmp/empty"
expect_usage "$tmp/empty" "root without sysfs"
echo "not a directory" > "$tmp/file"
expect_usage "$tmp/file" "root that is a file"

# A copy of a real fixture with garbage and missing attributes.
root="$tmp/root"
cp -a "$PASSTHRU_SOURCE_DIR/tests/fixtures/hosts/turing-4fn" "$root"
dev="$root/sys/bus/pci/devices/0000:01:00.0"
printf 'garbage\n' > "$dev/class"
rm -f "$dev/numa_node"
printf '\377\376' > "$root/sys/bus/pci/devices/0000:01:00.1/vendor"
rm -f "$root/sys/bus/pci/devices/0000:01:00.2/iommu_group"
before=$(cd "$root" && find . -printf '%p %s %m %l\n' | sort | sha256sum)
"$PASSTHRU" --root "$root" scan --json >"$tmp/scan.json" 2>"$tmp/err" || fail "scan of a garbled tree failed: $(cat "$tmp/err")"
after=$(cd "$root" && find . -printf '%p %s %m %l\n' | sort | sha256sum)
[[ "$before" == "$after" ]] || fail "scan changed the root"
python3 - "$tmp/scan.json" <<'PY'
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
echo "ok: scan handles bad roots and garbled attributes"
