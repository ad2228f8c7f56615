#!/usr/bin/env bash
# Installs the dependencies, builds passthru with warnings as errors, and runs
# the whole test suite: unit tests, integration tests on fixture hosts, the
# package builds, the real-kernel boots and the real reboot test under QEMU;
# then the Debian 13 half (scripts/test-debian13.sh): the same build with
# AddressSanitizer and UndefinedBehaviorSanitizer, and the unit and integration
# tests, inside a Debian 13 root (the suite's sanitizer run); a short run of
# every fuzz target (scripts/test-fuzz.sh, tests/fuzz/README.md); clang-tidy
# over every first-party .cpp (scripts/check-tidy.sh) and the formatting of the
# C++ files (scripts/check-format.sh). Arguments go to every ctest run.
# PASSTHRU_SKIP_DEBIAN13=1 leaves the Debian 13 half out (the sanitizer run then
# runs on this machine, scripts/test-sanitize.sh), PASSTHRU_SKIP_SANITIZE=1 the
# sanitizers (the Debian 13 half then builds without them), PASSTHRU_SKIP_FUZZ=1
# the fuzz targets.
#
# Two lanes. A QEMU guest under TCG keeps one core busy (QEMU runs the guest on
# one host thread), and the QEMU tests take about as long as everything else
# together, so on a machine with two or more CPUs they run in a lane of their
# own, pinned to the first CPU (taskset), one after the other (CTest label qemu,
# RUN_SERIAL), while the rest runs pinned to the other CPUs: each step of it
# there while the QEMU lane runs, on every CPU once it is done. Pinned, the
# boots keep their core to themselves (unpinned, at a lower priority beside the
# rest, they took about 1.8 times as long). The package tests run first in the
# other lane (label package), the Debian 13 one first, while the QEMU lane's
# first reboot host builds the Debian 12 package: the reboot test installs the
# packages they build (packaging/build-deb.sh takes turns on a lock in the shared
# build directory; whichever runs second only repackages). The QEMU lane's output is kept in
# <build>/qemu-tests.log and printed when it is done: every QEMU test's in full (ctest -V),
# so the log shows each boot's evidence (its command line, the card's drivers, verify's exit
# code), not only a failure's; the two lanes' ctest runs share the build tree's
# Testing/Temporary/LastTest.log, which keeps only one of them. PASSTHRU_LANES=0 runs
# everything in one lane, one step after the other, as on one CPU.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${PASSTHRU_BUILD_DIR:-$here/build}
start=$SECONDS
stamp() { echo "== [$(((SECONDS - start) / 60)) min] $*"; }

bash "$here/scripts/deps.sh"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DPASSTHRU_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
rc=0

# The temporary trees of the tests other than the QEMU ones go on a tmpfs: they copy fixture
# hosts (about 2,700 files each) hundreds of times (the fault matrix alone over 400 times),
# and on the disk of the 2-core machine CI's figures come from, one such copy took 1.3-1.8 s
# against 0.1 s in memory.
# /dev/shm when it is a tmpfs with 4 GiB free; PASSTHRU_TEST_TMPDIR names another directory
# (empty: the default TMPDIR). The QEMU tests keep TMPDIR: their disk images take gigabytes.
tests_tmp=
if [[ -n ${PASSTHRU_TEST_TMPDIR+set} ]]; then
    tests_tmp=$PASSTHRU_TEST_TMPDIR
    [[ -z $tests_tmp ]] || mkdir -p "$tests_tmp"
elif [[ -d /dev/shm && $(stat -f -c %T /dev/shm) == tmpfs ]] &&
    (($(df --output=avail -k /dev/shm | tail -n 1) >= 4 * 1024 * 1024)); then
    tests_tmp=$(mktemp -d /dev/shm/passthru-tests.XXXXXX)
    trap 'rm -rf "$tests_tmp"' EXIT
fi
# in_tmp CMD...: CMD with TMPDIR on that tmpfs
in_tmp() {
    if [[ -n $tests_tmp ]]; then
        TMPDIR=$tests_tmp "$@"
    else
        "$@"
    fi
}
[[ -z $tests_tmp ]] || stamp "the tests' temporary trees (but the QEMU tests') in $tests_tmp"

mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
lanes=${PASSTHRU_LANES:-1}
[[ $lanes == [01] ]] || { echo "test.sh: PASSTHRU_LANES is 0 or 1, not '$lanes'" >&2; exit 2; }
((${#cpus[@]} >= 2)) && command -v taskset >/dev/null || lanes=0

qemu_pid=
if [[ $lanes == 1 ]]; then
    qemu_log=$build/qemu-tests.log
    rest=$(IFS=,; echo "${cpus[*]:1}")
    stamp "the QEMU tests (ctest -L qemu) on CPU ${cpus[0]}, the rest on CPU $rest; QEMU log: $qemu_log"
    # -j2 so that CTest orders them by COST (tests/CMakeLists.txt); RUN_SERIAL keeps them
    # one at a time
    (cd "$build" && taskset -c "${cpus[0]}" ctest --output-on-failure -V -j2 -L qemu "$@") >"$qemu_log" 2>&1 &
    qemu_pid=$!
fi
# on_cpus CMD...: a step of the rest, on the CPUs the QEMU lane leaves free while it
# runs, on every CPU once it is done (nproc inside says which)
on_cpus() {
    if [[ -n $qemu_pid ]] && kill -0 "$qemu_pid" 2>/dev/null; then
        taskset -c "$rest" "$@"
    else
        "$@"
    fi
}

if [[ $lanes == 1 ]]; then
    stamp "the package tests (ctest -L package)"
    # -j2 so that CTest orders them by COST; a resource lock keeps them one at a time
    (cd "$build" && in_tmp on_cpus ctest --output-on-failure -j2 -L package "$@") || rc=$?
    stamp "the unit and integration tests (ctest -LE 'qemu|package')"
    (cd "$build" && in_tmp on_cpus bash -c 'ctest --output-on-failure -j"$(($(nproc) + 1))" -LE "qemu|package" "$@"' ctest "$@") || rc=$?
else
    stamp "the suite but the QEMU tests (ctest -LE qemu)"
    (cd "$build" && in_tmp ctest --output-on-failure -j"$(nproc)" -LE qemu "$@") || rc=$?
    stamp "the QEMU tests (ctest -L qemu)"
    (cd "$build" && ctest --output-on-failure -V -j"$(nproc)" -L qemu "$@") || rc=$?
fi

if [[ ${PASSTHRU_SKIP_DEBIAN13:-} != 1 ]]; then
    sanitize=1
    [[ ${PASSTHRU_SKIP_SANITIZE:-} != 1 ]] || sanitize=0
    stamp "the Debian 13 half (scripts/test-debian13.sh, sanitizers: $sanitize)"
    PASSTHRU_DEBIAN13_SANITIZE=$sanitize PASSTHRU_BUILD_DIR=$build on_cpus bash "$here/scripts/test-debian13.sh" "$@" || rc=1
elif [[ ${PASSTHRU_SKIP_SANITIZE:-} != 1 ]]; then
    stamp "the sanitizer run on this machine (scripts/test-sanitize.sh)"
    PASSTHRU_BUILD_DIR=$build in_tmp on_cpus bash "$here/scripts/test-sanitize.sh" "$@" || rc=1
fi

if [[ ${PASSTHRU_SKIP_FUZZ:-} != 1 ]]; then
    # each target's corpus in full, then 5 s of new inputs (PASSTHRU_FUZZ_SECONDS)
    stamp "the fuzz targets (scripts/test-fuzz.sh)"
    PASSTHRU_BUILD_DIR=$build PASSTHRU_FUZZ_SECONDS=${PASSTHRU_FUZZ_SECONDS:-5} on_cpus bash "$here/scripts/test-fuzz.sh" || rc=1
fi

stamp "clang-tidy (scripts/check-tidy.sh)"
fuzz_build=()
[[ -f $build/fuzz/compile_commands.json ]] && fuzz_build=("$build/fuzz")
on_cpus bash "$here/scripts/check-tidy.sh" "$build" "${fuzz_build[@]}" || rc=1

stamp "clang-format (scripts/check-format.sh)"
bash "$here/scripts/check-format.sh" || rc=1

if [[ -n $qemu_pid ]]; then
    stamp "waiting for the QEMU tests ($qemu_log)"
    wait "$qemu_pid" || rc=1
    cat "$qemu_log"
fi
stamp "done: exit $rc"
exit "$rc"
