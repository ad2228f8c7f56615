#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Real filesystem errors in the middle of an apply end in a clean rollback
# (exit 1, the tree byte-identical, the generation marked rolled-back):
#  - a read-only target: the directory of the last planned file is a
#    read-only bind mount (EROFS; as root, permissions would not stop us);
#  - a full disk: the same directory is a small tmpfs filled up (ENOSPC).
# Runs in a private mount namespace (unshare -m), so no mount outlives the
# test or is seen outside it; skipped when mounting is not allowed.
if [[ -z ${PASSTHRU_IN_MOUNT_NS:-} ]]; then
    if ! unshare -m --propagation private true 2> /dev/null; then
        echo "skip: cannot create a mount namespace (unshare -m)"
        exit 125
    fi
    PASSTHRU_IN_MOUNT_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary
unmount_all() {
    for m in $(awk -v t="$T" '$2 ~ "^"t {print $2}' /proc/self/mounts | sort -r); do umount "$m" 2> /dev/null || true; done
}
at_exit unmount_all

for host in "${VARIANTS[@]}"; do
    R=$T/$host
    copy_host "$host" "$R"
    "$P" --root "$R" plan "${REQ[@]}" --json > "$T/plan.json"
    last=$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["files"]; print(f[-1]["path"]); assert len(f) > 2' "$T/plan.json")
    dir=$R$(dirname "$last")

    # Read-only target directory.
    mount --bind "$dir" "$dir" || skip "mount --bind not allowed"
    mount -o remount,bind,ro "$dir"
    S0=$(tree_sum "$R")
    expect_rc 1 "$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2> "$T/ro.err"
    grep -q "Read-only file system" "$T/ro.err" || { cat "$T/ro.err"; fail "$host: EROFS not reported"; }
    grep -q 'file(s) were restored from generation 1' "$T/ro.err" || fail "$host: restore not reported"
    [[ $(tree_sum "$R") == "$S0" ]] || fail "$host: read-only target: tree not restored"
    grep -q '"state": "rolled-back"' "$R/var/lib/passthru/generations/1/manifest.json" || fail "$host: generation not marked rolled-back"
    umount "$dir"
    ok "$host: read-only $last: clean rollback, exit 1"

    # Full disk.
    copy_host "$host" "$R"
    cp -a "$dir" "$T/dir.save"
    mount -t tmpfs -o size=64k,mode=0755 tmpfs "$dir" || skip "mount -t tmpfs not allowed"
    cp -a "$T/dir.save/." "$dir/"
    rm -rf "$T/dir.save"
    dd if=/dev/zero of="$dir/.filler" bs=4k 2> /dev/null || true # until ENOSPC
    S0=$(tree_sum "$R")
    expect_rc 1 "$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2> "$T/full.err"
    grep -q "No space left on device" "$T/full.err" || { cat "$T/full.err"; fail "$host: ENOSPC not reported"; }
    [[ $(tree_sum "$R") == "$S0" ]] || fail "$host: full disk: tree not restored"
    grep -q '"state": "rolled-back"' "$R/var/lib/passthru/generations/1/manifest.json" || fail "$host: generation not marked rolled-back"
    umount "$dir"
    ok "$host: full disk under $(dirname "$last"): clean rollback, exit 1"
done
