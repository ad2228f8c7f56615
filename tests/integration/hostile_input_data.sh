#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Hostile input, second round: the data passthru reads back (journal
# manifests, the pending plan, saved plans, profiles, host files) each case
# asserting the safe outcome: a refusal with exit 3 (a data file that breaks
# its schema, such as vendors.json: exit 2) and one clear line, never a
# signal, and nothing written.
source "$(dirname "$0")/lib.inc"
need_binary
need python3

# run_rc CMD...: runs CMD with stdout/stderr in $T/out, $T/err; its exit code in RC.
run_rc() {
    RC=0
    "$@" > "$T/out" 2> "$T/err" || RC=$?
}

section_start() { SECTION_F0=$LIB_FAILED; }
section_ok() {
    if [[ $LIB_FAILED -eq $SECTION_F0 ]]; then
        ok "$*"
    fi
}

# deep_json FILE DEPTH: FILE (a JSON object) with DEPTH arrays nested in its
# "request" member (or, without one, in a new member), the place a manifest
# keeps as a JSON value and copies.
deep_json() {
    python3 - "$1" "$2" << 'EOF'
import json, sys
path, depth = sys.argv[1], int(sys.argv[2])
doc = json.load(open(path))
holder = doc["request"] if isinstance(doc.get("request"), dict) else doc
holder["deep"] = "@DEEP@"
text = json.dumps(doc).replace('"@DEEP@"', "[" * depth + "]" * depth)
open(path, "w").write(text + "\n")
EOF
}

# --- JSON nested ~200,000 levels in the journal and in plans -----------------
# The parse succeeded and the value was then copied by recursion: every
# command, scan included, died of SIGSEGV. Depth is bounded where any JSON is
# parsed (util/json.hpp).
section_start
R=$T/deep
copy_host epyc-4x2080ti "$R"
run_rc "$P" --root "$R" apply --vm 101 --gpus all --yes
[[ $RC -eq 0 ]] || fatal "the first apply: exit $RC: $(head -3 "$T/err")"
manifest=$R/var/lib/passthru/generations/1/manifest.json
[[ -f $manifest ]] || fatal "no manifest at $manifest"
deep_json "$manifest" 200000
for cmd in "scan" "plan --vm 101 --gpus all" "apply --vm 101 --gpus all --dry-run" "verify --vm 101" "history" \
    "rollback --dry-run" "rollback --yes" "confirm"; do
    # shellcheck disable=SC2086
    run_rc "$P" --root "$R" $cmd
    if [[ $RC -ge 128 ]]; then
        fail "a deep manifest: '$cmd' died of signal $((RC - 128))"
    fi
done
# rollback refuses; history lists the generation it cannot read (exit 1, as
# for any manifest it does not trust)
before=$(tree_sum --with-journal "$R")
run_rc "$P" --root "$R" rollback --yes
[[ $RC -eq 3 ]] || fail "a deep manifest: rollback exit $RC, expected 3 (refused)"
refusal="refused: the manifest of generation 1 is nested deeper than 64 levels"
grep -q "$refusal" "$T/err" || fail "a deep manifest: rollback gave no clear refusal: $(head -3 "$T/err")"
[[ $(tree_sum --with-journal "$R") == "$before" ]] || fail "a deep manifest: the refused rollback changed the tree"
run_rc "$P" --root "$R" history
[[ $RC -eq 1 ]] || fail "a deep manifest: history exit $RC, expected 1 (a generation it cannot read)"
cat "$T/out" "$T/err" | grep -q "$refusal" || fail "a deep manifest: history does not name it: $(cat "$T/out" "$T/err" | head -5)"
# the pending plan and a saved plan
R=$T/deep-plan
copy_host epyc-4x2080ti "$R"
run_rc "$P" --root "$R" plan --vm 101 --gpus all --out "$T/deep-saved.json"
[[ $RC -eq 0 ]] || fatal "plan --out: exit $RC: $(head -3 "$T/err")"
deep_json "$T/deep-saved.json" 200000
before=$(tree_sum --with-journal "$R")
run_rc "$P" --root "$R" apply --plan "$T/deep-saved.json" --yes
[[ $RC -eq 3 ]] || fail "a deep saved plan: apply --plan exit $RC, expected 3"
grep -q "refused: --plan .* is nested deeper than 64 levels" "$T/err" || fail "a deep saved plan: no clear refusal: $(head -3 "$T/err")"
[[ $(tree_sum --with-journal "$R") == "$before" ]] || fail "a deep saved plan: apply changed the tree"
run_rc "$P" --root "$R" plan --vm 101 --gpus all
[[ $RC -eq 0 ]] || fatal "plan: exit $RC: $(head -3 "$T/err")"
pending=$R/var/lib/passthru/pending-plan.json
[[ -f $pending ]] || fatal "plan recorded no pending plan at $pending"
deep_json "$pending" 200000
before=$(tree_sum --with-journal "$R")
run_rc "$P" --root "$R" apply --yes
[[ $RC -eq 3 ]] || fail "a deep pending plan: apply exit $RC, expected 3"
grep -q "the pending plan cannot be read: refused: /var/lib/passthru/pending-plan.json is nested deeper than 64 levels" "$T/err" ||
    fail "a deep pending plan: no clear refusal: $(head -3 "$T/err")"
[[ $(tree_sum --with-journal "$R") == "$before" ]] || fail "a deep pending plan: apply changed the tree"
section_ok "JSON nested 200,000 levels in a manifest, a saved and the pending plan: no signal, refused (exit 3)"

# --- A file larger than passthru reads -------------------------------------
# Reads stopped silently at 256 MiB: apply kept the cut copy as the file's
# pre-image and rollback could not restore the tail. A sparse file costs no
# memory or disk here; the refusal comes before a byte is read.
section_start
R=$T/large
copy_host epyc-4x2080ti "$R"
own_copy "$R/etc/pve/qemu-server/101.conf"
truncate -s 300M "$R/etc/pve/qemu-server/101.conf"
before=$(tree_sum --with-journal "$R")
for cmd in "plan --vm 101 --gpus all" "apply --vm 101 --gpus all --yes"; do
    # shellcheck disable=SC2086
    run_rc "$P" --root "$R" $cmd
    [[ $RC -eq 3 ]] || fail "a 300 MiB VM config: '$cmd' exit $RC, expected 3 (refused)"
    grep -q "refused: /etc/pve/qemu-server/101.conf is larger than 256 MiB" "$T/err" ||
        fail "a 300 MiB VM config: '$cmd' gave no clear refusal: $(head -3 "$T/err")"
done
[[ $(tree_sum --with-journal "$R") == "$before" ]] || fail "a 300 MiB VM config: apply changed the tree"
[[ $(stat -c %s "$R/etc/pve/qemu-server/101.conf") -eq $((300 << 20)) ]] || fail "the 300 MiB VM config was cut"
section_ok "a file larger than 256 MiB is refused (exit 3), never cut short; nothing written"

# --- Values from data files never become config lines -----------------------
# A newline in a GPU profile's name (an admin override) wrote a real
# 'install vfio-pci <command>' line into passthru-vfio.conf; one in a VM
# profile's cpu.type added a line to the VM config.
section_start
R=$T/profiles
copy_host epyc-4x2080ti "$R"
mkdir -p "$R/etc/passthru/profiles/gpus" "$R/etc/passthru/profiles/vm"
python3 - "$SRC/profiles/gpus/rtx-2080-ti.json" "$R/etc/passthru/profiles/gpus/rtx-2080-ti.json" << 'EOF2'
import json, sys
p = json.load(open(sys.argv[1]))
p["name"] = "RTX 2080 Ti\ninstall vfio-pci /bin/sh -c 'touch /pwned'"
json.dump(p, open(sys.argv[2], "w"))
EOF2
before=$(tree_sum --with-journal "$R")
for cmd in "plan --vm 101 --gpus all" "apply --vm 101 --gpus all --yes"; do
    # shellcheck disable=SC2086
    run_rc "$P" --root "$R" $cmd
    [[ $RC -eq 3 ]] || fail "a GPU profile name with a newline: '$cmd' exit $RC, expected 3"
    grep -q "refused: /etc/passthru/profiles/gpus/rtx-2080-ti.json (under the root): name 'RTX 2080 Ti\\\\ninstall vfio-pci" "$T/err" ||
        fail "a GPU profile name with a newline: '$cmd' does not name the file and field: $(head -3 "$T/err")"
done
[[ $(tree_sum --with-journal "$R") == "$before" ]] || fail "a GPU profile name with a newline: apply changed the tree"
! grep -rqs "^install vfio-pci /bin/sh" "$R/etc" || fail "the profile's name became an install line"
rm "$R/etc/passthru/profiles/gpus/rtx-2080-ti.json"
python3 - "$SRC/profiles/vm/linux-ml.json" "$R/etc/passthru/profiles/vm/linux-ml.json" << 'EOF2'
import json, sys
p = json.load(open(sys.argv[1]))
p["cpu"]["type"] = "host\nhookscript: local:snippets/evil.sh"
json.dump(p, open(sys.argv[2], "w"))
EOF2
before=$(tree_sum --with-journal "$R")
for cmd in "plan --vm 101 --gpus all" "apply --vm 101 --gpus all --yes"; do
    # shellcheck disable=SC2086
    run_rc "$P" --root "$R" $cmd
    [[ $RC -eq 3 ]] || fail "a VM profile cpu.type with a newline: '$cmd' exit $RC, expected 3"
    grep -q "refused: VM profile 'linux-ml' from /etc/passthru/profiles/vm/linux-ml.json (under the root): cpu.type 'host\\\\nhookscript" "$T/err" ||
        fail "a VM profile cpu.type with a newline: '$cmd' does not name the file and field: $(head -3 "$T/err")"
done
[[ $(tree_sum --with-journal "$R") == "$before" ]] || fail "a VM profile cpu.type with a newline: apply changed the tree"
! grep -rqs "^hookscript:" "$R/etc/pve" || fail "the profile's cpu.type became a line of the VM config"
section_ok "a newline in a GPU profile's name or a VM profile's cpu.type: refused naming the file and field (exit 3), nothing written"

# --- Data files that break their schema: one line naming the file and the field
# A VM profile was read key by key (a wrong type was nlohmann's own message, an
# unknown or misspelt field silently ignored) and failures.json with its own
# phrasing; both now read through the schema helper (src/data/schema.hpp).
section_start
R=$T/schema
copy_host epyc-4x2080ti "$R"
D=$T/schema-data
mkdir -p "$D/profiles/vm"
# broken_data FILE WHAT PYTHON: a copy of the shipped profiles/FILE under $D with PYTHON applied to doc
broken_data() {
    python3 - "$SRC/profiles/$1" "$D/profiles/$1" "$2" << 'EOF2'
import json, sys
doc = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(doc, open(sys.argv[2], "w"))
EOF2
}
# expect_data_error CMD WANT: CMD (words) exits 2 with WANT in its one error line
expect_data_error() {
    # shellcheck disable=SC2086
    run_rc "$P" --root "$R" --data-dir "$D" $1
    [[ $RC -eq 2 ]] || fail "'$1' with a broken data file: exit $RC, expected 2: $(head -3 "$T/err")"
    grep -qF -- "$2" "$T/err" || fail "'$1': no '$2' in: $(head -3 "$T/err")"
}
before=$(tree_sum --with-journal "$R")
vm="VM profile 'linux-ml' from $D/profiles/vm/linux-ml.json"
broken_data vm/linux-ml.json 'doc["schema"] = "passthru.vm-profile/2"'
expect_data_error "plan --vm 101 --gpus all" "$vm: schema must be \"passthru.vm-profile/1\""
broken_data vm/linux-ml.json 'doc["cpu"]["hidden"] = "yes"'
expect_data_error "plan --vm 101 --gpus all" "$vm: cpu.hidden: expected true or false"
broken_data vm/linux-ml.json 'doc["memory"]["min_mb"] = doc["memory"].pop("min_mib")'
expect_data_error "apply --vm 101 --gpus all --yes" "$vm: memory.min_mb is not a field of memory"
broken_data vm/linux-ml.json 'doc["hugepage"] = "2"'
expect_data_error "plan --vm 101 --gpus all" "$vm: hugepage is not a field of passthru.vm-profile/1"
rm "$D/profiles/vm/linux-ml.json"
broken_data failures.json 'doc["schema"] = "passthru.failures/2"'
expect_data_error "explain 101" "$D/profiles/failures.json: schema must be \"passthru.failures/1\""
broken_data failures.json 'doc["failures"][2]["fix"] = ["a", "list"]'
expect_data_error "explain 101" "$D/profiles/failures.json: failures[2].fix: expected a non-empty string"
broken_data failures.json 'doc["failures"][1]["severity"] = "high"'
expect_data_error "explain 101" "$D/profiles/failures.json: failures[1].severity is not a field of a failure"
[[ $(tree_sum --with-journal "$R") == "$before" ]] || fail "a data file that breaks its schema: the tree changed"
section_ok "a VM profile or failures.json that breaks its schema: exit 2 naming the file and the field, nothing written"

# --- A vendors.json that breaks its schema -----------------------------------
# The GPU vendor policy is data (profiles/host/vendors.json): an override with a
# vendor id that is no PCI id stops scan, plan and verify before the scan, with
# one line naming the file and the field (exit 2), and nothing is written.
section_start
R=$T/vendors
copy_host epyc-4x2080ti "$R"
mkdir -p "$R/etc/passthru/profiles/host"
python3 - "$SRC/profiles/host/vendors.json" "$R/etc/passthru/profiles/host/vendors.json" << 'EOF2'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["vendors"][0]["id"] = "0x10de"
json.dump(doc, open(sys.argv[2], "w"))
EOF2
before=$(tree_sum --with-journal "$R")
for cmd in "scan" "plan --vm 101 --gpus all" "verify --gpus all" "apply --vm 101 --gpus all --yes"; do
    # shellcheck disable=SC2086
    run_rc "$P" --root "$R" $cmd
    [[ $RC -eq 2 ]] || fail "a broken vendors.json: '$cmd' exit $RC, expected 2"
    grep -q '^passthru: error: /etc/passthru/profiles/host/vendors.json (under the root): vendors\[0\].id must be 4 lower-case hex digits$' "$T/err" ||
        fail "a broken vendors.json: '$cmd' does not name the file and field: $(head -3 "$T/err")"
    [[ $(grep -c '^passthru: error' "$T/err") == 1 ]] || fail "a broken vendors.json: '$cmd' printed more than one error line"
done
[[ $(tree_sum --with-journal "$R") == "$before" ]] || fail "a broken vendors.json: a command changed the tree"
section_ok "a vendors.json that breaks its schema: one line naming the file and field (exit 2), nothing written"

# --- A saved or pending plan that names a file twice -------------------------
# The check that a saved plan is what passthru plans compared one entry per
# path: a second entry for a planned file went through (dry run exit 0, apply
# exit 70).
section_start
R=$T/dup
copy_host epyc-4x2080ti "$R"
run_rc "$P" --root "$R" plan --vm 101 --gpus all --out "$T/dup.json"
[[ $RC -eq 0 ]] || fatal "plan --out: exit $RC: $(head -3 "$T/err")"
python3 - "$T/dup.json" << 'EOF2'
import hashlib, json, sys
doc = json.load(open(sys.argv[1]))
files = doc["files"]
conf = next(f for f in files if f["path"] == "/etc/modprobe.d/passthru-vfio.conf")
evil = dict(conf)
evil["content"] = conf["content"] + "install vfio-pci /bin/sh -c 'touch /pwned'\n"
evil["after_sha256"] = hashlib.sha256(evil["content"].encode()).hexdigest()
files.append(evil)
json.dump(doc, open(sys.argv[1], "w"))
EOF2
before=$(tree_sum --with-journal "$R")
for cmd in "apply --plan $T/dup.json --dry-run" "apply --plan $T/dup.json --yes"; do
    # shellcheck disable=SC2086
    run_rc "$P" --root "$R" $cmd
    [[ $RC -eq 3 ]] || fail "a duplicated file entry: '${cmd%% --*} ${cmd##* }' exit $RC, expected 3"
    grep -q "it changes /etc/modprobe.d/passthru-vfio.conf more than once" "$T/err" ||
        fail "a duplicated file entry: no clear refusal: $(head -3 "$T/err")"
done
[[ $(tree_sum --with-journal "$R") == "$before" ]] || fail "a duplicated file entry: apply changed the tree"
! grep -rqs "^install vfio-pci /bin/sh" "$R/etc" || fail "the second entry was written"
section_ok "a saved plan naming a file twice: refused (exit 3), nothing written"

finish "hostile input (data)"
