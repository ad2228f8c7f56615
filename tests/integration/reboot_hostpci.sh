#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/reboot/hostpci.py, which turns VM 101's hostpci lines into the QEMU arguments the
# reboot test starts the VM with, against qemu-server's own expectations (its cfg2cmd
# cases) and the entries it must refuse. A fraction of a second; no QEMU.
set -euo pipefail
python3 "$(dirname "$0")/../reboot/hostpci.py" --self-test
