#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# passthru verify on fixture copies: right after apply (no reboot yet) it
# fails with what is wrong and what to do; on an "after the reboot" tree
# (driver links moved to vfio-pci, /dev/vfio/<group> nodes, the new
# /proc/cmdline) it passes, with VFIO's own check "not checked (--root)"; a
# function left on a host driver fails again;
# a host without IOMMU exits 3.
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary

# reboot_into_vfio ROOT PLAN_JSON [SKIP_FUNCTION]: what the reboot would do.
reboot_into_vfio() {
    python3 - "$@" <<'PY'
import json, os, sys
root, plan = sys.argv[1], json.load(open(sys.argv[2]))
skip = sys.argv[3] if len(sys.argv) > 3 else None
def replace(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)  # never write through a hard link to the pristine copy
drv = os.path.join(root, "sys/bus/pci/drivers/vfio-pci")
os.makedirs(drv, exist_ok=True)
os.makedirs(os.path.join(root, "dev/vfio"), exist_ok=True)
open(os.path.join(root, "dev/vfio/vfio"), "w").close()
for g in plan["gpus"]:
    for fn in g["functions"]:
        if fn == skip:
            continue
        dev = os.path.realpath(os.path.join(root, "sys/bus/pci/devices", fn))
        link = os.path.join(dev, "driver")
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(os.path.relpath(drv, dev), link)
    for n in g["iommu_groups"]:
        open(os.path.join(root, "dev/vfio", str(n)), "w").close()
cmdline = os.path.join(root, "proc/cmdline")
text = open(cmdline).read().split()
text = [a for a in text if a not in plan["kernel_args"]["remove"]] + plan["kernel_args"]["add"]
replace(cmdline, " ".join(text) + "\n")
PY
}

for host in "${VARIANTS[@]}"; do
    # What the host's hardware makes verify say (from its fixture description).
    case $host in
    *t180*) # 4x V100, one function each, no driver (nouveau blacklisted by the owner)
        first_held='FAIL 0000:04:00.0 has no driver: vfio-pci did not claim it'
        first_group=16 card_fn=0000:04:00.0 card_last=0000:04:00.0
        left_fn=0000:05:00.0 left_msg='FAIL 0000:05:00.0 has no driver' last_card=0000:85:00.0 ;;
    *) # the EPYC build: 4x RTX 2080 Ti with 4 functions, on nouveau, snd_hda_intel, ...
        first_held='FAIL 0000:01:00.0 is bound to the host driver'
        first_group=12 card_fn=0000:01:00.0 card_last=0000:01:00.3
        left_fn=0000:41:00.1 left_msg='FAIL 0000:41:00.1 is bound to the host driver snd_hda_intel' last_card=0000:82:00.0 ;;
    esac
    R=$T/$host
    copy_host "$host" "$R"
    expect_rc 2 "$P" --root "$R" verify > /dev/null 2> "$T/v0.err" # nothing applied, nothing named
    grep -q 'nothing to verify' "$T/v0.err" || fail "$host: verify without target not explained"
    "$P" --root "$R" plan "${REQ[@]}" --json > "$T/plan.json"
    expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2>&1

    expect_rc 1 "$P" --root "$R" verify > "$T/v1.out" 2>&1
    grep -q "$first_held" "$T/v1.out" || { cat "$T/v1.out"; fail "$host: host driver not reported"; }
    grep -q "FAIL /dev/vfio/$first_group is missing" "$T/v1.out" || fail "$host: missing /dev/vfio node not reported"
    grep -q "command line lacks iommu=pt" "$T/v1.out" || fail "$host: kernel argument not checked"
    grep -q 'fix: ' "$T/v1.out" || fail "$host: no fixes"
    ok "$host: verify before the reboot fails with fixes"

    reboot_into_vfio "$R" "$T/plan.json"
    expect_rc 0 "$P" --root "$R" verify > "$T/v2.out" 2>&1 || true
    grep -q 'Everything is ready' "$T/v2.out" || { cat "$T/v2.out"; fail "$host: verify after the reboot did not pass"; }
    grep -q 'ok   VM 101 passes every selected function' "$T/v2.out" || fail "$host: VM config not checked"
    # Under --root there is no kernel VFIO to ask: said for each group, never "ok".
    grep -q "note VFIO's answer for IOMMU group $first_group: not checked (--root)" "$T/v2.out" ||
        { cat "$T/v2.out"; fail "$host: the VFIO check does not say it was not made under --root"; }
    ! grep -q 'ok   VFIO' "$T/v2.out" || fail "$host: VFIO reported ok under --root"
    expect_rc 0 "$P" --root "$R" verify --vm 101 > /dev/null 2>&1
    expect_rc 0 "$P" --root "$R" verify --gpus 0,1 > /dev/null 2>&1
    # --gpus has plan's grammar: a function address names its card.
    expect_rc 0 "$P" --root "$R" verify --gpus $card_fn > "$T/vfn.out" 2>&1
    grep -q "ok   $card_last is bound to vfio-pci" "$T/vfn.out" || { cat "$T/vfn.out"; fail "$host: verify --gpus FUNCTION did not check the whole card"; }
    ok "$host: verify after the reboot passes (generation, --vm, --gpus)"

    copy_host "$host" "$R"
    expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2>&1
    reboot_into_vfio "$R" "$T/plan.json" $left_fn
    expect_rc 1 "$P" --root "$R" verify --vm 101 > "$T/v3.out" 2>&1
    grep -q "$left_msg" "$T/v3.out" || { cat "$T/v3.out"; fail "$host: audio function left on the host not reported"; }
    ok "$host: one function left off vfio-pci fails verify"

    # The VM config lost a card.
    python3 - "$R/etc/pve/qemu-server/101.conf" <<'PY'
import os, sys
p = sys.argv[1]
lines = [l for l in open(p) if not l.startswith("hostpci3:")]
open(p + ".tmp", "w").writelines(lines); os.replace(p + ".tmp", p)
PY
    expect_rc 1 "$P" --root "$R" verify > "$T/v4.out" 2>&1
    grep -q "VM 101's config does not pass $last_card" "$T/v4.out" || { cat "$T/v4.out"; fail "$host: missing hostpci not reported"; }
    ok "$host: a card missing from the VM config fails verify"
done

# A cluster node whose /etc/hostname is a full name: PVE's node name (and the
# mapping's node=) is the part before the first dot, for plan and verify alike.
R=$T/fqdn
copy_host epyc-4x2080ti "$R"
rm "$R/etc/hostname" && echo pve1.lab.example > "$R/etc/hostname"
"$P" --root "$R" plan "${REQ[@]}" --mapping gpus --json > "$T/fqdn.json"
expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --mapping gpus --yes > /dev/null 2>&1
grep -q 'node=pve1,' "$R/etc/pve/mapping/pci.cfg" || fail "fqdn: the mapping does not name node pve1"
reboot_into_vfio "$R" "$T/fqdn.json"
expect_rc 0 "$P" --root "$R" verify --vm 101 > "$T/fqdn.out" 2>&1
grep -q 'ok   VM 101 passes every selected function' "$T/fqdn.out" || { cat "$T/fqdn.out"; fail "fqdn: VM config through the mapping not checked"; }
grep -q 'ok   0000:82:00.3 is bound to vfio-pci' "$T/fqdn.out" || fail "fqdn: the mapped cards were not all verified"
ok "fqdn: verify --vm finds the cards a mapping passes on a node whose hostname has dots"

# The group rule (docs/facts.md: group-rule): on the X570 host the RTX 3070 shares group 2
# with AMD's dummy host bridge 00:03.0 (no driver, no BARs). scan calls the group clean and
# names it; plan and apply go ahead; verify expects it unbound or on vfio-pci, and fails
# once a host driver holds it.
R=$T/x570
copy_host ryzen-x570-dummy "$R"
"$P" --root "$R" scan > "$T/x570.scan" 2>&1
grep -q 'clean (0000:00:03.0 goes along: no driver, no BARs)' "$T/x570.scan" || { cat "$T/x570.scan"; fail "x570: scan does not name the function that goes along"; }
"$P" --root "$R" plan --vm 101 --gpus 0 --json > "$T/x570.json"
jq -e '[.notes[] | select(test("0000:00:03.0 .*goes along: no driver, no BARs"))] | length == 1' "$T/x570.json" > /dev/null ||
    fail "x570: the plan does not name 0000:00:03.0 as going along"
expect_rc 0 "$P" --root "$R" apply --vm 101 --gpus 0 --yes > /dev/null 2>&1
grep -q '^hostpci0: 0000:02:00,' "$R/etc/pve/qemu-server/101.conf" || fail "x570: the card is not in the VM config"
! grep -q '00:03' "$R/etc/pve/qemu-server/101.conf" || fail "x570: the dummy bridge was passed to the guest"
reboot_into_vfio "$R" "$T/x570.json"
expect_rc 0 "$P" --root "$R" verify > "$T/x570.v1" 2>&1
grep -q 'ok   0000:00:03.0 in IOMMU group 2 goes along: no driver, no BARs (unbound)' "$T/x570.v1" || { cat "$T/x570.v1"; fail "x570: verify does not expect the dummy bridge unbound"; }
# rom dump (docs/facts.md: rom-files): on the fixture the card has no rom file (exit 3);
# a regular file stands in for the sysfs switch, so the "1" written over its first byte
# spoils the bytes read: the check refuses them, FILE is not written, and the "0" written
# last shows the switch was turned off again.
expect_rc 3 "$P" --root "$R" rom dump 0000:02:00 "$T/x570.rom" > /dev/null 2> "$T/x570.rom.err"
grep -q 'has no ROM BAR' "$T/x570.rom.err" || { cat "$T/x570.rom.err"; fail "x570: rom dump without a rom file not refused"; }
rom=$(realpath "$R/sys/bus/pci/devices/0000:02:00.0")/rom
printf 'U\252 the rest of an option ROM, past its header' > "$rom"
expect_rc 1 "$P" --root "$R" rom dump 0000:02:00 "$T/x570.rom" > /dev/null 2> "$T/x570.rom.err"
grep -q 'is not a usable option ROM: image 0 at 0x0 does not start with 55 AA (.*x570.rom not written)' "$T/x570.rom.err" ||
    { cat "$T/x570.rom.err"; fail "x570: rom dump of bad bytes not refused"; }
[[ ! -e $T/x570.rom && $(head -c 1 "$rom") == 0 ]] || fail "x570: rom dump wrote FILE, or left the rom switch on"
expect_rc 3 "$P" --root "$R" rom dump 0000:03:00 "$T/x570.rom" > /dev/null 2> "$T/x570.rom.err"
grep -q 'refused: 0000:03:00.0 is held by nouveau' "$T/x570.rom.err" || { cat "$T/x570.rom.err"; fail "x570: rom dump of a card a driver holds not refused"; }
rm "$rom"
mkdir -p "$R/sys/bus/pci/drivers/k10temp"
ln -s ../../../../bus/pci/drivers/k10temp "$(realpath "$R/sys/bus/pci/devices/0000:00:03.0")/driver"
expect_rc 1 "$P" --root "$R" verify > "$T/x570.v2" 2>&1
grep -q 'FAIL IOMMU group 2 also holds 0000:00:03.0 on the host driver k10temp' "$T/x570.v2" || { cat "$T/x570.v2"; fail "x570: a host driver on the bridge does not fail verify"; }
ok "ryzen-x570-dummy: the dummy host bridge goes along (scan, plan, apply, verify)"

# A card that did not come back after its VM stopped (docs/facts.md: card-state): the
# display function left in D3cold, the audio function answering all ones. verify fails
# before the next start, with the power-off fix and the VM that starts it on boot.
rm "$(realpath "$R/sys/bus/pci/devices/0000:00:03.0")/driver"
expect_rc 0 "$P" --root "$R" verify > /dev/null 2>&1
echo D3cold > "$(realpath "$R/sys/bus/pci/devices/0000:02:00.0")/power_state"
python3 -c 'import sys; open(sys.argv[1], "wb").write(b"\xff" * 4096)' "$(realpath "$R/sys/bus/pci/devices/0000:02:00.1")/config"
echo 'onboot: 1' >> "$R/etc/pve/qemu-server/101.conf"
expect_rc 1 "$P" --root "$R" verify > "$T/x570.v3" 2>&1
grep -q 'FAIL GPU 0000:02:00 did not come back: 0000:02:00.0 is in D3cold (powered down) and does not wake; 0000:02:00.1.s config space reads all ones: the function does not answer (its resets: flr, bus (the card alone on its bus))' "$T/x570.v3" ||
    { cat "$T/x570.v3"; fail "x570: a card in D3cold / all ones does not fail verify"; }
grep -q 'fix: power the host off completely and start it again: a warm reboot does not reset a card in this state; until then VM 101 (onboot: 1)' "$T/x570.v3" ||
    { cat "$T/x570.v3"; fail "x570: the fix or the onboot VM is not named"; }
"$P" --root "$R" scan > "$T/x570.scan2" 2>&1 || true
grep -q 'did not come back' "$T/x570.scan2" || { cat "$T/x570.scan2"; fail "x570: scan does not name the card that did not come back"; }
"$P" --root "$R" explain 101 --json > "$T/x570.explain" 2>&1 || true
jq -e '[.notes[] | select(test("GPU 0000:02:00 did not come back: .*power the host off completely"))] | length == 1' "$T/x570.explain" > /dev/null ||
    { cat "$T/x570.explain"; fail "x570: explain does not name the card that did not come back"; }
ok "ryzen-x570-dummy: a card in D3cold or answering all ones fails verify with the power-off fix and the onboot VM"

# The kernel's give-up since boot (tests/fixtures/kernel-log): the card answers again in
# sysfs, but the log of this boot says the kernel gave up on it after an FLR; the same
# line in the boot before does not count.
echo D0 > "$(realpath "$R/sys/bus/pci/devices/0000:02:00.0")/power_state"
cfg=$(realpath "$R/sys/bus/pci/devices/0000:02:00.1")/config
cp "$SRC/tests/fixtures/hosts/ryzen-x570-dummy/${cfg#"$(realpath "$R")"/}" "$cfg"
mkdir -p "$R/var/log"
sed 's/0000:01:00\.0/0000:02:00.0/; s/0000:01:00\.1/0000:02:00.1/' "$SRC/tests/fixtures/kernel-log/reset-timeouts.kern.log" > "$R/var/log/kern.log"
expect_rc 1 "$P" --root "$R" verify > "$T/x570.v4" 2>&1
grep -q 'FAIL GPU 0000:02:00 did not come back: 0000:02:00.0 did not come back after FLR (kernel log since boot: "vfio-pci 0000:02:00.0: not ready 65535ms after FLR; giving up")' "$T/x570.v4" ||
    { cat "$T/x570.v4"; fail "x570: the kernel's give-up after FLR does not fail verify"; }
! grep -q '0000:02:00.1 did not come back' "$T/x570.v4" || { cat "$T/x570.v4"; fail "x570: the boot before's give-up counted"; }
rm "$R/var/log/kern.log"
ok "ryzen-x570-dummy: the kernel log's give-up after FLR since boot fails verify"

copy_host qemu-noiommu "$T/noiommu"
expect_rc 3 "$P" --root "$T/noiommu" verify --gpus 0000:04:00 > "$T/v5.out" 2>&1
grep -q 'the IOMMU is off' "$T/v5.out" || fail "no-IOMMU host not reported"
ok "qemu-noiommu: IOMMU off: exit 3"
