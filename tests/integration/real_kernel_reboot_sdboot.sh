#!/usr/bin/env bash
# The real reboot test (tests/reboot/README.md), the Debian 12 systemd-boot host (/etc/kernel/cmdline,
# proxmox-boot-tool refresh, the loader entry) on an AMD-Vi machine:
# booted through UEFI firmware (OVMF) and systemd-boot from a vfat ESP;
# apply on the live host, the reboot into what the boot loader boots (card on vfio-pci,
# verify passes, rollback), the reboot after rollback (card back on its host drivers).
#
# This test never skips: if a tool or Debian's archive is missing, it fails.
# Env: PASSTHRU_SOURCE_DIR (the repository), PASSTHRU_BUILD_DIR (the build tree: the root
# and package caches live under it).
: "${PASSTHRU_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
source "$(dirname "$0")/lib.inc"
start=$(date +%s)
if ! "$SRC/tests/reboot/run.sh" --loader systemd-boot --iommu amd; then
    fatal "the reboot test did not pass (see the checks above;" \
        "rerun with: $SRC/tests/reboot/run.sh --loader systemd-boot --iommu amd --keep /tmp/passthru-reboot)"
fi
ok "Debian 12 systemd-boot host (AMD-Vi): three boots passed in $(($(date +%s) - start))s"
