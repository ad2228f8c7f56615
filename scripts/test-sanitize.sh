#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds passthru and its unit tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (Debug, -fno-omit-frame-pointer, nothing recovers:
# -fno-sanitize-recover=all) in a build directory of its own under the build
# tree, <build>/sanitize (PASSTHRU_BUILD_DIR picks <build>, default build/;
# PASSTHRU_SANITIZE_BUILD_DIR overrides the whole path), and runs the unit and
# integration tests there with CTest: the integration tests run that
# directory's sanitized binary. scripts/test.sh runs it inside the Debian 13 root
# as the Debian 13 half (scripts/test-debian13.sh), and on this machine only when
# PASSTHRU_SKIP_DEBIAN13=1 leaves that half out.
#   bash scripts/test-sanitize.sh [CTEST ARGS...]
# Any sanitizer report fails: the process stops at the first one (halt_on_error,
# abort_on_error), every report is also written under <dir>/sanitizer-reports/,
# and a report found there after the run fails this script even when the test
# that caused it expected the command to fail anyway. Leaks count (LeakSanitizer).
# Left out, because they cannot meaningfully run under the sanitizers:
#   real_kernel, real_kernel_reboot  boot QEMU guests from a .deb and a kernel of their
#                         own; the binary runs inside the guest without the runtime
#                         (and under TCG they would take hours with it);
#   package_deb           builds the .deb with dpkg-buildpackage and Debian's own
#                         flags, not this build's binary;
#   debian_root           tests scripts/debian-root.sh (mmdebstrap), runs no passthru;
#   plan_reads_only_root  traces every path the binary opens with strace, and the
#                         runtime opens its own (/proc/self/maps, ...);
#   live_path             runs the binary in a chroot of a fixture copy whose /proc
#                         is the fixture's files, not procfs: the runtime then cannot
#                         find its stack bounds (/proc/self/maps) and reports false
#                         stack overflows, nor list threads for LeakSanitizer. The
#                         same commands run under the sanitizers on --root trees in
#                         apply_cycle, workflow_pending and the others.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${PASSTHRU_SANITIZE_BUILD_DIR:-${PASSTHRU_BUILD_DIR:-$here/build}/sanitize}
launcher=()
if command -v ccache > /dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DPASSTHRU_WARNINGS_AS_ERRORS=ON \
    -DPASSTHRU_SANITIZE='address;undefined' "${launcher[@]}" > /dev/null
cmake --build "$build" -j"$(nproc)"

reports=$build/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
common=halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$reports/report
export ASAN_OPTIONS=$common:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
export UBSAN_OPTIONS=$common
export LSAN_OPTIONS=$common
# apply_faults runs the representative subset of fault points on every host
# (see that test): each kind of point and every command still runs under the
# sanitizers, in a fraction of the time every point takes with their runtime.
export PASSTHRU_FAULT_FULL_HOSTS=
# The race and kill -9 campaigns run in full in the main suite (scripts/test.sh);
# here a short run of each checks the same code under the sanitizers.
export PASSTHRU_RACE_ROUNDS=10 PASSTHRU_KILL_RUNS=15
# capture's round trip on six of the fixtures (the sample host, Proxmox VE 9, an NVSwitch
# board, a vGPU host, a tree from a real kernel, a host without IOMMU): every kind of
# member and redaction still runs under the sanitizers; all fixtures in the main suite.
export PASSTHRU_CAPTURE_HOSTS="epyc-4x2080ti pve92-epyc-4x2080ti hgx-h100 vgpu-epyc qemu-intel-vfio no-iommu"
cd "$build"
rc=0
ctest --output-on-failure -j"$(nproc)" -E 'real_kernel|package_deb|debian_root|plan_reads_only_root|live_path' "$@" || rc=$?
if compgen -G "$reports/report*" > /dev/null; then
    for f in "$reports"/report*; do
        echo "=== $f"
        head -n 60 "$f"
    done
    echo "sanitize: the sanitizers reported errors (above; all in $reports)" >&2
    exit 1
fi
[[ $rc == 0 ]] || exit "$rc"
echo "sanitize: unit and integration tests pass under AddressSanitizer and UndefinedBehaviorSanitizer"
