#!/usr/bin/env bash
# The real reboot test: a Debian 12 root from Debian's packages with the passthru package
# from this tree, a GRUB host booted three times under QEMU with systemd as init: apply on
# the live host, then the reboot into what GRUB boots (card on vfio-pci, verify passes,
# rollback), then the reboot after rollback (card back on its host drivers). See
# tests/reboot/README.md (the systemd-boot host on AMD-Vi: real_kernel_reboot_sdboot.sh).
#
# This test never skips: if a tool or Debian's archive is missing, it fails.
# Env: PASSTHRU_SOURCE_DIR (the repository), PASSTHRU_BUILD_DIR (the build tree: the root
# and package caches live under it).
: "${PASSTHRU_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
source "$(dirname "$0")/lib.inc"
start=$(date +%s)
if ! "$SRC/tests/reboot/run.sh" --loader grub; then
    fatal "the reboot test did not pass (see the checks above;" \
        "rerun with: $SRC/tests/reboot/run.sh --loader grub --keep /tmp/passthru-reboot)"
fi
ok "GRUB host: the three boots passed in $(($(date +%s) - start))s (the GRUB trial's boots: run.sh --loader grub --trial)"
