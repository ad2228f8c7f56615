#!/usr/bin/env bash
# Installs everything passthru needs to build and test, from Debian's own
# packages (Debian 12 bookworm or Debian 13 trixie: every name below exists in
# both). Non-interactive and idempotent: packages already present are kept.
#
#   scripts/deps.sh                  install what is missing on this machine
#   scripts/deps.sh --list GROUP...  print the packages of the groups, one a line
#                                    (build, test, docs, vm, package, roots, ansible, tools, fuzz, all);
#                                    the Debian roots of the tests are made from these
set -euo pipefail

# build: compiler, CMake and the libraries
build=(
  cmake g++ make pkg-config
  libpci-dev pci.ids libboost-program-options-dev doctest-dev nlohmann-json3-dev
  libexpected-dev libkmod-dev libkainjow-mustache-dev libvirt-dev libxml2-dev libdtl-dev libssl-dev
  libarchive-dev
)
# test: the real parsers and tools the generated files must satisfy
test=(python3 pciutils kmod patch time libxml2-utils libvirt-clients strace jq
  grub2-common shellcheck) # grub2-common: Debian's update-grub inside the live-path test's chroot
# docs: the man page and the shell completions are checked with these
docs=(man-db bash-completion zsh)
# vm: the real-kernel test (the kernel itself is downloaded, never installed) and the reboot
# test, whose disk image is made and read without mounting (mke2fs -d, debugfs); its
# systemd-boot host boots through UEFI firmware (ovmf) from an ESP image partitioned with
# sfdisk (fdisk) and made and read with mtools
vm=(qemu-system-x86 cpio e2fsprogs ovmf fdisk mtools)
# package: building and checking the .deb
package=(dpkg-dev fakeroot lintian)
# roots: the Debian roots of the Debian 13 half and the package tests (scripts/debian-root.sh)
roots=(mmdebstrap)
# ansible: the Ansible collection's playbook test (Debian's ansible-core) and its sanity checks
# (ansible-test's validate-modules needs voluptuous; pep8, pylint and yamllint run Debian's tools)
ansible=(ansible-core python3-voluptuous pycodestyle pylint yamllint)
# tools: static analysis and formatting of the tree (scripts/check-tidy.sh, scripts/check-format.sh);
# clang-tidy-22 and clang-22 are Debian 12's LLVM 22 packages (bookworm-security), used on the
# Debian 12 machine CI runs on, where they check in a fraction of clang-tidy 14's time
tools=(clang-tidy-22 clang-22 clang-format)
# fuzz: the libFuzzer targets of the parsers (scripts/test-fuzz.sh): clang and its fuzzer runtime
fuzz=(clang libclang-rt-dev)

if [[ ${1:-} == --list ]]; then
  shift
  (($#)) || set -- all
  for group in "$@"; do
    case $group in
      build) printf '%s\n' "${build[@]}" ;;
      test) printf '%s\n' "${test[@]}" ;;
      docs) printf '%s\n' "${docs[@]}" ;;
      vm) printf '%s\n' "${vm[@]}" ;;
      package) printf '%s\n' "${package[@]}" ;;
      roots) printf '%s\n' "${roots[@]}" ;;
      ansible) printf '%s\n' "${ansible[@]}" ;;
      tools) printf '%s\n' "${tools[@]}" ;;
      fuzz) printf '%s\n' "${fuzz[@]}" ;;
      all) printf '%s\n' "${build[@]}" "${test[@]}" "${docs[@]}" "${vm[@]}" "${package[@]}" "${roots[@]}" "${ansible[@]}" "${tools[@]}" "${fuzz[@]}" ;;
      *) echo "deps: unknown group '$group' (build, test, docs, vm, package, roots, ansible, tools, fuzz, all)" >&2; exit 2 ;;
    esac
  done
  exit 0
fi

packages=("${build[@]}" "${test[@]}" "${docs[@]}" "${vm[@]}" "${package[@]}" "${roots[@]}" "${ansible[@]}" "${tools[@]}" "${fuzz[@]}")

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
