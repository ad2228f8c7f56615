#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole story on copies of both boot-loader variants: apply --dry-run
# prints exactly what plan prints and writes nothing; without a terminal and
# without --yes apply refuses (exit 2); apply writes exactly the planned
# files; a second apply is a no-op without a new generation; rollback
# restores the tree byte for byte (content, mode, owner, symlinks).
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary

for host in "${VARIANTS[@]}"; do
    R=$T/$host
    copy_host "$host" "$R"
    cp -a "$R" "$T/$host.orig"
    S0=$(tree_sum "$R")

    "$P" --root "$R" plan "${REQ[@]}" > "$T/plan.out"
    "$P" --root "$R" plan "${REQ[@]}" --json > "$T/plan.json"
    expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --dry-run > "$T/dry.out" 2> "$T/dry.err"
    cmp "$T/plan.out" "$T/dry.out" || fail "$host: apply --dry-run output differs from plan"
    grep -q -- '^--- /etc/' "$T/dry.out" || fail "$host: dry run shows no diff"
    grep -q 'dry run: nothing was written' "$T/dry.err" || fail "$host: dry run does not say it wrote nothing"
    [[ $(tree_sum "$R") == "$S0" ]] || fail "$host: dry run changed the tree"
    # plan recorded its pending plan; the dry run added nothing to the state
    # directory (no lock, no journal) and left the pending plan as it was.
    [[ $(ls -A "$R/var/lib/passthru") == pending-plan.json ]] || fail "$host: dry run wrote into var/lib/passthru: $(ls -A "$R/var/lib/passthru")"
    pending_sum=$(sha256sum < "$R/var/lib/passthru/pending-plan.json")
    expect_rc 0 "$P" --root "$R" apply --dry-run > "$T/dry2.out" 2> /dev/null
    cmp "$T/plan.out" "$T/dry2.out" || fail "$host: apply --dry-run of the pending plan differs from plan"
    [[ $(ls -A "$R/var/lib/passthru") == pending-plan.json ]] || fail "$host: dry run of the pending plan wrote into var/lib/passthru"
    [[ $(sha256sum < "$R/var/lib/passthru/pending-plan.json") == "$pending_sum" ]] || fail "$host: dry run changed the pending plan"
    rm -r "$R/var/lib/passthru" # back to the fixture as it was
    ok "$host: dry run = plan, nothing written"

    expect_rc 2 "$P" --root "$R" apply "${REQ[@]}" < /dev/null > /dev/null 2> "$T/notty.err"
    grep -q -- '--yes' "$T/notty.err" || fail "$host: no hint about --yes"
    [[ $(tree_sum "$R") == "$S0" && ! -e $R/var/lib/passthru ]] || fail "$host: refused apply wrote something"
    ok "$host: no terminal and no --yes: exit 2, nothing written"

    expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --yes > "$T/apply.out" 2> "$T/apply.err"
    grep -q 'Applied as generation 1' "$T/apply.out" || fail "$host: no generation 1"
    grep -q '  update-initramfs -u -k all' "$T/apply.out" || fail "$host: update-initramfs not recorded"
    if [[ $host == *zfs ]]; then
        grep -q '  proxmox-boot-tool refresh' "$T/apply.out" || fail "$host: proxmox-boot-tool refresh not recorded"
    else
        grep -q '  update-grub' "$T/apply.out" || fail "$host: update-grub not recorded"
    fi
    # Exactly the planned files changed, each to its planned content; modes kept.
    python3 - "$T/plan.json" "$T/$host.orig" "$R" <<'PY'
import hashlib, json, os, sys
plan = json.load(open(sys.argv[1]))
orig, new = sys.argv[2], sys.argv[3]
def walk(root):
    out = {}
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        if rel == "var/lib/passthru" or rel.startswith("var/lib/passthru/"):
            dirs[:] = []
            continue
        for name in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, name)
            st = os.lstat(p)
            key = "/" + os.path.normpath(os.path.join(rel, name))
            out[key] = (st.st_mode, os.readlink(p) if os.path.islink(p) else open(p, "rb").read())
    return out
a, b = walk(orig), walk(new)
changed = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
planned = {f["path"] for f in plan["files"]}
if changed != planned:
    sys.exit(f"changed {sorted(changed)} != planned {sorted(planned)}")
for f in plan["files"]:
    got = b[f["path"]][1].decode()
    if got != f["content"] or hashlib.sha256(got.encode()).hexdigest() != f["after_sha256"]:
        sys.exit(f"{f['path']}: content differs from the plan")
    if f["path"] in a and (a[f["path"]][0] & 0o7777) != (b[f["path"]][0] & 0o7777):
        sys.exit(f"{f['path']}: mode changed")
PY
    [[ $(generations "$R") == 1 ]] || fail "$host: expected one generation"
    grep -q '"state": "committed"' "$R/var/lib/passthru/generations/1/manifest.json" || fail "$host: generation 1 not committed"
    ok "$host: apply wrote exactly the planned files"

    expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --yes > "$T/again.out" 2>&1
    grep -q 'Nothing to do' "$T/again.out" || fail "$host: second apply is not a no-op"
    [[ $(generations "$R") == 1 ]] || fail "$host: second apply created a generation"
    ok "$host: second apply: nothing to do, no generation"

    expect_rc 0 "$P" --root "$R" rollback --yes > "$T/rb.out" 2>&1
    [[ $(tree_sum "$R") == "$S0" ]] || fail "$host: rollback did not restore the tree byte for byte"
    grep -q '  update-initramfs -u -k all' "$T/rb.out" || fail "$host: rollback did not re-run update-initramfs"
    "$P" --root "$R" history --json > "$T/history.json"
    python3 - "$T/history.json" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
g = {x["id"]: x for x in h["generations"]}
assert h["schema"] == "passthru.history/1"
assert g[1]["kind"] == "apply" and g[1]["state"] == "committed" and g[1]["undone_by"] == 2, g[1]
assert g[2]["kind"] == "rollback" and g[2]["undoes"] == [1], g[2]
assert g[1]["request"]["vm"] == "101" and g[1]["request"]["gpus"] == "all"
PY
    ok "$host: rollback restored the tree byte for byte; history records it"

    # Apply again (generation 3), then roll back to before it with --to.
    expect_rc 0 "$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2>&1
    [[ $(generations "$R") == 3 ]] || fail "$host: re-apply did not make generation 3"
    expect_rc 3 "$P" --root "$R" rollback --yes --to 1 > /dev/null 2> "$T/to1.err"
    grep -q 'cannot roll back to before generation 1: it was already undone' "$T/to1.err" || { cat "$T/to1.err"; fail "$host: --to 1 not refused"; }
    expect_rc 0 "$P" --root "$R" rollback --yes --to 3 > /dev/null 2>&1
    [[ $(tree_sum "$R") == "$S0" ]] || fail "$host: rollback --to 3 did not restore the tree"
    expect_rc 0 "$P" --root "$R" rollback --yes > "$T/none.out" 2> /dev/null
    grep -q '^Nothing to roll back: no applied generation is active' "$T/none.out" || fail "$host: empty rollback not explained"
    "$P" --root "$R" history > "$T/history.txt"
    grep -q 'undone by 4' "$T/history.txt" || fail "$host: history does not show generation 3 undone"
    ok "$host: rollback --to N, refusals, history"
done
ok "apply cycle on ${VARIANTS[*]}"
