#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# apply --trial on fixture copies (plan/trial.hpp): the default boot entry's
# files stay as they were, the trial entry's GRUB script passes sh -n, its
# command line read by the real kmod binds and blacklists exactly what the
# plan says, the watchdog units pass systemd-analyze; a trial generation is
# journaled with grub-reboot and its undo; scan and verify recognise the trial
# boot from /proc/cmdline; confirm refuses (exit 3, nothing written) outside
# the trial boot and when verify fails, and on a good trial boot makes the
# configuration the default; rollback returns byte for byte. The fallback:
# the revert unit and its multi-user.target drop-in pass systemd-analyze, and
# 'rollback --trial-fallback' (what the unit runs) refuses on the trial boot,
# without a readable /proc/cmdline and when the newest generation is not a
# trial (exit 3, nothing written), and otherwise undoes exactly the trial,
# byte for byte, the unit and drop-in with it. Refused on GRUB through
# proxmox-boot-tool and with network changes (systemd-boot's trial:
# trial_systemd_boot.sh). (The real grub-mkconfig and
# grub-reboot run on the trial in live_path.sh.)
source "$(dirname "$0")/lib.inc"
need_binary
need jq sh modprobe unshare
PT() { "$P" --root "$R" --data-dir "$SRC" "$@"; }
TRIAL_FILES=(etc/grub.d/42_passthru_trial etc/systemd/system/passthru-trial.timer etc/systemd/system/passthru-trial.service
    etc/systemd/system/passthru-trial-revert.service etc/systemd/system/multi-user.target.d/passthru-trial.conf)

# --- by id, with a blacklist: the 2080 Ti EPYC host on plain GRUB ---------
R=$T/ids
copy_host epyc-4x2080ti "$R"
start=$(tree_sum "$R")
grub_before=$(sha256sum < "$R/etc/default/grub")
expect_rc 0 PT apply --trial --vm 101 --gpus all --dry-run > "$T/dry.out" 2>&1
[[ $(tree_sum "$R") == "$start" ]] || fail "apply --trial --dry-run wrote something"
expect_rc 0 PT apply --trial --trial-minutes 7 --vm 101 --gpus all --yes > "$T/apply.out" 2>&1
for f in "${TRIAL_FILES[@]}"; do
    [[ -f $R/$f ]] || fail "the trial did not write /$f"
done
[[ $(stat -c %a "$R/etc/grub.d/42_passthru_trial") == 755 ]] || fail "the trial entry's script is not executable"
[[ ! -e $R/etc/default/grub.d/passthru.cfg && $(sha256sum < "$R/etc/default/grub") == "$grub_before" ]] ||
    fail "the trial changed the default entry's command line files"
conf=$R/etc/modprobe.d/passthru-vfio.conf
grep -q '^options vfio-pci ids=' "$conf" && fail "the trial's modprobe.d binds by id on every boot"
grep -q '^blacklist ' "$conf" && fail "the trial's modprobe.d blacklists on every boot"
grep -q '^softdep nouveau pre: vfio-pci' "$conf" || fail "the softdeps are gone from the trial's modprobe.d"
sh -n "$R/etc/grub.d/42_passthru_trial" || fail "the trial entry's script does not parse (sh -n)"
args=$(sed -n 's/^args="${args# } \(.*\)"$/\1/p' "$R/etc/grub.d/42_passthru_trial")
for a in iommu=pt vfio_pci.ids=10de:10f7,10de:1ad6,10de:1ad7,10de:1e07 modprobe.blacklist=nouveau,nvidia passthru.trial \
    systemd.wants=passthru-trial.timer; do
    [[ " $args " == *" $a "* ]] || fail "the trial entry lacks $a: $args"
done
grep -q "^    'amd_iommu=on') ;;" "$R/etc/grub.d/42_passthru_trial" || fail "the trial entry keeps amd_iommu=on, which the plan removes"
ok "ids: the default entry's files untouched; the trial entry carries the binding, parses, and is executable"

# kmod reads the trial entry's command line as /proc/cmdline: vfio-pci gets
# the ids and the drivers are blacklisted; without it, neither.
echo "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro $args" > "$T/cmdline"
mkdir -p "$T/modconf"
cp "$conf" "$T/modconf/"
# a private mount namespace (in a user namespace when not root); skipped where it is refused
userns=(); [[ $(id -u) == 0 ]] || userns=(-U -r)
if ! unshare "${userns[@]}" --mount --propagation private true 2> /dev/null; then
    echo "skip: kmod under the trial command line needs a mount namespace (unshare ${userns[*]} --mount), which this machine refuses"
else
    unshare "${userns[@]}" --mount --propagation private sh -c 'mount --bind "$1" /proc/cmdline && modprobe -C "$2" -c' sh "$T/cmdline" "$T/modconf" \
        > "$T/kmod.trial" 2>&1 || fail "modprobe -c with the trial command line failed: $(head -3 "$T/kmod.trial")"
    grep -qx 'options vfio_pci ids=10de:10f7,10de:1ad6,10de:1ad7,10de:1e07' "$T/kmod.trial" &&
        grep -qx 'blacklist nouveau' "$T/kmod.trial" && grep -qx 'blacklist nvidia' "$T/kmod.trial" ||
        fail "kmod does not take the binding from the trial command line: $(grep -E 'vfio|blacklist' "$T/kmod.trial" | head)"
    echo "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro quiet" > "$T/cmdline"
    unshare "${userns[@]}" --mount --propagation private sh -c 'mount --bind "$1" /proc/cmdline && modprobe -C "$2" -c' sh "$T/cmdline" "$T/modconf" \
        > "$T/kmod.default" 2>&1
    grep -E '^options vfio_pci ids|^blacklist (nouveau|nvidia)$' "$T/kmod.default" && fail "the default boot binds or blacklists"
    ok "ids: kmod binds and blacklists from the trial command line only"
fi

if command -v systemd-analyze > /dev/null; then
    systemd-analyze verify --man=no "$R/etc/systemd/system/passthru-trial.timer" "$R/etc/systemd/system/passthru-trial.service" \
        > "$T/sa.out" 2>&1 || fail "systemd-analyze rejects the watchdog units: $(cat "$T/sa.out")"
    grep -q '^OnBootSec=7min$' "$R/etc/systemd/system/passthru-trial.timer" || fail "--trial-minutes 7 is not the timer's"
    ok "the watchdog units pass systemd-analyze verify"
    # The revert unit names passthru by its name (systemd's fixed search path) and the
    # drop-in extends multi-user.target: verify both in a root with systemd's own units
    # and passthru installed, and take any warning as a failure.
    sa=$T/sa-root
    mkdir -p "$sa/usr/lib/systemd" "$sa/usr/bin" "$sa/etc/systemd/system/multi-user.target.d"
    cp -r /usr/lib/systemd/system "$sa/usr/lib/systemd/"
    cp "$P" "$sa/usr/bin/passthru"
    cp "$R/etc/systemd/system/passthru-trial-revert.service" "$sa/etc/systemd/system/"
    cp "$R/etc/systemd/system/multi-user.target.d/passthru-trial.conf" "$sa/etc/systemd/system/multi-user.target.d/"
    systemd-analyze verify --man=no --root="$sa" multi-user.target passthru-trial-revert.service > "$T/sa2.out" 2>&1 ||
        fail "systemd-analyze rejects the revert unit or its drop-in: $(cat "$T/sa2.out")"
    [[ ! -s $T/sa2.out ]] || fail "systemd-analyze warns about the revert unit or its drop-in: $(cat "$T/sa2.out")"
    ok "the revert unit and its multi-user.target drop-in pass systemd-analyze verify, without a warning"
fi

m=$R/var/lib/passthru/generations/1/manifest.json
jq -e '.request.trial_minutes == 7 and (.commands | map(.argv | join(" ")) | index("grub-reboot passthru-trial")) != null
       and (.commands[] | select(.argv[0] == "grub-reboot") | .undo == "command")' "$m" > /dev/null ||
    fail "the trial generation does not record its request and grub-reboot: $(jq -c '.request, [.commands[] | .argv]' "$m")"
grep -q '^Next steps, in this order:' "$T/apply.out" && grep -q 'confirm: makes the trial configuration the default' "$T/apply.out" ||
    fail "apply --trial does not end with the next steps: $(tail -5 "$T/apply.out")"
ok "ids: the trial generation is journaled with grub-reboot; apply names the next steps"

grep -qx 'ConditionKernelCommandLine=!passthru.trial' "$R/etc/systemd/system/passthru-trial-revert.service" ||
    fail "the revert unit does not skip the trial boot"
cp -a "$R" "$T/ids-fallback" # the same trial, for the fallback below

# Not the trial boot: scan says nothing of one, confirm refuses and writes nothing.
applied=$(tree_sum --with-journal "$R")
PT scan --json | jq -e '.host.trial_boot == false' > /dev/null || fail "scan --json sees a trial boot without the marker"
expect_rc 3 PT confirm > "$T/c.out" 2> "$T/c.err"
grep -q '^passthru: error: not confirmed: this is not the trial boot of generation 1' "$T/c.err" || fail "confirm: $(cat "$T/c.err")"
[[ $(tree_sum --with-journal "$R") == "$applied" ]] || fail "a refused confirm wrote something"
# The trial boot's command line, but the cards still on their host drivers: verify fails, confirm refuses.
own_copy "$R/proc/cmdline"
echo "BOOT_IMAGE=/boot/vmlinuz-6.2.16-3-pve root=/dev/mapper/pve-root ro quiet $args" > "$R/proc/cmdline"
PT scan > "$T/scan.out" 2>&1
grep -q 'Trial boot *yes' "$T/scan.out" || fail "scan does not say it is a trial boot"
PT scan --json | jq -e '.host.trial_boot == true' > /dev/null || fail "scan --json does not see the trial boot"
expect_rc 1 PT verify > "$T/v.out" 2> "$T/v.err"
grep -q 'trial boot: this boot came from the passthru trial entry' "$T/v.out" || fail "verify does not say it is a trial boot"
applied=$(tree_sum --with-journal "$R")
expect_rc 3 PT confirm > "$T/c.out" 2> "$T/c.err"
grep -q '^passthru: error: not confirmed: verify fails on this trial boot: ' "$T/c.err" || fail "confirm with failing verify: $(cat "$T/c.err")"
[[ $(tree_sum --with-journal "$R") == "$applied" ]] || fail "confirm after a failing verify wrote something"
ok "scan and verify recognise the trial boot; confirm refuses outside it and when verify fails, writing nothing"
expect_rc 3 PT rollback --trial-fallback > "$T/fb.out" 2> "$T/fb.err"
grep -q '^passthru: error: no trial fallback: this is the trial boot (passthru.trial on /proc/cmdline)' "$T/fb.err" ||
    fail "rollback --trial-fallback on the trial boot: $(cat "$T/fb.err")"
[[ $(tree_sum --with-journal "$R") == "$applied" ]] || fail "rollback --trial-fallback on the trial boot wrote something"
ok "rollback --trial-fallback refuses on the trial boot (exit 3), writing nothing"

# rollback of the trial: the trial entry and units go, grub-reboot is undone.
expect_rc 0 PT rollback --yes > "$T/rb.out" 2>&1
grep -q 'grub-editenv /boot/grub/grubenv unset next_entry' "$T/rb.out" || fail "rollback does not undo grub-reboot: $(cat "$T/rb.out")"
cp "$T/pristine/epyc-4x2080ti/proc/cmdline" "$R/proc/cmdline"
[[ $(tree_sum "$R") == "$start" ]] || fail "rollback of the trial is not byte-identical"
ok "rollback of a trial generation: byte-identical, the one-time selection unset"

# The fallback boot: the default entry's command line (the fixture's), so the
# revert unit runs 'rollback --trial-fallback'.
R=$T/ids-fallback
fb=$(tree_sum --with-journal "$R")
expect_rc 2 PT rollback --trial-fallback --force > /dev/null 2> "$T/fb.err"
expect_rc 2 PT rollback --trial-fallback --to 1 > /dev/null 2>> "$T/fb.err"
mv "$R/proc/cmdline" "$T/cmdline.kept"
expect_rc 3 PT rollback --trial-fallback > /dev/null 2>> "$T/fb.err"
grep -q '^passthru: error: no trial fallback: cannot read /proc/cmdline' "$T/fb.err" || fail "unreadable /proc/cmdline: $(cat "$T/fb.err")"
mv "$T/cmdline.kept" "$R/proc/cmdline"
[[ $(tree_sum --with-journal "$R") == "$fb" ]] || fail "a refused rollback --trial-fallback wrote something"
expect_rc 0 PT rollback --trial-fallback --dry-run > "$T/fbd.out" 2>&1
[[ $(tree_sum --with-journal "$R") == "$fb" ]] || fail "rollback --trial-fallback --dry-run wrote something"
grep -q 'remove  /etc/systemd/system/passthru-trial-revert.service' "$T/fbd.out" || fail "the dry run does not remove the revert unit: $(cat "$T/fbd.out")"
expect_rc 0 PT rollback --trial-fallback > "$T/fb.out" 2>&1
grep -q '^Generation 1 is a trial that was not confirmed' "$T/fb.out" || fail "rollback --trial-fallback: $(cat "$T/fb.out")"
grep -q 'grub-editenv /boot/grub/grubenv unset next_entry' "$T/fb.out" || fail "the fallback does not undo grub-reboot: $(cat "$T/fb.out")"
[[ $(tree_sum "$R") == "$start" ]] || fail "the fallback is not byte-identical to before apply --trial"
[[ ! -e $R/etc/systemd/system/multi-user.target.d ]] || fail "the fallback left the drop-in directory it created"
jq -e '.kind == "rollback" and .undoes == [1]' "$R/var/lib/passthru/generations/2/manifest.json" > /dev/null ||
    fail "the fallback is not a journaled rollback of exactly the trial"
fb=$(tree_sum --with-journal "$R")
expect_rc 3 PT rollback --trial-fallback > /dev/null 2> "$T/fb.err"
grep -q '^passthru: error: no trial fallback: no applied generation is active' "$T/fb.err" || fail "a second fallback: $(cat "$T/fb.err")"
[[ $(tree_sum --with-journal "$R") == "$fb" ]] || fail "a second fallback wrote something"
ok "rollback --trial-fallback off the trial boot: byte-identical to before the trial, the revert unit and drop-in gone; refusals write nothing"

# --- by address, confirmed: the QEMU host after its trial boot ------------
# qemu-intel-vfio is the QEMU host with the card on vfio-pci; without
# passthru's files it is that host booted into the trial entry.
R=$T/addr
copy_host qemu-intel-vfio "$R"
rm "$R"/etc/default/grub.d/passthru.cfg "$R"/etc/modprobe.d/passthru-vfio.conf "$R"/etc/modules-load.d/vfio.conf
start=$(tree_sum "$R")
expect_rc 0 PT apply --trial --vm 101 --gpus 0000:04:00 --yes > "$T/apply2.out" 2>&1
conf=$R/etc/modprobe.d/passthru-vfio.conf
grep -qF 'case " $(cat /proc/cmdline) " in *" passthru.trial "*) ;; *) exec /sbin/modprobe --ignore-install vfio-pci $CMDLINE_OPTS ;; esac; \' "$conf" ||
    fail "the address hook does not check the marker first"
hook=$(sed -n '/^install vfio-pci/,/exit 0$/p' "$conf" | sed -e '1s/^install vfio-pci //' -e 's/\\$//')
sh -n -c "$hook" || fail "the trial install hook does not parse"
rm -rf "$T/modconf" && mkdir -p "$T/modconf" && cp "$conf" "$T/modconf/"
modprobe -C "$T/modconf" --showconfig 2>&1 | grep -qi 'ignoring bad line' && fail "kmod rejects a line of the trial's modprobe.d"
own_copy "$R/proc/cmdline"
echo "console=ttyS0 panic=-1 intel_iommu=on iommu=pt passthru.trial systemd.wants=passthru-trial.timer" > "$R/proc/cmdline"
expect_rc 0 PT verify > "$T/v2.out" 2>&1
expect_rc 0 PT confirm > "$T/c2.out" 2> "$T/c2.err"
grep -q '^Applied as generation 2: ' "$T/c2.out" || fail "confirm did not apply: $(cat "$T/c2.out" "$T/c2.err" | tail -5)"
for f in "${TRIAL_FILES[@]}"; do
    [[ ! -e $R/$f ]] || fail "confirm left /$f"
done
grep -q 'iommu=pt' "$R/etc/default/grub.d/passthru.cfg" || fail "confirm did not put the arguments on the default entry"
grep -q 'passthru.trial' "$conf" && fail "confirm left the binding conditional on the trial marker"
jq -r '.commands[].argv | join(" ")' "$R/var/lib/passthru/generations/2/manifest.json" > "$T/c2.cmds"
grep -qx 'update-grub' "$T/c2.cmds" || fail "confirm does not regenerate grub.cfg"
grep -qx 'grub-editenv /boot/grub/grubenv unset next_entry' "$T/c2.cmds" || fail "confirm does not clear GRUB's one-time selection"
cp "$T/pristine/qemu-intel-vfio/proc/cmdline" "$R/proc/cmdline"
applied=$(tree_sum --with-journal "$R")
expect_rc 3 PT rollback --trial-fallback > /dev/null 2> "$T/fb2.err"
grep -q '^passthru: error: no trial fallback: the newest applied generation, 2, is not an unconfirmed trial' "$T/fb2.err" ||
    fail "rollback --trial-fallback after confirm: $(cat "$T/fb2.err")"
[[ $(tree_sum --with-journal "$R") == "$applied" ]] || fail "rollback --trial-fallback after confirm wrote something"
ok "addr: the hook binds only with the marker; confirm on a good trial boot makes it the default and removes the trial (and its fallback)"

expect_rc 0 PT rollback --yes > /dev/null 2>&1
[[ -f $R/etc/grub.d/42_passthru_trial && ! -e $R/etc/default/grub.d/passthru.cfg ]] || fail "rolling back confirm does not return to the trial"
expect_rc 0 PT rollback --yes > /dev/null 2>&1
cp "$T/pristine/qemu-intel-vfio/proc/cmdline" "$R/proc/cmdline"
[[ $(tree_sum "$R") == "$start" ]] || fail "rolling back confirm and the trial is not byte-identical"
ok "addr: rollback undoes confirm (back to the trial), then the trial (byte-identical)"

# --- refused: GRUB through proxmox-boot-tool, network changes ----------------
# (systemd-boot through proxmox-boot-tool has its trial: trial_systemd_boot.sh.)
# The ZFS host booted in legacy BIOS mode: GRUB on ESPs that proxmox-boot-tool keeps.
R=$T/zfs
copy_host epyc-4x2080ti-zfs "$R"
rm -r "$R/sys/firmware/efi"
start=$(tree_sum --with-journal "$R")
expect_rc 3 PT apply --trial --vm 101 --gpus all --yes > "$T/z.out" 2> "$T/z.err"
grep -q 'refused: --trial needs plain GRUB or systemd-boot through proxmox-boot-tool .*; this host boots with grub through proxmox-boot-tool' \
    "$T/z.err" || fail "GRUB through proxmox-boot-tool: $(cat "$T/z.err")"
R=$T/net
copy_host epyc-4x2080ti "$R"
expect_rc 3 PT apply --trial --vm 101 --gpus all --bond enp66s0f0,enp66s0f1 --address 192.168.1.252/24 --yes > "$T/n.out" 2> "$T/n.err"
grep -q 'refused: --trial does not cover network changes' "$T/n.err" || fail "network: $(cat "$T/n.err")"
[[ $(tree_sum --with-journal "$T/zfs") == "$start" ]] || fail "a refused trial wrote something"
expect_rc 2 PT apply --trial-minutes 5 --vm 101 --gpus all --yes > /dev/null 2>&1
expect_rc 2 PT apply --trial --trial-minutes 1 --vm 101 --gpus all --yes > /dev/null 2>&1
ok "--trial refused on GRUB through proxmox-boot-tool and with network changes; bad --trial-minutes is a usage error"

finish "trial_boot: apply --trial, confirm and rollback on fixture copies"
