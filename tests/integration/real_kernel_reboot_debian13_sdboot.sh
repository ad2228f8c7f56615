#!/usr/bin/env bash
# The real reboot test (tests/reboot/README.md), the Debian 13 (PVE 9) systemd-boot host
# (/etc/kernel/cmdline, proxmox-boot-tool refresh, the loader entry) on an Intel VT-d machine,
# with the passthru package built for trixie:
# booted through UEFI firmware (OVMF) and systemd-boot from a vfat ESP;
# apply on the live host, the reboot into what the boot loader boots (card on vfio-pci,
# verify passes, rollback), the reboot after rollback (card back on its host drivers).
# Then apply --trial's four boots: its own loader entry chosen once by systemd-boot
# (LoaderEntryOneShot), the failing trial rebooted by its watchdog into the default entry
# and undone by itself, the good trial confirmed, and the default entry after confirm.
# PASSTHRU_REBOOT_TRIAL=0 leaves the trial's boots out (the three boots only).
#
# This test never skips: if a tool or Debian's archive is missing, it fails.
# Env: PASSTHRU_SOURCE_DIR (the repository), PASSTHRU_BUILD_DIR (the build tree: the root
# and package caches live under it).
: "${PASSTHRU_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
source "$(dirname "$0")/lib.inc"
start=$(date +%s)
trial=()
case ${PASSTHRU_REBOOT_TRIAL:-1} in
0) ;;
1) trial=(--trial) ;;
*) fatal "PASSTHRU_REBOOT_TRIAL is 0 or 1, not '$PASSTHRU_REBOOT_TRIAL'" ;;
esac
if ! "$SRC/tests/reboot/run.sh" --release trixie --loader systemd-boot "${trial[@]}"; then
    fatal "the reboot test did not pass (see the checks above;" \
        "rerun with: $SRC/tests/reboot/run.sh --release trixie --loader systemd-boot ${trial[*]} --keep /tmp/passthru-reboot)"
fi
if [[ ${#trial[@]} == 0 ]]; then
    ok "Debian 13 systemd-boot host (VT-d): three boots passed in $(($(date +%s) - start))s"
else
    ok "Debian 13 systemd-boot host (VT-d): the three boots and the trial's four (failing, fallback, good, confirmed) passed in $(($(date +%s) - start))s"
fi
