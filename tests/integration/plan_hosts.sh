#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# passthru plan on every fixture host (copies in a temp dir), checked by the
# real parsers: kmod (modprobe -C DIR --showconfig; a bad line is only
# reported on stderr), sh (the GRUB drop-in sourced after /etc/default/grub)
# and the one-line rule of /etc/kernel/cmdline. The expectations below are
# written from tests/fixtures/descriptions/*.json, not from passthru's output.
# The planned files are "applied" to a copy by this script (jq + shell) so
# the checks see the tree as it would be after apply; a second plan on that
# tree must plan no host change (idempotence).
source "$(dirname "$0")/lib.inc"
need_binary
need jq modprobe
[ -d "$FIXTURES/epyc-4x2080ti" ] || skip "fixture hosts missing"

fresh() { # fresh HOST -> path of a new copy
    local dst=$T/$1.$RANDOM$RANDOM
    cp -a "$FIXTURES/$1" "$dst"
    echo "$dst"
}

# plan ROOT ARGS... : runs plan --json, keeps stdout in $OUT, stderr in $ERR, rc in $RC.
plan() {
    local root=$1
    shift
    OUT=$T/out.json
    ERR=$T/err.txt
    RC=0
    "$PASSTHRU" plan --root "$root" --json "$@" >"$OUT" 2>"$ERR" || RC=$?
}
# expect_plan_rc WANT WHAT: the last plan exited WANT, else one failure (and false).
expect_plan_rc() { [ "$RC" = "$1" ] || { fail "$2: exit $RC, expected $1: $(head -3 "$ERR")"; return 1; }; }

# apply_copy ROOT PLAN.json -> copy of ROOT with the planned files written
apply_copy() {
    local dst=$T/applied.$RANDOM$RANDOM
    cp -a "$1" "$dst"
    local n i path action
    n=$(jq '.files | length' "$2")
    for ((i = 0; i < n; i++)); do
        path=$(jq -r ".files[$i].path" "$2")
        action=$(jq -r ".files[$i].action" "$2")
        if [ "$action" = delete ]; then
            rm -f "$dst$path"
        else
            mkdir -p "$(dirname "$dst$path")"
            jq -j ".files[$i].content" "$2" >"$dst$path"
        fi
    done
    echo "$dst"
}

# showconfig ROOT -> kmod's view of ROOT/etc/modprobe.d in $SHOW; fails on bad lines.
showconfig() {
    local conf=$T/conf.$RANDOM$RANDOM
    mkdir -p "$conf"
    cp "$1"/etc/modprobe.d/*.conf "$conf"/ 2>/dev/null || true
    SHOW=$T/show.txt
    modprobe -C "$conf" --showconfig >"$SHOW.raw" 2>"$T/show.err"
    if grep -qi 'ignoring bad line\|error' "$T/show.err"; then
        fail "kmod rejects a line in $1/etc/modprobe.d: $(cat "$T/show.err")"
    fi
    # Drop what kmod takes from THIS machine's /proc/cmdline (module.param=value).
    local drop=$T/drop.txt
    : >"$drop"
    for tok in $(cat /proc/cmdline); do
        case $tok in
        --) break ;;
        *.*=*)
            local mod=${tok%%.*} rest=${tok#*.}
            echo "options ${mod//-/_} ${rest}" >>"$drop"
            ;;
        esac
    done
    grep -v -x -F -f "$drop" "$SHOW.raw" | sed '/^# End of configuration files/,$d' >"$SHOW" || true
}
has_line() { grep -q -x -F -- "$2" "$1" || fail "$3: missing line '$2' in $(basename "$1")"; }
no_match() { if grep -q -E -- "$2" "$1"; then fail "$3: unexpected '$2' in $1: $(grep -E -- "$2" "$1" | head -2)"; fi; }
count_lines() { grep -c -x -F -- "$2" "$1" || true; }

# grub_default ROOT -> GRUB_CMDLINE_LINUX_DEFAULT as grub-mkconfig would see it
grub_default() {
    (cd "$1" && sh -c '. etc/default/grub; for x in etc/default/grub.d/*.cfg; do if [ -e "$x" ]; then . "./$x"; fi; done; printf %s "$GRUB_CMDLINE_LINUX_DEFAULT"')
}

# Host changes of a plan (the VM config is another engineer's part).
host_files() { jq -r '[.files[].path | select(startswith("/etc/pve/") | not)] | join(" ")' "$1"; }

check_idempotent() { # ROOT(applied) ARGS...
    local root=$1
    shift
    plan "$root" "$@"
    expect_plan_rc 0 "second plan on $(basename "$root")" || return 0
    local left
    left=$(host_files "$OUT")
    [ -z "$left" ] || fail "second plan on the applied tree still changes: $left"
}

common_checks() { # NAME ROOT APPLIED
    local name=$1 root=$2 applied=$3
    showconfig "$applied"
    has_line "$SHOW" "options kvm ignore_msrs=1 report_ignored_msrs=0" "$name"
    no_match "$SHOW" 'options (kvm_amd|kvm_intel) .*ignore_msrs' "$name"
    no_match "$SHOW" 'ids=[^ ]*, ' "$name"
    [ "$(grep -cE '^options vfio_pci .*ids=' "$SHOW" || true)" -le 1 ] || fail "$name: more than one vfio-pci ids= line"
    [ "$(grep -cx 'vfio' "$applied/etc/modules-load.d/vfio.conf")" = 1 ] || fail "$name: modules-load vfio.conf"
    for m in vfio vfio_iommu_type1 vfio_pci; do
        grep -qx "$m" "$applied/etc/modules-load.d/vfio.conf" || fail "$name: $m missing from modules-load.d/vfio.conf"
        grep -qx "$m" "$applied/etc/initramfs-tools/modules" || fail "$name: $m missing from initramfs-tools/modules"
    done
    # The initramfs list keeps every original line, byte for byte, in front.
    local orig=$root/etc/initramfs-tools/modules
    if [ -f "$orig" ]; then
        head -c "$(stat -c %s "$orig")" "$applied/etc/initramfs-tools/modules" | cmp -s - "$orig" ||
            fail "$name: /etc/initramfs-tools/modules lost or changed original lines"
    fi
    if [ -e "$applied/etc/kernel/cmdline" ]; then
        [ "$(wc -l <"$applied/etc/kernel/cmdline")" = 1 ] || fail "$name: /etc/kernel/cmdline is not one line"
        grep -q 'root=' "$applied/etc/kernel/cmdline" || fail "$name: /etc/kernel/cmdline lost root="
    fi
    jq -e '.schema == "passthru.plan/1"' "$OUT" >/dev/null || fail "$name: schema"
    for f in etc/modprobe.d/passthru-vfio.conf etc/modules-load.d/vfio.conf; do
        grep -q "passthru rollback" "$applied/$f" || fail "$name: $f has no undo hint"
    done
}

# ---------------------------------------------------------------------------
# epyc-4x2080ti: AMD EPYC, kernel 6.2, GRUB with amd_iommu=on, 4x RTX 2080 Ti
# (Turing, 4 functions each), ASPEED BMC is the boot VGA.
root=$(fresh epyc-4x2080ti)
before=$(tree_sum --with-journal "$root")
plan "$root" --vm 101 --gpus all
if expect_plan_rc 0 epyc-4x2080ti; then
    # plan changes nothing on the host: the one file it writes is its own
    # pending plan in passthru's state directory, and that holds this plan.
    pending=$root/var/lib/passthru/pending-plan.json
    [ -f "$pending" ] || fail "epyc-4x2080ti: plan did not record the pending plan"
    jq -e --slurpfile p "$OUT" '.plan == $p[0]' "$pending" >/dev/null || fail "epyc-4x2080ti: the pending plan is not the plan printed"
    rm "$pending"
    rmdir "$root/var/lib/passthru" 2>/dev/null || true
    [ "$(tree_sum --with-journal "$root")" = "$before" ] || fail "epyc-4x2080ti: plan wrote into the root"
    cp "$OUT" "$T/epyc.json"
    applied=$(apply_copy "$root" "$T/epyc.json")
    [ "$(grub_default "$applied")" = "quiet iommu=pt" ] || fail "epyc: GRUB_CMDLINE_LINUX_DEFAULT is '$(grub_default "$applied")'"
    common_checks epyc-4x2080ti "$root" "$applied"
    has_line "$SHOW" "options vfio_pci ids=10de:10f7,10de:1ad6,10de:1ad7,10de:1e07" epyc
    for m in nvidia nvidia_drm nouveau snd_hda_intel xhci_pci i2c_nvidia_gpu; do
        has_line "$SHOW" "softdep $m pre: vfio-pci" epyc
    done
    has_line "$SHOW" "blacklist nouveau" epyc
    has_line "$SHOW" "blacklist nvidia" epyc
    [ "$(count_lines "$SHOW" "blacklist nvidiafb")" = 1 ] || fail "epyc: nvidiafb blacklisted twice (pve-blacklist.conf has it)"
    no_match "$SHOW" 'allow_unsafe_interrupts' epyc
    if grep -rh -v '^[[:space:]]*#' "$applied/etc/default" "$applied/etc/modules-load.d" "$applied/etc/initramfs-tools" "$applied/etc/modules" |
        grep -q 'amd_iommu=on\|vfio_virqfd'; then
        fail "epyc: amd_iommu=on or vfio_virqfd left"
    fi
    jq -e '.commands | map(.argv | join(" ")) == ["update-initramfs -u -k all", "update-grub"]' "$T/epyc.json" >/dev/null ||
        fail "epyc: commands $(jq -c '[.commands[].argv]' "$T/epyc.json")"
    jq -e '.kernel_args.add == ["iommu=pt"] and .kernel_args.remove == ["amd_iommu=on"] and .binding == "ids"' "$T/epyc.json" >/dev/null ||
        fail "epyc: kernel_args/binding $(jq -c '{kernel_args, binding}' "$T/epyc.json")"
    jq -e '[.gpus[].slot] == ["0000:01:00","0000:41:00","0000:81:00","0000:82:00"]' "$T/epyc.json" >/dev/null || fail "epyc: gpus"
    check_idempotent "$applied" --vm 101 --gpus all
    # --exit-code: 10 with changes pending, 0 once applied.
    rc=0
    "$PASSTHRU" plan --root "$root" --vm 101 --gpus all --exit-code >/dev/null 2>&1 || rc=$?
    [ $rc = 10 ] || fail "epyc: --exit-code with changes pending exits $rc, not 10"
    # --out writes the same document as --json, to a path on this machine.
    "$PASSTHRU" plan --root "$root" --vm 101 --gpus all --out "$T/saved.json" >/dev/null
    cmp -s "$T/saved.json" "$T/epyc.json" || fail "epyc: --out differs from --json"
    [ ! -e "$root$T/saved.json" ] || fail "epyc: --out was written under the root"
    ok "epyc-4x2080ti"
fi

# epyc-4x2080ti-zfs: the same hardware on systemd-boot (kernel 6.8).
root=$(fresh epyc-4x2080ti-zfs)
plan "$root" --vm 101 --gpus all
if expect_plan_rc 0 epyc-4x2080ti-zfs; then
    cp "$OUT" "$T/zfs.json"
    applied=$(apply_copy "$root" "$T/zfs.json")
    common_checks epyc-4x2080ti-zfs "$root" "$applied"
    [ "$(cat "$applied/etc/kernel/cmdline")" = "root=ZFS=rpool/ROOT/pve-1 boot=zfs iommu=pt" ] ||
        fail "zfs: /etc/kernel/cmdline is '$(cat "$applied/etc/kernel/cmdline")'"
    cmp -s "$root/etc/default/grub" "$applied/etc/default/grub" || fail "zfs: GRUB files touched on a systemd-boot host"
    [ ! -e "$applied/etc/default/grub.d/passthru.cfg" ] || fail "zfs: GRUB drop-in on a systemd-boot host"
    jq -e '.commands | map(.argv | join(" ")) == ["update-initramfs -u -k all", "proxmox-boot-tool refresh"]' "$T/zfs.json" >/dev/null ||
        fail "zfs: commands"
    check_idempotent "$applied" --vm 101 --gpus all
    ok "epyc-4x2080ti-zfs"
fi

# t180-4xv100: Intel Broadwell, kernel 6.5, GRUB (BIOS) with intel_iommu=on
# already there; 4x V100 SXM2 16GB, one function each; nouveau blacklisted.
root=$(fresh t180-4xv100)
plan "$root" --vm 101 --gpus all
if expect_plan_rc 0 t180-4xv100; then
    cp "$OUT" "$T/t180.json"
    applied=$(apply_copy "$root" "$T/t180.json")
    common_checks t180-4xv100 "$root" "$applied"
    cmdline=" $(grub_default "$applied") "
    [ "$(grep -o ' intel_iommu=on ' <<<"$cmdline" | wc -l)" = 1 ] || fail "t180: intel_iommu=on not exactly once in '$cmdline'"
    [ "$(grep -o ' iommu=pt ' <<<"$cmdline" | wc -l)" = 1 ] || fail "t180: iommu=pt not exactly once in '$cmdline'"
    has_line "$SHOW" "options vfio_pci ids=10de:1db1" t180
    has_line "$SHOW" "softdep nouveau pre: vfio-pci" t180
    [ "$(count_lines "$SHOW" "blacklist nouveau")" = 1 ] || fail "t180: blacklist nouveau not exactly once"
    no_match "$SHOW" 'softdep snd_hda_intel' t180
    check_idempotent "$applied" --vm 101 --gpus all
    ok "t180-4xv100"
fi

# consumer-shared: GTX 1060 shares its group with chipset SATA, USB and the NIC.
root=$(fresh consumer-shared)
before=$(tree_sum --with-journal "$root")
plan "$root" --vm 101 --gpus all
if expect_plan_rc 3 consumer-shared; then
    jq -e '.refused and (.files == []) and (.commands == []) and (.refusals | length) >= 1' "$OUT" >/dev/null || fail "consumer-shared: refused plan is not empty"
    msg=$(jq -r '[.refusals[] | .message, .hints[]] | join(" ")' "$OUT")
    for want in 0000:02:00.1 0000:06:00.0 ahci r8169 --acs-override; do
        grep -q -- "$want" <<<"$msg" || fail "consumer-shared: refusal does not name '$want'"
    done
    grep -q 'refused' "$ERR" || fail "consumer-shared: no error line on stderr"
    [ "$(tree_sum --with-journal "$root")" = "$before" ] || fail "consumer-shared: plan wrote into the root"
    plan "$root" --vm 101 --gpus all --acs-override
    if expect_plan_rc 0 "consumer-shared --acs-override"; then
        jq -e '.kernel_args.add | index("pcie_acs_override=downstream,multifunction")' "$OUT" >/dev/null || fail "acs: no pcie_acs_override"
        jq -e '[.warnings[] | select(test("weaken"))] | length >= 1' "$OUT" >/dev/null || fail "acs: no warning"
        ok "consumer-shared (refused; --acs-override planned with a warning)"
    fi
fi

# ryzen-x570-dummy: the GT 710's group holds AMD's dummy host bridge (which goes along)
# and the I211 NIC, the host's network: still refused, naming the NIC.
root=$(fresh ryzen-x570-dummy)
plan "$root" --vm 101 --gpus 1
if expect_plan_rc 3 "ryzen-x570-dummy --gpus 1"; then
    msg=$(jq -r '[.refusals[] | .message] | join(" ")' "$OUT")
    for want in 0000:04:00.0 igb host-critical; do
        grep -q -- "$want" <<<"$msg" || fail "ryzen-x570-dummy: refusal does not name '$want'"
    done
    ok "ryzen-x570-dummy --gpus 1 (dummy bridge and NIC in the group: refused)"
fi

# two-nvidia-bootvga: RTX 3060 (boot VGA, host console) + RTX 3090; kernel 6.8, systemd-boot.
root=$(fresh two-nvidia-bootvga)
plan "$root" --vm 101 --gpus 1
if expect_plan_rc 0 "two-nvidia-bootvga --gpus 1"; then
    cp "$OUT" "$T/two1.json"
    applied=$(apply_copy "$root" "$T/two1.json")
    common_checks two-nvidia-bootvga "$root" "$applied"
    jq -e '[.gpus[].slot] == ["0000:03:00"]' "$T/two1.json" >/dev/null || fail "two: --gpus 1 is not 03:00"
    has_line "$SHOW" "options vfio_pci ids=10de:1aef,10de:2204" two
    no_match "$SHOW" '^blacklist (nouveau|nvidia)$' two
    no_match "$applied/etc/kernel/cmdline" 'sysfb_init|efifb' two
    check_idempotent "$applied" --vm 101 --gpus 1
    ok "two-nvidia-bootvga --gpus 1"
fi
plan "$root" --vm 101 --gpus 0
if expect_plan_rc 0 "two-nvidia-bootvga --gpus 0"; then
    jq -e '[.warnings[] | select(test("loses its local console"))] | length == 1' "$OUT" >/dev/null || fail "two: no boot VGA warning"
    jq -e '.kernel_args.add | index("initcall_blacklist=sysfb_init")' "$OUT" >/dev/null || fail "two: no initcall_blacklist=sysfb_init for kernel 6.8"
    ok "two-nvidia-bootvga --gpus 0 (boot VGA)"
fi

# turing-4fn: RTX 2070 SUPER with 4 functions; kernel 6.8 Intel (IOMMU on by default), GRUB.
root=$(fresh turing-4fn)
plan "$root" --vm 101 --gpus all
if expect_plan_rc 0 turing-4fn; then
    cp "$OUT" "$T/turing.json"
    applied=$(apply_copy "$root" "$T/turing.json")
    common_checks turing-4fn "$root" "$applied"
    [ "$(grub_default "$applied")" = "quiet iommu=pt" ] || fail "turing: GRUB_CMDLINE_LINUX_DEFAULT is '$(grub_default "$applied")'"
    has_line "$SHOW" "options vfio_pci ids=10de:10f8,10de:1ad8,10de:1ad9,10de:1e84" turing
    for m in xhci_pci i2c_nvidia_gpu ucsi_ccg snd_hda_intel nouveau; do has_line "$SHOW" "softdep $m pre: vfio-pci" turing; done
    check_idempotent "$applied" --vm 101 --gpus all
    ok "turing-4fn"
fi

# no-iommu: Intel, kernel 6.5, GRUB, no intel_iommu=on: refused with the fix.
root=$(fresh no-iommu)
plan "$root" --vm 101 --gpus all
if expect_plan_rc 3 no-iommu; then
    jq -e '(.files == []) and ([.refusals[].hints[] | select(test("intel_iommu=on"))] | length >= 1)' "$OUT" >/dev/null ||
        fail "no-iommu: refusal without the intel_iommu=on fix: $(jq -c .refusals "$OUT")"
    ok "no-iommu (refused)"
fi

# identical-pair: two identical RTX 3090, 07:00 stays on the host.
root=$(fresh identical-pair)
plan "$root" --vm 101 --gpus 0000:08:00
if expect_plan_rc 0 "identical-pair 08:00"; then
    cp "$OUT" "$T/pair.json"
    applied=$(apply_copy "$root" "$T/pair.json")
    common_checks identical-pair "$root" "$applied"
    jq -e '.binding == "address"' "$T/pair.json" >/dev/null || fail "pair: binding is not by address"
    no_match "$SHOW" '^options vfio_pci .*ids=' pair
    grep -q '^install vfio_pci .*0000:08:00.0.*0000:08:00.1' "$SHOW" || fail "pair: install command does not bind 08:00.0 and 08:00.1"
    no_match "$SHOW" '^install vfio_pci .*0000:07:00' pair
    no_match "$SHOW" '^blacklist (nouveau|nvidia)$' pair
    check_idempotent "$applied" --vm 101 --gpus 0000:08:00
    ok "identical-pair (by address)"
fi

# cmdline-preset: an old script's vfio-pci.ids= on the GRUB line, the seed's
# broken ids list with spaces, vfio_virqfd in /etc/modules on kernel 6.8.
root=$(fresh cmdline-preset)
plan "$root" --vm 101 --gpus all
if expect_plan_rc 0 cmdline-preset; then
    cp "$OUT" "$T/preset.json"
    applied=$(apply_copy "$root" "$T/preset.json")
    common_checks cmdline-preset "$root" "$applied"
    [ "$(grub_default "$applied")" = "quiet intel_iommu=on iommu=pt" ] || fail "preset: GRUB_CMDLINE_LINUX_DEFAULT is '$(grub_default "$applied")'"
    has_line "$SHOW" "options vfio_pci ids=10de:10f8,10de:1ad8,10de:1ad9,10de:1e84" preset
    no_match "$SHOW" '10de:10f8,$|10de:1e84,$' preset
    if grep -qx 'vfio_virqfd' "$applied/etc/modules"; then fail "preset: vfio_virqfd left in /etc/modules"; fi
    jq -e '[.files[] | select(.path == "/etc/modprobe.d/vfio.conf") | .reasons[] | select(test("space"))] | length == 1' "$T/preset.json" >/dev/null ||
        fail "preset: the old vfio.conf change does not explain the space"
    check_idempotent "$applied" --vm 101 --gpus all
    ok "cmdline-preset"
fi

# Selection errors exit 2 and print one error line.
root=$(fresh epyc-4x2080ti)
for sel in 7 0000:99:00 bogus "all,0"; do
    plan "$root" --vm 101 --gpus "$sel"
    expect_plan_rc 2 "--gpus $sel" && grep -q '^passthru: error: ' "$ERR" || fail "--gpus $sel: no error line"
done
plan "$(fresh qemu-intel)" --vm 101 --gpus all
expect_plan_rc 2 "qemu-intel --gpus all (no NVIDIA)" || true
ok "selection errors"

# qemu-intel (the real-kernel test's host): the secondary display 04:00 + its
# ICH9 HDA function; the same HDA id 8086:293e stays on the host at 00:1b.0.
root=$(fresh qemu-intel)
plan "$root" --vm 101 --gpus 0000:04:00
if expect_plan_rc 0 "qemu-intel 04:00"; then
    cp "$OUT" "$T/qemu.json"
    applied=$(apply_copy "$root" "$T/qemu.json")
    showconfig "$applied"
    jq -e '.binding == "address" and .vfio_ids == ["1234:1111","8086:293e"]' "$T/qemu.json" >/dev/null || fail "qemu: binding"
    has_line "$SHOW" "softdep bochs pre: vfio-pci" qemu
    has_line "$SHOW" "softdep snd_hda_intel pre: vfio-pci" qemu
    # Run the install command against a fake sysfs: both functions of 04:00
    # get driver_override and are unbound; 00:1b.0 is left alone.
    fake=$T/fakesys
    for spec in 0000:04:00.0:0x1234:0x1111:bochs-drm 0000:04:00.1:0x8086:0x293e:snd_hda_intel 0000:00:1b.0:0x8086:0x293e:snd_hda_intel; do
        IFS=: read -r dom bus devfn ven dev drv <<<"$spec"
        bdf=$dom:$bus:$devfn
        d=$fake/sys/bus/pci/devices/$bdf
        mkdir -p "$d" "$fake/sys/bus/pci/drivers/$drv"
        echo "$ven" >"$d/vendor"
        echo "$dev" >"$d/device"
        echo "(null)" >"$d/driver_override"
        ln -sfn "../../drivers/$drv" "$d/driver"
    done
    mkdir -p "$fake/sbin"
    printf '#!/bin/sh\necho "modprobe $*" >>%s/log\n' "$fake" >"$fake/sbin/modprobe"
    chmod +x "$fake/sbin/modprobe"
    cmd=$(sed -n 's/^install vfio_pci //p' "$SHOW")
    cmd=${cmd//\/sys\//$fake\/sys\/}
    cmd=${cmd//\/sbin\/modprobe/$fake\/sbin\/modprobe}
    cmd=${cmd//\$CMDLINE_OPTS/}
    sh -c "$cmd" || fail "qemu: the install command failed"
    [ "$(cat "$fake/sys/bus/pci/devices/0000:04:00.0/driver_override")" = vfio-pci ] || fail "qemu: 04:00.0 has no driver_override"
    [ "$(cat "$fake/sys/bus/pci/devices/0000:04:00.1/driver_override")" = vfio-pci ] || fail "qemu: 04:00.1 has no driver_override"
    [ "$(cat "$fake/sys/bus/pci/devices/0000:00:1b.0/driver_override")" = "(null)" ] || fail "qemu: 00:1b.0 was touched"
    grep -qx 0000:04:00.1 "$fake/sys/bus/pci/drivers/snd_hda_intel/unbind" || fail "qemu: 04:00.1 not unbound from snd_hda_intel"
    if grep -q 0000:00:1b.0 "$fake/sys/bus/pci/drivers/snd_hda_intel/unbind"; then fail "qemu: 00:1b.0 was unbound"; fi
    grep -qx 'modprobe --ignore-install vfio-pci' "$fake/log" || fail "qemu: vfio-pci not loaded with --ignore-install"
    # A plain file keeps only the last write ("> drivers_probe" per function).
    [ "$(cat "$fake/sys/bus/pci/drivers_probe")" = "0000:04:00.1" ] || fail "qemu: drivers_probe"
    check_idempotent "$applied" --vm 101 --gpus 0000:04:00
    ok "qemu-intel (install hook against a fake sysfs)"
fi

# PVE 9: nova_core (the Rust NVIDIA driver) is kept off the passed cards exactly as nouveau
# where the target kernel's module tree has it (the 9.2 host's 7.0.2-2), and left out where
# it does not (the 9.1 host's 6.17.2-1). Checked with the real kmod on the fixture's own
# module tree: before the plan the GPU's modalias resolves to nova_core and nouveau; after
# it, the alias is blacklisted and loading nova_core by name loads vfio-pci (with the ids) first.
if [ -d "$FIXTURES/pve92-epyc-4x2080ti" ]; then
    root=$(fresh pve92-epyc-4x2080ti)
    kver=7.0.2-2-pve
    alias=$(cat "$root/sys/bus/pci/devices/0000:01:00.0/modalias")
    mkdir -p "$T/noconf"
    modprobe -d "$root/usr" -S $kver -C "$T/noconf" --show-depends "$alias" >"$T/alias.before" 2>&1 || true
    grep -q 'nova-core/nova_core.ko' "$T/alias.before" || fail "pve92: the fixture's module tree does not resolve $alias to nova_core: $(cat "$T/alias.before")"
    plan "$root" --vm 101 --gpus all
    if expect_plan_rc 0 pve92; then
        cp "$OUT" "$T/pve92.json"
        applied=$(apply_copy "$root" "$T/pve92.json")
        common_checks pve92-epyc-4x2080ti "$root" "$applied"
        has_line "$SHOW" "softdep nova_core pre: vfio-pci" pve92
        has_line "$SHOW" "blacklist nova_core" pve92
        has_line "$SHOW" "softdep nouveau pre: vfio-pci" pve92
        jq -e '[.files[] | select(.path == "/etc/modprobe.d/passthru-vfio.conf") | .reasons[]] | any(test("includes nova_core: the module tree of kernel 7.0.2-2-pve has it"))' "$T/pve92.json" >/dev/null ||
            fail "pve92: the plan does not say why nova_core is included"
        conf=$T/conf92
        mkdir -p "$conf"
        cp "$applied"/etc/modprobe.d/*.conf "$applied"/usr/lib/modprobe.d/*.conf "$conf"/
        modprobe -d "$applied/usr" -S $kver -C "$conf" --show-depends nova_core >"$T/nova.dep" 2>&1 || fail "pve92: modprobe --show-depends nova_core failed: $(cat "$T/nova.dep")"
        [ "$(head -1 "$T/nova.dep")" = "insmod $applied/usr/lib/modules/$kver/kernel/drivers/vfio/pci/vfio-pci.ko ids=10de:10f7,10de:1ad6,10de:1ad7,10de:1e07 " ] ||
            fail "pve92: vfio-pci does not load before nova_core: $(cat "$T/nova.dep")"
        modprobe -d "$applied/usr" -S $kver -C "$conf" --show-depends "$alias" >"$T/alias.after" 2>&1 || true
        if grep -q 'nova_core\|nouveau' "$T/alias.after"; then fail "pve92: the GPU's alias still loads a host driver: $(cat "$T/alias.after")"; fi
        check_idempotent "$applied" --vm 101 --gpus all
        ok "pve92-epyc-4x2080ti (nova_core in the module tree: softdep and blacklist, checked by kmod on that tree)"
    fi
fi
if [ -d "$FIXTURES/pve91-epyc-4x2080ti-zfs" ]; then
    root=$(fresh pve91-epyc-4x2080ti-zfs)
    plan "$root" --vm 101 --gpus all
    if expect_plan_rc 0 pve91; then
        cp "$OUT" "$T/pve91.json"
        applied=$(apply_copy "$root" "$T/pve91.json")
        common_checks pve91-epyc-4x2080ti-zfs "$root" "$applied"
        no_match "$SHOW" 'nova_core' pve91
        has_line "$SHOW" "softdep nouveau pre: vfio-pci" pve91
        jq -e '[.files[] | select(.path == "/etc/modprobe.d/passthru-vfio.conf") | .reasons[]] | any(test("leaves out nova_core: the module tree of kernel 6.17.2-1-pve does not have it"))' "$T/pve91.json" >/dev/null ||
            fail "pve91: the plan does not say why nova_core is left out"
        ok "pve91-epyc-4x2080ti-zfs (no nova_core in the module tree: none in the plan)"
    fi
fi

if [ -d "$FIXTURES/pve90-t180-4xv100" ]; then
    # The Intel host on PVE 9.0: kernel 6.14 turns VT-d on by itself, and the plan
    # says so with the kernel it decided from instead of adding intel_iommu=on.
    root=$(fresh pve90-t180-4xv100)
    plan "$root" --vm 101 --gpus all
    if expect_plan_rc 0 pve90; then
        jq -e '.notes | any(test("^no intel_iommu=on: kernel 6\\.14\\.8-2-pve is 6\\.8 or newer"))' "$OUT" >/dev/null ||
            fail "pve90: no note naming the kernel that makes intel_iommu=on unneeded: $(jq -c .notes "$OUT")"
        if jq -r '.files[].content // empty' "$OUT" | grep -q 'intel_iommu=on'; then fail "pve90: intel_iommu=on planned on kernel 6.14"; fi
        "$PASSTHRU" --root "$root" scan >"$T/pve90.scan" 2>&1 || fail "pve90: scan failed"
        grep -q '^  Proxmox VE *9\.0\.[0-9]* (qemu-server 9\.0\.16)$' "$T/pve90.scan" || fail "pve90: scan does not name the release and qemu-server: $(grep -i proxmox "$T/pve90.scan")"
        grep -q '^  Kernel *6\.14\.8-2-pve$' "$T/pve90.scan" || fail "pve90: scan does not name the running kernel"
        ok "pve90-t180-4xv100 (release, qemu-server and kernel in scan; intel_iommu=on left out, naming kernel 6.14)"
    fi
fi

finish "all plan checks passed"
