#!/usr/bin/env bash
# Boot loaders on the PVE 9 fixtures (docs/facts.md: boot-loader): the 9.1 ZFS
# host boots systemd-boot through proxmox-boot-tool, the 9.2 host plain GRUB
# 2.12. For each: the loader scan detects, the command-line file the plan
# edits (and only that one), what the edited file gives the kernel, and the
# refresh command.
source "$(dirname "$0")/lib.inc"
need_binary
for h in pve91-epyc-4x2080ti-zfs pve92-epyc-4x2080ti; do
    [[ -d $FIXTURES/$h ]] || skip "fixture $h missing"
done

# plan_of HOST: scan and plan JSON of a copy of HOST in $T/HOST.{scan,plan}.json, the copy with the plan applied in $T/HOST.
plan_of() {
    local h=$1
    copy_host "$h" "$T/$h"
    expect_rc 0 "$P" --root "$T/$h" scan --json > "$T/$h.scan.json"
    expect_rc 0 "$P" --root "$T/$h" plan --json "${REQ[@]}" > "$T/$h.plan.json" 2> /dev/null
    expect_rc 0 "$P" --root "$T/$h" apply "${REQ[@]}" --yes > /dev/null 2>&1
}
commands() { jq -c '[.commands[].argv]' "$1"; }
cmdline_files() { jq -c '[.files[].path | select(test("^/etc/(kernel/cmdline|default/grub)"))]' "$1"; }

# --- 9.1: systemd-boot on ESPs managed by proxmox-boot-tool --------------------------------
h=pve91-epyc-4x2080ti-zfs
plan_of $h
[[ $(jq -r '.host.bootloader + " " + (.host.proxmox_boot_tool | tostring)' "$T/$h.scan.json") == "systemd-boot true" ]] ||
    fail "$h: detected $(jq -c '.host | {bootloader, proxmox_boot_tool}' "$T/$h.scan.json")"
[[ $(cmdline_files "$T/$h.plan.json") == '["/etc/kernel/cmdline"]' ]] || fail "$h: edits $(cmdline_files "$T/$h.plan.json")"
[[ $(commands "$T/$h.plan.json") == '[["update-initramfs","-u","-k","all"],["proxmox-boot-tool","refresh"]]' ]] ||
    fail "$h: commands $(commands "$T/$h.plan.json")"
# proxmox-boot-tool takes the first line as the whole command line: one line, root= kept, iommu=pt added.
[[ $(wc -l < "$T/$h/etc/kernel/cmdline") == 1 ]] || fail "$h: /etc/kernel/cmdline is not one line"
line=$(head -1 "$T/$h/etc/kernel/cmdline")
[[ " $line " == *" root=ZFS=rpool/ROOT/pve-1 "* && " $line " == *" boot=zfs "* && " $line " == *" iommu=pt "* ]] ||
    fail "$h: /etc/kernel/cmdline is '$line'"
ok "$h: systemd-boot via proxmox-boot-tool; /etc/kernel/cmdline (one line, root= kept, iommu=pt); proxmox-boot-tool refresh"

# --- 9.2: plain GRUB 2.12 ------------------------------------------------------------------
h=pve92-epyc-4x2080ti
plan_of $h
[[ $(jq -r '.host.bootloader + " " + (.host.proxmox_boot_tool | tostring)' "$T/$h.scan.json") == "grub false" ]] ||
    fail "$h: detected $(jq -c '.host | {bootloader, proxmox_boot_tool}' "$T/$h.scan.json")"
[[ $(cmdline_files "$T/$h.plan.json") == '["/etc/default/grub.d/passthru.cfg"]' ]] || fail "$h: edits $(cmdline_files "$T/$h.plan.json")"
[[ $(commands "$T/$h.plan.json") == '[["update-initramfs","-u","-k","all"],["update-grub"]]' ]] ||
    fail "$h: commands $(commands "$T/$h.plan.json")"
# What grub-mkconfig sees: it sources /etc/default/grub, then each grub.d/*.cfg in name order
# (GRUB 2.12's stock file reads /etc/os-release: here the root's own copy).
got=$(cd "$T/$h" && sed 's|/etc/os-release|./etc/os-release|' etc/default/grub > "$T/grub" &&
    sh -ec '. "$1"; for f in etc/default/grub.d/*.cfg; do . "./$f"; done; echo "$GRUB_DISTRIBUTOR|$GRUB_CMDLINE_LINUX_DEFAULT"' sh "$T/grub")
[[ $got == "Debian GNU/Linux|quiet iommu=pt" ]] || fail "$h: GRUB sees '$got'"
ok "$h: plain GRUB 2.12; /etc/default/grub.d/passthru.cfg appends iommu=pt (read as grub-mkconfig reads it); update-grub"
finish "boot loaders on the PVE 9 fixtures"
