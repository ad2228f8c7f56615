#!/usr/bin/env bash
# NIC name pinning on the PVE 9 fixtures (docs/facts.md: pve9):
#  - 9.1 host, NICs pinned by the installer as nic0/nic1: a bond of the pinned
#    names is planned, named as pinned, and no unpinned-name warning is shown;
#  - 9.2 host, NICs still under their kernel names: a bond of those names warns
#    that they are not pinned;
#  - 9.2 host with --pin-nics: apply writes 50-pmx-nic0.link / 50-pmx-nic1.link as
#    pve-network-interface-pinning does (read back with Python's configparser:
#    the [Match]/[Link] keys, and the MAC of each file is the NIC's own MAC from
#    sysfs, in PCI order), interfaces.new names only the pinned names, no
#    warning; rollback removes the files and the directories it made, byte for byte;
#  - --pin-nics with --apply-network exits 2; a bond naming the kernel name of a
#    NIC a .link file renames at the next boot is refused (exit 3).
source "$(dirname "$0")/lib.inc"
need_binary
for h in pve91-epyc-4x2080ti-zfs pve92-epyc-4x2080ti; do
    [[ -d $FIXTURES/$h ]] || skip "fixture $h missing"
done

# --- 9.1: pinned names accepted, no warning ---------------------------------------------
R=$T/pve91
copy_host pve91-epyc-4x2080ti-zfs "$R"
expect_rc 0 "$P" --root "$R" plan --json "${REQ[@]}" --bond nic0,nic1 --bond-mode active-backup > "$T/p91.json" 2> "$T/p91.err"
jq -e '.notes | any(test("^network: bond member nic0 is a pinned name \\(/usr/local/lib/systemd/network/50-pmx-nic0.link, MAC 70:85:c2:a1:3e:10\\)"))' "$T/p91.json" > /dev/null ||
    fail "pve91: no note that nic0 is pinned: $(jq -c .notes "$T/p91.json")"
if jq -e '.warnings | any(test("not pinned"))' "$T/p91.json" > /dev/null; then fail "pve91: warned about pinned names"; fi
jq -r '.files[] | select(.path == "/etc/network/interfaces.new") | .content' "$T/p91.json" > "$T/p91.new"
grep -q '^[[:space:]]*bond-slaves nic0 nic1$' "$T/p91.new" || fail "pve91: the bond does not name nic0 nic1: $(cat "$T/p91.new")"
ok "9.1 (pinned nic0/nic1): bond of pinned names planned, no warning"

# --- 9.2: kernel names warned about -----------------------------------------------------
R=$T/pve92
copy_host pve92-epyc-4x2080ti "$R"
expect_rc 0 "$P" --root "$R" plan --json "${REQ[@]}" --bond enp66s0f0,enp66s0f1 > "$T/p92.json" 2> "$T/p92.err"
jq -e '.warnings | any(test("^bond member\\(s\\) enp66s0f0, enp66s0f1 are the kernel.s names, not pinned ones: on Proxmox VE 9\\.2\\.0"))' "$T/p92.json" > /dev/null ||
    fail "pve92: no warning about unpinned kernel names: $(jq -c .warnings "$T/p92.json")"
# The same request on a PVE 8 host: no such warning (its systemd does not move names in a minor upgrade).
copy_host epyc-4x2080ti "$T/pve8"
expect_rc 0 "$P" --root "$T/pve8" plan --json "${REQ[@]}" --bond enp66s0f0,enp66s0f1 > "$T/p8.json" 2> /dev/null
if jq -e '.warnings | any(test("not pinned ones"))' "$T/p8.json" > /dev/null; then fail "PVE 8: warned about unpinned names"; fi
ok "9.2 (kernel names): unpinned-name warning shown (and not on PVE 8)"

# --- 9.2 --pin-nics: files written as Proxmox writes them, rolled back --------------------
S0=$(tree_sum "$R")
expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --bond enp66s0f0,enp66s0f1 --pin-nics --yes > "$T/apply.out" 2> "$T/apply.err"
if grep -q 'not pinned ones' "$T/apply.out" "$T/apply.err"; then fail "--pin-nics: still warns about unpinned names"; fi
dir=$R/usr/local/lib/systemd/network
[[ $(ls "$dir" | tr '\n' ' ') == "50-pmx-nic0.link 50-pmx-nic1.link " ]] || fail "--pin-nics: files in $dir: $(ls "$dir")"
for pair in nic0:enp66s0f0 nic1:enp66s0f1; do
    name=${pair%%:*} kernel=${pair#*:}
    python3 - "$dir/50-pmx-$name.link" "$name" "$(cat "$R/sys/class/net/$kernel/address")" <<'PY' || fail "--pin-nics: $name.link"
import configparser, sys
path, name, mac = sys.argv[1:]
cp = configparser.ConfigParser(strict=True, interpolation=None)
cp.optionxform = str  # systemd keys are case-sensitive
cp.read_string(open(path).read())
assert cp.sections() == ["Match", "Link"], cp.sections()
assert dict(cp["Match"]) == {"MACAddress": mac, "Type": "ether"}, dict(cp["Match"])
assert dict(cp["Link"]) == {"Name": name}, dict(cp["Link"])
PY
done
new=$R/etc/network/interfaces.new
grep -q '^[[:space:]]*bond-slaves nic0 nic1$' "$new" || fail "--pin-nics: bond-slaves are not the pinned names: $(cat "$new")"
grep -q '^iface nic0 inet manual$' "$new" || fail "--pin-nics: no stanza for nic0"
if grep -q 'enp66s0f' "$new"; then fail "--pin-nics: interfaces.new still names a kernel name: $(grep enp66s0f "$new")"; fi
python3 "$SRC/tests/integration/network_pve_rules.py" "$new" || fail "--pin-nics: PVE rules on interfaces.new"
expect_rc 0 "$P" --root "$R" rollback --yes > /dev/null 2>&1
[[ ! -e $R/usr/local ]] || fail "rollback left $(find "$R/usr/local")"
[[ $(tree_sum "$R") == "$S0" ]] || fail "--pin-nics: rollback did not restore the tree byte for byte"
ok "9.2 --pin-nics: 50-pmx-nic0/1.link as Proxmox writes them (configparser, MACs from sysfs), interfaces.new renamed; rollback removes them"

# --- refusals ----------------------------------------------------------------------------
expect_rc 2 "$P" --root "$R" plan "${REQ[@]}" --bond enp66s0f0,enp66s0f1 --pin-nics --apply-network > /dev/null 2> "$T/err"
grep -q 'next boot' "$T/err" || fail "--pin-nics --apply-network: no reason given: $(cat "$T/err")"
# A pin written but not yet in effect: the kernel name is refused, the pinned name accepted.
mkdir -p "$dir"
printf '[Match]\nMACAddress=%s\nType=ether\n\n[Link]\nName=nic0\n' "$(cat "$R/sys/class/net/enp66s0f0/address")" > "$dir/50-pmx-nic0.link"
expect_rc 3 "$P" --root "$R" plan "${REQ[@]}" --bond enp66s0f0,enp66s0f1 > "$T/out" 2> "$T/err"
grep -q 'renamed nic0 at the next boot' "$T/out" "$T/err" || fail "pending pin: no refusal reason: $(cat "$T/out" "$T/err")"
expect_rc 0 "$P" --root "$R" plan "${REQ[@]}" --bond nic0,enp66s0f1 > /dev/null 2>&1
ok "--pin-nics --apply-network refused (exit 2); a kernel name a pending pin renames refused (exit 3), its pinned name accepted"
finish "NIC pinning on the PVE 9 fixtures"
