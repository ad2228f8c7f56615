#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# passthru kernel check on a host with three installed kernels, after passthru applied its
# configuration: the running one whose initramfs holds passthru's files (ok), one whose
# initramfs was built before them (flagged), one in the known regressions (flagged); exit 11
# while one would break, 0 for the good one alone. Then each other verdict on the good
# kernel: a new host driver the modprobe.d file does not cover, a DKMS module built for the
# running kernel only, a damaged image. The initramfs images are written here from the
# fixture's files (early microcode cpio + a zstd, gzip or xz cpio), as initramfs-tools lays
# them out.
source "$(dirname "$0")/lib.inc"
need_binary
MK="python3 $SRC/tests/support/mkinitramfs.py"

R=$T/host
copy_host pve92-epyc-4x2080ti "$R"
"$P" --root "$R" apply --vm 101 --gpus all --yes > "$T/apply.out" 2>&1 || { cat "$T/apply.out"; fail "apply failed"; }
CONF=$R/etc/modprobe.d/passthru-vfio.conf
[[ -f $CONF ]] || fail "apply wrote no $CONF"

GOOD=7.0.2-2-pve OLD=6.17.2-1-pve BAD=6.8.12-12-pve NOBOOT=6.14.11-4-pve
M=$R/usr/lib/modules
for k in $OLD $BAD $NOBOOT; do cp -a "$M/$GOOD" "$M/$k"; done
mkdir -p "$R/boot"
for k in $GOOD $OLD $BAD; do : > "$R/boot/vmlinuz-$k"; done

# initramfs KVER COMPRESSION [with-conf]: the vfio modules of KVER's tree, passthru's
# modprobe.d file when asked for, and an early microcode archive in front.
initramfs() {
    local k=$1 comp=$2 members=() f
    for f in vfio.ko vfio_iommu_type1.ko pci/vfio-pci.ko pci/vfio-pci-core.ko; do
        members+=("usr/lib/modules/$k/kernel/drivers/vfio/$f=$M/$k/kernel/drivers/vfio/$f")
    done
    [[ ${3:-} == with-conf ]] && members+=("etc/modprobe.d/passthru-vfio.conf=$CONF")
    $MK "$R/boot/initrd.img-$k" --compress "$comp" --early kernel/x86/microcode/AuthenticAMD.bin=- \
        "usr/lib/modprobe.d/aliases.conf=-" "${members[@]}"
}
initramfs $GOOD zstd with-conf
initramfs $OLD gzip
initramfs $BAD xz with-conf

expect_rc 11 "$P" --root "$R" kernel check > "$T/check.out" 2> "$T/check.err"
cat "$T/check.out"
grep -qx "$GOOD (running): ok" "$T/check.out" || fail "the good kernel is not ok"
grep -qx "$OLD: breaks passthrough" "$T/check.out" || fail "the kernel without passthru's files is not flagged"
grep -A1 -- "- its initramfs lacks /etc/modprobe.d/passthru-vfio.conf" "$T/check.out" | grep -q "fix: run 'update-initramfs -u -k $OLD'" \
    || fail "no initramfs fix for $OLD"
grep -qx "$BAD: breaks passthrough" "$T/check.out" || fail "the kernel of the regressions data is not flagged"
grep -q "known regression (6.8.12-12 up to before 6.8.12-13): a VM start fails with 'error getting device from group N: Permission denied'" \
    "$T/check.out" || fail "the regression is not named"
grep -q "$NOBOOT" "$T/check.out" && fail "a kernel without /boot/vmlinuz was checked"
grep -q '2 of 3 kernel(s) would break passthrough' "$T/check.err" || fail "no summary on stderr"
[[ $(grep -c 'breaks passthrough$' "$T/check.out") == 2 ]] || fail "more than the two kernels flagged"
# newest first
[[ $(grep -v '^ ' "$T/check.out" | cut -d: -f1 | tr '\n' ' ') == "$GOOD (running) $OLD $BAD " ]] || fail "not newest first"
ok "three kernels: ok, initramfs without passthru's files, known regression; exit 11"

expect_rc 0 "$P" --root "$R" kernel check $GOOD > "$T/good.out"
[[ $(cat "$T/good.out") == "$GOOD (running): ok" ]] || fail "kernel check $GOOD: $(cat "$T/good.out")"
expect_rc 11 "$P" --root "$R" kernel check $GOOD $OLD --json > "$T/check.json"
python3 - "$T/check.json" <<'PY' || fail "--json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "passthru.kernel-check/1" and d["ok"] is False
k = {x["release"]: x for x in d["kernels"]}
assert list(k) == ["7.0.2-2-pve", "6.17.2-1-pve"], list(k)
assert k["7.0.2-2-pve"]["ok"] and k["7.0.2-2-pve"]["running"] and not k["7.0.2-2-pve"]["problems"]
p = k["6.17.2-1-pve"]["problems"]
assert [x["check"] for x in p] == ["initramfs"], p
PY
ok "KVER operands and --json"

# The image is read, not its name: a good kernel's image without the vfio modules is flagged.
$MK "$R/boot/initrd.img-$GOOD" --compress gzip "etc/modprobe.d/passthru-vfio.conf=$CONF"
expect_rc 11 "$P" --root "$R" kernel check $GOOD > "$T/novfio.out"
grep -q "its initramfs lacks vfio_pci (kernel/drivers/vfio/pci/vfio-pci.ko), which /etc/initramfs-tools/modules lists" "$T/novfio.out" \
    || fail "missing vfio module in the initramfs not flagged: $(cat "$T/novfio.out")"
head -c 300 "$R/boot/initrd.img-$OLD" > "$R/boot/initrd.img-$GOOD"
expect_rc 11 "$P" --root "$R" kernel check $GOOD > "$T/cut.out"
grep -q "/boot/initrd.img-$GOOD: " "$T/cut.out" || fail "a damaged image is not named: $(cat "$T/cut.out")"
initramfs $GOOD zstd with-conf
ok "an image without the vfio modules, and a damaged one"

# An older passthru-vfio.conf in the image than on the host.
own_copy "$CONF"
echo '# changed' >> "$CONF"
expect_rc 11 "$P" --root "$R" kernel check $GOOD > "$T/stale.out"
grep -q "its initramfs holds an older /etc/modprobe.d/passthru-vfio.conf than the host's" "$T/stale.out" || fail "stale conf not flagged"
ok "an image with an older passthru-vfio.conf than the host's"

# A driver of drivers.json that this kernel has and the modprobe.d file does not cover.
sed -i '/nova_core/d' "$CONF"
initramfs $GOOD zstd with-conf
expect_rc 11 "$P" --root "$R" kernel check $GOOD > "$T/nova.out"
grep -q "nova_core in this kernel would claim 0000:.* before vfio-pci: passthru's modprobe.d neither softdeps nor blacklists it" "$T/nova.out" \
    || fail "nova_core not flagged: $(cat "$T/nova.out")"
ok "a host driver of the data the modprobe.d file does not cover (nova_core)"

# DKMS: a module built (dkms build) and installed (dkms install: updates/dkms) for the
# running kernel only is missing for the others; built but not installed is flagged too.
D=$R/var/lib/dkms/vendor-reset/0.1.1
mkdir -p "$D/source" "$D/$GOOD/x86_64/module" "$M/$GOOD/updates/dkms"
: > "$D/$GOOD/x86_64/module/vendor-reset.ko"
: > "$M/$GOOD/updates/dkms/vendor-reset.ko"
ln -s "0.1.1/$GOOD/x86_64" "$R/var/lib/dkms/vendor-reset/kernel-$GOOD-x86_64"
expect_rc 11 "$P" --root "$R" kernel check $GOOD $OLD > "$T/dkms.out"
grep -q "the DKMS module vendor-reset 0.1.1 is not built for it (/var/lib/dkms/vendor-reset/0.1.1 has no $OLD)" "$T/dkms.out" \
    || fail "missing DKMS build not flagged: $(cat "$T/dkms.out")"
grep -q "fix: install its headers and run 'dkms autoinstall -k $OLD'" "$T/dkms.out" || fail "no DKMS fix"
[[ $(grep -c 'DKMS' "$T/dkms.out") == 1 ]] || fail "the DKMS module is flagged for the kernel it is built for"
mkdir -p "$D/$OLD/x86_64/module" && : > "$D/$OLD/x86_64/module/vendor-reset.ko"
expect_rc 11 "$P" --root "$R" kernel check $OLD > "$T/dkms2.out"
grep -q "the DKMS module vendor-reset 0.1.1 is built for it, but not installed" "$T/dkms2.out" || fail "built-not-installed not flagged"
ok "a DKMS module built for the running kernel only is reported missing for another"

# Bad words: exit 2, a kernel that is not installed: exit 1; nothing written.
S0=$(tree_sum "$R")
expect_rc 2 "$P" --root "$R" kernel check ../../etc > /dev/null 2> "$T/bad.err"
grep -q "'../../etc' is not a kernel release" "$T/bad.err" || fail "bad word message: $(cat "$T/bad.err")"
expect_rc 1 "$P" --root "$R" kernel check 9.9.9-1-pve > /dev/null 2> "$T/missing.err"
grep -q "kernel 9.9.9-1-pve is not installed" "$T/missing.err" || fail "not installed message"
expect_rc 2 "$P" --root "$R" kernel > /dev/null 2>&1
expect_rc 2 "$P" --root "$R" kernel frobnicate > /dev/null 2>&1
[[ $(tree_sum "$R") == "$S0" ]] || fail "kernel check wrote into the root"
ok "bad words exit 2, a kernel not installed exit 1, nothing written"

# The kernel hook prints the verdict and exits 0 whatever it is, also when passthru is
# missing or fails; it runs the passthru on PATH (here one that adds --root).
mkdir -p "$T/bin"
printf '#!/bin/sh\nexec "%s" --root "%s" "$@"\n' "$P" "$R" > "$T/bin/passthru"
chmod +x "$T/bin/passthru"
HOOK=$SRC/helpers/kernel-postinst
PATH=$T/bin:$PATH expect_rc 0 sh "$HOOK" $BAD "/boot/vmlinuz-$BAD" > "$T/hook.out"
grep -qx "passthru: checking kernel $BAD for VFIO passthrough" "$T/hook.out" || fail "hook: no header"
grep -qx "$BAD: breaks passthrough" "$T/hook.out" || fail "hook: no verdict: $(cat "$T/hook.out")"
grep -q "would break passthrough; fix the above before booting it" "$T/hook.out" || fail "hook: no advice"
PATH=$T/bin:$PATH expect_rc 0 sh "$HOOK" 9.9.9-1-pve > "$T/hook2.out"
grep -q "did not finish (exit status 1); the installation goes on" "$T/hook2.out" || fail "hook: a failed check is not said"
PATH=/nonexistent expect_rc 0 /bin/sh "$HOOK" $BAD > /dev/null
expect_rc 0 sh "$HOOK" > /dev/null
ok "the kernel hook prints the verdict and never fails"
