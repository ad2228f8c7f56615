#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the libFuzzer targets (tests/fuzz: one per parser of host input) with
# clang, AddressSanitizer and UndefinedBehaviorSanitizer in <build>/fuzz
# (PASSTHRU_BUILD_DIR picks <build>, default build/; PASSTHRU_FUZZ_BUILD_DIR
# overrides the whole path), then runs each target for SECONDS (default 15,
# PASSTHRU_FUZZ_SECONDS) on its corpus: first the inputs found before (kept
# in <dir>/corpus/<target>), the seeds (files of that kind from the fixture
# hosts, plans and journal manifests passthru writes on fixture copies, and
# tests/fuzz/seeds/<target>) and the inputs of crashes fixed since
# (tests/fuzz/regressions/<target>), then new inputs until the time is up.
# Any crash, sanitizer report, leak, broken property, timeout (10 s for one
# input) or 2 GB of memory fails; the input that did it is saved as
# <dir>/crashes/<target>-*. scripts/test.sh runs it (PASSTHRU_SKIP_FUZZ=1 leaves
# it out); tests/fuzz/README.md says how to fuzz for long.
#   bash scripts/test-fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${PASSTHRU_FUZZ_BUILD_DIR:-${PASSTHRU_BUILD_DIR:-$here/build}/fuzz}
seconds=${1:-${PASSTHRU_FUZZ_SECONDS:-15}}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "test-fuzz: SECONDS must be a number, not '$seconds'" >&2; exit 2; }
shift $(($# > 0 ? 1 : 0))
launcher=()
if command -v ccache > /dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_CXX_COMPILER=clang++ -DPASSTHRU_FUZZ=ON \
    -DPASSTHRU_TESTING=OFF -DPASSTHRU_SANITIZE='address;undefined' "${launcher[@]}" > /dev/null
cmake --build "$build" -j"$(nproc)"

targets=("$@")
if [[ ${#targets[@]} == 0 ]]; then
    for f in "$here"/tests/fuzz/fuzz_*.cpp; do
        targets+=("$(basename "$f" .cpp)")
    done
fi

# --- seeds: files of each kind as hosts have them -------------------------------------
seeds=$build/seeds
rm -rf "$seeds"
hosts=$here/tests/fixtures/hosts
seed() { # TARGET FILE...: copies each readable regular file under a unique name
    local target=$1 f n=0
    shift
    mkdir -p "$seeds/$target"
    for f in "$@"; do
        if [[ -f $f && -r $f ]]; then
            cp "$f" "$seeds/$target/$(printf '%03d' $n)-$(basename "$f")"
            n=$((n + 1))
        fi
    done
}
shopt -s nullglob
seed fuzz_pve_config "$hosts"/*/etc/pve/qemu-server/*.conf
seed fuzz_lxc_config "$hosts"/*/etc/pve/lxc/*.conf
seed fuzz_interfaces "$hosts"/*/etc/network/interfaces "$here"/tests/fixtures/network/*.interfaces
seed fuzz_modprobe_d "$hosts"/*/etc/modprobe.d/*.conf "$hosts"/*/usr/lib/modprobe.d/*.conf
seed fuzz_grub_default "$hosts"/*/etc/default/grub "$hosts"/*/etc/default/grub.d/*.cfg
seed fuzz_kernel_cmdline "$hosts"/*/proc/cmdline "$hosts"/*/etc/kernel/cmdline
mapfile -t resources < <(find "$hosts" -name resource -type f | sort | head -n 200)
seed fuzz_sysfs "${resources[@]}"
seed fuzz_pve_mapping
seed fuzz_pve_storage
seed fuzz_capture_redact "$hosts"/epyc-4x2080ti/etc/pve/qemu-server/*.conf "$hosts"/epyc-4x2080ti/etc/network/interfaces "$hosts"/epyc-4x2080ti/proc/cmdline
# An option ROM built here (never a vendor ROM): a legacy x86 image, then a UEFI one.
mkdir -p "$seeds/fuzz_pci_rom"
python3 - "$seeds/fuzz_pci_rom/000-legacy-uefi.rom" <<'PY'
import struct, sys
def image(code_type, last):
    b = bytearray(1024)
    b[0:2] = b"\x55\xaa"; b[2] = 2
    if code_type == 3:
        struct.pack_into("<IHH", b, 4, 0x0EF1, 11, 0x8664)
    struct.pack_into("<H", b, 0x18, 0x20)
    struct.pack_into("<4sHHHHB3sHHBB", b, 0x20, b"PCIR", 0x10DE, 0x2484, 0, 0x18, 3, b"\x00\x00\x03", 2, 0, code_type, 0x80 if last else 0)
    if code_type == 0:
        b[-1] = (-sum(b[:-1])) & 0xFF
    return bytes(b)
open(sys.argv[1], "wb").write(image(0, False) + image(3, True))
PY
# Plans and journal manifests as passthru writes them, on copies of two fixture hosts.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
plans=() manifests=()
for host in epyc-4x2080ti t180-4xv100; do
    cp -a "$hosts/$host" "$work/$host"
    "$build/passthru" --root "$work/$host" plan --vm 101 --gpus all --json > "$work/$host.plan.json" 2> /dev/null
    plans+=("$work/$host.plan.json")
    "$build/passthru" --root "$work/$host" apply --vm 101 --gpus all --yes > /dev/null 2>&1
    "$build/passthru" --root "$work/$host" rollback --yes > /dev/null 2>&1
    manifests+=("$work/$host"/var/lib/passthru/generations/*/manifest.json)
done
seed fuzz_plan_json "${plans[@]}"
seed fuzz_manifest "${manifests[@]}"
# fuzz_node_scan: only its small seeds (tests/fuzz/seeds/fuzz_node_scan, fixture scans cut
# to a card or two). A whole scan (40-100 KB) is parsed again for every input: 81-156 inputs in 5 s.
seed fuzz_node_scan
for target in "${targets[@]}"; do
    for dir in seeds regressions; do
        if [[ -d $here/tests/fuzz/$dir/$target ]]; then
            cp "$here/tests/fuzz/$dir/$target"/* "$seeds/$target/"
        fi
    done
    [[ -n $(ls -A "$seeds/$target") ]] || { echo "test-fuzz: no seed for $target" >&2; exit 1; }
done

# --- the runs ---------------------------------------------------------------------------
export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
rc=0
mkdir -p "$build/crashes"
for target in "${targets[@]}"; do
    bin=$build/tests/fuzz/$target
    [[ -x $bin ]] || { echo "test-fuzz: no target $target" >&2; exit 2; }
    mkdir -p "$build/corpus/$target"
    log=$build/$target.log
    if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$build/crashes/$target-" "$build/corpus/$target" "$seeds/$target" > "$log" 2>&1; then
        echo "fuzz: $target: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') inputs in ${seconds} s, corpus $(ls "$build/corpus/$target" | wc -l), clean"
    else
        echo "fuzz: $target FAILED (log: $log)" >&2
        grep -E -A40 '^==[0-9]+==|property broken|runtime error|Test unit written' "$log" | head -n 60 >&2 || tail -n 40 "$log" >&2
        rc=1
    fi
done
exit "$rc"
