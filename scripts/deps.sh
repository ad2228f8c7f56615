#!/usr/bin/env bash
# Installs everything passthru needs to build and test, from Debian's own
# packages (Debian 12 bookworm or Debian 13 trixie: every name below exists in
# both). Non-interactive and idempotent: packages already present are kept.
#
#   scripts/deps.sh                  install what is missing on this machine
#   scripts/deps.sh --group GROUP... install what is missing of these groups only
#                                    (scripts/sample.sh: build; test.sh --quick: build test docs)
#   scripts/deps.sh --list GROUP...  print the packages of the groups, one a line
#                                    (build, test, docs, vm, package, roots, ansible, tools, fuzz, all);
#                                    the Debian roots of the tests are made from these
#
# Every group but tools comes from the release's main suite alone. The optional
# toolchains (clang-tidy-22 and clang-22, in bookworm-security) are skipped with a
# one-line hint when apt's sources do not have them, and the rest is installed.
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
  grub2-common shellcheck zstd)
# grub2-common: Debian's update-grub inside the live-path test's chroot; zstd: the
# zstd-compressed initramfs images kernel_check.sh builds (as Proxmox VE's and Debian's
# initramfs-tools make them by default)
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

# optional: packages a missing suite may lack; their group is installed without them
optional=(clang-tidy-22 clang-22)

list_group() {
  case $1 in
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
    *) echo "deps: unknown group '$1' (build, test, docs, vm, package, roots, ansible, tools, fuzz, all)" >&2; exit 2 ;;
  esac
}

mode=install
groups=()
case ${1:-} in
  --list) mode=list; shift; groups=("$@") ;;
  --group) shift; groups=("$@"); (($#)) || { echo "deps: --group needs a group" >&2; exit 2; } ;;
  "") ;;
  *) echo "usage: scripts/deps.sh [--group GROUP... | --list GROUP...]" >&2; exit 2 ;;
esac
((${#groups[@]})) || groups=(all)
packages=()
for group in "${groups[@]}"; do
  list_group "$group" >/dev/null # an unknown group stops here, with exit 2
  mapfile -t -O "${#packages[@]}" packages < <(list_group "$group")
done
if [[ $mode == list ]]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present (${groups[*]})"
  exit 0
fi

# sudo resets the environment: DEBIAN_FRONTEND goes through env, past it
apt=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300)
if [ "$(id -u)" -ne 0 ]; then
  apt=(sudo "${apt[@]}")
fi
echo "deps: ${#missing[@]} of the ${#packages[@]} packages of ${groups[*]} to install; apt-get update"
"${apt[@]}" update -qq
# a package apt's sources lack: the optional ones are left out with a hint, any other stops here
wanted=()
lacking=()
for p in "${missing[@]}"; do
  if apt-cache show --no-all-versions "$p" >/dev/null 2>&1; then
    wanted+=("$p")
  elif [[ " ${optional[*]} " == *" $p "* ]]; then
    lacking+=("$p")
  else
    echo "deps: $p is not in apt's sources (Debian 12 or 13 with its main suite has it)" >&2
    exit 1
  fi
done
if ((${#lacking[@]})); then
  codename=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null || true)
  echo "deps: skipped ${lacking[*]} (optional, for scripts/check-tidy.sh): not in apt's sources; enable ${codename:-the release}-security to get them" >&2
fi
((${#wanted[@]})) || { echo "deps: done"; exit 0; }
echo "deps: installing ${wanted[*]}"
# apt's summary (how many packages, download and disk size) is shown, its per-package lines are not
"${apt[@]}" install -y -q --no-install-recommends "${wanted[@]}" |
  { grep --line-buffered -E '^([0-9]+ upgraded|Need to get|After this operation)' || true; } | sed 's/^/deps: /'
echo "deps: done"
