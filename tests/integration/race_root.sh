#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The race out of the root (a high-severity hardening finding): while apply and rollback run,
# the owner of the tree exchanges etc/modprobe.d with a symlink to a
# directory outside the root (renameat2 RENAME_EXCHANGE in a loop). HostFs
# used to resolve symlinks in user space and then write, rename and unlink by
# path name, so passthru-vfio.conf appeared in that outside directory and
# rollback's unlink deleted the file of the same name there. Now every access
# is an openat2(RESOLVE_IN_ROOT) and every change an *at() call on the
# directory so opened: the outside directory never changes, whatever the
# commands themselves answer. PASSTHRU_RACE_ROUNDS sets the rounds (CI: 30, about 75 s; for a long
# run, e.g. 300, run it through ctest with the variable set).
source "$(dirname "$0")/lib.inc"
need_binary
SWAPPER_BIN=${PASSTHRU_RACE_SWAPPER:-}
[[ -x $SWAPPER_BIN ]] || { echo "PASSTHRU_RACE_SWAPPER must name the race-swapper binary (CTest sets it)" >&2; exit 1; }

ROUNDS=${PASSTHRU_RACE_ROUNDS:-30}
O=$T/outside
mkdir -p "$O/victim"
echo "outside" > "$O/victim/passthru-vfio.conf"
echo "outside" > "$O/victim/pve-blacklist.conf"
O0=$(tree_sum "$O")

# The swapper (tests/support/race_swapper.cpp, a loop of renameat2
# RENAME_EXCHANGE): exchanges etc/modprobe.d and etc/swap (a symlink to the
# outside directory) of $T/cur, the root of the current round, as fast as it
# can, by path; it counts the exchanges that took place. A Python loop was
# too slow: the binary before openat2 passed 15 rounds against it, while
# against this one it wrote outside the root in rounds 15 and 28 of two
# runs and before the end of a third (60 rounds each).
"$SWAPPER_BIN" "$T/cur/etc/modprobe.d" "$T/cur/etc/swap" "$T/exchanges" &
SWAPPER=$!
at_exit "kill $SWAPPER 2> /dev/null"

crashes=0
applied=0
for ((i = 0; i < ROUNDS; i++)); do
    R=$T/r$i
    copy_host epyc-4x2080ti "$R"
    ln -s "$O/victim" "$R/etc/swap"
    ln -sfn "r$i" "$T/cur"
    rm -rf "$T/r$((i - 1))" 2> /dev/null || true
    rc=0
    "$P" --root "$R" apply --vm 101 --gpus all --yes > /dev/null 2>&1 || rc=$?
    [[ $rc -ge 128 ]] && crashes=$((crashes + 1))
    [[ $rc -eq 0 ]] && applied=$((applied + 1))
    rc=0
    "$P" --root "$R" rollback --yes > /dev/null 2>&1 || rc=$?
    [[ $rc -ge 128 ]] && crashes=$((crashes + 1))
    if [[ $(tree_sum "$O") != "$O0" ]]; then
        fail "round $i: the directory outside the root changed: $(ls -A "$O/victim" | tr '\n' ' ')"
        break
    fi
done
kill "$SWAPPER"
wait "$SWAPPER" || true
exchanges=$(cat "$T/exchanges" 2> /dev/null || echo 0)
[[ $crashes -eq 0 ]] || fail "$crashes runs crashed"
[[ $exchanges -gt 0 ]] || fail "the swapper exchanged nothing: the race did not run"
[[ $(cat "$O/victim/passthru-vfio.conf") == outside ]] || fail "the outside passthru-vfio.conf was replaced or deleted"

# plan and libkmod: passthru picks the modprobe.d files through HostFs, but
# libkmod used to open each one by a path passthru had resolved, so while
# etc/modprobe.d was swapped for a symlink to a root-only directory outside
# the root, root's plan read the files there (and printed what they said).
# Now libkmod parses only text passthru read through HostFs: under strace no
# open by name of anything under the root's modprobe.d shows (HostFs opens
# relative to the root's descriptor), and the outside marker never appears.
command -v strace > /dev/null || fatal "strace is missing (scripts/deps.sh installs it)"
mkdir -p "$O/secret"
printf 'install vfio_pci /sbin/passthru-outside-marker\n' > "$O/secret/pve-blacklist.conf"
printf 'options vfio_pci ids=passthru-outside-marker\n' > "$O/secret/zz-outside-marker.conf"
chmod 0700 "$O/secret"
chmod 0600 "$O/secret"/*.conf
"$SWAPPER_BIN" "$T/cur/etc/modprobe.d" "$T/cur/etc/swap" "$T/exchanges" &
SWAPPER=$!
F0=$LIB_FAILED
for ((i = 0; i < ROUNDS; i++)); do
    R=$T/p$i
    copy_host epyc-4x2080ti "$R"
    ln -s "$O/secret" "$R/etc/swap"
    ln -sfn "p$i" "$T/cur"
    rm -rf "$T/p$((i - 1))" 2> /dev/null || true
    rc=0
    # LeakSanitizer cannot work under ptrace (the sanitizer run): leaks off for this run only
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        strace -f -qq -e trace=open,openat,stat,newfstatat,statx -o "$T/ptrace" "$P" --root "$R" plan --vm 101 --gpus all > "$T/pout" 2>&1 || rc=$?
    [[ $rc -ge 128 ]] && crashes=$((crashes + 1))
    if grep -q 'passthru-outside-marker' "$T/pout"; then
        fail "plan round $i: a file outside the root was read and printed: $(grep -m1 'passthru-outside-marker' "$T/pout")"
        break
    fi
    if grep -E '"[^"]*/etc/(modprobe\.d|swap)/[^"]*\.conf"' "$T/ptrace" | grep -q -v '^[0-9]* *openat2'; then
        fail "plan round $i: a modprobe.d file was opened by its name: $(grep -m1 -E '/etc/(modprobe\.d|swap)/[^"]*\.conf' "$T/ptrace")"
        break
    fi
done
kill "$SWAPPER"
wait "$SWAPPER" || true
[[ $crashes -eq 0 ]] || fail "$crashes plan runs crashed"
[[ $(cat "$T/exchanges" 2> /dev/null || echo 0) -gt 0 ]] || fail "the swapper exchanged nothing during plan: the race did not run"
[[ $LIB_FAILED -eq $F0 ]] && ok "$ROUNDS rounds of plan against etc/modprobe.d exchanged with a root-only directory outside: libkmod opened no file by name, nothing outside read"

finish "$ROUNDS rounds of apply and rollback ($applied applied) against $exchanges directory/symlink exchanges: nothing outside the root written or removed"
