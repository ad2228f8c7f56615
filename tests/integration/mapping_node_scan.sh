#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# plan --mapping NAME --gpus SPEC --node-scan NODE=FILE...: the cluster mapping built by passthru
# from other nodes' 'passthru scan --json', on a node whose six V100 sit four of them in pairs
# (two cards per IOMMU group, tests/integration/six_v100_pairs.py) and a four-card EPYC node.
# Checked: apply --dry-run writes nothing; apply writes pci.cfg as one journaled generation
# that keeps the file's other sections; the pairs node's own 'plan --vm --gpus all --mapping'
# finds every card already mapped (the same cards, order and ids); a second plan has nothing to
# do; rollback restores pci.cfg byte for byte; a refused node, a conflicting mapping, bad
# arguments and hostile scan files are refused with their exit codes and write nothing.
source "$(dirname "$0")/lib.inc"
need_binary
need python3

python3 "$SRC/tests/integration/six_v100_pairs.py" "$SRC/tests/fixtures" "$T/pairs" > /dev/null || fatal "cannot generate the pairs host"
copy_host epyc-4x2080ti "$T/epyc"
copy_host consumer-shared "$T/consumer"
copy_host epyc-4x2080ti "$T/root"
"$P" --root "$T/pairs" scan --json > "$T/gpu2.json"
"$P" --root "$T/epyc" scan --json > "$T/gpu1.json"
"$P" --root "$T/consumer" scan --json > "$T/gpu3.json"

# The cluster file holds a mapping of its own, which must stay as it is.
mkdir -p "$T/root/etc/pve/mapping"
printf 'other\n\tmap id=10de:2204,node=gpu9,path=0000:0a:00\n\tdescription kept as written\n\n# a comment\n' > "$T/root/etc/pve/mapping/pci.cfg"
cp "$T/root/etc/pve/mapping/pci.cfg" "$T/pci.cfg.orig"
REQ_MAP=(--mapping v100 --gpus all --node-scan "gpu2=$T/gpu2.json" --node-scan "gpu1=$T/gpu1.json")

# The pairs node's scan: two groups of two cards, both selected by 'all', and two clean cards.
python3 - "$T/gpu2.json" > "$T/pairs.txt" << 'PY' || fail "the pairs host does not look as intended"
import json, sys
s = json.load(open(sys.argv[1]))
gpus = [g for g in s["gpus"] if g["nvidia"]]
assert len(gpus) == 6, gpus
assert sorted(g["isolation"] for g in gpus) == ["clean"] * 2 + ["shared-with-gpu"] * 4, [g["isolation"] for g in gpus]
print(" ".join(g["slot"] for g in gpus))
PY
read -r -a SLOTS < "$T/pairs.txt"

sum_before=$(tree_sum --with-journal "$T/root")
"$P" --root "$T/root" apply --dry-run "${REQ_MAP[@]}" > "$T/dry.out" 2>&1 || fail "apply --dry-run: $(cat "$T/dry.out")"
grep -q '^+v100-5$' "$T/dry.out" || fail "the dry run shows no diff of pci.cfg: $(cat "$T/dry.out")"
[[ $(tree_sum --with-journal "$T/root") == "$sum_before" ]] || fail "apply --dry-run wrote"
ok "apply --dry-run shows the mapping and writes nothing"

"$P" --root "$T/root" apply --yes "${REQ_MAP[@]}" > "$T/apply.out" 2>&1 || fail "apply: $(cat "$T/apply.out")"
[[ $(generations "$T/root") == 1 ]] || fail "apply made $(generations "$T/root") generations, not 1"
head -c "$(stat -c %s "$T/pci.cfg.orig")" "$T/root/etc/pve/mapping/pci.cfg" | cmp -s - "$T/pci.cfg.orig" ||
    fail "the file's own sections were not kept: $(cat "$T/root/etc/pve/mapping/pci.cfg")"
python3 - "$T/root/etc/pve/mapping/pci.cfg" "${SLOTS[@]}" << 'PY' || fail "pci.cfg does not map the six cards in scan order"
import sys
text, slots = open(sys.argv[1]).read(), sys.argv[2:]
for k, slot in enumerate(slots):
    ident = "v100" if k == 0 else "v100-%d" % k
    block = text.split("\n%s\n" % ident, 1)[1].split("\n\n", 1)[0]
    assert "node=gpu2,path=%s," % slot in block, (ident, slot, block)
PY
ok "apply: one generation maps gpu2's six cards (the pairs too) and gpu1's four, the other section kept"

# The pairs node plans its VM through the mapping: every card already mapped, pci.cfg untouched.
cp -a "$T/pairs" "$T/pairs-vm"
rm "$T/pairs-vm/etc/hostname" && echo gpu2 > "$T/pairs-vm/etc/hostname"
mkdir -p "$T/pairs-vm/etc/pve/mapping" && cp "$T/root/etc/pve/mapping/pci.cfg" "$T/pairs-vm/etc/pve/mapping/pci.cfg"
"$P" --root "$T/pairs-vm" plan --vm 101 --gpus all --mapping v100 --out - > "$T/vm.json" 2> "$T/vm.err" ||
    fail "the pairs node's own plan: $(cat "$T/vm.err")"
python3 - "$T/vm.json" "${SLOTS[@]}" << 'PY' || fail "the node's own plan disagrees with the mapping"
import json, sys
plan, slots = json.load(open(sys.argv[1])), sys.argv[2:]
assert not plan["refusals"], plan["refusals"]
assert "/etc/pve/mapping/pci.cfg" not in [f["path"] for f in plan["files"]]
for k, slot in enumerate(slots):
    ident = "v100" if k == 0 else "v100-%d" % k
    assert "mapping %s already maps %s on node gpu2" % (ident, slot) in plan["notes"], (ident, plan["notes"])
PY
ok "the pairs node's own plan --vm --mapping finds its six cards already mapped"

"$P" --root "$T/root" plan "${REQ_MAP[@]}" > "$T/again.out" 2>&1 || fail "plan again: $(cat "$T/again.out")"
grep -q 'nothing to do: the cluster mapping is already as planned' "$T/again.out" || fail "plan again: $(cat "$T/again.out")"
ok "a second plan has nothing to do"

"$P" --root "$T/root" rollback --yes > "$T/rollback.out" 2>&1 || fail "rollback: $(cat "$T/rollback.out")"
cmp -s "$T/root/etc/pve/mapping/pci.cfg" "$T/pci.cfg.orig" || fail "rollback did not restore pci.cfg byte for byte"
ok "rollback restores pci.cfg byte for byte"

# Refusals (exit 3) name the node and write nothing.
sum_before=$(tree_sum --with-journal "$T/root")
expect_rc 3 "$P" --root "$T/root" apply --yes --mapping gtx --gpus all --node-scan "gpu1=$T/gpu1.json" --node-scan "gpu3=$T/gpu3.json" 2> "$T/refused.err"
grep -q '^passthru: error: .*node gpu3: GPU 0000:' "$T/refused.err" || fail "the refusal does not name node gpu3: $(cat "$T/refused.err")"
printf 'v100\n\tmap id=10de:1db1,node=gpu2,path=0000:86:00\n\n' >> "$T/root/etc/pve/mapping/pci.cfg"
expect_rc 3 "$P" --root "$T/root" plan "${REQ_MAP[@]}" 2> "$T/conflict.err"
grep -q "mapping v100 already maps node gpu2 to 0000:86:00, not ${SLOTS[0]}" "$T/conflict.err" || fail "conflict: $(cat "$T/conflict.err")"
cp "$T/pci.cfg.orig" "$T/root/etc/pve/mapping/pci.cfg"
[[ $(tree_sum --with-journal "$T/root") == "$sum_before" ]] || fail "a refused request wrote"
ok "a node whose card shares its group with other devices, and a conflicting mapping, are refused (exit 3)"

# Usage errors (exit 2): the request, then hostile scan files.
usage() {
    local want=$1
    shift
    local rc=0
    "$P" --root "$T/root" plan "$@" > /dev/null 2> "$T/usage.err" || rc=$?
    [[ $rc -eq 2 ]] || fail "expected exit 2, got $rc: plan $*"
    grep -qF -- "$want" "$T/usage.err" || fail "plan $*: no '$want' in: $(cat "$T/usage.err")"
}
usage "--node-scan needs --mapping" --gpus all --node-scan "gpu2=$T/gpu2.json"
usage "--node-scan builds a cluster mapping on its own" --vm 101 --gpus all --mapping v100 --node-scan "gpu2=$T/gpu2.json"
usage "write NODE=FILE" --mapping v100 --gpus all --node-scan "$T/gpu2.json"
usage "is not a Proxmox VE node name" --mapping v100 --gpus all --node-scan "-gpu2=$T/gpu2.json"
usage "node gpu2 is given twice" --mapping v100 --gpus all --node-scan "gpu2=$T/gpu2.json" --node-scan "gpu2=$T/gpu1.json"
usage "not a valid mapping id" --mapping 9v --gpus all --node-scan "gpu2=$T/gpu2.json"
usage "node gpu2: --gpus: there is no GPU 9" --mapping v100 --gpus 9 --node-scan "gpu2=$T/gpu2.json"
usage "--node-scan gpu2=$T/missing.json:" --mapping v100 --gpus all --node-scan "gpu2=$T/missing.json"
usage "--node-scan gpu2=/dev/zero: not a regular file" --mapping v100 --gpus all --node-scan "gpu2=/dev/zero"
echo '{"schema": "passthru.scan/1", "host": ' > "$T/cut.json"
usage "--node-scan gpu2=$T/cut.json" --mapping v100 --gpus all --node-scan "gpu2=$T/cut.json"
python3 - "$T/gpu2.json" "$T" << 'PY'
import json, sys
good = json.load(open(sys.argv[1]))
def write(name, change):
    doc = json.loads(json.dumps(good))
    change(doc)
    json.dump(doc, open("%s/%s.json" % (sys.argv[2], name), "w"))
write("plan", lambda d: d.update(schema="passthru.plan/1"))
write("addr", lambda d: d["devices"][2].update(address="0000:00:1g.0"))
write("iso", lambda d: d["gpus"][0].update(isolation="fine"))
write("fn", lambda d: d["gpus"][1].update(functions=["0000:ee:00.0"]))
write("group", lambda d: d["devices"][0].update(iommu_group="2"))
PY
usage "gpu2=$T/plan.json: schema must be \"passthru.scan/1\"" --mapping v100 --gpus all --node-scan "gpu2=$T/plan.json"
usage "devices[2].address: expected a PCI address" --mapping v100 --gpus all --node-scan "gpu2=$T/addr.json"
usage "gpus[0].isolation: expected clean" --mapping v100 --gpus all --node-scan "gpu2=$T/iso.json"
usage "gpus[1].functions: 0000:ee:00.0 is not a device" --mapping v100 --gpus all --node-scan "gpu2=$T/fn.json"
usage "devices[0].iommu_group: expected a non-negative integer" --mapping v100 --gpus all --node-scan "gpu2=$T/group.json"
[[ $(tree_sum --with-journal "$T/root") == "$sum_before" ]] || fail "a usage error wrote"
ok "bad requests and hostile scan files: exit 2 naming the file and the field, nothing written"

finish "mapping_node_scan: a cluster mapping from node scans, journaled, agreeing with each node's plan"
