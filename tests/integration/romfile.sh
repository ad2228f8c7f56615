#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# plan/apply --romfile SLOT=FILE (docs/facts.md: rom-files) on ryzen-x570-dummy, with ROM
# images tests/support/make_rom.cpp builds (never a vendor ROM): the file checked for the
# card, staged in /usr/share/kvm under a name from the card's ids and its sha256, romfile=
# on the card's hostpci line, all in one generation that rollback undoes byte for byte; a
# file that is not a ROM for its card is one error line, exit 2, nothing written; a saved
# plan whose ROM file changed since is refused (exit 3). About 10 s on the loaded 2-core machine.
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary
MAKE_ROM=${PASSTHRU_MAKE_ROM:?PASSTHRU_MAKE_ROM must point at make-rom}

R=$T/x570
copy_host ryzen-x570-dummy "$R"
S0=$(tree_sum "$R")
REQ=(--vm 101 --gpus 0)
"$MAKE_ROM" "$T/gpu.rom" 10de 2484 gop
sha=$(sha256sum "$T/gpu.rom" | cut -c1-16)
name=passthru-10de-2484-$sha.rom

# The plan: the ROM as a binary file, romfile= with its bare name.
"$P" --root "$R" plan "${REQ[@]}" --romfile "0000:02:00=$T/gpu.rom" --json > "$T/plan.json"
jq -e --arg p "/usr/share/kvm/$name" '[.files[] | select(.path == $p and .action == "create" and .encoding == "base64" and .mode == "0644")] | length == 1' "$T/plan.json" > /dev/null ||
    fail "the plan does not stage the ROM file as base64"
jq -r --arg p "/usr/share/kvm/$name" '.files[] | select(.path == $p) | .content' "$T/plan.json" | base64 -d | cmp - "$T/gpu.rom" ||
    fail "the plan's ROM bytes are not the file's"
jq -e --arg n "$name" '[.files[] | select(.path == "/etc/pve/qemu-server/101.conf") | .content | test("hostpci0: 0000:02:00,pcie=1,romfile=" + $n)] | any' "$T/plan.json" > /dev/null ||
    fail "the plan does not set romfile= on hostpci0"
"$P" --root "$R" plan "${REQ[@]}" --romfile "0=$T/gpu.rom" > "$T/plan.out"
grep -q "^+++ /usr/share/kvm/$name (binary: 2048 bytes, sha256 " "$T/plan.out" || { cat "$T/plan.out"; fail "the human plan shows no binary line"; }
grep -q 'UEFI (GOP driver) for 10de:2484' "$T/plan.out" || fail "the plan does not say what the ROM holds"
[[ $(tree_sum "$R") == "$S0" ]] || fail "plan wrote something"
ok "plan: the ROM checked, staged as a binary file, romfile= on the card's hostpci line"

# Apply, the same plan again (no change), rollback.
expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --romfile "02:00=$T/gpu.rom" --yes > /dev/null 2>&1
cmp "$R/usr/share/kvm/$name" "$T/gpu.rom" || fail "apply did not place the ROM byte for byte"
[[ $(stat -c %a "$R/usr/share/kvm/$name") == 644 ]] || fail "the ROM file is not mode 0644"
grep -q "^hostpci0: 0000:02:00,pcie=1,romfile=$name$" "$R/etc/pve/qemu-server/101.conf" || fail "apply did not write romfile="
"$P" --root "$R" plan "${REQ[@]}" --romfile "0=$T/gpu.rom" --json > "$T/again.json"
jq -e '[.files[] | select(.path | startswith("/usr/share/kvm/"))] | length == 0' "$T/again.json" > /dev/null ||
    fail "the ROM already in place is planned again"
expect_rc 0 "$P" --root "$R" rollback --yes > /dev/null 2>&1
[[ $(tree_sum "$R") == "$S0" && ! -e $R/usr/share/kvm ]] || fail "rollback did not undo the ROM file and romfile="
ok "apply places the ROM and sets romfile=; planned again it is no change; rollback undoes both"

# Refusals: one error line, exit 2, nothing written (not even the journal), on a fresh copy.
copy_host ryzen-x570-dummy "$R"
"$MAKE_ROM" "$T/bad.rom" 10de 2484 bad-checksum
"$MAKE_ROM" "$T/other.rom" 10de 2204
printf 'NVGI' > "$T/nvflash.rom"; cat "$T/gpu.rom" >> "$T/nvflash.rom"
refused() { # WHAT EXPECTED-TEXT ROMFILE-ARGS...
    local what=$1 want=$2
    shift 2
    for cmd in plan apply; do
        extra=()
        [[ $cmd == apply ]] && extra=(--yes)
        expect_rc 2 "$P" --root "$R" "$cmd" "${REQ[@]}" "$@" "${extra[@]}" > /dev/null 2> "$T/err"
        [[ $(grep -c '^passthru: error: ' "$T/err") == 1 ]] && grep -q "$want" "$T/err" || { cat "$T/err"; fail "$cmd: $what not refused as one line"; }
        [[ $(tree_sum "$R") == "$S0" && ! -e $R/var/lib/passthru ]] || fail "$cmd: $what wrote something"
    done
}
refused "a bad checksum" 'not a ROM for GPU 0000:02:00 .*: the x86 image 0 at 0x0 has a bad checksum' --romfile "0=$T/bad.rom"
refused "another card's ROM" "the ROM is for x86 (legacy BIOS) for 10de:2204, not for the card's 10de:2484" --romfile "0=$T/other.rom"
refused "an nvflash dump" "NVIDIA's NVGI header" --romfile "0=$T/nvflash.rom"
refused "a missing file" "romfile 0=$T/missing.rom: " --romfile "0=$T/missing.rom"
refused "a card --gpus does not select" 'that card is not among the cards --gpus selects' --romfile "1=$T/gpu.rom"
refused "a card named twice" 'has a --romfile already' --romfile "0=$T/gpu.rom" --romfile "0000:02:00=$T/gpu.rom"
refused "no SLOT=FILE" 'write SLOT=FILE' --romfile "$T/gpu.rom"
ok "a bad ROM, another card's, an nvflash dump, a missing file, an unselected or twice-named card: exit 2, one line, nothing written"

# A saved plan carries the bytes; apply --plan makes the plan again from the file, so a
# file changed since plan --out is refused, and an unchanged one is applied as saved.
"$P" --root "$R" plan "${REQ[@]}" --romfile "0=$T/gpu.rom" --out "$T/saved.json" > /dev/null
cp "$T/gpu.rom" "$T/gpu.rom.orig"
"$MAKE_ROM" "$T/gpu.rom" 10de 2484
expect_rc 3 "$P" --root "$R" apply --plan "$T/saved.json" --yes > /dev/null 2> "$T/stale.err"
grep -q "saved.json is not what passthru plans for its request on this host now" "$T/stale.err" || { cat "$T/stale.err"; fail "a changed ROM file is not a difference"; }
[[ $(tree_sum "$R") == "$S0" && ! -e $R/var/lib/passthru ]] || fail "a stale saved plan wrote something"
cp "$T/gpu.rom.orig" "$T/gpu.rom"
expect_rc 0 "$P" --root "$R" apply --plan "$T/saved.json" --yes > /dev/null 2>&1
cmp "$R/usr/share/kvm/$name" "$T/gpu.rom" || fail "the saved plan's ROM was not placed byte for byte"
expect_rc 0 "$P" --root "$R" rollback --yes > /dev/null 2>&1
[[ $(tree_sum "$R") == "$S0" ]] || fail "rollback of the saved plan differs"
ok "a saved plan with a ROM: refused once the file changed, applied byte for byte while it has not"
finish "romfile"
