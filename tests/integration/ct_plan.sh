#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Cards for containers (docs/facts.md: lxc-devices, nvidia-nodes) on
# lxc-epyc-4x2080ti: two cards for VM 101 (01:00, 41:00), 82:00 on nvidia
# (minor 1) for containers 105 and 106, 81:00 untouched. In the copy container
# 105 is stopped and has no devN: lines yet.
# - one plan --vm 101 --gpus 0,1 --ct 105 --gpus 3, then apply --yes, writes
#   exactly the files of tests/fixtures/expected/lxc-mixed (the VM config, the
#   container config, the host files), and nothing else; rollback --yes restores
#   every byte; history shows the whole request;
# - the grammar: each --gpus binds to the --vm or --ct before it; a container
#   with no --gpus of its own, or two, is a usage error (exit 2);
# - refusals (exit 3, nothing written): a running container, a card on vfio-pci,
#   a card both guests select, a kernel whose module tree has no nvidia;
# - the container's own video group from its rootfs when it is mounted;
# - a saved plan (--out, apply --plan) carries the containers.
# About 2 s.
source "$(dirname "$0")/lib.inc"
need_binary
need jq

H=lxc-epyc-4x2080ti
EXPECTED=$SRC/tests/fixtures/expected/lxc-mixed

# A copy with container 105 stopped and without its devN: lines.
fresh() { # DIR
    copy_host "$H" "$1"
    own_copy "$1/proc/net/unix"
    own_copy "$1/etc/pve/lxc/105.conf"
    sed -i '/lxc\/105\/command/d' "$1/proc/net/unix"
    sed -i '/^dev[0-9]/d' "$1/etc/pve/lxc/105.conf"
}
run() { # ARGS... -> $T/out.txt $T/err.txt, $RC
    RC=0
    "$P" --root "$T/h" "$@" >"$T/out.txt" 2>"$T/err.txt" || RC=$?
}

# --- the mixed plan, applied and rolled back --------------------------------
fresh "$T/h"
before=$(tree_sum "$T/h")
cp -a "$T/h" "$T/before"
run plan --vm 101 --gpus 0,1 --ct 105 --gpus 3 --json
[ "$RC" = 0 ] || fatal "mixed plan: exit $RC: $(head -3 "$T/err.txt")"
jq -e '.request.vm == "101" and .request.gpus == "0,1" and .request.containers == [{"ct": "105", "gpus": "3"}]' "$T/out.txt" >/dev/null ||
    fail "the plan's request: $(jq -c .request "$T/out.txt")"
want_paths=$(cd "$EXPECTED" && find . -type f | sed 's|^\.||' | LC_ALL=C sort)
have_paths=$(jq -r '.files[].path' "$T/out.txt" | LC_ALL=C sort)
[ "$have_paths" = "$want_paths" ] || fail "planned files: $(echo "$have_paths" | tr '\n' ' ') want $(echo "$want_paths" | tr '\n' ' ')"
jq -e '.binding == "address"' "$T/out.txt" >/dev/null || fail "VM 101's cards are not bound by address"
run apply --yes
[ "$RC" = 0 ] || fatal "apply: exit $RC: $(head -3 "$T/err.txt")"
while read -r path; do
    cmp -s "$EXPECTED$path" "$T/h$path" || fail "$path is not the expected text: $(diff "$EXPECTED$path" "$T/h$path" | head -5)"
done <<<"$want_paths"
changed=$(
    cd "$T/h"
    find . -path ./var/lib/passthru -prune -o -type f -print | sed 's|^\.||' | while read -r f; do
        cmp -s "$T/before$f" "$T/h$f" || echo "$f"
    done | LC_ALL=C sort
)
[ "$changed" = "$want_paths" ] || fail "apply changed other files: $(echo "$changed" | tr '\n' ' ')"
ok "plan --vm 101 --gpus 0,1 --ct 105 --gpus 3 + apply: exactly the expected VM config, container config and host files"
run history
grep -qE '^1 .* --vm 101 --gpus 0,1 --ct 105 --gpus 3$' "$T/out.txt" || fail "history: $(cat "$T/out.txt")"
run rollback --yes
[ "$RC" = 0 ] || fail "rollback: exit $RC: $(head -3 "$T/err.txt")"
[ "$(tree_sum "$T/h")" = "$before" ] || fail "rollback did not restore every byte: $(diff -r "$T/before" "$T/h" | grep -v var/lib/passthru | head -5)"
ok "one journaled generation; history shows the whole request; rollback --yes restores every byte"

# --- the container alone; the grammar -----------------------------------------
fresh "$T/h"
run plan --gpus 3 --ct 105 --json
[ "$RC" = 0 ] || fail "--gpus 3 --ct 105: exit $RC: $(head -3 "$T/err.txt")"
[ "$(jq -r '[.files[].path] | join(" ")' "$T/out.txt")" = "/etc/pve/lxc/105.conf /etc/systemd/system/passthru-nvidia-nodes.service /etc/systemd/system/pve-guests.service.d/passthru-nvidia-nodes.conf" ] ||
    fail "a container alone: $(jq -c '[.files[].path]' "$T/out.txt")"
jq -e '.commands == [] and .request.vm == "" and .request.containers == [{"ct": "105", "gpus": "3"}]' "$T/out.txt" >/dev/null ||
    fail "a container alone: no VM, no after-steps: $(jq -c '[.request, .commands]' "$T/out.txt")"
ok "plan --gpus 3 --ct 105: the --gpus before the only guest option is its; only the container's files"
run plan --ct 105 --ct 106 --gpus 3
[ "$RC" = 2 ] || fail "--ct 105 without its own --gpus: exit $RC"
grep -qF -- '--ct 105 needs its own --gpus after it' "$T/err.txt" || fail "no --gpus for 105: $(cat "$T/err.txt")"
run plan --ct 105 --gpus 3 --gpus 2
[ "$RC" = 2 ] || fail "--ct 105 with two --gpus: exit $RC"
grep -qF -- '--ct 105 has --gpus twice' "$T/err.txt" || fail "two --gpus: $(cat "$T/err.txt")"
ok "a container without its own --gpus, or with two, is a usage error (exit 2)"

# A privileged container that binds the card by hand: devN: lines without gid=,
# and a warning that names its raw line.
run plan --ct 106 --gpus 3 --json
[ "$RC" = 0 ] || fail "--ct 106: exit $RC: $(head -3 "$T/err.txt")"
jq -r '.files[] | select(.path == "/etc/pve/lxc/106.conf") | .content' "$T/out.txt" | grep -x 'dev[0-9]*: .*' >"$T/dev106.txt" || true
printf 'dev0: /dev/nvidia1\ndev1: /dev/nvidiactl\ndev2: /dev/nvidia-uvm\ndev3: /dev/nvidia-uvm-tools\n' | cmp -s - "$T/dev106.txt" ||
    fail "privileged 106: $(cat "$T/dev106.txt")"
jq -e '[.warnings[] | select(startswith("container 106 binds /dev/nvidia1 by hand (line 13:"))] | length == 1' "$T/out.txt" >/dev/null ||
    fail "no warning about 106's raw mount entry: $(jq -c .warnings "$T/out.txt")"
ok "a privileged container gets no gid=; its raw mount entry of the same node is named"

# --- refusals --------------------------------------------------------------------
sum=$(tree_sum "$T/h")
copy_host "$H" "$T/running"
RC=0
"$P" --root "$T/running" plan --ct 105 --gpus 3 >"$T/out.txt" 2>"$T/err.txt" || RC=$?
[ "$RC" = 3 ] || fail "running container: exit $RC"
grep -qF 'container 105 is running' "$T/out.txt" || fail "running container: $(cat "$T/out.txt")"
run plan --ct 105 --gpus 0
[ "$RC" = 3 ] || fail "a card on vfio-pci: exit $RC"
grep -qF 'is not driven by the host' "$T/out.txt" || fail "a card on vfio-pci: $(cat "$T/out.txt")"
run plan --vm 101 --gpus 0,1 --ct 105 --gpus 1
[ "$RC" = 3 ] || fail "a card for both: exit $RC"
grep -qF 'is selected for VM 101 and for container 105' "$T/out.txt" || fail "a card for both: $(cat "$T/out.txt")"
run plan --ct 107 --gpus 3
[ "$RC" = 3 ] || fail "no such container: exit $RC"
grep -qF 'container 107 has no config' "$T/out.txt" || fail "no such container: $(cat "$T/out.txt")"
[ "$(tree_sum "$T/h")" = "$sum" ] || fail "a refused plan changed the tree"
# A module tree for the running kernel without nvidia: refused, with the ways to get it.
kver=$(cat "$T/h/proc/sys/kernel/osrelease")
mods="$T/h/lib/modules/$kver"
mkdir -p "$mods"
cp "$SRC"/tests/fixtures/modindex/pve92-epyc-4x2080ti/modules.* "$mods/" # a Proxmox kernel's index, no nvidia in it
run plan --ct 105 --gpus 3
[ "$RC" = 3 ] || fail "kernel without nvidia: exit $RC"
grep -qF "kernel $kver has no nvidia module" "$T/out.txt" || fail "kernel without nvidia: $(cat "$T/out.txt")"
grep -qF "Debian's nvidia-driver (non-free" "$T/out.txt" || fail "kernel without nvidia: no way to get it"
ok "a kernel whose module tree has no nvidia is refused, with how to get the driver"
rm -rf --one-file-system "$T/h/lib/modules"
ok "refused (exit 3, nothing written): a running container, a card on vfio-pci, a card for both guests, no such container"

# --- the container's own group; a saved plan -------------------------------------
mkdir -p "$T/h/var/lib/lxc/105/rootfs/etc"
printf 'root:x:0:\nvideo:x:1044:\nrender:x:993:\n' >"$T/h/var/lib/lxc/105/rootfs/etc/group"
run plan --ct 105 --gpus 3 --out "$T/plan.json"
[ "$RC" = 0 ] || fail "saved plan: exit $RC: $(head -3 "$T/err.txt")"
jq -r '.files[] | select(.path == "/etc/pve/lxc/105.conf") | .content' "$T/plan.json" | grep -qx 'dev0: /dev/nvidia1,gid=1044' ||
    fail "the container's own video group: $(jq -r '.files[0].content' "$T/plan.json")"
run apply --plan "$T/plan.json" --dry-run
[ "$RC" = 0 ] || fail "apply --plan of a container plan: exit $RC: $(head -3 "$T/err.txt")"
ok "gid= the container's own video group from its mounted rootfs; a saved plan carries the containers"
finish "plan --ct"
