#!/usr/bin/env bash
# lspci (pciutils, reading the fixture tree through libpci's linux-sysfs method) must see
# exactly the functions, ids, classes, subsystems and bound drivers each host description
# says, and link speed/width, IOMMU group and NUMA node consistent with the tree's sysfs.
set -euo pipefail
src=${PASSTHRU_SOURCE_DIR:?PASSTHRU_SOURCE_DIR must point at the repository}
command -v lspci >/dev/null || { echo "FAIL: lspci not found (pciutils; scripts/ installs it)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/passthru-lspci.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

status=0
n=0
for desc in "$src"/tests/fixtures/descriptions/*.json; do
    name=$(basename "$desc" .json)
    root="$src/tests/fixtures/hosts/$name"
    [[ -d "$root" ]] || { echo "FAIL: $root missing"; status=1; continue; }
    # lspci warns on stderr when it cannot load this machine's module index: not our tree.
    lspci -A linux-sysfs -O sysfs.path="$root/sys/bus/pci" -D -nnk >"$tmp/$name.nnk" 2>"$tmp/$name.err"
    lspci -A linux-sysfs -O sysfs.path="$root/sys/bus/pci" -D -vv -nn >"$tmp/$name.vv" 2>>"$tmp/$name.err"
    if grep -v 'libkmod' "$tmp/$name.err" | grep -q .; then
        echo "FAIL: $name: lspci complained:"; grep -v libkmod "$tmp/$name.err"; status=1
    fi
    python3 "$src/tests/integration/check_lspci.py" "$desc" "$root" "$tmp/$name.nnk" "$tmp/$name.vv" || status=1
    n=$((n + 1))
done
[[ $n -gt 0 ]] || { echo "FAIL: no fixture descriptions found"; exit 1; }
exit $status
