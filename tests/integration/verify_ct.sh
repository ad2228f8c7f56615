#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# passthru verify --ct N on copies of lxc-epyc-4x2080ti (82:00 on nvidia at minor
# 1, container 105 with devN: lines and running, 106 with mount entries and cgroup
# rules, stopped), the device nodes made in the copy with mknod (root only: git
# cannot store them). Each failure case breaks one thing and must show its FAIL
# line with its fix and exit 1, so each check fails this test without it:
#   a missing node (pct start's "Device ... does not exist"), a node with another
#   card's minor, a line naming a minor no card has, a bind mount no cgroup rule
#   allows, a rule naming a minor no card has, no nvidia-uvm major, no driver, a
#   config with no NVIDIA line; usage errors exit 2, a missing config 1; nothing
#   is written. The inside checks (pct exec) are unit tests (test_apply_verify_ct).
source "$(dirname "$0")/lib.inc"
need_binary

H=lxc-epyc-4x2080ti
copy_host "$H" "$T/probe"
mknod "$T/probe/dev-probe" c 1 3 2> /dev/null || skip "mknod is not permitted here (needs root): the device nodes cannot be made"

# new_host DIR: a copy with the nodes the host's driver makes.
new_host() {
    copy_host "$H" "$1"
    mkdir -p "$1/dev"
    mknod "$1/dev/nvidia0" c 195 0
    mknod "$1/dev/nvidia1" c 195 1
    mknod "$1/dev/nvidiactl" c 195 255
    mknod "$1/dev/nvidia-uvm" c 238 0
    mknod "$1/dev/nvidia-uvm-tools" c 238 1
}

# run_ct DIR CTID: verify --ct into $T/out, $T/err and $RC.
run_ct() {
    RC=0
    "$P" --root "$1" --color never verify --ct "$2" > "$T/out" 2> "$T/err" || RC=$?
}

# want_fail WHAT TEXT FIX: exit 1 with a FAIL line holding TEXT and a fix holding FIX.
want_fail() {
    [[ $RC -eq 1 ]] || fail "$1: exit $RC, want 1: $(cat "$T/out" "$T/err")"
    grep -F -- "FAIL " "$T/out" | grep -qF -- "$2" || fail "$1: no FAIL line with '$2': $(cat "$T/out")"
    grep -A1 -F -- "$2" "$T/out" | grep -E '^ +fix: ' | grep -qF -- "$3" || fail "$1: no fix with '$3': $(cat "$T/out")"
    ok "$1"
}

# --- all is well -----------------------------------------------------------------
new_host "$T/h"
sum=$(tree_sum "$T/h")
run_ct "$T/h" 105
[[ $RC -eq 0 ]] || fail "container 105 with its nodes: exit $RC: $(cat "$T/out" "$T/err")"
for line in "ok   the host's nvidia module is 550.163.01" \
    "ok   /dev/nvidia1 (dev0 (line 3)) is c 195:1 on the host, card 0000:82:00" \
    "ok   /dev/nvidiactl (dev1 (line 4)) is c 195:255 on the host" \
    "ok   /dev/nvidia-uvm (dev2 (line 5)) is c 238:0 on the host" \
    "ok   /dev/nvidia-uvm-tools (dev3 (line 6)) is c 238:1 on the host" \
    "note container 105 runs, but its inside is not checked under --root"; do
    grep -qF -- "  $line" "$T/out" || fail "105: no line '$line': $(cat "$T/out")"
done
run_ct "$T/h" 106
[[ $RC -eq 0 ]] || fail "container 106 with its nodes: exit $RC: $(cat "$T/out" "$T/err")"
grep -qF "ok   /dev/nvidia-uvm (lxc.mount.entry (line 15)) is allowed by the cgroup rule on line 12" "$T/out" ||
    fail "106: the bind mount's cgroup rule is not named: $(cat "$T/out")"
grep -qF "note container 106 is not running" "$T/out" || fail "106: not said to be stopped"
[[ "$(tree_sum "$T/h")" == "$sum" ]] || fail "verify --ct changed the tree"
ok "verify --ct: devN: nodes and bind mounts with their rules pass (exit 0), nothing written"

# --- each failure, with its fix ----------------------------------------------------
rm "$T/h/dev/nvidia-uvm-tools"
run_ct "$T/h" 105
want_fail "a missing node" '/dev/nvidia-uvm-tools (dev3 (line 6)) does not exist on the host: pct start fails with "Device /dev/nvidia-uvm-tools does not exist"' \
    "make it: nvidia-modprobe -u -c 0"
mknod "$T/h/dev/nvidia-uvm-tools" c 238 1

rm "$T/h/dev/nvidia1"
mknod "$T/h/dev/nvidia1" c 195 0
run_ct "$T/h" 105
want_fail "a node with another card's minor" "/dev/nvidia1 (dev0 (line 3)) on the host is c 195:0, not c 195:1, card 0000:82:00" \
    "the node is stale: remove it (rm /dev/nvidia1) and make it again: nvidia-modprobe -c 1"
rm "$T/h/dev/nvidia1"
mknod "$T/h/dev/nvidia1" c 195 1

C=$T/h/etc/pve/lxc/105.conf
own_copy "$C"
sed -i 's|^dev0: /dev/nvidia1,|dev0: /dev/nvidia3,|' "$C"
run_ct "$T/h" 105
want_fail "a line naming a minor no card has" "/dev/nvidia3 (dev0 (line 3)): no card on the nvidia driver has minor 3 (cards on nvidia: 0000:81:00 /dev/nvidia0, 0000:82:00 /dev/nvidia1)" \
    "pct set 105 --devN /dev/nvidiaM"
sed -i '/^dev[0-9]*: /d' "$C"
run_ct "$T/h" 105
want_fail "a config with no NVIDIA line" "container 105's config (/etc/pve/lxc/105.conf) names no NVIDIA device node" "plan --ct 105 --gpus SEL, or pct set 105 --dev0 /dev/nvidiaM"

C=$T/h/etc/pve/lxc/106.conf
own_copy "$C"
sed -i '/c 238:\* rwm/d' "$C"
run_ct "$T/h" 106
want_fail "a bind mount no cgroup rule allows" "/dev/nvidia-uvm (lxc.mount.entry (line 14)) is bound in, but no lxc.cgroup2.devices.allow line allows c 238:0: opening it inside fails with EPERM" \
    "add 'lxc.cgroup2.devices.allow: c 238:0 rwm' to /etc/pve/lxc/106.conf"
sed -i 's|c 195:1 rwm|c 195:3 rwm|' "$C"
run_ct "$T/h" 106
want_fail "a rule naming a minor no card has" "the cgroup rule on line 10 allows c 195:3, but no card on the nvidia driver has minor 3" \
    "to the minor of the card the container should have"

new_host "$T/h2"
own_copy "$T/h2/proc/devices"
sed -i '/ nvidia-uvm$/d' "$T/h2/proc/devices"
run_ct "$T/h2" 105
want_fail "no nvidia-uvm major" "/dev/nvidia-uvm (dev2 (line 5)): the host has no nvidia-uvm device (no nvidia-uvm in /proc/devices)" \
    "modprobe nvidia-uvm && nvidia-modprobe -u -c 0"
rm "$T/h2/proc/driver/nvidia/version"
run_ct "$T/h2" 105
want_fail "no nvidia driver" "the nvidia driver is not loaded on the host" "Debian's nvidia-driver from non-free"

# --- usage and a missing config -------------------------------------------------------
expect_rc 2 "$P" --root "$T/h" verify --ct 105 --vm 101
expect_rc 2 "$P" --root "$T/h" verify --ct 42
run_ct "$T/h" 107
[[ $RC -eq 1 ]] && grep -qF "container 107 has no config (/etc/pve/lxc/107.conf)" "$T/err" ||
    fail "a missing config: exit $RC: $(cat "$T/err")"
finish "verify --ct"
