#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs two passthru binaries over every fixture host and every command and
# compares what they print and write, byte for byte: a refactoring that is
# meant to change no behaviour is checked with the binary of its base.
#
#   scripts/compare-binaries.sh OLD NEW [FIXTURE_HOSTS_DIR]
#
# Each run is one scenario on a fresh copy of a fixture host, always at the same
# path (so paths in messages agree): a list of commands, each one's stdout,
# stderr and exit code kept, then the whole tree (contents, link targets, modes)
# and any file a command wrote outside it (plan --out, capture). Both binaries
# read the same data (a copy of this tree's templates/ and profiles/ given as
# --data-dir). The one thing masked is the clock: journal and pending-plan time
# stamps and the pending plan's age; capture's tarball is compared as its
# member list (without dates) and its contents.
# Exit 0 when every run agrees ("N runs compared, 0 differ"), 1 with the
# differing runs named and their first diff lines.
set -euo pipefail

[[ $# -ge 2 ]] || { echo "usage: $0 OLD NEW [FIXTURE_HOSTS_DIR]" >&2; exit 2; }
old=$(realpath "$1")
new=$(realpath "$2")
src=$(cd "$(dirname "$0")/.." && pwd)
hosts=${3:-$src/tests/fixtures/hosts}
work=${TMPDIR:-/tmp}/compare-binaries.$$
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/data"
cp -a "$src/templates" "$src/profiles" "$work/data/"

root=$work/root
# The scenarios: NAME|COMMAND;COMMAND;... (each command's words after
# "passthru --root ROOT --data-dir DATA"; @OUT@ is a file outside the root).
scenarios() {
    local vm=101
    cat <<EOF
scan|scan;scan --json
plan|plan --vm $vm --gpus all;plan --json --vm $vm --gpus all;plan --vm $vm --gpus 0;plan --vm $vm --gpus 0,1 --acs-override;plan --exit-code --vm $vm --gpus all;plan --vm $vm --gpus all --no-fabric
plan-profiles|plan --vm $vm --gpus all --profile linux-ml;plan --vm $vm --gpus all --profile windows-gaming;plan --vm $vm --gpus all --profile nonesuch
plan-libvirt|plan --backend libvirt --connect test:///default --vm guest --gpus all;plan --json --backend libvirt --connect test:///default --vm guest --gpus all
plan-errors|plan;plan --vm $vm;plan --vm $vm --gpus 9;plan --gpus all;plan --vm 1 --gpus all
plan-out|plan --vm $vm --gpus all --out @OUT@
dry-run|apply --dry-run --vm $vm --gpus all;apply --dry-run --vm $vm --gpus all --trial
cycle|apply --yes --vm $vm --gpus all;history;history --json;verify --vm $vm;verify --gpus all;plan --vm $vm --gpus all;apply --dry-run --vm $vm --gpus all;apply --yes --vm $vm --gpus all;rollback --dry-run;rollback;history;verify --vm $vm
pending|plan --vm $vm --gpus all;apply --dry-run;apply --yes;history --json;rollback --to 1
trial|apply --yes --trial --vm $vm --gpus all;history;confirm;history;rollback
explain|explain $vm;explain $vm --json;explain 999
capture|capture @OUT@
EOF
}

# run_scenario BIN HOST NAME COMMANDS DEST: the scenario's outputs and the tree in DEST.
run_scenario() {
    local bin=$1 host=$2 name=$3 commands=$4 dest=$5
    rm -rf "$root" "$work/out-file"
    mkdir -p "$root"
    cp -a "$hosts/$host/." "$root/"
    mkdir -p "$dest"
    local i=0 cmd
    IFS=';' read -r -a cmds <<<"$commands"
    for cmd in "${cmds[@]}"; do
        cmd=${cmd//@OUT@/$work/out-file}
        local rc=0
        # shellcheck disable=SC2086 # the words of the command
        (cd "$work" && "$bin" --root "$root" --data-dir "$work/data" $cmd) </dev/null >"$dest/$i.out" 2>"$dest/$i.err" || rc=$?
        echo "$rc" >"$dest/$i.rc"
        i=$((i + 1))
    done
    if [[ -f $work/out-file ]]; then
        if [[ $name == capture ]]; then
            mkdir -p "$dest/capture"
            tar -tvzf "$work/out-file" | awk '{ $4 = ""; $5 = ""; print }' >"$dest/capture.list"
            tar -xzf "$work/out-file" -C "$dest/capture"
        else
            cp "$work/out-file" "$dest/out-file"
        fi
    fi
    (cd "$root" && find . -printf '%p %y %m %s %l\n' | sort) >"$dest/tree.list"
    mkdir -p "$dest/tree"
    cp -a "$root/." "$dest/tree/"
    # The clock: ISO time stamps and epoch seconds of the journal and the pending plan,
    # and the age of the pending plan apply reports.
    grep -rlE '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z|"created_epoch"|made [0-9]+ s ago' "$dest" 2>/dev/null |
        while read -r f; do
            sed -i -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z/@TIME@/g; s/"created_epoch": ?[0-9]+/"created_epoch":@EPOCH@/g; s/made [0-9]+ s ago/made N s ago/g' "$f"
        done || true
    # A file's size changes with the masked time stamps: sizes are compared through the contents.
    sed -i -E 's/^(.* [a-z] [0-7]+) [0-9]+ /\1 - /' "$dest/tree.list"
}

runs=0
differ=0
for hostdir in "$hosts"/*/; do
    host=$(basename "$hostdir")
    while IFS='|' read -r name commands; do
        [[ -n $name ]] || continue
        run_scenario "$old" "$host" "$name" "$commands" "$work/old/$host/$name"
        run_scenario "$new" "$host" "$name" "$commands" "$work/new/$host/$name"
        n=$(tr -cd ';' <<<"$commands" | wc -c)
        runs=$((runs + n + 1))
        if ! diff -r --no-dereference "$work/old/$host/$name" "$work/new/$host/$name" >"$work/diff" 2>&1; then
            differ=$((differ + 1))
            echo "differ: $host $name ($commands)"
            head -20 "$work/diff" | sed 's/^/  /'
        fi
    done < <(scenarios)
    rm -rf "$work/old/$host" "$work/new/$host"
done
echo "$runs runs compared ($differ scenario(s) differ)"
[[ $differ -eq 0 ]]
