#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian 13 half of the suite: builds passthru inside a Debian 13 (trixie)
# root made from Debian's own packages (GCC 14, Boost 1.83, kmod 34, pciutils
# 3.13) with warnings as errors and with AddressSanitizer and
# UndefinedBehaviorSanitizer, and runs the unit and integration tests there:
# scripts/test-sanitize.sh, inside the root. This is also the suite's sanitizer
# run: scripts/test.sh runs the sanitizers here, on Debian 13's compiler and
# libraries, rather than a second time on Debian 12 (scripts/test-sanitize.sh
# alone does that by hand). PASSTHRU_DEBIAN13_SANITIZE=0 builds and tests
# without the sanitizers instead (the integration tests' full campaigns, as on
# Debian 12, minus the fault matrix's full hosts).
#
#   scripts/test-debian13.sh [CTEST-ARGS...]
#
# The root (scripts/debian-root.sh, with scripts/deps.sh's build, test, docs and
# package groups) and the build directory are kept under the build tree
# (${PASSTHRU_BUILD_DIR:-build}/debian-roots/trixie-dev and …/debian13), so a
# second run only rebuilds what changed. The tests run through scripts/in-root.sh:
# chrooted in private namespaces, with no network, no /sys and a fresh /proc;
# the source is bound read-only. Not run inside the root: the QEMU tests (the
# real-kernel tests, Debian 12's and Debian 13's kernel, and the real reboot test
# boot their guests from the host side), the package tests and the root builder's
# own test; scripts/test.sh runs those. With the sanitizers, also not
# live_path and plan_reads_only_root (scripts/test-sanitize.sh says why); they
# run in the Debian 12 suite. Needs root and Debian's archive (for the first root
# build only).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${PASSTHRU_BUILD_DIR:-$here/build}
release=${PASSTHRU_DEBIAN_RELEASE:-trixie}
[[ $build == /* ]] || build=$PWD/$build

mapfile -t packages < <("$here/scripts/deps.sh" --list build test docs package)
# ifupdown2's parser checks the generated network files (never run: a chroot);
# ccache makes a second run cheap.
packages+=(ifupdown2 ccache)

start=$SECONDS
root=$("$here/scripts/debian-root.sh" "$release" "$build/debian-roots/$release-dev" "${packages[@]}")
echo "test-debian13: root ready after $((SECONDS - start)) s" >&2

work=$build/debian13
mkdir -p "$work"
# The ctest arguments reach the inner shell as its positional parameters.
# shellcheck disable=SC2016
inner='
set -eu
echo "in root: $(cat /etc/debian_version), $(g++ --version | head -n 1)"
export CCACHE_DIR=/build/ccache PASSTHRU_TEST_CACHE=/build/cache PASSTHRU_TEST_IN_ROOT=1
# the race and kill -9 campaigns and the fault matrix run in full in the Debian 12 suite
export PASSTHRU_RACE_ROUNDS=10 PASSTHRU_KILL_RUNS=15 PASSTHRU_FAULT_FULL_HOSTS=
if [ "$PASSTHRU_DEBIAN13_SANITIZE" = 1 ]; then
    PASSTHRU_SANITIZE_BUILD_DIR=/build/sanitize exec bash /src/scripts/test-sanitize.sh "$@"
fi
cmake -S /src -B /build/b -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DPASSTHRU_WARNINGS_AS_ERRORS=ON \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build /build/b -j"$(nproc)"
cd /build/b
ctest --output-on-failure -j"$(nproc)" -E "^integration[.](real_kernel.*|package_deb|package_deb_release|debian_root)$" "$@"
'
sanitize=${PASSTHRU_DEBIAN13_SANITIZE:-1}
[[ $sanitize == [01] ]] || { echo "test-debian13: PASSTHRU_DEBIAN13_SANITIZE is 0 or 1, not '$sanitize'" >&2; exit 2; }
"$here/scripts/in-root.sh" --ro "$here:/src" --rw "$work:/build" "$root" \
    env PASSTHRU_DEBIAN13_SANITIZE="$sanitize" bash -c "$inner" test-debian13 "$@"
echo "test-debian13: passed in $((SECONDS - start)) s" >&2
