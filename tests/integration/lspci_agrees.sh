#!/usr/bin/env bash
# lspci (pciutils, reading the fixture tree through libpci's linux-sysfs method) must see
# exactly the functions, ids, classes, subsystems and bound drivers each host description
# says, and link speed/width, IOMMU group and NUMA node consistent with the tree's sysfs.
source "$(dirname "$0")/lib.inc"
src=$SRC
command -v lspci >/dev/null || fatal "lspci not found (pciutils; scripts/deps.sh installs it)"

n=0
for desc in "$src"/tests/fixtures/descriptions/*.json; do
    name=$(basename "$desc" .json)
    root="$src/tests/fixtures/hosts/$name"
    [[ -d "$root" ]] || { fail "$root missing"; continue; }
    # lspci warns on stderr when it cannot load this machine's module index: not our tree.
    lspci -A linux-sysfs -O sysfs.path="$root/sys/bus/pci" -D -nnk >"$T/$name.nnk" 2>"$T/$name.err"
    lspci -A linux-sysfs -O sysfs.path="$root/sys/bus/pci" -D -vv -nn >"$T/$name.vv" 2>>"$T/$name.err"
    if grep -v 'libkmod' "$T/$name.err" | grep -q .; then
        fail "$name: lspci complained:"; grep -v libkmod "$T/$name.err"
    fi
    python3 "$src/tests/integration/check_lspci.py" "$desc" "$root" "$T/$name.nnk" "$T/$name.vv" || fail "$name: check_lspci.py"
    n=$((n + 1))
done
[[ $n -gt 0 ]] || fatal "no fixture descriptions found"
finish "lspci agrees with $n fixture descriptions"
