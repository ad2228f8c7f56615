#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The live path, without touching this machine: passthru runs as the host
# itself (root /, commands really run) inside a private mount namespace and a
# chroot of a fixture copy. This machine's /usr is bound read-only for the
# binary's libraries and the shell tools; qm, pvesm, update-initramfs and
# proxmox-boot-tool are the behaving fakes of live_fakes/ (laid over /usr/sbin,
# where passthru takes them from whatever PATH says), update-grub is Debian's
# own with only its device probes faked.
#
# On the GRUB sample host and the systemd-boot (ZFS) variant, with VM 101
# lacking efidisk0: plan, apply --dry-run (same diffs), apply --yes (qm
# allocates the EFI vars volume; the generation records the VM config as qm
# left it), re-apply (no-op, no generation), verify, rollback (no false drift;
# the volume is named with the command that deletes it), rollback
# --remove-volumes after a second apply: the tree byte-identical to the start.
# Checksums of this machine's own files prove nothing escaped.
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary
need unshare chroot grub-mkconfig grub-editenv grub-script-check sha256sum
[[ $(id -u) -eq 0 ]] || skip "needs root for the mount namespace and chroot"
unshare --mount true 2> /dev/null || skip "cannot make a mount namespace here"
FAKES=$SRC/tests/integration/live_fakes

# What passthru would change on this machine if anything escaped.
host_sum() {
    local p
    for p in /etc/default /etc/modprobe.d /etc/modules /etc/kernel /etc/initramfs-tools /etc/pve /boot /var/lib/passthru \
        /var/lib/vz /var/tmp/espmounts /var/lib/initramfs-tools; do
        printf '%s %s\n' "$p" "$(stat -c '%F %a' "$p" 2> /dev/null || echo absent)"
        if [[ -d $p ]]; then
            find "$p" -xdev -type f -print0 2> /dev/null | LC_ALL=C sort -z | xargs -0 -r sha256sum
        fi
    done | sha256sum | cut -d' ' -f1
}
HOST_BEFORE=$(host_sum)
at_exit '[[ $(host_sum) == "$HOST_BEFORE" ]] || echo "FAIL: this machine'"'"'s files changed" >&3'

# make_live HOST R: the fixture copy made into a root a chroot can run: VM 101
# without efidisk0 on a dir storage, a kernel with its initramfs state, the
# GRUB scripts or the ESP, and the boot files made once as on a real host.
make_live() {
    local host=$1 R=$2 v
    copy_host "$host" "$R"
    own_copy "$R/etc/pve/qemu-server/101.conf"
    sed -i -e '/^efidisk0:/d' -e 's|^scsi0: .*|scsi0: local:101/vm-101-disk-0.raw,iothread=1,size=32G|' "$R/etc/pve/qemu-server/101.conf"
    printf 'dir: local\n\tpath /var/lib/vz\n\tcontent iso,vztmpl,backup,images\n' > "$R/etc/pve/storage.cfg"
    mkdir -p "$R/var/lib/vz/images/101" "$R/var/lib/initramfs-tools" "$R/boot/grub" "$R/tmp" "$R/root" "$R/dev" \
        "$R/usr" "$R/opt/local/sbin" "$R/opt/passthru/src"
    head -c 4096 /dev/zero > "$R/var/lib/vz/images/101/vm-101-disk-0.raw"
    v=$(cat "$R/proc/sys/kernel/osrelease")
    echo "kernel image $v" > "$R/boot/vmlinuz-$v"
    : > "$R/var/lib/initramfs-tools/$v"
    for l in bin sbin lib lib64; do
        [[ -e $R/$l ]] || ln -s "usr/$l" "$R/$l"
    done
    : > "$R/dev/null"
    : > "$R/opt/passthru/passthru"
    cp -a /etc/grub.d "$R/etc/grub.d"
    cp "$FAKES"/{qm,pvesm,update-initramfs,proxmox-boot-tool} "$R/opt/local/sbin/"
    if [[ -f $R/etc/kernel/proxmox-boot-uuids ]]; then
        while read -r uuid; do
            mkdir -p "$R/var/tmp/espmounts/$uuid/loader/entries" "$R/var/tmp/espmounts/$uuid/EFI/proxmox"
            printf 'timeout 3\ndefault proxmox-*\n' > "$R/var/tmp/espmounts/$uuid/loader/loader.conf"
        done < "$R/etc/kernel/proxmox-boot-uuids"
    fi
    in_live "$R" update-initramfs -u -k all > /dev/null
    if [[ -f $R/etc/kernel/proxmox-boot-uuids ]]; then
        in_live "$R" proxmox-boot-tool refresh > /dev/null
    else
        in_live "$R" update-grub > /dev/null 2>&1
    fi
}

# in_live R CMD...: CMD as root of R in a private mount namespace; nothing of
# this machine is writable there (its /usr is bound read-only, /dev/null is
# the one device).
in_live() {
    local R=$1
    shift
    unshare --mount --propagation private /bin/bash -euc '
        R=$1 FAKES=$2 BIN=$3 SRC=$4
        shift 4
        mount --bind /usr "$R/usr" && mount -o remount,bind,ro "$R/usr"
        mount -t overlay passthru-fakes -o "lowerdir=$R/opt/local/sbin:/usr/sbin" "$R/usr/sbin"
        mount --bind "$FAKES/grub-probe" "$R/usr/sbin/grub-probe"
        mount --bind "$FAKES/grub-mkrelpath" "$R/usr/bin/grub-mkrelpath"
        mount --bind /dev/null "$R/dev/null"
        mount --bind "$BIN" "$R/opt/passthru/passthru" && mount -o remount,bind,ro "$R/opt/passthru/passthru"
        mount --bind "$SRC" "$R/opt/passthru/src" && mount -o remount,bind,ro "$R/opt/passthru/src"
        exec chroot "$R" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin HOME=/root LANG=C.UTF-8 "$@"
    ' in_live "$R" "$FAKES" "$(readlink -f "$P")" "$SRC" "$@"
}
PT=(/opt/passthru/passthru --data-dir /opt/passthru/src)

conf_key() { sed -n "s/^$2: //p" "$1/etc/pve/qemu-server/101.conf"; }

for host in "${VARIANTS[@]}"; do
    R=$T/$host
    make_live "$host" "$R"
    start=$(tree_sum "$R")

    in_live "$R" "${PT[@]}" plan --vm 101 --gpus all > "$T/plan.out" 2> "$T/plan.err" || fail "$host: plan failed: $(cat "$T/plan.err")"
    grep -q "qm set 101 --efidisk0 local:1,efitype=4m" "$T/plan.out" || fail "$host: no efidisk0 step planned"
    expect_rc 0 in_live "$R" "${PT[@]}" apply --dry-run > "$T/dry.out" 2> "$T/dry.err"
    cmp -s "$T/plan.out" "$T/dry.out" || fail "$host: live apply --dry-run differs from plan"
    [[ $(tree_sum "$R") == "$start" ]] || fail "$host: plan or the dry run changed the tree"
    ok "$host: live plan, then apply --dry-run prints the same diffs and writes nothing"

    expect_rc 0 in_live "$R" "${PT[@]}" apply --yes > "$T/apply.out" 2> "$T/apply.err"
    grep -q 'Applied as generation 1: .* after-step(s) run' "$T/apply.out" || fail "$host: apply did not run: $(cat "$T/apply.out" "$T/apply.err")"
    efi=$(conf_key "$R" efidisk0)
    [[ $efi == local:101/vm-101-disk-1.raw,efitype=4m,pre-enrolled-keys=?,size=528K ]] || fail "$host: efidisk0 is '$efi'"
    [[ $(stat -c %s "$R/var/lib/vz/images/101/vm-101-disk-1.raw") == 540672 ]] || fail "$host: no EFI vars volume"
    m=$R/var/lib/passthru/generations/1/manifest.json
    jq -e '.commands[] | select(.argv[0] == "qm") | .status == "ran" and .created[0].id == "local:101/vm-101-disk-1.raw" and .undo == "files"' "$m" > /dev/null ||
        fail "$host: the manifest does not record the volume qm allocated"
    jq -e --arg sha "$(sha256sum < "$R/etc/pve/qemu-server/101.conf" | cut -d' ' -f1)" \
        '.files[] | select(.path == "/etc/pve/qemu-server/101.conf") | .after_sha256 == $sha' "$m" > /dev/null ||
        fail "$host: the generation does not record the VM config as qm left it"
    if [[ $host == *zfs ]]; then
        grep -q '^options .*amd_iommu=on\|^options .*iommu=pt' "$R"/var/tmp/espmounts/*/loader/entries/proxmox-*.conf ||
            fail "$host: proxmox-boot-tool refresh did not carry the new command line to the ESP"
    else
        grep -q 'linux.*/boot/vmlinuz-.* iommu=pt' "$R/boot/grub/grub.cfg" || fail "$host: grub-mkconfig did not put iommu=pt on the linux line"
    fi
    grep -q 'vfio' "$R"/boot/initrd.img-* || fail "$host: the initramfs does not carry the vfio configuration"
    ok "$host: apply --yes ran the after-steps for real; efidisk0 volume allocated and journaled"

    applied=$(tree_sum "$R")
    expect_rc 0 in_live "$R" "${PT[@]}" apply --vm 101 --gpus all --yes > "$T/again.out" 2>&1
    grep -q '^Nothing to do' "$T/again.out" || fail "$host: re-apply is not a no-op: $(cat "$T/again.out")"
    [[ $(generations "$R") == 1 && $(tree_sum "$R") == "$applied" ]] || fail "$host: re-apply changed something"
    # Before the reboot the cards are still on their host drivers: verify,
    # run as the live host, says so (exit 1) and changes nothing.
    # (The EPYC hosts' first card is on nouveau; the T180's V100s have no driver yet.)
    case $host in
    *t180*) before='FAIL 0000:04:00.0 has no driver: vfio-pci did not claim it' ;;
    *) before='FAIL 0000:01:00.0 is bound to the host driver nouveau' ;;
    esac
    expect_rc 1 in_live "$R" "${PT[@]}" verify --vm 101 --gpus all > "$T/verify.out" 2>&1
    grep -q 'ok   the IOMMU is on' "$T/verify.out" && grep -q -F "$before" "$T/verify.out" ||
        fail "$host: verify before the reboot: $(head -5 "$T/verify.out")"
    [[ $(tree_sum "$R") == "$applied" ]] || fail "$host: verify changed the tree"
    ok "$host: re-apply is a no-op (no new generation); verify reports the state before the reboot"

    expect_rc 0 in_live "$R" "${PT[@]}" rollback --yes > "$T/rb.out" 2> "$T/rb.err"
    grep -q 'changed since' "$T/rb.err" && fail "$host: rollback saw drift that passthru caused: $(cat "$T/rb.err")"
    grep -q '^kept: volume local:101/vm-101-disk-1.raw .* delete it with: pvesm free local:101/vm-101-disk-1.raw' "$T/rb.out" ||
        fail "$host: the kept volume is not reported: $(cat "$T/rb.out" "$T/rb.err")"
    [[ -f $R/var/lib/vz/images/101/vm-101-disk-1.raw ]] || fail "$host: rollback deleted the volume without --remove-volumes"
    rm "$R/var/lib/vz/images/101/vm-101-disk-1.raw"
    [[ $(tree_sum "$R") == "$start" ]] || fail "$host: after rollback the tree differs beyond the reported volume"
    ok "$host: rollback restores every file and the boot files, and names the kept volume with its delete command"

    # Again, and this time the volume goes too: byte-identical, nothing left.
    make_live "$host" "$R"
    expect_rc 0 in_live "$R" "${PT[@]}" apply --vm 101 --gpus all --yes > /dev/null 2>&1
    [[ -f $R/var/lib/vz/images/101/vm-101-disk-1.raw ]] || fail "$host: second apply allocated no volume"
    expect_rc 0 in_live "$R" "${PT[@]}" rollback --yes --remove-volumes > "$T/rb2.out" 2> "$T/rb2.err"
    [[ ! -e $R/var/lib/vz/images/101/vm-101-disk-1.raw ]] || fail "$host: --remove-volumes left the volume"
    grep -q 'pvesm free local:101/vm-101-disk-1.raw' "$T/rb2.err" || fail "$host: the volume deletion was not shown"
    [[ $(tree_sum "$R") == "$start" ]] || fail "$host: after rollback --remove-volumes the tree is not byte-identical"
    ok "$host: rollback --remove-volumes: tree byte-identical, volume deleted"

    # A failing after-step: qm cannot allocate on a storage it has no path
    # for. The files are restored, the boot files regenerated, and the error
    # names the step and its output.
    make_live "$host" "$R"
    printf 'lvmthin: local\n\tthinpool data\n\tvgname pve\n\tcontent images\n' > "$R/etc/pve/storage.cfg"
    start=$(tree_sum "$R")
    expect_rc 1 in_live "$R" "${PT[@]}" apply --vm 101 --gpus all --yes > /dev/null 2> "$T/fail.err"
    grep -q "^passthru: error: after-step 3/3 qm set 101 --efidisk0 local:1,.* failed with exit code 255" "$T/fail.err" &&
        grep -q "^hint: output: storage 'local' is not a dir storage" "$T/fail.err" || fail "$host: failed step not reported: $(cat "$T/fail.err")"
    [[ $(tree_sum "$R") == "$start" ]] || fail "$host: a failed after-step left the tree changed"
    ok "$host: a failed after-step is named with its output, and every file and boot file is as before"
done

# The trial (apply --trial) on the GRUB host, through Debian's own
# grub-mkconfig (which runs the trial entry's script) and grub-reboot, with
# the environment block grub-install leaves: the default entry's kernel line
# stays as it was, the trial entry is a top-level entry with its id, GRUB's
# own parser accepts grub.cfg, next_entry selects the trial once; rollback
# (--remove-volumes, for the efidisk0 volume) is byte-identical.
host=${VARIANTS[0]}
R=$T/trial
make_live "$host" "$R"
grub-editenv "$R/boot/grub/grubenv" create
start=$(tree_sum "$R")
default_linux() { grep -m1 -P '^\tlinux\t' "$1"; }
before=$(default_linux "$R/boot/grub/grub.cfg")
expect_rc 0 in_live "$R" "${PT[@]}" apply --trial --vm 101 --gpus all --yes > "$T/trial.out" 2> "$T/trial.err"
cfg=$R/boot/grub/grub.cfg
[[ $(default_linux "$cfg") == "$before" ]] || fail "trial: the default entry's kernel line changed: $(default_linux "$cfg")"
grep -q "^menuentry 'passthru trial: Linux .*\$menuentry_id_option 'passthru-trial' {" "$cfg" ||
    fail "trial: grub-mkconfig made no top-level trial entry: $(grep -n passthru "$cfg" | head -3; cat "$T/trial.err" | tail -3)"
trial_linux=$(sed -n "/^menuentry 'passthru trial/,/^}/p" "$cfg" | grep -P '^\tlinux\t')
for a in root= iommu=pt vfio_pci.ids= modprobe.blacklist=nouveau,nvidia passthru.trial systemd.wants=passthru-trial.timer; do
    [[ $trial_linux == *" $a"* ]] || fail "trial: the trial entry's kernel line lacks $a: $trial_linux"
done
[[ $trial_linux == *amd_iommu=on* ]] && fail "trial: the trial entry keeps amd_iommu=on"
grub-script-check "$cfg" || fail "trial: GRUB's parser rejects grub.cfg"
[[ $(grub-editenv "$R/boot/grub/grubenv" list) == "next_entry=passthru-trial" ]] ||
    fail "trial: grub-reboot did not select the trial entry: $(grub-editenv "$R/boot/grub/grubenv" list)"
ok "trial: grub-mkconfig adds the trial entry, the default entry unchanged; grub-reboot selects it once"
expect_rc 0 in_live "$R" "${PT[@]}" rollback --yes --remove-volumes > "$T/trb.out" 2>&1
[[ $(tree_sum "$R") == "$start" ]] || fail "trial: rollback is not byte-identical (grubenv: $(grub-editenv "$R/boot/grub/grubenv" list))"
ok "trial: rollback removes the entry and the one-time selection, byte-identical"

# The caller's PATH and environment do not choose what runs: a fake
# update-grub first in PATH; grub-mkconfig's pkgdatadir pointing at a fake
# grub-mkconfig_lib (with LD_PRELOAD). passthru runs /usr/sbin/update-grub
# with its own environment, so no fake runs and grub.cfg is regenerated.
host=${VARIANTS[0]}
R=$T/hostile-env
for hostile in "PATH=/tmp/evil:/usr/sbin:/usr/bin" "pkgdatadir=/tmp/evil LD_PRELOAD=/tmp/evil/none.so"; do
    make_live "$host" "$R"
    mkdir -p "$R/tmp/evil"
    printf '#!/bin/sh\ntouch /tmp/PWNED-path\n' > "$R/tmp/evil/update-grub"
    printf 'touch /tmp/PWNED-lib\n' > "$R/tmp/evil/grub-mkconfig_lib"
    chmod 0755 "$R/tmp/evil/update-grub"
    cfg_before=$(sha256sum < "$R/boot/grub/grub.cfg")
    # shellcheck disable=SC2086
    expect_rc 0 in_live "$R" /usr/bin/env $hostile "${PT[@]}" apply --vm 101 --gpus all --yes > "$T/env.out" 2> "$T/env.err"
    [[ ! -e $R/tmp/PWNED-path && ! -e $R/tmp/PWNED-lib ]] ||
        fail "$hostile: a command came from the caller's PATH or environment: $(ls "$R"/tmp/PWNED-* 2> /dev/null)"
    [[ $(sha256sum < "$R/boot/grub/grub.cfg") != "$cfg_before" ]] || fail "$hostile: the real update-grub did not regenerate grub.cfg"
done
ok "a fake update-grub first in PATH, pkgdatadir and LD_PRELOAD are ignored: /usr/sbin/update-grub runs with passthru's environment"

[[ $(host_sum) == "$HOST_BEFORE" ]] || fail "this machine's /etc, /boot or /var/lib files changed"
finish "live_path: the live path on both boot loaders, against behaving fakes, in a private namespace"
