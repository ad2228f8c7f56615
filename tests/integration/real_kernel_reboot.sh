#!/usr/bin/env bash
# The real reboot test: a Debian 12 root from Debian's packages with the passthru package
# from this tree, a GRUB host booted under QEMU with systemd as init: apply on the live
# host, then the reboot into what GRUB boots (card on vfio-pci, verify passes), then the
# reboot after rollback (card back on its host drivers). The host also has a second real
# kernel package (tests/reboot/second-kernel.sh, installed by apt): boot 1 pins the root's
# kernel, boot 2 ends with `passthru kernel trial` of the second one, boot 3 is its trial
# boot (verify, confirm, rollback), boot 4 the boot after rollback. See
# tests/reboot/README.md (the systemd-boot host on AMD-Vi: real_kernel_reboot_sdboot.sh).
# PASSTHRU_REBOOT_KERNEL_TRIAL=0 leaves the kernel trial out (three boots, one kernel).
#
# This test never skips: if a tool or Debian's archive is missing, it fails.
# Env: PASSTHRU_SOURCE_DIR (the repository), PASSTHRU_BUILD_DIR (the build tree: the root
# and package caches live under it).
: "${PASSTHRU_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
source "$(dirname "$0")/lib.inc"
start=$(date +%s)
ktrial=()
case ${PASSTHRU_REBOOT_KERNEL_TRIAL:-1} in
0) ;;
1) ktrial=(--kernel-trial) ;;
*) fatal "PASSTHRU_REBOOT_KERNEL_TRIAL is 0 or 1, not '$PASSTHRU_REBOOT_KERNEL_TRIAL'" ;;
esac
if ! "$SRC/tests/reboot/run.sh" --loader grub "${ktrial[@]}"; then
    fatal "the reboot test did not pass (see the checks above;" \
        "rerun with: $SRC/tests/reboot/run.sh --loader grub ${ktrial[*]} --keep /tmp/passthru-reboot)"
fi
if [[ ${#ktrial[@]} == 0 ]]; then
    ok "GRUB host: the three boots passed in $(($(date +%s) - start))s (the GRUB trial's boots: run.sh --loader grub --trial)"
else
    ok "GRUB host: the three boots and the kernel trial (pin, trial boot of the second kernel, confirm) passed in $(($(date +%s) - start))s"
fi
