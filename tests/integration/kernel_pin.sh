#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# passthru kernel pin / unpin and the kernel hook, on copies of fixture hosts. Plain GRUB
# (pve92, running 7.0.2-2-pve; a second kernel 6.17.2-1-pve whose initramfs lacks
# passthru's files): --dry-run writes nothing; a kernel that is not installed is refused
# (exit 2), one that kernel check flags too (exit 11) unless --skip-check; pin writes
# GRUB_DEFAULT for the kernel's "Advanced options" entry and records update-grub as one
# generation that history names (verify still checks the apply's generation); pin, re-pin, unpin and rollback come back byte for byte.
# proxmox-boot-tool installed: its own pin file and drop-in. systemd-boot through
# proxmox-boot-tool: its pin file and its refresh. apply writes the hook
# /etc/kernel/postinst.d/passthru (executable, sh -n, exit 0 without the helper),
# rollback removes it; the hook with /etc/passthru/kernel.conf's on-break = pin pins the
# running kernel when the new one would break, on-break = warn only prints, a broken
# policy file is said and the verdict still printed; the hook always exits 0.
# About 3 s.
source "$(dirname "$0")/lib.inc"
need_binary
need jq sh
MK="python3 $SRC/tests/support/mkinitramfs.py"
PT() { "$P" --root "$R" "$@"; }

R=$T/host
copy_host pve92-epyc-4x2080ti "$R"
[[ ! -e $R/etc/kernel/postinst.d/passthru ]] || fail "the fixture has a kernel hook already"
PT apply --vm 101 --gpus all --yes > "$T/apply.out" 2>&1 || { cat "$T/apply.out"; fail "apply failed"; }
HOOKFILE=$R/etc/kernel/postinst.d/passthru
[[ -f $HOOKFILE && $(stat -c %a "$HOOKFILE") == 755 ]] || fail "apply did not write an executable $HOOKFILE"
sh -n "$HOOKFILE" || fail "the hook does not parse (sh -n)"
grep -qE '^/usr(/local)?/lib/passthru/kernel-postinst "\$@" \|\| true$' "$HOOKFILE" || fail "the hook does not run the helper: $(cat "$HOOKFILE")"
expect_rc 0 sh "$HOOKFILE" 6.17.2-1-pve # the helper is not installed on this machine: nothing, exit 0
jq -e '[.files[].path] | index("/etc/kernel/postinst.d/passthru") != null' "$R/var/lib/passthru/generations/1/manifest.json" > /dev/null ||
    fail "the hook is not journaled with the apply"
expect_rc 0 PT plan --vm 101 --gpus all --json > "$T/again.json" 2> /dev/null
jq -e '[.files[].path] | index("/etc/kernel/postinst.d/passthru") == null' "$T/again.json" > /dev/null || fail "a second plan writes the hook again"
ok "apply writes the kernel hook, executable and journaled, once"

GOOD=7.0.2-2-pve OLD=6.17.2-1-pve
CONF=$R/etc/modprobe.d/passthru-vfio.conf
M=$R/usr/lib/modules
cp -a "$M/$GOOD" "$M/$OLD"
mkdir -p "$R/boot/grub"
for k in $GOOD $OLD; do : > "$R/boot/vmlinuz-$k"; done
initramfs() {
    local k=$1 members=() f
    for f in vfio.ko vfio_iommu_type1.ko pci/vfio-pci.ko pci/vfio-pci-core.ko; do
        members+=("usr/lib/modules/$k/kernel/drivers/vfio/$f=$M/$k/kernel/drivers/vfio/$f")
    done
    [[ ${2:-} == with-conf ]] && members+=("etc/modprobe.d/passthru-vfio.conf=$CONF")
    $MK "$R/boot/initrd.img-$k" --compress gzip "${members[@]}"
}
initramfs $GOOD with-conf
initramfs $OLD
ID=0b3c9d1e-5f60-4a7b-8c9d-0e1f2a3b4c5d
{
    echo "menuentry 'Proxmox VE GNU/Linux' --class proxmox \$menuentry_id_option 'gnulinux-simple-$ID' {"
    echo "}"
    echo "submenu 'Advanced options for Proxmox VE GNU/Linux' \$menuentry_id_option 'gnulinux-advanced-$ID' {"
    for k in $GOOD $OLD; do
        echo "	menuentry 'Proxmox VE GNU/Linux, with Linux $k' --class proxmox \$menuentry_id_option 'gnulinux-$k-advanced-$ID' {"
        echo "	}"
    done
    echo "}"
} > "$R/boot/grub/grub.cfg"
PIN=$R/etc/default/grub.d/passthru-kernel-pin.cfg

S0=$(tree_sum "$R")
expect_rc 0 PT kernel pin $GOOD --dry-run > "$T/dry.out" 2> "$T/dry.err"
grep -qx "+GRUB_DEFAULT=\"gnulinux-advanced-$ID>gnulinux-$GOOD-advanced-$ID\"" "$T/dry.out" || fail "dry run: no diff: $(cat "$T/dry.out")"
grep -q 'update-grub' "$T/dry.out" || fail "dry run: no update-grub"
grep -q 'dry run: nothing was written' "$T/dry.err" || fail "dry run: no note"
expect_rc 2 PT kernel pin 9.9.9-1-pve --yes > /dev/null 2> "$T/missing.err"
grep -q "kernel 9.9.9-1-pve is not installed" "$T/missing.err" || fail "not installed: $(cat "$T/missing.err")"
expect_rc 11 PT kernel pin $OLD --yes > /dev/null 2> "$T/broken.err"
grep -q "refused: kernel pin $OLD: it would break passthrough: its initramfs lacks /etc/modprobe.d/passthru-vfio.conf" "$T/broken.err" ||
    fail "broken kernel: $(cat "$T/broken.err")"
grep -q -- "--skip-check pins it anyway" "$T/broken.err" || fail "broken kernel: no override named"
expect_rc 2 PT kernel pin > /dev/null 2>&1
expect_rc 2 PT kernel unpin $GOOD > /dev/null 2>&1
expect_rc 2 PT kernel check --dry-run > /dev/null 2>&1
expect_rc 2 PT kernel pin $GOOD --json > /dev/null 2>&1
[[ $(tree_sum "$R") == "$S0" ]] || fail "a dry run or a refused pin wrote something"
ok "dry run shows the diff; not installed exit 2, broken exit 11, bad words exit 2; nothing written"

expect_rc 0 PT kernel pin $GOOD --yes > "$T/pin.out" 2>&1
[[ $(cat "$PIN" | tail -n1) == "GRUB_DEFAULT=\"gnulinux-advanced-$ID>gnulinux-$GOOD-advanced-$ID\"" ]] || fail "pin: $(cat "$PIN")"
grep -q '^Applied as generation 2: 1 file(s) written, 1 after-step(s) recorded' "$T/pin.out" || fail "pin: $(cat "$T/pin.out")"
jq -e '(.commands | map(.argv | join(" "))) == ["update-grub"] and .request.kernel == {"action": "pin", "release": "'$GOOD'"}' \
    "$R/var/lib/passthru/generations/2/manifest.json" > /dev/null || fail "pin: the generation does not record update-grub and the request"
PT history > "$T/hist.out"
grep -q "kernel pin $GOOD" "$T/hist.out" || fail "history does not name the pin: $(cat "$T/hist.out")"
PT verify > "$T/verify.out" 2>&1 || true
grep -q '^Verifying generation 1' "$T/verify.out" || fail "verify reads the pin's generation, not the apply's: $(grep Verifying "$T/verify.out")"
S1=$(tree_sum "$R")
expect_rc 0 PT kernel pin $GOOD --yes > "$T/again.out" 2>&1
grep -q "Nothing to do: kernel $GOOD is pinned already" "$T/again.out" || fail "pin again: $(cat "$T/again.out")"
expect_rc 0 PT kernel pin $OLD --skip-check --yes > "$T/old.out" 2>&1
grep -q "gnulinux-$OLD-advanced-$ID" "$PIN" || fail "--skip-check did not pin $OLD"
expect_rc 0 PT kernel unpin --yes > "$T/unpin.out" 2>&1
[[ ! -e $PIN ]] || fail "unpin left $PIN"
PT history > "$T/hist2.out"
grep -q "kernel unpin" "$T/hist2.out" || fail "history does not name the unpin"
expect_rc 0 PT kernel unpin --yes > "$T/unpin2.out" 2>&1
grep -q "Nothing to do: no kernel is pinned" "$T/unpin2.out" || fail "unpin again: $(cat "$T/unpin2.out")"
expect_rc 0 PT rollback --yes > /dev/null 2>&1 # the unpin
grep -q "gnulinux-$OLD-advanced-$ID" "$PIN" || fail "rollback of the unpin did not restore the pin of $OLD"
expect_rc 0 PT rollback --yes > /dev/null 2>&1 # the re-pin
[[ $(tree_sum "$R") == "$S1" ]] || fail "rollback of the re-pin is not byte for byte the pin of $GOOD"
expect_rc 0 PT rollback --yes > "$T/rb.out" 2>&1 # the pin
grep -q 'update-grub' "$T/rb.out" || fail "rollback does not re-run update-grub: $(cat "$T/rb.out")"
[[ $(tree_sum "$R") == "$S0" ]] || fail "rollback of the pin is not byte for byte the tree before it"
ok "pin, re-pin (--skip-check), unpin: journaled with update-grub, named in history, rolled back byte for byte"

# proxmox-boot-tool installed on plain GRUB: its pin file and its drop-in, as its 'kernel pin' writes them.
mkdir -p "$R/usr/sbin" && printf '#!/bin/sh\n' > "$R/usr/sbin/proxmox-boot-tool"
S2=$(tree_sum "$R")
expect_rc 0 PT kernel pin $GOOD --yes > /dev/null 2>&1
[[ $(cat "$R/etc/kernel/proxmox-boot-pin") == "$GOOD" && ! -e $PIN ]] || fail "pbt: no pin file, or passthru's drop-in"
[[ $(cat "$R/etc/default/grub.d/proxmox-kernel-pin.cfg") == "GRUB_DEFAULT=\"gnulinux-advanced-$ID>gnulinux-$GOOD-advanced-$ID\"" ]] ||
    fail "pbt: drop-in: $(cat "$R/etc/default/grub.d/proxmox-kernel-pin.cfg")"
expect_rc 0 PT rollback --yes > /dev/null 2>&1
[[ $(tree_sum "$R") == "$S2" ]] || fail "pbt: rollback is not byte for byte"
rm "$R/usr/sbin/proxmox-boot-tool"
ok "plain GRUB with proxmox-boot-tool: its pin file and drop-in; rolled back byte for byte"

# The hook with the policy file: on-break = pin pins the running kernel when the new one breaks.
mkdir -p "$T/bin"
printf '#!/bin/sh\nexec "%s" --root "%s" "$@"\n' "$P" "$R" > "$T/bin/passthru"
chmod +x "$T/bin/passthru"
HOOK=$SRC/helpers/kernel-postinst
mkdir -p "$R/etc/passthru"
echo 'on-break = warn' > "$R/etc/passthru/kernel.conf"
S3=$(tree_sum "$R")
PATH=$T/bin:$PATH expect_rc 0 sh "$HOOK" $OLD > "$T/warn.out"
grep -qx "$OLD: breaks passthrough" "$T/warn.out" || fail "hook warn: no verdict"
grep -q 'on-break' "$T/warn.out" && fail "hook warn: acted on the policy"
[[ $(tree_sum "$R") == "$S3" ]] || fail "hook warn: wrote something"
echo 'on-break = sometimes' > "$R/etc/passthru/kernel.conf"
PATH=$T/bin:$PATH expect_rc 0 sh "$HOOK" $OLD > "$T/badpol.out"
grep -q "kernel.conf line 1: on-break must be warn or pin, not 'sometimes'; using on-break = warn" "$T/badpol.out" ||
    fail "hook: a broken policy is not said: $(cat "$T/badpol.out")"
grep -qx "$OLD: breaks passthrough" "$T/badpol.out" || fail "hook: no verdict with a broken policy"
printf '# passthru kernel hook\non-break = pin\n' > "$R/etc/passthru/kernel.conf"
PATH=$T/bin:$PATH expect_rc 0 sh "$HOOK" $GOOD > "$T/goodpin.out"
[[ ! -e $PIN ]] || fail "hook pin: a good kernel made it pin"
S4=$(tree_sum "$R")
PATH=$T/bin:$PATH expect_rc 0 sh "$HOOK" $OLD > "$T/pin-hook.out"
grep -q "on-break = pin (/etc/passthru/kernel.conf): pinning the running kernel $GOOD, the last good one, so that $OLD is not booted by default" \
    "$T/pin-hook.out" || fail "hook pin: $(cat "$T/pin-hook.out")"
grep -q "kernel $GOOD is pinned; once $OLD passes" "$T/pin-hook.out" || fail "hook pin: not said"
grep -q "gnulinux-$GOOD-advanced-$ID" "$PIN" || fail "hook pin: no pin"
PATH=$T/bin:$PATH expect_rc 0 sh "$HOOK" $OLD > "$T/pin-hook2.out"
grep -q "kernel $GOOD is pinned already" "$T/pin-hook2.out" || fail "hook pin again: $(cat "$T/pin-hook2.out")"
expect_rc 0 PT rollback --yes > /dev/null 2>&1
[[ $(tree_sum "$R") == "$S4" ]] || fail "hook pin: rollback is not byte for byte"
ok "the hook: on-break = pin pins the running kernel, warn only prints, a broken policy is said; exit 0 each time"

expect_rc 0 PT rollback --to 1 --yes > /dev/null 2>&1
[[ ! -e $HOOKFILE ]] || fail "rollback of the apply left the kernel hook"
ok "rollback of the apply removes the kernel hook"

# systemd-boot through proxmox-boot-tool: its pin file and its refresh.
R=$T/sdboot
copy_host epyc-4x2080ti-zfs "$R"
K=$(cat "$R/proc/sys/kernel/osrelease")
mkdir -p "$R/lib/modules/$K" "$R/boot" && : > "$R/boot/vmlinuz-$K"
S5=$(tree_sum "$R")
expect_rc 0 PT kernel pin $K --skip-check --yes > "$T/sd.out" 2>&1
[[ $(cat "$R/etc/kernel/proxmox-boot-pin") == "$K" ]] || fail "systemd-boot: no pin file"
grep -qx '  proxmox-boot-tool refresh' "$T/sd.out" || fail "systemd-boot: refresh not recorded: $(cat "$T/sd.out")"
expect_rc 0 PT kernel unpin --yes > /dev/null 2>&1
[[ ! -e $R/etc/kernel/proxmox-boot-pin ]] || fail "systemd-boot: unpin left the pin file"
expect_rc 0 PT rollback --yes > /dev/null 2>&1
expect_rc 0 PT rollback --yes > /dev/null 2>&1
[[ $(tree_sum "$R") == "$S5" ]] || fail "systemd-boot: pin/unpin/rollback is not byte for byte"
ok "systemd-boot: proxmox-boot-tool's pin file and refresh; pin, unpin, rollback byte for byte"
