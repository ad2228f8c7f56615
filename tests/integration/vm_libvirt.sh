#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The libvirt backend of `passthru plan` against libvirt's test driver (no
# daemon): domains come from a test:///PATH node file. The planned XML must
# validate against libvirt's RNG schema (virt-xml-validate), carry one managed
# PCI hostdev per function with each card one multifunction guest device, and
# libvirt's errors must never reach stderr raw.
source "$(dirname "$0")/lib.inc"
need_binary
need virt-xml-validate xmllint

root=$T/root
cp -a "$SRC/tests/fixtures/hosts/epyc-4x2080ti" "$root"

cat >"$T/node.xml" <<'EOF'
<node>
  <cpu>
    <mhz>2300</mhz>
    <model>x86_64</model>
    <nodes>1</nodes>
    <sockets>1</sockets>
    <cores>48</cores>
    <threads>2</threads>
  </cpu>
  <memory>268435456</memory>
  <domain type='kvm'>
    <name>mlvm</name>
    <memory unit='KiB'>67108864</memory>
    <vcpu placement='static'>16</vcpu>
    <os>
      <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>
      <loader readonly='yes' type='pflash'>/usr/share/OVMF/OVMF_CODE_4M.fd</loader>
    </os>
    <devices>
      <emulator>/usr/bin/qemu-system-x86_64</emulator>
      <disk type='file' device='disk'>
        <driver name='qemu' type='qcow2'/>
        <source file='/var/lib/libvirt/images/mlvm.qcow2'/>
        <target dev='vda' bus='virtio'/>
        <address type='pci' domain='0x0000' bus='0x01' slot='0x00' function='0x0'/>
      </disk>
      <controller type='pci' index='0' model='pcie-root'/>
      <controller type='pci' index='1' model='pcie-root-port'>
        <model name='pcie-root-port'/>
        <target chassis='1' port='0x10'/>
        <address type='pci' domain='0x0000' bus='0x00' slot='0x02' function='0x0' multifunction='on'/>
      </controller>
      <controller type='pci' index='2' model='pcie-root-port'>
        <model name='pcie-root-port'/>
        <target chassis='2' port='0x11'/>
        <address type='pci' domain='0x0000' bus='0x00' slot='0x02' function='0x1'/>
      </controller>
      <interface type='network'>
        <mac address='52:54:00:12:34:56'/>
        <source network='default'/>
        <model type='virtio'/>
        <address type='pci' domain='0x0000' bus='0x00' slot='0x03' function='0x0'/>
      </interface>
      <memballoon model='none'/>
    </devices>
  </domain>
  <domain type='kvm'>
    <name>pcvm</name>
    <memory unit='KiB'>8388608</memory>
    <vcpu placement='static'>4</vcpu>
    <os>
      <type arch='x86_64' machine='pc-i440fx-7.2'>hvm</type>
    </os>
    <devices>
      <emulator>/usr/bin/qemu-system-x86_64</emulator>
      <controller type='pci' index='0' model='pci-root'/>
      <interface type='network'>
        <mac address='52:54:00:65:43:21'/>
        <source network='default'/>
        <model type='virtio'/>
        <address type='pci' domain='0x0000' bus='0x00' slot='0x03' function='0x0'/>
      </interface>
    </devices>
  </domain>
</node>
EOF
uri="test://$T/node.xml"

plan() {
  set +e
  "$PASSTHRU" --root "$root" plan --backend libvirt --connect "$uri" "$@" --json >"$T/plan.json" 2>"$T/plan.err"
  rc=$?
  set -e
}

# after_xml NAME FILE
after_xml() {
  python3 - "$T/plan.json" "$1" "$2" <<'EOF'
import json, sys
plan = json.load(open(sys.argv[1]))
for d in plan["domains"]:
    if d["name"] == sys.argv[2]:
        open(sys.argv[3], "w").write(d["after_xml"])
        sys.exit(0)
sys.exit(1)
EOF
}

# check_hostdevs FILE CARDS Q35: every function of every card is one managed
# hostdev; a card's functions share a guest bus/slot, function 0 multifunction.
check_hostdevs() {
  python3 - "$1" "$2" "$3" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cards, q35 = int(sys.argv[2]), sys.argv[3] == "1"
devs = root.find("devices")
by_card = {}
for h in devs.findall("hostdev"):
    assert h.get("mode") == "subsystem" and h.get("type") == "pci" and h.get("managed") == "yes", ET.tostring(h)
    s = h.find("source/address")
    g = h.find("address")
    assert g is not None and g.get("type") == "pci", "hostdev without a guest address"
    key = (s.get("domain"), s.get("bus"), s.get("slot"))
    by_card.setdefault(key, []).append((int(s.get("function"), 16), g))
assert len(by_card) == cards, f"{len(by_card)} cards, expected {cards}"
slots = set()
ports = {c.get("index"): c.get("model") for c in devs.findall("controller") if c.get("type") == "pci"}
for key, fns in by_card.items():
    fns.sort(key=lambda f: f[0])
    places = {(g.get("bus"), g.get("slot")) for _, g in fns}
    assert len(places) == 1, f"card {key} spread over {places}"
    place = places.pop()
    assert place not in slots, f"two cards share guest slot {place}"
    slots.add(place)
    for i, (fn, g) in enumerate(fns):
        assert int(g.get("function"), 16) == i, f"card {key}: guest function {g.get('function')} for host function {fn}"
        assert (g.get("multifunction") == "on") == (i == 0 and len(fns) > 1), f"card {key}: multifunction on function {i}"
    if q35:
        assert ports.get(str(int(place[0], 16))) == "pcie-root-port", f"card {key} not behind a pcie-root-port: bus {place[0]}"
        assert int(place[1], 16) == 0
    else:
        assert int(place[0], 16) == 0
print(f"{len(by_card)} cards ok")
EOF
}

plan --vm mlvm --gpus all
[ "$rc" = 0 ] || fail "q35 domain: exit $rc: $(cat "$T/plan.err")"
after_xml mlvm "$T/mlvm.xml" || fail "q35 domain: no domain change"
virt-xml-validate "$T/mlvm.xml" domain >"$T/validate.out" 2>&1 || fail "q35 domain does not validate: $(cat "$T/validate.out")"
check_hostdevs "$T/mlvm.xml" 4 1 || fail "q35 hostdevs"
grep -c "<hostdev mode='subsystem' type='pci' managed='yes'>" "$T/mlvm.xml" | grep -qx 16 || fail "q35: expected 16 hostdevs (4 cards x 4 functions)"
# Root port 1 holds the disk, port 2 is free and reused, three more are added.
grep -c "model='pcie-root-port'" "$T/mlvm.xml" | grep -qx 5 || fail "q35: expected 5 pcie-root-ports"
grep -q "libvirt: " "$T/plan.err" && fail "libvirt printed to stderr: $(cat "$T/plan.err")"

plan --vm pcvm --gpus 0000:01:00,0000:41:00
[ "$rc" = 0 ] || fail "i440fx domain: exit $rc: $(cat "$T/plan.err")"
after_xml pcvm "$T/pcvm.xml" || fail "i440fx domain: no domain change"
virt-xml-validate "$T/pcvm.xml" domain >"$T/validate.out" 2>&1 || fail "i440fx domain does not validate: $(cat "$T/validate.out")"
check_hostdevs "$T/pcvm.xml" 2 0 || fail "i440fx hostdevs"

# A domain that already has the cards as planned: nothing to do.
sed -n '/<domain/,/<\/domain>/p' "$T/mlvm.xml" >/dev/null
python3 - "$T/node.xml" "$T/mlvm.xml" "$T/node2.xml" <<'EOF'
import sys, re
node = open(sys.argv[1]).read()
dom = open(sys.argv[2]).read()
dom = re.sub(r"\s*<uuid>.*?</uuid>", "", dom)
start = node.index("<domain type='kvm'>")
end = node.index("</domain>", start) + len("</domain>")
open(sys.argv[3], "w").write(node[:start] + dom.strip() + node[end:])
EOF
uri="test://$T/node2.xml"
plan --vm mlvm --gpus all
[ "$rc" = 0 ] || fail "second plan: exit $rc: $(cat "$T/plan.err")"
python3 -c 'import json,sys; sys.exit(1 if json.load(open(sys.argv[1]))["domains"] else 0)' "$T/plan.json" || fail "second plan changes the domain again"
uri="test://$T/node.xml"

# Refusals and usage errors, with libvirt's messages captured.
plan --vm nosuch --gpus all
[ "$rc" = 3 ] && grep -q "does not exist" "$T/plan.err" || fail "missing domain: exit $rc: $(cat "$T/plan.err")"
uri="test:///nonexistent/node.xml"
plan --vm mlvm --gpus all
[ "$rc" = 2 ] || fail "bad URI (no such test-driver file): exit $rc"
grep -v '^passthru: \|^hint: \|^  ' "$T/plan.err" | grep . && fail "raw output on stderr for a bad URI: $(cat "$T/plan.err")"
set +e
"$PASSTHRU" --root "$root" plan --backend libvirt --vm mlvm --gpus all >/dev/null 2>"$T/err"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q -- "--connect" "$T/err" || fail "--root without --connect: exit $rc"

# Under --root nothing outside the root is contacted: a daemon URI
# (qemu:///system, test://HOST/ through the remote driver) is refused before
# libvirt opens anything, and the test driver connects nowhere. strace shows
# every connect(2), with LIBVIRT_DEFAULT_URI unset.
command -v strace >/dev/null || fatal "strace is missing (scripts/deps.sh installs it)"
for u in qemu:///system test://localhost/default "test://$T/node.xml"; do
  rc=0
  # LeakSanitizer cannot run under ptrace: the sanitizer run's leak check is off here only.
  env -u LIBVIRT_DEFAULT_URI ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    strace -f -qq -e trace=connect -o "$T/connect.trace" \
    "$PASSTHRU" --root "$root" plan --backend libvirt --connect "$u" --vm mlvm --gpus all >/dev/null 2>"$T/err" || rc=$?
  if [[ $u == "test://$T/node.xml" ]]; then
    [ "$rc" = 0 ] || fail "--root with the test driver: exit $rc: $(cat "$T/err")"
  else
    [ "$rc" = 3 ] && [ "$(grep -c '^passthru: error:' "$T/err")" = 1 ] && grep -q "connects to no libvirt daemon" "$T/err" ||
      fail "--root --connect $u: exit $rc, not refused in one line: $(cat "$T/err")"
  fi
  grep -E 'libvirt|virtqemud|virtproxyd|AF_INET' "$T/connect.trace" &&
    fail "--root --connect $u: passthru connected outside the root: $(grep -E 'libvirt|virtqemud|AF_INET' "$T/connect.trace" | head -3)"
done
ok "under --root, daemon URIs are refused (exit 3) and nothing connects to libvirtd or the network"

finish "vm_libvirt: q35 and i440fx domains validate, hostdevs multifunction, refusals ok"
