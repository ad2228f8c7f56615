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
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${PASSTHRU_BUILD_DIR:-$here/build}

bash "$here/scripts/deps.sh"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DPASSTHRU_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
rc=0
(cd "$build" && ctest --output-on-failure -j"$(nproc)" "$@") || rc=$?

if [[ ${PASSTHRU_SKIP_DEBIAN13:-} != 1 ]]; then
    echo "== the Debian 13 half (scripts/test-debian13.sh)"
    PASSTHRU_BUILD_DIR=$build bash "$here/scripts/test-debian13.sh" "$@" || rc=1
fi

if [[ ${PASSTHRU_SKIP_SANITIZE:-} != 1 ]]; then
    echo "== the sanitizer run (scripts/test-sanitize.sh)"
    PASSTHRU_BUILD_DIR=$build bash "$here/scripts/test-sanitize.sh" "$@" || rc=1
fi

if [[ ${PASSTHRU_SKIP_FUZZ:-} != 1 ]]; then
    # each target's corpus in full, then 5 s of new inputs (PASSTHRU_FUZZ_SECONDS)
    echo "== the fuzz targets (scripts/test-fuzz.sh)"
    PASSTHRU_BUILD_DIR=$build PASSTHRU_FUZZ_SECONDS=${PASSTHRU_FUZZ_SECONDS:-5} bash "$here/scripts/test-fuzz.sh" || rc=1
fi

echo "== clang-tidy (scripts/check-tidy.sh)"
fuzz_build=()
[[ -f $build/fuzz/compile_commands.json ]] && fuzz_build=("$build/fuzz")
bash "$here/scripts/check-tidy.sh" "$build" "${fuzz_build[@]}" || rc=1

echo "== clang-format (scripts/check-format.sh)"
bash "$here/scripts/check-format.sh" || rc=1
exit "$rc"
