#!/usr/bin/env bash
# End-to-end on Debian 13's kernel (6.12, linux-image-amd64 from trixie): boots it under
# QEMU (TCG) with an emulated Intel VT-d IOMMU and the same emulated PCI devices as the
# Debian 12 boots, with Debian 13's kmod (34) and dash in the initramfs, and runs the real
# passthru binary inside (scan, plan, apply, a simulated boot's module loading, verify).
# See tests/vm/README.md.
#
# This test never skips: if qemu or Debian 13's packages cannot be had, it fails loudly.
# Env: PASSTHRU (the binary under test), PASSTHRU_SOURCE_DIR (the repository),
# PASSTHRU_BUILD_DIR (the package cache goes under it: vm-cache/trixie).
: "${PASSTHRU_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
source "$(dirname "$0")/lib.inc"
need_binary
start=$(date +%s)
if ! "$SRC/tests/vm/run.sh" --debian 13 --variant intel; then
    fatal "the Debian 13 real-kernel test did not pass (see the checks above;" \
        "rerun with: PASSTHRU=$PASSTHRU $SRC/tests/vm/run.sh --debian 13 --variant intel --keep /tmp/passthru-vm13)"
fi
ok "the Debian 13 boot passed in $(($(date +%s) - start))s"
