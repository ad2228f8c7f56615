#!/usr/bin/env bash
# End-to-end on a real Linux kernel: boots Debian 12's kernel under QEMU three times (Intel
# VT-d, AMD-Vi, no IOMMU) with emulated PCI devices and runs the real passthru binary inside
# (scan, plan, apply, a simulated boot's module loading, verify). See tests/vm/README.md.
#
# This test never skips: if qemu or the kernel package cannot be had, it fails loudly.
# Env: PASSTHRU (the binary under test), PASSTHRU_SOURCE_DIR (the repository).
: "${PASSTHRU_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
source "$(dirname "$0")/lib.inc"
need_binary
start=$(date +%s)
if ! "$SRC/tests/vm/run.sh" --variant intel --variant amd --variant none; then
    fatal "the real-kernel test did not pass (see the checks above;" \
        "rerun with: PASSTHRU=$PASSTHRU $SRC/tests/vm/run.sh --keep /tmp/passthru-vm)"
fi
ok "all three boots passed in $(($(date +%s) - start))s"
