#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# apply --trial on the systemd-boot (proxmox-boot-tool) fixture host
# (plan/trial.cpp): /etc/kernel/cmdline and the default entries stay as they
# were; the trial stages a Boot Loader Specification entry under /etc
# (shown in the dry run, journaled) whose options line is the first line of
# /etc/kernel/cmdline plus the planned and the binding arguments, the marker
# and the watchdog; the after-steps are update-initramfs, proxmox-boot-tool
# refresh and the helper's install, which rollback undoes with its remove;
# the watchdog names the staged entry and leaves GRUB alone; the units pass
# systemd-analyze. On the trial boot scan and verify say so, confirm writes
# the arguments into /etc/kernel/cmdline, removes the trial files and runs
# the helper's remove; rollback (twice) and rollback --trial-fallback return
# byte for byte. A first line of /etc/kernel/cmdline with a control
# character is refused. The helper itself passes shellcheck and refuses bad
# usage and, for install, a file that names no kernel. (The helper's work on
# real ESPs and EFI variables runs in the reboot test, under OVMF.)
source "$(dirname "$0")/lib.inc"
need_binary
need jq
PT() { "$P" --root "$R" --data-dir "$SRC" "$@"; }
HELPER=$SRC/helpers/trial-loader-entry
ENTRY=etc/passthru/trial-loader-entry.conf
TRIAL_FILES=("$ENTRY" etc/systemd/system/passthru-trial.timer etc/systemd/system/passthru-trial.service
    etc/systemd/system/passthru-trial-revert.service etc/systemd/system/multi-user.target.d/passthru-trial.conf)
KV=6.8.12-4-pve

R=$T/sd
copy_host epyc-4x2080ti-zfs "$R"
start=$(tree_sum "$R")
cmdline_before=$(sha256sum < "$R/etc/kernel/cmdline")
expect_rc 0 PT apply --trial --vm 101 --gpus all --dry-run > "$T/dry.out" 2>&1
[[ $(tree_sum "$R") == "$start" ]] || fail "apply --trial --dry-run wrote something"
grep -q "^+++ /$ENTRY" "$T/dry.out" || grep -q "/$ENTRY" "$T/dry.out" || fail "the dry run does not show the staged entry: $(head -40 "$T/dry.out")"
grep -q '^+options root=ZFS=rpool/ROOT/pve-1 boot=zfs ' "$T/dry.out" || fail "the dry run's diff lacks the entry's options line"
grep -Eq '^(--- /etc/kernel/cmdline|  modify /etc/kernel/cmdline)' "$T/dry.out" && fail "the dry run changes /etc/kernel/cmdline"
grep -q 'trial-loader-entry install /etc/passthru/trial-loader-entry.conf' "$T/dry.out" ||
    fail "the dry run does not list the helper's install: $(grep -n 'refresh\|initramfs' "$T/dry.out")"
ok "dry run: the staged entry in the diff, /etc/kernel/cmdline untouched, the helper listed, nothing written"

expect_rc 0 PT apply --trial --trial-minutes 7 --vm 101 --gpus all --yes > "$T/apply.out" 2>&1
for f in "${TRIAL_FILES[@]}"; do
    [[ -f $R/$f ]] || fail "the trial did not write /$f"
done
[[ ! -e $R/etc/grub.d/42_passthru_trial ]] || fail "a systemd-boot trial wrote the GRUB script"
[[ $(sha256sum < "$R/etc/kernel/cmdline") == "$cmdline_before" ]] || fail "the trial changed /etc/kernel/cmdline"
[[ $(stat -c %a "$R/$ENTRY") == 644 ]] || fail "the staged entry's mode is $(stat -c %a "$R/$ENTRY")"
# The entry as systemd-boot reads it: keys and values, comments ignored.
grep -v '^#' "$R/$ENTRY" > "$T/entry"
opts="root=ZFS=rpool/ROOT/pve-1 boot=zfs iommu=pt vfio_pci.ids=10de:10f7,10de:1ad6,10de:1ad7,10de:1e07"
opts+=" modprobe.blacklist=nouveau,nvidia passthru.trial systemd.wants=passthru-trial.timer"
printf '%s\n' "title passthru trial" "version $KV" "options $opts" "linux /EFI/proxmox/$KV/vmlinuz-$KV" \
    "initrd /EFI/proxmox/$KV/initrd.img-$KV" > "$T/entry.want"
diff -u "$T/entry.want" "$T/entry" > "$T/entry.diff" || fail "the staged entry: $(cat "$T/entry.diff")"
ok "apply: the entry is staged with the default line plus the planned, binding and trial arguments; /etc/kernel/cmdline untouched"

svc=$R/etc/systemd/system/passthru-trial.service
grep -qx "ConditionPathExists=/$ENTRY" "$svc" || fail "the watchdog does not need the staged entry: $(grep Condition "$svc")"
grep -q 'grub' "$svc" && fail "the systemd-boot watchdog mentions GRUB: $(grep grub "$svc")"
if command -v systemd-analyze > /dev/null; then
    systemd-analyze verify --man=no "$R/etc/systemd/system/passthru-trial.timer" "$svc" > "$T/sa.out" 2>&1 ||
        fail "systemd-analyze rejects the watchdog units: $(cat "$T/sa.out")"
    sa=$T/sa-root
    mkdir -p "$sa/usr/lib/systemd" "$sa/usr/bin" "$sa/etc/systemd/system/multi-user.target.d"
    cp -r /usr/lib/systemd/system "$sa/usr/lib/systemd/"
    cp "$P" "$sa/usr/bin/passthru"
    ln -s usr/bin "$sa/bin"
    install -m 755 /dev/null "$sa/usr/bin/systemctl" # the watchdog's ExecStart= needs an executable there
    cp "$R/etc/systemd/system/passthru-trial-revert.service" "$R/etc/systemd/system/passthru-trial.timer" "$svc" "$sa/etc/systemd/system/"
    cp "$R/etc/systemd/system/multi-user.target.d/passthru-trial.conf" "$sa/etc/systemd/system/multi-user.target.d/"
    mkdir -p "$sa/etc/passthru" && cp "$R/$ENTRY" "$sa/etc/passthru/"
    systemd-analyze verify --man=no --root="$sa" multi-user.target passthru-trial-revert.service passthru-trial.timer \
        passthru-trial.service > "$T/sa2.out" 2>&1 || fail "systemd-analyze --root rejects the trial's units: $(cat "$T/sa2.out")"
    [[ ! -s $T/sa2.out ]] || fail "systemd-analyze warns about the trial's units: $(cat "$T/sa2.out")"
    ok "the watchdog needs the staged entry and leaves GRUB alone; the units pass systemd-analyze verify (--root), without a warning"
fi

m=$R/var/lib/passthru/generations/1/manifest.json
jq -r '.commands[].argv | join(" ")' "$m" > "$T/cmds"
grep -n . "$T/cmds" | tail -3 > "$T/last3"
sed -n '1s/^[0-9]*:\(update-initramfs\) .*/\1/p; 2s/^[0-9]*://p; 3s/^[0-9]*:.*\/\(trial-loader-entry install\) /\1 /p' "$T/last3" > "$T/order"
printf '%s\n' update-initramfs "proxmox-boot-tool refresh" "trial-loader-entry install /$ENTRY" | diff -u - "$T/order" > "$T/order.diff" ||
    fail "the after-steps are not update-initramfs, refresh, the helper's install: $(cat "$T/cmds")"
grep -q 'grub' "$T/cmds" && fail "a systemd-boot trial runs a GRUB command: $(cat "$T/cmds")"
jq -e '.commands[] | select(.argv[1] == "install") | .undo == "command"' "$m" > /dev/null ||
    fail "the helper's install is not journaled with its undo"
grep -q "^  1. reboot: systemd-boot boots the trial entry 'passthru-trial.conf' once" "$T/apply.out" ||
    fail "apply's next steps: $(grep -A6 '^Next steps' "$T/apply.out")"
ok "the generation records update-initramfs, proxmox-boot-tool refresh and the helper's install (undone by its remove); apply names the next steps"
cp -a "$R" "$T/sd-fallback"
cp -a "$R" "$T/sd-confirm"

# rollback of the trial: the helper's remove runs, the tree is byte-identical.
expect_rc 0 PT rollback --yes > "$T/rb.out" 2>&1
grep -q 'trial-loader-entry remove' "$T/rb.out" || fail "rollback does not run the helper's remove: $(cat "$T/rb.out")"
[[ $(tree_sum "$R") == "$start" ]] || fail "rollback of the trial is not byte-identical"
ok "rollback of the trial: the helper's remove runs, the tree is byte-identical"

# The fallback boot: the default entry's command line (the fixture's).
R=$T/sd-fallback
expect_rc 0 PT rollback --trial-fallback > "$T/fb.out" 2>&1
grep -q '^Generation 1 is a trial that was not confirmed' "$T/fb.out" || fail "rollback --trial-fallback: $(cat "$T/fb.out")"
grep -q 'trial-loader-entry remove' "$T/fb.out" || fail "the fallback does not run the helper's remove: $(cat "$T/fb.out")"
[[ $(tree_sum "$R") == "$start" ]] || fail "the fallback is not byte-identical to before apply --trial"
[[ ! -e $R/etc/passthru ]] || fail "the fallback left /etc/passthru, which the trial created"
ok "rollback --trial-fallback: the helper's remove runs, byte-identical, /etc/passthru gone again"

# The trial boot: scan and verify say so; confirm makes it the default.
R=$T/sd-confirm
own_copy "$R/proc/cmdline"
echo "initrd=\\EFI\\proxmox\\$KV\\initrd.img-$KV $opts" > "$R/proc/cmdline"
PT scan > "$T/scan.out" 2>&1
grep -q 'Trial boot *yes' "$T/scan.out" || fail "scan does not say it is a trial boot: $(cat "$T/scan.out")"
expect_rc 1 PT verify > "$T/v.out" 2>&1
grep -q 'trial boot: this boot came from the passthru trial entry' "$T/v.out" || fail "verify does not say it is a trial boot"
ok "scan and verify recognise the systemd-boot trial boot"
# The fixture's cards are on their host drivers, so verify fails: confirm refuses, writing nothing.
applied=$(tree_sum --with-journal "$R")
expect_rc 3 PT confirm > /dev/null 2> "$T/c.err"
grep -q '^passthru: error: not confirmed: verify fails on this trial boot: ' "$T/c.err" || fail "confirm: $(cat "$T/c.err")"
[[ $(tree_sum --with-journal "$R") == "$applied" ]] || fail "a refused confirm wrote something"
# Outside the trial boot the hint names the helper, not grub-reboot.
cp "$T/pristine/epyc-4x2080ti-zfs/proc/cmdline" "$R/proc/cmdline"
expect_rc 3 PT confirm > /dev/null 2> "$T/c2.err"
grep -q 'trial-loader-entry install /etc/passthru/trial-loader-entry.conf' "$T/c2.err" || fail "confirm's hint: $(cat "$T/c2.err")"
grep -q 'grub-reboot' "$T/c2.err" && fail "confirm's hint names grub-reboot on systemd-boot: $(cat "$T/c2.err")"
ok "confirm refuses when verify fails and off the trial boot (its hint names the helper), writing nothing"

# --- confirmed: the QEMU host after its trial boot, as a systemd-boot host ---
# qemu-intel-vfio is the QEMU host with the card on vfio-pci; without
# passthru's files and GRUB, with an ESP and /etc/kernel/cmdline, it is a
# systemd-boot host booted into the trial entry.
R=$T/addr
copy_host qemu-intel-vfio "$R"
rm -r "$R"/etc/default "$R"/etc/modprobe.d/passthru-vfio.conf "$R"/etc/modules-load.d/vfio.conf
mkdir -p "$R/etc/kernel" "$R/sys/firmware/efi"
echo 3A1B-7C2D > "$R/etc/kernel/proxmox-boot-uuids"
echo "root=/dev/vda1 ro console=ttyS0 panic=-1" > "$R/etc/kernel/cmdline"
start=$(tree_sum "$R")
PT scan > "$T/scan2.out" 2>&1
grep -q 'Boot loader *systemd-boot' "$T/scan2.out" || fail "the converted host is not systemd-boot: $(grep 'Boot loader' "$T/scan2.out")"
expect_rc 0 PT apply --trial --vm 101 --gpus 0000:04:00 --yes > "$T/apply2.out" 2>&1
# The trial boot's /proc/cmdline is the staged entry's options line.
own_copy "$R/proc/cmdline"
{ printf 'initrd=\\EFI\\proxmox\\6.1.0-56-amd64\\initrd.img-6.1.0-56-amd64 '; sed -n 's/^options //p' "$R/$ENTRY"; } > "$R/proc/cmdline"
grep -q ' passthru.trial ' "$R/proc/cmdline" || fail "the entry's options lack the marker: $(cat "$R/proc/cmdline")"
expect_rc 0 PT verify > "$T/v2.out" 2>&1
expect_rc 0 PT confirm > "$T/c3.out" 2> "$T/c3.err"
grep -q '^Applied as generation 2: ' "$T/c3.out" || fail "confirm did not apply: $(cat "$T/c3.out" "$T/c3.err" | tail -5)"
for f in "${TRIAL_FILES[@]}"; do
    [[ ! -e $R/$f ]] || fail "confirm left /$f"
done
first=$(head -n 1 "$R/etc/kernel/cmdline")
[[ $first == "root=/dev/vda1 ro console=ttyS0 panic=-1 "* && " $first " == *" intel_iommu=on "* && " $first " == *" iommu=pt "* ]] ||
    fail "confirm did not put the arguments into /etc/kernel/cmdline: $first"
[[ " $first " == *" passthru.trial "* ]] && fail "confirm put the trial marker on the default entries"
jq -r '.commands[].argv | join(" ")' "$R/var/lib/passthru/generations/2/manifest.json" > "$T/c3.cmds"
grep -qx 'proxmox-boot-tool refresh' "$T/c3.cmds" || fail "confirm does not refresh the ESPs: $(cat "$T/c3.cmds")"
grep -q '/trial-loader-entry remove$' "$T/c3.cmds" || fail "confirm does not run the helper's remove: $(cat "$T/c3.cmds")"
grep -q 'grub' "$T/c3.cmds" && fail "confirm on systemd-boot runs a GRUB command: $(cat "$T/c3.cmds")"
ok "confirm on a good systemd-boot trial boot: the arguments into /etc/kernel/cmdline, refresh, the trial files and the ESP entry removed"
cp "$T/pristine/qemu-intel-vfio/proc/cmdline" "$R/proc/cmdline"
expect_rc 0 PT rollback --yes > /dev/null 2>&1
[[ -f $R/$ENTRY ]] || fail "rolling back confirm does not return to the trial"
expect_rc 0 PT rollback --yes > "$T/rb2.out" 2>&1
[[ $(tree_sum "$R") == "$start" ]] || fail "rolling back confirm and the trial is not byte-identical"
ok "rollback undoes confirm (back to the trial), then the trial (byte-identical)"

# --- refused: a first line of /etc/kernel/cmdline the entry cannot carry ------
R=$T/bad
copy_host epyc-4x2080ti-zfs "$R"
own_copy "$R/etc/kernel/cmdline"
printf 'root=ZFS=rpool/ROOT/pve-1 boot=zfs quiet\x1b[2J\n' > "$R/etc/kernel/cmdline"
start=$(tree_sum --with-journal "$R")
expect_rc 3 PT apply --trial --vm 101 --gpus all --yes > /dev/null 2> "$T/bad.err"
grep -q "refused: --trial will not copy /etc/kernel/cmdline into the trial entry: the argument 'quiet" "$T/bad.err" ||
    fail "a control character in /etc/kernel/cmdline: $(cat "$T/bad.err")"
[[ $(tree_sum --with-journal "$R") == "$start" ]] || fail "a refused trial wrote something"
ok "a control character in /etc/kernel/cmdline is refused (exit 3), nothing written"

# --- the helper: shellcheck, usage, and what it refuses before any mount -----
if command -v shellcheck > /dev/null; then
    shellcheck "$HELPER" > "$T/sc.out" 2>&1 || fail "shellcheck: $(cat "$T/sc.out")"
fi
sh -n "$HELPER" || fail "the helper does not parse (sh -n)"
[[ -x $HELPER ]] || fail "the helper is not executable"
# In a private mount namespace with an empty /run, /sys and (when this
# machine has one) /etc/kernel of its own, so the helper sees no ESP and no
# EFI and nothing of this machine's can be touched. All of /sys, not only
# /sys/firmware: in the Debian 13 half this runs in a chroot whose /sys is
# an empty directory, with no firmware directory to mount over.
helper() {
    unshare --mount --propagation private sh -c '
        mount -t tmpfs none /run && mount -t tmpfs none /sys || exit 99
        if [ -d /etc/kernel ]; then mount -t tmpfs none /etc/kernel || exit 99; fi
        exec "$@"' sh "$HELPER" "$@"
}
if [[ $(id -u) -eq 0 ]] && unshare --mount true 2> /dev/null; then
    expect_rc 2 helper > /dev/null 2>&1
    expect_rc 2 helper install > /dev/null 2>&1
    expect_rc 2 helper remove extra > /dev/null 2>&1
    expect_rc 1 helper install "$T/missing.conf" > /dev/null 2> "$T/h.err"
    grep -q 'missing.conf does not exist' "$T/h.err" || fail "install of a missing file: $(cat "$T/h.err")"
    cp "$T/entry" "$T/entry.conf"
    expect_rc 1 helper install "$T/entry.conf" > /dev/null 2> "$T/h.err"
    grep -q 'was not booted through UEFI' "$T/h.err" || fail "install without /sys/firmware/efi: $(cat "$T/h.err")"
    expect_rc 0 helper remove > /dev/null 2> "$T/h.err"
    ok "the helper: usage errors exit 2; install refuses a missing file and a system not booted through UEFI; remove with nothing to do succeeds"
fi

finish "trial_systemd_boot: apply --trial, confirm and rollback on a systemd-boot host"
