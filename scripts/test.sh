#!/usr/bin/env bash
# Installs the dependencies, builds passthru with warnings as errors, and runs
# the whole test suite: unit tests, integration tests on fixture hosts, the
# real-kernel boots under QEMU and the package build.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${PASSTHRU_BUILD_DIR:-$here/build}

bash "$here/scripts/deps.sh"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DPASSTHRU_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"
