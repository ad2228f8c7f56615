#!/usr/bin/env bash
# Benchmark (not a test): passthru scan --json against lspci -nn on generated trees of about
# 300, 3,000 and 10,000 PCI functions (an 8-GPU server behind PCIe switches plus SR-IOV NIC
# virtual functions), and plan / apply --dry-run on the seed host (epyc-4x2080ti).
#
#   bench/run.sh [PASSTHRU_BINARY]
#   env: RUNS=5 (pairs per size, at least 5), SIZES="300 3000 10000",
#        CHRT=0 (1 runs every timed command under `chrt -f 10`, a real-time priority, so the
#        other work on a shared machine does not stretch the wall times: needs root or
#        CAP_SYS_NICE; the runs are short),
#        LOOP=0 (1 also times the usual shell loop over /sys/kernel/iommu_groups, one lspci per
#        entry; LOOP_SAMPLE=300 iterations timed and scaled to all entries, marked "~")
#
# scan and lspci run in pairs, one right after the other (scan, lspci, scan, lspci, ...), and the
# ratio is taken per pair: on a shared machine both halves of a pair see about the same load,
# so the median of the pairwise ratios is steadier than a ratio of medians.
# Besides wall time, each run's CPU time (user + system, from wait4) is taken: on a loaded
# machine it is the steadier figure, and its pairwise ratio shows the work done, where the wall
# ratio also shows how much of it runs on more than one core.
# Needs python3, pciutils (lspci) and GNU time (/usr/bin/time, package "time").
# Prints markdown tables: median wall and CPU times, median pairwise ratios, peak RSS; load average.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
bin=${1:-${PASSTHRU:-$repo/build/passthru}}
runs=${RUNS:-5}
sizes=${SIZES:-"300 3000 10000"}
loop=${LOOP:-0}
loop_sample=${LOOP_SAMPLE:-300}
[[ -x "$bin" ]] || { echo "bench: error: passthru binary not found: $bin" >&2; exit 2; }
[[ "$runs" -ge 5 ]] || { echo "bench: error: RUNS must be at least 5" >&2; exit 2; }
command -v lspci >/dev/null || { echo "bench: error: lspci (pciutils) is needed" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "bench: error: /usr/bin/time (package time) is needed" >&2; exit 2; }
chrt=()
if [[ "${CHRT:-0}" == 1 ]]; then
    chrt=(chrt -f 10)
    "${chrt[@]}" true 2>/dev/null || { echo "bench: error: CHRT=1 needs chrt and the right to use SCHED_FIFO" >&2; exit 2; }
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/passthru-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# time_cmd cmd... : one run, sets $wall and $cpu (nanoseconds) and $rss (KB); output discarded
time_cmd() {
    local out
    out=$(python3 "$here/measure.py" "${chrt[@]}" "$@") || exit 1
    read -r wall cpu rss <<<"$out"
}

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

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
for size in $sizes; do
    T="$tmp/tree-$size"
    nfun=$(python3 "$repo/tests/fixtures/gen_host.py" --bench "$size" "$T")
    ngroups=$(ls "$T/sys/kernel/iommu_groups" | wc -l)
    # one untimed run of each warms the page and dentry caches
    "$bin" --root "$T" scan --json >/dev/null 2>&1
    lspci -A linux-sysfs -O sysfs.path="$T/sys/bus/pci" -nn >/dev/null 2>&1
    pairs=()
    for _ in $(seq "$runs"); do
        time_cmd "$bin" --root "$T" scan --json; sw=$wall; sr=$rss; sc=$cpu
        time_cmd lspci -A linux-sysfs -O sysfs.path="$T/sys/bus/pci" -nn
        pairs+=("$sw:$sr:$wall:$rss:$sc:$cpu")
    done
    loop_cell="-"
    if [[ "$loop" == 1 ]]; then
        nentries=$(ls -d "$T"/sys/kernel/iommu_groups/*/devices/* | wc -l)
        limit=0; approx=""
        if [[ $nentries -gt $loop_sample ]]; then limit=$loop_sample; approx="~"; fi
        time_cmd bash -c "shell_loop '$T' $limit"
        loop_cell=$(python3 -c "import sys; w=$wall/1e9; n=$nentries; l=$limit; print('%s%.1f s' % ('$approx', w * n / l if l else w))")
    fi
    rows+=("$(python3 - "$nfun" "$ngroups" "$loop_cell" "${pairs[@]}" <<'PY'
import statistics, sys
n, g, loop = sys.argv[1:4]
pairs = [tuple(int(x) for x in p.split(":")) for p in sys.argv[4:]]
scan = statistics.median(p[0] for p in pairs) / 1e9
lspci = statistics.median(p[2] for p in pairs) / 1e9
ratios = sorted(p[0] / p[2] for p in pairs)
cpu_ratio = statistics.median(p[4] / p[5] for p in pairs)
print("| %s | %s | %.3f s | %.3f s | **%.2f** | %.2f–%.2f | %.0f ms / %.0f ms = %.2f | %.1f MB | %.1f MB | %s | %d |" % (
    n, g, scan, lspci, statistics.median(ratios), ratios[0], ratios[-1],
    statistics.median(p[4] for p in pairs) / 1e6, statistics.median(p[5] for p in pairs) / 1e6, cpu_ratio,
    max(p[1] for p in pairs) / 1024, max(p[3] for p in pairs) / 1024, loop, len(pairs)))
PY
)")
done

# plan and apply --dry-run on the seed host (a copy; --dry-run writes nothing)
seed="$tmp/seed"
cp -a "$repo/tests/fixtures/hosts/epyc-4x2080ti" "$seed"
req=(--vm 101 --gpus all)
cmd_rows=()
for what in "plan ${req[*]} --json" "apply ${req[*]} --dry-run" "scan --json"; do
    read -r -a args <<<"$what"
    "$bin" --root "$seed" "${args[@]}" >/dev/null 2>&1
    ts=() rs=() cs=()
    for _ in $(seq "$runs"); do
        time_cmd "$bin" --root "$seed" "${args[@]}"; ts+=("$wall"); rs+=("$rss"); cs+=("$cpu")
    done
    cmd_rows+=("$(python3 - "$what" "${#ts[@]}" "${ts[@]}" "${cs[@]}" "${rs[@]}" <<'PY'
import statistics, sys
what, k = sys.argv[1], int(sys.argv[2])
ts = [int(x) / 1e6 for x in sys.argv[3:3 + k]]
cs = [int(x) / 1e6 for x in sys.argv[3 + k:3 + 2 * k]]
rs = [int(x) for x in sys.argv[3 + 2 * k:]]
print("| `%s` | %.1f ms | %.1f–%.1f ms | %.1f ms | %.1f MB | %d |" % (
    what, statistics.median(ts), min(ts), max(ts), statistics.median(cs), max(rs) / 1024, k))
PY
)")
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo "passthru: $bin"
echo "lspci: $(lspci --version)"
echo "machine: $(nproc) CPUs, $(uname -r); load average before: $load_before, after: $load_after"
if [[ ${#chrt[@]} -gt 0 ]]; then echo "timed commands ran under: ${chrt[*]}"; fi
echo
echo "| functions | IOMMU groups | scan --json (median) | lspci -nn (median) | scan / lspci (median of pairs) | pair range | CPU: scan / lspci (medians, median of pairs) | scan peak RSS | lspci peak RSS | shell loop | pairs |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
echo
echo "Seed host (tests/fixtures/hosts/epyc-4x2080ti):"
echo
echo "| command | wall (median) | range | CPU (median) | peak RSS | runs |"
echo "|---|---:|---:|---:|---:|---:|"
printf '%s\n' "${cmd_rows[@]}"
if [[ "$loop" == 1 ]]; then
    echo
    echo "~ = shell loop timed on its first $loop_sample iterations and scaled to all entries (one lspci per entry)."
fi
