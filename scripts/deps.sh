#!/usr/bin/env bash
# Installs everything passthru needs to build and test, from Debian 12's
# packages. Non-interactive and idempotent: packages already present are kept.
set -euo pipefail

packages=(
  # build
  cmake g++ make pkg-config
  libpci-dev pci.ids libboost-program-options-dev doctest-dev nlohmann-json3-dev
  libexpected-dev libkmod-dev libkainjow-mustache-dev libvirt-dev libxml2-dev libdtl-dev libssl-dev
  # tests: the real parsers and tools the generated files must satisfy
  python3 pciutils kmod patch time libxml2-utils libvirt-clients strace
  # real-kernel test (the kernel itself is downloaded, never installed)
  qemu-system-x86 cpio
  # packaging
  dpkg-dev fakeroot lintian man-db bash-completion zsh
  # Debian roots for the Debian 13 half and the package tests (scripts/debian-root.sh)
  mmdebstrap
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
