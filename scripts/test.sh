#!/usr/bin/env bash
# Installs the dependencies, builds passthru with warnings as errors, and runs
# the whole test suite: unit tests, integration tests on fixture hosts, the
# real-kernel boots under QEMU and the package builds on this machine; then the
# Debian 13 half (scripts/test-debian13.sh): the same build and the unit and
# integration tests inside a Debian 13 root. Arguments go to both ctest runs.
# Then the unit and integration tests again on a build with AddressSanitizer and
# UndefinedBehaviorSanitizer (scripts/test-sanitize.sh), clang-tidy over every
# first-party .cpp (scripts/check-tidy.sh) and the formatting of the C++ files
# (scripts/check-format.sh), and a short run of every fuzz target
# (scripts/test-fuzz.sh, tests/fuzz/README.md).
# PASSTHRU_SKIP_DEBIAN13=1 leaves the Debian 13 half out, PASSTHRU_SKIP_SANITIZE=1
# the sanitizer run, PASSTHRU_SKIP_FUZZ=1 the fuzz targets.
#
# The QEMU tests (CTest label qemu: the real-kernel boots and the real reboot test)
# run one after the other in a second ctest, started right after the configure,
# beside everything else: under TCG with both vCPUs on one host thread a guest
# keeps about one core busy, so the rest of the suite (the build first) runs on
# the other one, at a lower priority (nice), so that the boots, the longest path
# through the suite, are not slowed down. The reboot tests come first (they
# install the package they build, not this build's binary), the real-kernel
# tests, which run this build's binary, last (CTest COST, tests/CMakeLists.txt).
# Their output is kept in <build>/qemu-tests.log and printed when they are done.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${PASSTHRU_BUILD_DIR:-$here/build}

bash "$here/scripts/deps.sh"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DPASSTHRU_WARNINGS_AS_ERRORS=ON >/dev/null
rc=0

qemu_log=$build/qemu-tests.log
echo "== the QEMU tests (ctest -L qemu), in the background: $qemu_log"
(cd "$build" && ctest --output-on-failure -L qemu "$@") >"$qemu_log" 2>&1 &
qemu_pid=$!
# should this script stop early (a build error), the boots stop with it
trap 'pkill -TERM -P "$qemu_pid" 2>/dev/null || true' EXIT
# the rest yields the CPU to the boots
renice -n 10 -p $$ >/dev/null

cmake --build "$build" -j"$(nproc)"
(cd "$build" && ctest --output-on-failure -j"$(nproc)" -LE qemu "$@") || rc=$?

if [[ ${PASSTHRU_SKIP_DEBIAN13:-} != 1 ]]; then
    echo "== the Debian 13 half (scripts/test-debian13.sh)"
    PASSTHRU_BUILD_DIR=$build bash "$here/scripts/test-debian13.sh" "$@" || rc=1
fi

if [[ ${PASSTHRU_SKIP_SANITIZE:-} != 1 ]]; then
    echo "== the sanitizer run (scripts/test-sanitize.sh)"
    PASSTHRU_BUILD_DIR=$build bash "$here/scripts/test-sanitize.sh" "$@" || rc=1
fi

if [[ ${PASSTHRU_SKIP_FUZZ:-} != 1 ]]; then
    echo "== the fuzz targets (scripts/test-fuzz.sh)"
    PASSTHRU_BUILD_DIR=$build bash "$here/scripts/test-fuzz.sh" || rc=1
fi

echo "== clang-tidy (scripts/check-tidy.sh)"
fuzz_build=()
[[ -f $build/fuzz/compile_commands.json ]] && fuzz_build=("$build/fuzz")
bash "$here/scripts/check-tidy.sh" "$build" "${fuzz_build[@]}" || rc=1

echo "== clang-format (scripts/check-format.sh)"
bash "$here/scripts/check-format.sh" || rc=1

echo "== waiting for the QEMU tests ($qemu_log)"
wait "$qemu_pid" || rc=1
trap - EXIT
cat "$qemu_log"
exit "$rc"
