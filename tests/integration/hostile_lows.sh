#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Hostile input, second round, the Lows: each repro asserting the safe
# outcome (a documented exit code, nothing hidden, nothing left behind).
source "$(dirname "$0")/lib.inc"
need_binary

# run_rc CMD...: runs CMD with stdout/stderr in $T/out, $T/err; its exit code in RC.
run_rc() {
    RC=0
    "$@" > "$T/out" 2> "$T/err" || RC=$?
}

# --- apply --plan names something that is not a saved plan ------------------
# A FIFO blocked apply forever, /dev/zero read until memory ran out. Only a
# regular file of a sane size is read; the open never waits.
R=$T/saved
copy_host epyc-4x2080ti "$R"
mkfifo "$T/fifo"
truncate -s 20M "$T/huge.json"
S0=$(tree_sum --with-journal "$R")
for f in "$T/fifo" /dev/zero "$T/huge.json"; do
    run_rc timeout 20 "$P" --root "$R" apply --plan "$f" --yes
    [[ $RC -eq 2 ]] || fail "apply --plan $f: exit $RC, expected 2 (124: it hung): $(head -2 "$T/err")"
    grep -q -e 'not a regular file' -e 'larger than' "$T/err" || fail "apply --plan $f: not explained: $(head -2 "$T/err")"
done
[[ $(tree_sum --with-journal "$R") == "$S0" ]] || fail "apply --plan of a FIFO, a device or a huge file wrote something"
stop_if_failed
ok "apply --plan of a FIFO, /dev/zero or a 20 MiB file: exit 2 at once, nothing written"

# --- a manifest that is not a regular file hides no generation --------------
# generations/1/manifest.json replaced by a directory or a FIFO: history said
# "No generations" (exit 0) while the host was changed. Now the generation is
# listed as unreadable and rollback and apply refuse (exit 1, as for any
# manifest they cannot read).
for kind in dir fifo; do
    R=$T/manifest-$kind
    copy_host epyc-4x2080ti "$R"
    "$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2>&1 || fatal "apply on the fixture failed"
    m=$R/var/lib/passthru/generations/1/manifest.json
    rm "$m"
    if [[ $kind == dir ]]; then mkdir "$m"; else mkfifo "$m"; fi
    S1=$(tree_sum --with-journal "$R")
    run_rc timeout 20 "$P" --root "$R" history
    [[ $RC -ne 0 && $RC -lt 124 ]] || fail "manifest as a $kind: history exit $RC"
    grep -q 'No generations' "$T/out" && fail "manifest as a $kind: history says there are no generations"
    grep -q 'generation 1' "$T/err" || fail "manifest as a $kind: history does not name generation 1: $(head -2 "$T/err")"
    for cmd in "rollback --yes" "apply ${REQ[*]} --yes"; do
        # shellcheck disable=SC2086
        run_rc timeout 20 "$P" --root "$R" $cmd
        [[ $RC -eq 1 ]] && grep -q 'generation 1 has a malformed manifest' "$T/err" \
            || fail "manifest as a $kind: '$cmd' exit $RC, expected 1 naming generation 1: $(head -2 "$T/err")"
    done
    [[ $(tree_sum --with-journal "$R") == "$S1" ]] || fail "manifest as a $kind: something was written"
done
stop_if_failed
ok "a manifest that is a directory or a FIFO: history names the generation, rollback and apply refuse (exit 1)"

# --- temporary files a kill left are swept ------------------------------------
# Inside var/lib/passthru/generations/N/ (a manifest or pre-image write cut
# before its rename, a generation that died before its manifest) and next to
# plan --out FILE: nothing ever removed them. The next command that takes the
# journal's lock sweeps the journal; the next plan --out FILE sweeps FILE's.
R=$T/sweep
copy_host epyc-4x2080ti "$R"
"$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2>&1 || fatal "apply on the fixture failed"
G=$R/var/lib/passthru/generations
echo stale > "$G/1/.manifest.json.passthru-42"
mkdir -p "$G/1/before/etc/default"
echo stale > "$G/1/before/etc/default/.grub.passthru-7"
mkdir -p "$G/2/before/etc"
echo stale > "$G/2/before/etc/stale-pre-image"
echo keep > "$G/1/not-a-temp-file"
run_rc "$P" --root "$R" rollback --yes
[[ $RC -eq 0 ]] || fail "sweep: rollback exit $RC: $(head -2 "$T/err")"
[[ ! -e $G/1/.manifest.json.passthru-42 && ! -e $G/1/before/etc/default/.grub.passthru-7 ]] \
    || fail "sweep: temporary files inside generation 1 were left"
[[ ! -e $G/2/before/etc/stale-pre-image ]] || fail "sweep: the remains of a generation without a manifest were left (and its number reused)"
[[ -f $G/1/not-a-temp-file ]] || fail "sweep: a file that is no temporary file was removed"
mkdir -p "$T/out-dir"
stale=$T/out-dir/.plan.json.passthru-0123456789abcdef
echo stale > "$stale"
# another user's file: only root can give one away (as another user, that check is left out)
other=
if [[ $(id -u) == 0 ]]; then
    other=$T/out-dir/.plan.json.passthru-fedcba9876543210
    echo other > "$other"
    chown 65534 "$other"
else
    echo "skip: another user's temporary file next to plan --out needs root (chown)"
fi
run_rc "$P" --root "$R" plan "${REQ[@]}" --out "$T/out-dir/plan.json"
[[ $RC -eq 0 && -f $T/out-dir/plan.json ]] || fail "sweep: plan --out exit $RC: $(head -2 "$T/err")"
[[ ! -e $stale ]] || fail "sweep: plan --out left the temporary file of an earlier, killed plan --out"
[[ -z $other || -f $other ]] || fail "sweep: plan --out removed another user's file"
stop_if_failed
ok "temporary files of killed writes: swept from generation directories under the lock, and next to plan --out FILE (this user's only)"

# --- modprobe.d: libkmod's own words, and a kmod mask -------------------------
# A line libkmod cannot parse printed "libkmod: ERROR ..." to stderr; a mask
# (X.conf -> /dev/null, kmod's way to switch a packaged file off) refused
# every plan as "not a regular file".
R=$T/kmod
copy_host epyc-4x2080ti "$R"
printf 'this is no modprobe directive\n' > "$R/etc/modprobe.d/bad-line.conf"
ln -s /dev/null "$R/etc/modprobe.d/masked.conf"
run_rc "$P" --root "$R" plan "${REQ[@]}"
[[ $RC -eq 0 ]] || fail "a kmod mask and a bad line: plan exit $RC, expected 0: $(head -3 "$T/err")"
grep -q 'libkmod' "$T/err" && fail "libkmod's own error line reached stderr: $(grep -m1 libkmod "$T/err")"
grep -q 'masked.conf' "$T/out" "$T/err" && fail "the mask was reported: $(grep -m1 masked.conf "$T/out" "$T/err")"
stop_if_failed
ok "modprobe.d: a mask (-> /dev/null) is planned around, libkmod's own error lines never reach stderr"

# --- a dangling etc/pve/qemu-server -----------------------------------------
# Every VM config looked missing, so plan planned 'qm create' over VM 101.
R=$T/vmdir
copy_host epyc-4x2080ti "$R"
rm -rf "$R/etc/pve/qemu-server"
ln -s nodes/gone/qemu-server "$R/etc/pve/qemu-server"
S0=$(tree_sum --with-journal "$R")
run_rc "$P" --root "$R" plan "${REQ[@]}"
[[ $RC -eq 3 ]] || fail "a dangling qemu-server: plan exit $RC, expected 3"
grep -q '/etc/pve/qemu-server is not a directory' "$T/err" || fail "a dangling qemu-server: not explained: $(head -2 "$T/err")"
grep -q 'qm create' "$T/out" "$T/err" && fail "a dangling qemu-server: the plan still creates the VM"
run_rc "$P" --root "$R" apply "${REQ[@]}" --yes
[[ $RC -eq 3 && $(tree_sum --with-journal "$R") == "$S0" ]] || fail "a dangling qemu-server: apply exit $RC or wrote something"
stop_if_failed
ok "a dangling /etc/pve/qemu-server is refused (exit 3), no 'qm create'"

# --- host text that spells passthru's own colour, or bidi/invisible characters
# With --color always, a VM description holding ESC[1;31m (the very colour
# passthru writes) reached the terminal as colour, and U+202E (right-to-left
# override), U+200B (zero width space) or U+FEFF passed as they were: a name
# could read as another. Now only passthru's own styling (marked with a key
# the host cannot know) is colour; the rest is shown as \e[..., \u202e.
R=$T/bidi
copy_host epyc-4x2080ti "$R"
own_copy "$R/etc/pve/qemu-server/101.conf"
# (the characters as bytes: $'\u202e' depends on the locale)
desc=$'red\e[1;31mALERT\e[0m rlo\xe2\x80\xaeexe.txt zw\xe2\x80\x8bsp bom\xef\xbb\xbfx'
{ printf 'description: %s\n' "$desc"; cat "$R/etc/pve/qemu-server/101.conf"; } > "$T/101.conf"
cat "$T/101.conf" > "$R/etc/pve/qemu-server/101.conf"
run_rc "$P" --root "$R" --color always plan "${REQ[@]}"
[[ $RC -eq 0 ]] || fail "bidi: plan exit $RC: $(head -2 "$T/err")"
LC_ALL=C grep -q $'\e\\[1;31mALERT' "$T/out" && fail "bidi: the description's ESC[1;31m reached the terminal as colour"
grep -qF 'red\e[1;31mALERT\e[0m' "$T/out" || fail "bidi: the description's colour sequence is not shown escaped: $(grep -a ALERT "$T/out" | cat -v)"
LC_ALL=C grep -q $'\xe2\x80\xae\|\xe2\x80\x8b\|\xef\xbb\xbf' "$T/out" "$T/err" && fail "bidi: a bidi control or invisible character reached the terminal"
grep -qF 'rlo\u202eexe.txt zw\u200bsp bom\ufeffx' "$T/out" || fail "bidi: the characters are not shown as \\uNNNN: $(grep -a rlo "$T/out" | cat -v)"
LC_ALL=C grep -q $'\e\\[' "$T/out" || fail "bidi: --color always shows no colour of passthru's own"
"$P" --root "$R" plan "${REQ[@]}" --json 2> /dev/null | jq -r '.. | strings' > "$T/strings"
grep -qF "$desc" "$T/strings" || fail "bidi: plan --json does not carry the description exactly"
# A usage error names the word typed: it goes through the same guard.
run_rc "$P" --root "$R" --color always $'--bogus\e]0;title\a'
[[ $RC -eq 2 ]] || fail "bidi: an unknown option with an escape: exit $RC, expected 2"
LC_ALL=C grep -q $'\e\\]' "$T/err" && fail "bidi: the typed escape reached the terminal raw in a usage error"
stop_if_failed
ok "host text spelling passthru's colour or bidi/invisible characters is shown escaped; passthru's own colour stays"

# --- generation ids out of range -------------------------------------------------
# After generation 999999999999999999 (18 digits, the most ids have) a
# rollback wrote generation 1000000000000000000, which every later command
# skipped as no generation of passthru's: the host was changed and history
# did not show it. Now the next id is refused before anything is written,
# and a directory with a longer number is named, not skipped.
R=$T/ids
copy_host epyc-4x2080ti "$R"
"$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2>&1 || fatal "apply on the fixture failed"
G=$R/var/lib/passthru/generations
big=999999999999999999
mv "$G/1" "$G/$big"
sed -i "s/\"id\": 1,/\"id\": $big,/" "$G/$big/manifest.json"
run_rc "$P" --root "$R" history
[[ $RC -eq 0 ]] && grep -q "^$big " "$T/out" || fail "ids: history of generation $big: exit $RC: $(head -2 "$T/err")"
S1=$(tree_sum --with-journal "$R")
run_rc "$P" --root "$R" rollback --yes
[[ $RC -eq 3 ]] || fail "ids: rollback after generation $big: exit $RC, expected 3"
grep -q "generation $big is the last id passthru can number" "$T/err" || fail "ids: the exhausted ids are not explained: $(head -2 "$T/err")"
[[ $(tree_sum --with-journal "$R") == "$S1" ]] || fail "ids: the refused rollback wrote something: $(ls "$G")"
mkdir "$G/1${big//9/0}0"
run_rc "$P" --root "$R" history
[[ $RC -eq 3 ]] || fail "ids: history with a 19-digit generation directory: exit $RC, expected 3"
grep -q "generations/1${big//9/0}0 is out of range for a generation id" "$T/err" || fail "ids: the 19-digit directory is not named: $(head -2 "$T/err")"
stop_if_failed
ok "generation ids: the id after 18 digits is refused (exit 3, nothing written), a longer-numbered directory is named"

# --- the repository's data is read only from the build tree ------------------
# Every binary fell back to the templates and profiles of the directory it was
# compiled in: an installed passthru would read whatever was left there. A
# copy of the binary outside the build tree (as installed) reads only the
# installed data and --data-dir.
R=$T/datadir
copy_host epyc-4x2080ti "$R"
mkdir "$T/bin"
cp "$P" "$T/bin/passthru"
if [[ -d /usr/share/passthru || -d /usr/local/share/passthru ]]; then
    ok "data dir: skipped, passthru's data is installed on this machine"
else
    run_rc "$T/bin/passthru" --root "$R" plan "${REQ[@]}"
    [[ $RC -ne 0 ]] || fail "data dir: a binary outside the build tree read the repository's data"
    grep -q 'passthru data file .* not found' "$T/err" || fail "data dir: not explained: $(head -2 "$T/err")"
    run_rc "$T/bin/passthru" --root "$R" --data-dir "$SRC" plan "${REQ[@]}"
    [[ $RC -eq 0 ]] || fail "data dir: the copy with --data-dir: exit $RC: $(head -2 "$T/err")"
    run_rc "$P" --root "$R" plan "${REQ[@]}"
    [[ $RC -eq 0 ]] || fail "data dir: the binary in the build tree: exit $RC: $(head -2 "$T/err")"
    stop_if_failed
    ok "data dir: the repository's data only for a binary in its build tree, never for one installed elsewhere"
fi

# --- plan records the pending plan only under the journal's lock -------------
# plan wrote pending-plan.json without the lock, so a plan during an apply
# reported a pending plan that the apply then deleted. Now, while another
# passthru holds the lock, plan still prints the plan but records nothing
# and says so.
if command -v flock > /dev/null; then
    R=$T/planlock
    copy_host epyc-4x2080ti "$R"
    mkdir -p "$R/var/lib/passthru"
    (flock 9 && exec sleep 30) 9> "$R/var/lib/passthru/lock" &
    holder=$!
    for _ in $(seq 100); do
        flock -n "$R/var/lib/passthru/lock" true 2> /dev/null || break
        sleep 0.1
    done
    run_rc "$P" --root "$R" plan "${REQ[@]}"
    kill "$holder"
    wait "$holder" 2> /dev/null || true
    [[ $RC -eq 0 ]] || fail "plan under a held lock: exit $RC, expected 0: $(head -2 "$T/err")"
    [[ ! -e $R/var/lib/passthru/pending-plan.json ]] || fail "plan under a held lock recorded the pending plan"
    grep -q 'not recorded as the pending plan: another passthru' "$T/err" "$T/out" || fail "plan under a held lock: not explained: $(grep -h pending "$T/err" "$T/out")"
    run_rc "$P" --root "$R" plan "${REQ[@]}"
    [[ $RC -eq 0 && -f $R/var/lib/passthru/pending-plan.json ]] || fail "plan without the lock held: exit $RC, or no pending plan"
    stop_if_failed
    ok "plan records the pending plan only under the journal's lock; held by another, it says so"
fi

# --- recovery deletes no file it did not write --------------------------------
# A pending manifest (interrupted, or tampered with) that names a file as
# created by passthru: recovery would delete it. It deletes or restores a
# file only when its bytes are what the manifest says passthru wrote (or
# what was there before); the admin's own file is refused (exit 1) and kept.
R=$T/recover-created
copy_host epyc-4x2080ti "$R"
"$P" --root "$R" apply "${REQ[@]}" --yes > /dev/null 2>&1 || fatal "apply on the fixture failed"
m=$R/var/lib/passthru/generations/1/manifest.json
sed -i 's/"state": "committed"/"state": "pending"/' "$m"
grep -q '"state": "pending"' "$m" || fatal "recover-created: the manifest has no state to set"
conf=$R/etc/modprobe.d/passthru-vfio.conf
printf '# the admin own file\noptions vfio-pci ids=10de:1e07\n' > "$conf"
S1=$(tree_sum --with-journal "$R")
run_rc "$P" --root "$R" rollback --yes
[[ $RC -eq 1 ]] || fail "recover-created: recovery exit $RC, expected 1: $(head -2 "$T/err")"
grep -q 'changed since generation 1 was interrupted: .*/etc/modprobe.d/passthru-vfio.conf' "$T/err" \
    || fail "recover-created: the admin's file is not named: $(head -2 "$T/err")"
[[ -f $conf && $(tree_sum --with-journal "$R") == "$S1" ]] || fail "recover-created: the admin's file was deleted or something written"
stop_if_failed
ok "recovery deletes no file it created when its bytes are not what the manifest says passthru wrote (exit 1, kept)"

# --- a dangling /etc/kernel/cmdline on a systemd-boot host --------------------
# It read as "no /etc/kernel/cmdline", so the host was taken for GRUB through
# proxmox-boot-tool and its kernel arguments planned into /etc/default/grub,
# which systemd-boot never reads. Now the link counts as the file: the plan
# names systemd-boot, and reading the file fails closed.
R=$T/sdboot
copy_host epyc-4x2080ti-zfs "$R"
rm "$R/etc/kernel/cmdline"
ln -s ../../nowhere/cmdline "$R/etc/kernel/cmdline"
S0=$(tree_sum "$R")
run_rc "$P" --root "$R" plan "${REQ[@]}"
[[ $RC -ne 0 && $RC -lt 70 ]] || fail "a dangling /etc/kernel/cmdline: plan exit $RC, expected a refusal"
grep -q 'GRUB via proxmox-boot-tool' "$T/out" "$T/err" && fail "a dangling /etc/kernel/cmdline: the host is taken for GRUB"
grep -q 'etc/kernel/cmdline' "$T/err" || fail "a dangling /etc/kernel/cmdline: not named: $(head -2 "$T/err")"
[[ $(tree_sum "$R") == "$S0" ]] || fail "a dangling /etc/kernel/cmdline: plan wrote something"
stop_if_failed
ok "a dangling /etc/kernel/cmdline on a systemd-boot host is no GRUB host: plan refuses, naming it"

# --- third round ---------------------------------------------------------------

# --connect test:///PATH: libvirt's test driver opens PATH itself. A FIFO there
# hung plan for ever (nobody writes it), a device was opened. Only a regular
# file of a sane size is handed on: exit 2 at once, the FIFO's writer not woken.
R=$T/connect
copy_host epyc-4x2080ti "$R"
mkfifo "$T/node.fifo"
rm -f "$T/woken"
(exec 3> "$T/node.fifo" && echo woken > "$T/woken") &
writer=$!
for uri in "test://$T/node.fifo" "test:///dev/zero"; do
    run_rc timeout 20 "$P" --root "$R" plan --backend libvirt --vm vm1 --gpus all --connect "$uri"
    [[ $RC -eq 2 ]] || fail "--connect $uri: exit $RC, expected 2 (124: it hung): $(head -2 "$T/err")"
    grep -q 'not a regular file' "$T/err" || fail "--connect $uri: not explained: $(head -2 "$T/err")"
done
sleep 0.2
[[ -e $T/woken ]] && fail "--connect of a FIFO: the FIFO was opened (its writer woke)"
kill "$writer" 2> /dev/null || true
wait "$writer" 2> /dev/null || true
stop_if_failed
ok "--connect test:///FIFO or a device: exit 2 at once, never opened"

# --- a bond or bridge alone: plan and apply take the same requests -------------
# plan --bond alone planned the network change (exit 0), apply --bond alone was
# refused as no request (exit 2). apply takes what plan takes.
R=$T/bond
copy_host epyc-4x2080ti "$R"
BOND=(--bond "enp66s0f0,enp66s0f1")
run_rc "$P" --root "$R" plan "${BOND[@]}"
[[ $RC -eq 0 ]] || fail "plan --bond alone: exit $RC: $(head -2 "$T/err")"
grep -q 'bond0' "$T/out" || fail "plan --bond alone plans no bond: $(head -5 "$T/out")"
cp "$T/out" "$T/plan.out"
run_rc "$P" --root "$R" apply "${BOND[@]}" --dry-run
[[ $RC -eq 0 ]] && cmp -s "$T/out" "$T/plan.out" || fail "apply --bond alone --dry-run: exit $RC or not plan's diffs: $(head -2 "$T/err")"
run_rc "$P" --root "$R" apply "${BOND[@]}" --yes
[[ $RC -eq 0 ]] || fail "apply --bond alone: exit $RC, expected 0: $(head -2 "$T/err")"
grep -q 'bond0' "$R/etc/network/interfaces"* || fail "apply --bond alone wrote no bond"
stop_if_failed
ok "--bond alone: plan, apply --dry-run (the same diffs) and apply all exit 0"

# --- an override failures.json pattern costs the line's length, not its square ---
# "{a:word}{b:hex} ZZZZZZZZQ" against lines of 4,000 word characters: each start
# measured the rest of the run again and copied it (100 lines: 5.6 s of CPU; 20,000
# lines: minutes). Now a run is measured once per line and nothing is copied
# before a piece matches. CPU time, not wall time, so a loaded machine does not
# count.
R=$T/quadratic
copy_host epyc-4x2080ti "$R"
own_copy "$R/etc/pve/qemu-server/101.conf"
echo "hostpci0: 0000:01:00,pcie=1,x-vga=1" >> "$R/etc/pve/qemu-server/101.conf"
mkdir -p "$R/etc/passthru/profiles" "$R/var/log/pve/tasks/2"
python3 - "$SRC/profiles/failures.json" "$R/etc/passthru/profiles/failures.json" << 'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["failures"].append({"id": "slow-pattern", "where": "task_log", "pattern": "{a:word}{b:hex} ZZZZZZZZQ",
                      "cause": "c", "fix": "f", "plan_option": "", "source": "s"})
json.dump(d, open(sys.argv[2], "w"))
PY
upid="UPID:pve:000C3D4F:0437F1B8:6564A3F2:qmstart:101:root@pam:"
python3 -c "import sys; sys.stdout.write(('a' * 4000 + ' ZZZZZZZZQ\n') * 100 + 'TASK ERROR: start failed\n')" > "$R/var/log/pve/tasks/2/$upid"
printf '%s %08X %s\n' "$upid" $((16#6564A3F2 + 2)) "start failed" > "$R/var/log/pve/tasks/index"
cpu=$({
    TIMEFORMAT='%U %S'
    time timeout 120 "$P" --root "$R" explain 101 > "$T/out" 2> "$T/err"
} 2>&1) || true
read -r user sys <<< "$cpu"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) + float(sys.argv[2]) < 2 else 1)" "$user" "$sys" \
    || fail "explain with a pattern against 100 long lines took ${user}s + ${sys}s of CPU (2 s at most)"
grep -q 'start failed for a reason passthru does not know' "$T/err" || fail "explain with the slow pattern: $(head -2 "$T/err")"
stop_if_failed
ok "an override failures.json pattern against 100 lines of 4 KB: ${user}s of CPU"

# --- a task list over the size limit is said, never "no failed start" ----------
R=$T/bigindex
copy_host epyc-4x2080ti "$R"
mkdir -p "$R/var/log/pve/tasks"
truncate -s 300M "$R/var/log/pve/tasks/index"
run_rc "$P" --root "$R" explain 101
[[ $RC -eq 1 ]] && grep -q 'cannot read Proxmox VE.s task list /var/log/pve/tasks/index: .*larger than 256 MiB' "$T/err" \
    || fail "a 300 MiB task index: exit $RC: $(head -2 "$T/err")"
grep -qi 'nothing to explain' "$T/out" && fail "a 300 MiB task index: 'nothing to explain'"
rm -f "$R/var/log/pve/tasks/index"
stop_if_failed
ok "a task index over 256 MiB: exit 1 naming it, never 'nothing to explain'"

# --- the remains of a killed apply go with the next command that takes the lock --
# A generation cut off before its manifest and a temporary file: plan removes
# them when it records a pending plan (under the lock), as apply, rollback and
# confirm do; the commands that only read (history, verify, scan) leave them.
R=$T/sweep-plan
copy_host epyc-4x2080ti "$R"
"$P" --root "$R" apply --vm 101 --gpus 0 --yes > /dev/null 2>&1 || fatal "apply on the fixture failed"
G=$R/var/lib/passthru/generations
mkdir -p "$G/2/before/etc"
echo stale > "$G/2/before/etc/stale-pre-image"
echo stale > "$G/1/.manifest.json.passthru-42"
for cmd in history "verify --vm 101" scan; do
    # shellcheck disable=SC2086
    "$P" --root "$R" $cmd > /dev/null 2>&1 || true
done
[[ -e $G/2/before/etc/stale-pre-image && -e $G/1/.manifest.json.passthru-42 ]] || fail "a command that only reads removed the remains"
run_rc "$P" --root "$R" plan --vm 101 --gpus all
[[ $RC -eq 0 && -f $R/var/lib/passthru/pending-plan.json ]] || fail "sweep: plan exit $RC or no pending plan: $(head -2 "$T/err")"
[[ ! -e $G/2 && ! -e $G/1/.manifest.json.passthru-42 ]] || fail "plan recorded its pending plan under the lock and left the remains"
finish "the remains of a killed write: kept by the commands that only read, removed by plan under the lock"
