#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# passthru kernel trial KVER on copies of fixture hosts: the trial machinery of
# apply --trial with the trial entry starting KVER. Plain GRUB (the QEMU host with its card
# on vfio-pci after a normal apply, running 6.1.0-56-amd64, a second kernel 6.1.0-57-amd64):
# the running kernel and a kernel that is not installed are refused (exit 2), one that
# kernel check flags (exit 11) unless --skip-check; --dry-run writes nothing; the trial
# writes the GRUB entry for KVER (parses, default entry's files untouched), the watchdog
# and revert units, and records update-grub and grub-reboot; on the trial boot confirm
# refuses another kernel (exit 3) and on KVER pins it (GRUB_DEFAULT, the trial's files
# gone, grub-editenv unset); rollback of both is byte for byte; the fallback
# (rollback --trial-fallback off the trial boot) undoes a trial byte for byte.
# systemd-boot through proxmox-boot-tool: the staged loader entry for KVER and the helper's
# install. About 3 s.
source "$(dirname "$0")/lib.inc"
need_binary
need jq sh
PT() { "$P" --root "$R" "$@"; }

R=$T/grub
copy_host qemu-intel-vfio "$R"
rm "$R"/etc/default/grub.d/passthru.cfg "$R"/etc/modprobe.d/passthru-vfio.conf "$R"/etc/modules-load.d/vfio.conf
PT apply --vm 101 --gpus 0000:04:00 --yes > "$T/apply.out" 2>&1 || { cat "$T/apply.out"; fail "apply failed"; }
RUN=6.1.0-56-amd64 NEW=6.1.0-57-amd64
for k in $RUN $NEW; do
    mkdir -p "$R/lib/modules/$k" "$R/boot"
    : > "$R/boot/vmlinuz-$k"
    : > "$R/boot/initrd.img-$k"
done
ID=7d2f0c4a-9b1e-4f3a-8c6d-5e4f3a2b1c0d
mkdir -p "$R/boot/grub"
{
    echo "submenu 'Advanced options for Debian GNU/Linux' \$menuentry_id_option 'gnulinux-advanced-$ID' {"
    for k in $NEW $RUN; do
        echo "	menuentry 'Debian GNU/Linux, with Linux $k' --class debian \$menuentry_id_option 'gnulinux-$k-advanced-$ID' {"
        echo "	}"
    done
    echo "}"
} > "$R/boot/grub/grub.cfg"
own_copy "$R/proc/cmdline"
own_copy "$R/proc/sys/kernel/osrelease"
cp "$R/proc/cmdline" "$T/cmdline.default"

S0=$(tree_sum "$R")
expect_rc 2 PT kernel trial $RUN --yes > /dev/null 2> "$T/running.err"
grep -q "kernel $RUN is the running kernel" "$T/running.err" || fail "the running kernel: $(cat "$T/running.err")"
expect_rc 2 PT kernel trial 6.1.0-99-amd64 --yes > /dev/null 2>&1
expect_rc 2 PT kernel trial $NEW --trial-minutes 1 --yes > /dev/null 2>&1
expect_rc 2 PT kernel pin $NEW --trial-minutes 5 > /dev/null 2>&1
expect_rc 11 PT kernel trial $NEW --yes > /dev/null 2> "$T/broken.err"
grep -q "refused: kernel trial $NEW: it would break passthrough" "$T/broken.err" || fail "a broken kernel: $(cat "$T/broken.err")"
expect_rc 0 PT kernel trial $NEW --skip-check --dry-run > "$T/dry.out" 2>&1
[[ $(tree_sum "$R") == "$S0" ]] || fail "a refusal or the dry run wrote something"
ok "refused: the running kernel, not installed, bad minutes (exit 2), flagged by kernel check (exit 11); dry run writes nothing"

grub_before=$(sha256sum < "$R/etc/default/grub.d/passthru.cfg")
expect_rc 0 PT kernel trial $NEW --skip-check --trial-minutes 7 --yes > "$T/trial.out" 2>&1
S1=$(tree_sum "$R")
SCRIPT=$R/etc/grub.d/42_passthru_trial
[[ -x $SCRIPT ]] || fail "no executable trial entry script"
sh -n "$SCRIPT" || fail "the trial entry's script does not parse"
grep -qx "kernel=/boot/vmlinuz-$NEW" "$SCRIPT" || fail "the trial entry does not start $NEW"
grep -q 'passthru.trial systemd.wants=passthru-trial.timer' "$SCRIPT" || fail "the trial entry lacks the marker or the watchdog"
for f in etc/systemd/system/passthru-trial.timer etc/systemd/system/passthru-trial.service \
    etc/systemd/system/passthru-trial-revert.service etc/systemd/system/multi-user.target.d/passthru-trial.conf; do
    [[ -f $R/$f ]] || fail "the trial did not write /$f"
done
grep -q 'OnBootSec=7min' "$R/etc/systemd/system/passthru-trial.timer" || fail "the watchdog does not wait 7 min"
# each file says which command wrote it; a kernel trial is for no VM
for f in "$SCRIPT" "$R"/etc/systemd/system/passthru-trial{.timer,.service,-revert.service} "$R/etc/systemd/system/multi-user.target.d/passthru-trial.conf"; do
    grep -q "^# Written by 'passthru kernel trial $NEW'" "$f" || fail "$f does not name 'passthru kernel trial $NEW': $(sed -n 2,3p "$f")"
done
grep -q "menuentry 'passthru trial: Linux $NEW with VFIO (one boot only)'" "$SCRIPT" || fail "the trial entry's title: $(grep menuentry "$SCRIPT")"
[[ $(sha256sum < "$R/etc/default/grub.d/passthru.cfg") == "$grub_before" && ! -e $R/etc/default/grub.d/passthru-kernel-pin.cfg ]] ||
    fail "the trial changed the default entry's files"
M=$R/var/lib/passthru/generations/2/manifest.json
jq -e '.request.kernel == {"action": "trial", "release": "'$NEW'"} and .request.trial_minutes == 7
       and (.commands | map(.argv | join(" "))) == ["update-grub", "grub-reboot passthru-trial"]
       and (.gpus | length) == 1' "$M" > /dev/null || fail "the trial generation: $(jq -c '.request, [.commands[].argv], .gpus' "$M")"
grep -q "kernel trial $NEW" <(PT history) || fail "history does not name the trial"
grep -q "reboot: GRUB boots the trial entry 'passthru-trial' once" "$T/trial.out" || fail "apply's next steps: $(tail -8 "$T/trial.out")"
ok "the trial: GRUB entry for $NEW, watchdog and revert units, update-grub and grub-reboot; default entry untouched"

# The trial boot: the marker on the command line. Another running kernel is refused.
echo "$(cat "$T/cmdline.default") passthru.trial systemd.wants=passthru-trial.timer" > "$R/proc/cmdline"
S1b=$(tree_sum --with-journal "$R")
expect_rc 3 PT confirm > /dev/null 2> "$T/c0.err"
grep -q "this trial boot runs kernel $RUN, not the trial's kernel $NEW" "$T/c0.err" || fail "confirm on another kernel: $(cat "$T/c0.err")"
[[ $(tree_sum --with-journal "$R") == "$S1b" ]] || fail "a refused confirm wrote something"
echo $NEW > "$R/proc/sys/kernel/osrelease"
expect_rc 0 PT confirm > "$T/c.out" 2>&1 || cat "$T/c.out"
grep -qx "GRUB_DEFAULT=\"gnulinux-advanced-$ID>gnulinux-$NEW-advanced-$ID\"" "$R/etc/default/grub.d/passthru-kernel-pin.cfg" ||
    fail "confirm did not pin $NEW: $(tail -5 "$T/c.out")"
[[ ! -e $SCRIPT && ! -e $R/etc/systemd/system/passthru-trial.timer ]] || fail "confirm left the trial's files"
jq -e '.request.kernel == {"action": "pin", "release": "'$NEW'"}
       and (.commands | map(.argv | join(" "))) == ["update-grub", "grub-editenv /boot/grub/grubenv unset next_entry"]' \
    "$R/var/lib/passthru/generations/3/manifest.json" > /dev/null || fail "the confirm generation: $(jq -c '.request, [.commands[].argv]' "$R/var/lib/passthru/generations/3/manifest.json")"
expect_rc 0 PT rollback --yes > /dev/null 2>&1
cp "$T/cmdline.default" "$R/proc/cmdline" && echo $RUN > "$R/proc/sys/kernel/osrelease"
[[ $(tree_sum "$R") == "$S1" ]] || fail "rollback of the confirm is not the trial byte for byte"
expect_rc 0 PT rollback --yes > /dev/null 2>&1
[[ $(tree_sum "$R") == "$S0" ]] || fail "rollback of the trial is not byte for byte"
ok "confirm on the trial boot of $NEW pins it and removes the trial; another kernel is refused; rollback byte for byte"

expect_rc 0 PT kernel trial $NEW --skip-check --yes > /dev/null 2>&1
expect_rc 0 PT rollback --trial-fallback > "$T/fb.out" 2>&1
grep -q 'grub-editenv /boot/grub/grubenv unset next_entry' "$T/fb.out" || fail "the fallback does not undo grub-reboot"
[[ $(tree_sum "$R") == "$S0" ]] || fail "the fallback is not byte for byte"
ok "the fallback off the trial boot undoes the kernel trial byte for byte"

# systemd-boot through proxmox-boot-tool.
R=$T/sd
copy_host epyc-4x2080ti-zfs "$R"
RUN=$(cat "$R/proc/sys/kernel/osrelease") NEW=6.8.12-9-pve
for k in $RUN $NEW; do
    mkdir -p "$R/lib/modules/$k" "$R/boot" && : > "$R/boot/vmlinuz-$k" && : > "$R/boot/initrd.img-$k"
done
S2=$(tree_sum "$R")
expect_rc 0 PT kernel trial $NEW --skip-check --yes > "$T/sd.out" 2>&1 || cat "$T/sd.out"
E=$R/etc/passthru/trial-loader-entry.conf
grep -q "$NEW" "$E" || fail "systemd-boot: the staged entry does not start $NEW: $(cat "$E")"
grep -q 'passthru.trial' "$E" || fail "systemd-boot: the staged entry lacks the marker"
grep -q 'trial-loader-entry install /etc/passthru/trial-loader-entry.conf' "$T/sd.out" || fail "systemd-boot: no helper install"
expect_rc 0 PT rollback --yes > /dev/null 2>&1
[[ $(tree_sum "$R") == "$S2" ]] || fail "systemd-boot: rollback is not byte for byte"
ok "systemd-boot: the staged loader entry starts $NEW, the helper installs it; rollback byte for byte"
