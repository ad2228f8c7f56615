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
#
#   scripts/test.sh [--quick] [CTEST-ARGS...]
#
# --quick: the build and the tests of a contributor's loop only: the unit tests and the
# fast integration tests (ctest -LE 'qemu|package|slow'), their temporary trees on the
# tmpfs the full run uses; no QEMU, no packages, no Debian 13 half, no fuzzing, no tidy.
# It installs deps.sh's build, test and docs groups only, and continues the build of
# scripts/sample.sh (the same directory and configuration). CI runs everything.
# PASSTHRU_SKIP_DEBIAN13=1 leaves the Debian 13 half out (the sanitizer run then
# runs on this machine, scripts/test-sanitize.sh), PASSTHRU_SKIP_SANITIZE=1 the
# sanitizers (the Debian 13 half then builds without them), PASSTHRU_SKIP_FUZZ=1
# the fuzz targets.
#
# Two lanes. A QEMU guest under TCG keeps one core busy (QEMU runs the guest on
# one host thread), so on a machine with two or more CPUs the QEMU tests (CTest label
# qemu) run in a lane of their own pinned to the first CPU (taskset), one after the
# other in the order tests/CMakeLists.txt gives, while the rest of the suite runs
# pinned to the other CPUs. When the packages, the suite and the Debian 13 half are
# done, that lane takes the QEMU tests the first one has not started yet, pinned to the
# second CPU: two guests at once, each on a core of its own and with a QEMU lock of its
# own (PASSTHRU_QEMU_LOCK), so neither waits for the other; fuzz, tidy and format come
# last, on both CPUs once the first lane is done. The package tests run first in the
# second lane (label package):
# the reboot hosts install the packages they build (packaging/build-deb.sh takes turns
# on a lock in the shared build directory; whichever runs second only repackages).
# Each QEMU test's output is kept in full (ctest -V) in <build>/timing/qemu-<test>.log and
# printed at the end, so the log shows each boot's evidence, not only a failure's.
# PASSTHRU_LANES=0 runs everything in one lane, one step after the other, as on one CPU.
#
# At the end the run prints where its time went (scripts/timing-table.py): each phase's
# wall time and CPU time, each ctest test, and each QEMU boot split into firmware and
# boot loader, kernel to the test's step, the step's commands and the power-off; the
# same table is kept in <build>/timing/table.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${PASSTHRU_BUILD_DIR:-$here/build}
quick=0
if [[ ${1:-} == --quick ]]; then
    quick=1
    shift
fi
start=$SECONDS
stamp() { echo "== [$(((SECONDS - start) / 60)) min] $*"; }

mkdir -p "$build"
timing=$build/timing
rm -rf "$timing"
mkdir -p "$timing"
# phase NAME CMD...: runs CMD, and records NAME's start, end, CPU time (user and system of
# CMD's processes: bash's `times` in a subshell of its own, whose children are that phase's
# processes and nothing else; the shell's own child counters also took in a QEMU lane reaped
# while the phase ran) and exit status in $timing/phases.tsv
phase() {
    local name=$1 t0 rc=0 cpu_file
    shift
    t0=$(date +%s.%N)
    cpu_file=$(mktemp)
    (
        set +e
        "$@"
        rc=$?
        times >"$cpu_file"
        exit "$rc"
    ) || rc=$?
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$t0" "$(date +%s.%N)" \
        "$(awk 'NR == 2 { split($0, f, /[ms ]+/); printf "%.1f", f[1] * 60 + f[2] + f[3] * 60 + f[4] }' "$cpu_file")" "$rc" \
        >>"$timing/phases.tsv"
    rm -f "$cpu_file"
    return "$rc"
}
table() { python3 "$here/scripts/timing-table.py" "$timing" | tee "$timing/table.txt"; }

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
# in_tmp CMD...: CMD with TMPDIR on that tmpfs (called through phase)
# shellcheck disable=SC2317
in_tmp() {
    if [[ -n $tests_tmp ]]; then
        TMPDIR=$tests_tmp "$@"
    else
        "$@"
    fi
}
[[ -z $tests_tmp ]] || stamp "the tests' temporary trees (but the QEMU tests') in $tests_tmp"

# The configuration of every build here and of scripts/sample.sh (keep the two alike, so each
# continues the other's build). Debug with line tables only (-g1): backtraces, sanitizer
# reports and gdb's breakpoints still name file and line, and the build takes about 100 s
# on 2 cores where full debug information (-g) takes 135 s. Configure by hand for -g.
configure=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DPASSTHRU_WARNINGS_AS_ERRORS=ON)

if [[ $quick == 1 ]]; then
    # the groups its tests use; the configuration of scripts/sample.sh, whose build this one continues
    phase deps bash "$here/scripts/deps.sh" --group build test docs
    phase configure cmake -S "$here" -B "$build" "${configure[@]}" >/dev/null
    phase build cmake --build "$build" -j"$(nproc)"
    rc=0
    stamp "the quick tests (ctest -LE 'qemu|package|slow')"
    (cd "$build" && phase "ctest quick" in_tmp ctest --output-on-failure -j"$(($(nproc) + 1))" -LE 'qemu|package|slow' "$@") |
        tee "$timing/ctest-quick.log" || rc=1
    table
    stamp "done: exit $rc"
    exit "$rc"
fi

phase deps bash "$here/scripts/deps.sh"
phase configure cmake -S "$here" -B "$build" "${configure[@]}" >/dev/null
phase build cmake --build "$build" -j"$(nproc)"
rc=0

mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
lanes=${PASSTHRU_LANES:-1}
[[ $lanes == [01] ]] || { echo "test.sh: PASSTHRU_LANES is 0 or 1, not '$lanes'" >&2; exit 2; }
((${#cpus[@]} >= 2)) && command -v taskset >/dev/null || lanes=0

# The QEMU tests, in the order tests/CMakeLists.txt gives them (their COST), as a queue
# both lanes take from: each test is started by exactly one lane (flock on the queue).
queue=$timing/qemu-queue
(cd "$build" && ctest -N -L qemu "$@") | sed -n 's/^ *Test *#[0-9]*: //p' >"$queue.unordered"
(cd "$build" && ctest -N -L qemu --show-only=json-v1 "$@") |
    python3 -c 'import json,sys; t=json.load(sys.stdin)["tests"]
cost=lambda x: next((float(p["value"]) for p in x.get("properties",[]) if p["name"]=="COST"), 0.0)
print(*[x["name"] for x in sorted(t, key=cost, reverse=True)], sep="\n")' >"$queue"
[[ $(sort "$queue") == $(sort "$queue.unordered") ]] || { echo "test.sh: cannot order the QEMU tests" >&2; exit 1; }
rm -f "$queue.unordered"
# qemu_lane CPU LANE CTEST-ARGS...: takes QEMU tests from the queue until it is empty, each
# alone on CPU with this lane's own QEMU lock; exits nonzero if any failed
qemu_lane() {
    local cpu=$1 lane=$2 name lane_rc=0
    shift 2
    while :; do
        # shellcheck disable=SC2016
        name=$(flock "$queue.lock" sh -c 'head -n 1 "$1"; sed -i 1d "$1"' sh "$queue")
        [[ -n $name ]] || break
        stamp "QEMU lane $lane (CPU $cpu): $name"
        (cd "$build" && export PASSTHRU_QEMU_LOCK=$timing/qemu-lane$lane.lock &&
            phase "qemu lane $lane: $name" taskset -c "$cpu" ctest --output-on-failure -V -R "^${name//./[.]}\$" "$@") \
            >"$timing/qemu-$name.log" 2>&1 || lane_rc=1
        stamp "QEMU lane $lane: $name $(grep -qE '100% tests passed' "$timing/qemu-$name.log" && echo passed || echo FAILED)"
    done
    return "$lane_rc"
}

qemu_pid=
if [[ $lanes == 1 ]]; then
    rest=$(IFS=,; echo "${cpus[*]:1}")
    stamp "the QEMU tests (ctest -L qemu) on CPU ${cpus[0]}, the rest on CPU $rest; logs: $timing/qemu-*.log"
    qemu_lane "${cpus[0]}" 1 "$@" &
    qemu_pid=$!
fi
# on_cpus CMD...: a step of the rest, on the CPUs the QEMU lane leaves free while it
# runs, on every CPU once it is done (nproc inside says which); called through phase
# shellcheck disable=SC2317
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
    (cd "$build" && phase "ctest package" in_tmp on_cpus ctest --output-on-failure -j2 -L package "$@") |
        tee "$timing/ctest-package.log" || rc=1
    stamp "the unit and integration tests (ctest -LE 'qemu|package')"
    # shellcheck disable=SC2016
    (cd "$build" && phase "ctest suite" in_tmp on_cpus bash -c 'ctest --output-on-failure -j"$(($(nproc) + 1))" -LE "qemu|package" "$@"' ctest "$@") |
        tee "$timing/ctest-suite.log" || rc=1
else
    stamp "the suite but the QEMU tests (ctest -LE qemu)"
    (cd "$build" && phase "ctest suite" in_tmp ctest --output-on-failure -j"$(nproc)" -LE qemu "$@") |
        tee "$timing/ctest-suite.log" || rc=1
fi

if [[ ${PASSTHRU_SKIP_DEBIAN13:-} != 1 ]]; then
    sanitize=1
    [[ ${PASSTHRU_SKIP_SANITIZE:-} != 1 ]] || sanitize=0
    stamp "the Debian 13 half (scripts/test-debian13.sh, sanitizers: $sanitize)"
    PASSTHRU_DEBIAN13_SANITIZE=$sanitize PASSTHRU_BUILD_DIR=$build phase "debian 13 half" \
        on_cpus bash "$here/scripts/test-debian13.sh" "$@" || rc=1
elif [[ ${PASSTHRU_SKIP_SANITIZE:-} != 1 ]]; then
    stamp "the sanitizer run on this machine (scripts/test-sanitize.sh)"
    PASSTHRU_BUILD_DIR=$build phase sanitizers in_tmp on_cpus bash "$here/scripts/test-sanitize.sh" "$@" || rc=1
fi

# The QEMU tests the first lane has not started yet run here, in a second lane, before
# fuzz, tidy and format: the guests come in pieces of 5-20 minutes, while fuzz and tidy
# can run on whatever CPUs are free (both, once the first lane is done), so the two
# lanes end within minutes of each other instead of one guest's length apart.
if [[ -n $qemu_pid ]]; then
    if [[ -s $queue ]]; then
        stamp "the QEMU tests left: $(paste -sd' ' "$queue"), in a second lane on CPU ${cpus[1]}"
        qemu_lane "${cpus[1]}" 2 "$@" || rc=1
    fi
else
    stamp "the QEMU tests (ctest -L qemu)"
    qemu_lane "${cpus[0]}" 1 "$@" || rc=1
fi

# last_cpus CMD...: fuzz and tidy, the last steps: on every CPU, but while the first QEMU lane
# still runs, at the lowest priority (nice 19, against QEMU's 0), so that the guest keeps its
# core and they take the other one, and both as soon as the guest is done (pinned to the
# other CPU as the earlier steps are, tidy ran on one CPU to its end: nproc said 1 when it
# started).
# shellcheck disable=SC2317
last_cpus() {
    if [[ -n $qemu_pid ]] && kill -0 "$qemu_pid" 2>/dev/null; then
        nice -n 19 "$@"
    else
        "$@"
    fi
}

if [[ ${PASSTHRU_SKIP_FUZZ:-} != 1 ]]; then
    # each target's corpus in full, then 5 s of new inputs (PASSTHRU_FUZZ_SECONDS)
    stamp "the fuzz targets (scripts/test-fuzz.sh)"
    PASSTHRU_BUILD_DIR=$build PASSTHRU_FUZZ_SECONDS=${PASSTHRU_FUZZ_SECONDS:-5} phase fuzz \
        last_cpus bash "$here/scripts/test-fuzz.sh" || rc=1
fi

stamp "clang-tidy (scripts/check-tidy.sh)"
fuzz_build=()
[[ -f $build/fuzz/compile_commands.json ]] && fuzz_build=("$build/fuzz")
phase tidy last_cpus bash "$here/scripts/check-tidy.sh" "$build" "${fuzz_build[@]}" || rc=1

stamp "clang-format (scripts/check-format.sh)"
phase format bash "$here/scripts/check-format.sh" || rc=1

if [[ -n $qemu_pid ]]; then
    stamp "waiting for the first QEMU lane"
    wait "$qemu_pid" || rc=1
fi
for log in "$timing"/qemu-*.log; do
    [[ -e $log ]] || continue
    echo "==== $(basename "$log")"
    cat "$log"
done
table
stamp "done: exit $rc"
exit "$rc"
