#!/usr/bin/env bash
# Benchmark (not a test): passthru scan --json vs lspci -nn vs the usual shell loop over
# /sys/kernel/iommu_groups, on generated trees of about 300, 3,000 and 10,000 PCI functions
# (an 8-GPU server behind PCIe switches plus SR-IOV NIC virtual functions).
#
#   bench/run.sh [PASSTHRU_BINARY]
#   env: RUNS=5 (runs per command), SIZES="300 3000 10000",
#        LOOP_SAMPLE=300 (iterations of the shell loop actually timed when a tree has more
#        functions than that; the full-loop time is then extrapolated and marked "~")
#
# Needs python3, pciutils (lspci) and GNU time (/usr/bin/time, package "time").
# Prints a markdown table: median wall time, ratio to lspci -nn, peak RSS.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
bin=${1:-${PASSTHRU:-$repo/build/passthru}}
runs=${RUNS:-5}
sizes=${SIZES:-"300 3000 10000"}
loop_sample=${LOOP_SAMPLE:-300}
[[ -x "$bin" ]] || { echo "bench: error: passthru binary not found: $bin" >&2; exit 2; }
command -v lspci >/dev/null || { echo "bench: error: lspci (pciutils) is needed" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "bench: error: /usr/bin/time (package time) is needed" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/passthru-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

now_ns() { date +%s%N; }

# time_cmd OUTVAR_PREFIX cmd... : one run, sets $wall (seconds) and $rss (KB)
time_cmd() {
    local t0 t1
    t0=$(now_ns)
    /usr/bin/time -f %M -o "$tmp/rss" "$@" >/dev/null 2>"$tmp/err" || {
        echo "bench: error: command failed: $*" >&2; cat "$tmp/err" >&2; exit 1; }
    t1=$(now_ns)
    wall=$(python3 -c "print(($t1 - $t0) / 1e9)")
    rss=$(tail -n 1 "$tmp/rss")
}

median() { python3 -c 'import statistics,sys; print("%.4f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
maxof() { python3 -c 'import sys; print(max(int(x) for x in sys.argv[1:]))' "$@"; }

shell_loop() {  # the loop users paste from guides, over the tree T, first $2 entries (0 = all)
    local T=$1 limit=$2 i=0 d n
    for d in "$T"/sys/kernel/iommu_groups/*/devices/*; do
        n=${d#*/iommu_groups/}; n=${n%%/*}
        printf 'IOMMU Group %s ' "$n"
        lspci -A linux-sysfs -O sysfs.path="$T/sys/bus/pci" -nns "${d##*/}"
        i=$((i + 1))
        if [[ $limit -gt 0 && $i -ge $limit ]]; then break; fi
    done
}
export -f shell_loop

rows=()
for size in $sizes; do
    T="$tmp/tree-$size"
    nfun=$(python3 "$repo/tests/fixtures/gen_host.py" --bench "$size" "$T")
    ngroups=$(ls "$T/sys/kernel/iommu_groups" | wc -l)
    scan_t=() scan_r=() lspci_t=() lspci_r=()
    for _ in $(seq "$runs"); do
        time_cmd "$bin" --root "$T" scan --json; scan_t+=("$wall"); scan_r+=("$rss")
        time_cmd lspci -A linux-sysfs -O sysfs.path="$T/sys/bus/pci" -nn; lspci_t+=("$wall"); lspci_r+=("$rss")
    done
    # the loop: all iterations when small enough, else a timed sample, extrapolated
    nentries=$(ls -d "$T"/sys/kernel/iommu_groups/*/devices/* | wc -l)
    loop_runs=$runs; limit=0; approx=""
    if [[ $nentries -gt $loop_sample ]]; then limit=$loop_sample; approx="~"; loop_runs=1; fi
    loop_t=() loop_r=()
    for _ in $(seq "$loop_runs"); do
        time_cmd bash -c "shell_loop '$T' $limit"
        if [[ $limit -gt 0 ]]; then wall=$(python3 -c "print($wall * $nentries / $limit)"); fi
        loop_t+=("$wall"); loop_r+=("$rss")
    done
    s=$(median "${scan_t[@]}"); l=$(median "${lspci_t[@]}"); o=$(median "${loop_t[@]}")
    rows+=("$(python3 - "$nfun" "$ngroups" "$s" "$l" "$o" "$(maxof "${scan_r[@]}")" "$(maxof "${lspci_r[@]}")" "$(maxof "${loop_r[@]}")" "$approx" "$runs" "$loop_runs" <<'PY'
import sys
n, g, s, l, o, rs, rl, ro, approx, runs, loop_runs = sys.argv[1:]
s, l, o = float(s), float(l), float(o)
print("| %s | %s | %.3f s | %.3f s | %s%.1f s | %.2f | %s%.0f | %.1f MB | %.1f MB | %.1f MB | %s/%s |" % (
    n, g, s, l, approx, o, s / l, approx, o / s, int(rs) / 1024, int(rl) / 1024, int(ro) / 1024, runs, loop_runs))
PY
)")
done

echo "passthru: $bin"
echo "lspci: $(lspci --version)"
echo "machine: $(nproc) CPUs, $(uname -r)"
echo
echo "| functions | IOMMU groups | scan --json (median) | lspci -nn (median) | shell loop | scan / lspci | loop / scan | scan peak RSS | lspci peak RSS | loop peak RSS | runs (scan, lspci / loop) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
echo
echo "~ = shell loop timed on its first $loop_sample iterations and scaled to all entries (one lspci per entry)."
