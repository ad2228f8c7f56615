#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Proxmox VE VM side of `passthru plan` on copies of every fixture host:
# each generated VM config passes the independent checker (pve_conf_check.py),
# every untouched line survives byte for byte, the result matches the golden
# file (PASSTHRU_TEST_ACCEPT=1 rewrites them), planning again after the
# change is a no-op, and the refusals (locked, running, card taken, no free hostpciN,
# container or other node's VMID) exit 3 with nothing planned.
source "$(dirname "$0")/lib.inc"
need_binary
CHECK=(python3 "$SRC/tests/integration/pve_conf_check.py")
GOLDEN=$SRC/tests/golden/vm

# content_of PLAN.json PATH -> planned content of PATH (exit 1 when not planned)
content_of() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
plan = json.load(open(sys.argv[1]))
for f in plan["files"]:
    if f["path"] == sys.argv[2]:
        sys.stdout.write(f["content"] or "")
        sys.exit(0)
sys.exit(1)
EOF
}

# golden NAME FILE: compare with (or, with PASSTHRU_TEST_ACCEPT=1, write) the golden file.
# Device names from pci.ids in the golden file are those of this machine's pci.ids
# (pci_names.py), so Debian 12 and Debian 13 compare against the same files.
golden() {
  local expected=$GOLDEN/expected/$1
  if [ "${PASSTHRU_TEST_ACCEPT:-0}" = 1 ]; then
    mkdir -p "$(dirname "$expected")"
    cp "$2" "$expected"
  elif [ ! -f "$expected" ]; then
    fail "missing golden file $expected (run with PASSTHRU_TEST_ACCEPT=1)"
  elif ! diff -u <(python3 "$SRC/tests/integration/pci_names.py" "$expected") "$2"; then
    fail "$1 differs from its golden file"
  fi
}

plan() { # ROOT ARGS... -> $T/plan.json, sets rc
  set +e
  "$PASSTHRU" --root "$1" plan "${@:2}" --json >"$T/plan.json" 2>"$T/plan.err"
  rc=$?
  set -e
}

checked=0
for host_dir in "$SRC"/tests/fixtures/hosts/*/; do
  host=$(basename "$host_dir")
  # Containers use a card there, so --gpus all is refused (card_owners.sh tests that).
  [ "$host" = lxc-epyc-4x2080ti ] && continue
  # One of its two cards shares its group with a NIC, so --gpus all is refused there
  # (plan_hosts.sh tests that; verify_after_reboot.sh plans and applies the other card).
  [ "$host" = ryzen-x570-dummy ] && continue
  for input in fixture fresh-linux snapshots-pending cloudinit; do
    root=$T/$host-$input
    copy_host "$host" "$root"
    mkdir -p "$root/etc/pve/qemu-server"
    conf=$root/etc/pve/qemu-server/101.conf
    if [ "$input" != fixture ]; then
      rm -f "$conf"
      cp "$GOLDEN/$input.conf" "$conf"
    fi
    [ -f "$conf" ] || continue
    own_copy "$conf"
    cp "$conf" "$T/before.conf"
    plan "$root" --vm 101 --gpus all
    if [ "$rc" = 2 ] && grep -q "no NVIDIA GPU" "$T/plan.err"; then
      continue # nothing to pass through on this host
    fi
    if [ "$rc" = 3 ]; then
      # Refused by the host side (no IOMMU, unsafe group...): nothing planned.
      python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); sys.exit(0 if p["refused"] and not p["files"] and not p["commands"] else 1)' "$T/plan.json" \
        || fail "$host/$input: refused plan still has changes"
      python3 -c 'import json,sys; print("\n".join(r["message"] for r in json.load(open(sys.argv[1]))["refusals"]))' "$T/plan.json" >"$T/refused.txt"
      golden "$host/$input.refused" "$T/refused.txt"
      continue
    fi
    if [ "$rc" != 0 ]; then
      fail "$host/$input: plan exited $rc: $(cat "$T/plan.err")"
      continue
    fi
    # The planned 101.conf, the checker (only options the host's own qemu-server knows:
    # PVE 9.0 has no hostpci driver=), untouched lines and the golden file, in one process.
    qs=$(awk '/^Package: qemu-server$/{p=1} p && /^Version:/{print $2; exit}' "$root/var/lib/dpkg/status" 2>/dev/null || true)
    accept=()
    rm -f "$T/after.conf"
    [ "${PASSTHRU_TEST_ACCEPT:-0}" = 1 ] && accept=(--accept)
    if ! python3 "$SRC/tests/integration/vm_config_check.py" "$T/plan.json" "$T/before.conf" "$T/after.conf" \
      "$GOLDEN/expected/$host/$input.conf" ${qs:+--qemu-server "$qs"} "${accept[@]}" >"$T/check.out"; then
      fail "$host/$input: $(cat "$T/check.out")"
      [ -s "$T/after.conf" ] || continue
    fi
    grep -q '^hostpci0: 0000:[0-9a-f][0-9a-f]:[0-9a-f][0-9a-f],pcie=1$' "$T/after.conf" || fail "$host/$input: no function-less hostpci0"
    grep -q '^machine: \(q35\|pc-q35-\)' "$T/after.conf" || fail "$host/$input: machine is not q35"
    grep -q '^balloon: 0$' "$T/after.conf" || fail "$host/$input: balloon not 0"
    grep -q '^numa: 1$' "$T/after.conf" || fail "$host/$input: numa not 1"
    # Planning again once the change is in place changes nothing in the VM config.
    cp "$T/after.conf" "$conf"
    plan "$root" --vm 101 --gpus all
    if content_of "$T/plan.json" /etc/pve/qemu-server/101.conf >/dev/null; then
      fail "$host/$input: second plan changes 101.conf again"
    fi
    checked=$((checked + 1))
  done
done
[ "$checked" -ge 8 ] || fail "only $checked configs checked"

# The checker knows which qemu-server brought which hostpci option: driver= is
# refused for PVE 9.0's qemu-server 9.0.16 and accepted from 9.0.25 (PVE 9.1) on.
printf 'hostpci0: 0000:01:00,driver=keep,pcie=1\nmachine: q35\n' >"$T/101.conf"
if "${CHECK[@]}" --qemu-server 9.0.16 vm "$T/101.conf" >"$T/check.out"; then
  fail "checker accepts hostpci driver= for qemu-server 9.0.16"
fi
grep -q "option 'driver' needs qemu-server 9.0.25, the host has 9.0.16" "$T/check.out" || fail "checker: $(cat "$T/check.out")"
"${CHECK[@]}" --qemu-server 9.1.0 vm "$T/101.conf" >"$T/check.out" || fail "checker refuses driver= for qemu-server 9.1.0: $(cat "$T/check.out")"

# The remaining cases run on the 4x RTX 2080 Ti host.
base=$SRC/tests/fixtures/hosts/epyc-4x2080ti
fresh() { rm -rf "$T/r"; cp -a "$base" "$T/r"; mkdir -p "$T/r/etc/pve/qemu-server"; cp "$GOLDEN/fresh-linux.conf" "$T/r/etc/pve/qemu-server/101.conf"; }
expect_refusal() { # WHAT PATTERN ARGS...
  local what=$1 pattern=$2
  shift 2
  plan "$T/r" "$@"
  if [ "$rc" != 3 ]; then
    fail "$what: exit $rc, expected 3"
  elif ! grep -q -- "$pattern" "$T/plan.err"; then
    fail "$what: refusal does not mention '$pattern': $(cat "$T/plan.err")"
  elif python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); sys.exit(1 if p["files"] or p["commands"] else 0)' "$T/plan.json"; then
    :
  else
    fail "$what: refused plan still has changes"
  fi
}

fresh
for vmid in 99 1000000000; do # bad input: exit 2 before planning, nothing written
  plan "$T/r" --vm "$vmid" --gpus all
  [ "$rc" = 2 ] || fail "VMID $vmid: exit $rc, expected 2"
  grep -q "outside 100-999999999" "$T/plan.err" || fail "VMID $vmid: range not named: $(cat "$T/plan.err")"
done

fresh
echo "lock: backup" >>"$T/r/etc/pve/qemu-server/101.conf"
expect_refusal "lock" "is locked (lock: backup)" --vm 101 --gpus all

fresh
mkdir -p "$T/r/run/qemu-server" "$T/r/proc/4242"
echo 4242 >"$T/r/run/qemu-server/101.pid"
printf '/usr/bin/kvm\0-id\0101\0-pidfile\0/var/run/qemu-server/101.pid\0' >"$T/r/proc/4242/cmdline"
expect_refusal "running" "VM 101 is running" --vm 101 --gpus all
rm -rf "$T/r/proc/4242"
expect_refusal "pid file, no process in the tree" "may be running" --vm 101 --gpus all
mkdir -p "$T/r/proc/4242"
printf '/usr/bin/kvm\0-id\0' >"$T/r/proc/4242/cmdline" # another process reuses the pid
plan "$T/r" --vm 101 --gpus all
[ "$rc" = 0 ] || fail "stale pid file (pid of another process): exit $rc"

fresh
sed 's/^hostpci0: 41:00,pcie=1$/hostpci0: 41:00.0;41:00.1,pcie=1/' "$GOLDEN/hostpci-other.conf" >"$T/r/etc/pve/qemu-server/102.conf"
expect_refusal "card used by VM 102" "already given to VM 102" --vm 101 --gpus all
plan "$T/r" --vm 101 --gpus 0000:01:00
[ "$rc" = 0 ] || fail "a card VM 102 does not use: exit $rc ($(cat "$T/plan.err"))"

fresh
for n in $(seq 0 15); do echo "hostpci$n: 0000:e$(printf %x $((n % 10))):00.0" ; done >"$T/hp"
python3 - "$T/r/etc/pve/qemu-server/101.conf" "$T/hp" <<'EOF'
import sys
conf, extra = sys.argv[1], open(sys.argv[2]).read()
text = open(conf).read().replace("ide2:", extra + "ide2:", 1)
open(conf, "w").write(text)
EOF
expect_refusal "no free hostpciN" "no free hostpciN" --vm 101 --gpus 0000:01:00

fresh
printf '\n[PENDING]\nhostpci0: 0000:05:00,pcie=1\n' >>"$T/r/etc/pve/qemu-server/101.conf"
plan "$T/r" --vm 101 --gpus 0000:01:00
content_of "$T/plan.json" /etc/pve/qemu-server/101.conf >"$T/after.conf" || fail "pending: nothing planned"
grep -q '^hostpci1: 0000:01:00,pcie=1$' "$T/after.conf" || fail "pending: hostpci0 of [PENDING] was not treated as taken"

fresh
mkdir -p "$T/r/etc/pve/lxc"
touch "$T/r/etc/pve/lxc/105.conf"
expect_refusal "VMID of a container" "belongs to a container" --vm 105 --gpus all
echo '{"version":1,"ids":{"106":{"node":"pve2","type":"qemu","version":2}}}' >"$T/r/etc/pve/.vmlist"
expect_refusal "VMID on another node" "cluster node pve2" --vm 106 --gpus all

# A VM that does not exist: one qm create with everything, checked like a config.
fresh
printf 'dir: local\n\tpath /var/lib/vz\n\tcontent iso,vztmpl,backup\n\nlvmthin: local-lvm\n\tthinpool data\n\tvgname pve\n\tcontent rootdir,images\n' >"$T/r/etc/pve/storage.cfg"
plan "$T/r" --vm 120 --gpus all
[ "$rc" = 0 ] || fail "new VM: exit $rc ($(cat "$T/plan.err"))"
python3 - "$T/plan.json" >"$T/qm.args" <<'EOF' || fail "new VM: no qm create command"
import json, sys
for c in json.load(open(sys.argv[1]))["commands"]:
    if c["argv"][:3] == ["qm", "create", "120"]:
        print("\n".join(c["argv"]))
        sys.exit(0)
sys.exit(1)
EOF
mapfile -t qm_args <"$T/qm.args"
"${CHECK[@]}" qm-create "${qm_args[@]}" >"$T/check.out" || fail "new VM: checker: $(cat "$T/check.out")"
for want in "--hostpci3" "0000:82:00,pcie=1" "--efidisk0" "local-lvm:1,efitype=4m,pre-enrolled-keys=0" "--machine" "q35" "--balloon"; do
  printf '%s\n' "${qm_args[@]}" | grep -qx -- "$want" || fail "new VM: qm create lacks $want"
done
content_of "$T/plan.json" /etc/pve/qemu-server/120.conf >/dev/null && fail "new VM: a config file is planned besides qm create"

# The Windows profile: hidden=1 and a vendor id; Linux never gets them.
fresh
plan "$T/r" --vm 101 --gpus all --profile windows
content_of "$T/plan.json" /etc/pve/qemu-server/101.conf >"$T/after.conf"
grep -q '^cpu: host,hidden=1,hv-vendor-id=passthru$' "$T/after.conf" || fail "windows: cpu line $(grep ^cpu "$T/after.conf")"
"${CHECK[@]}" vm "$T/after.conf" >"$T/check.out" || fail "windows: checker: $(cat "$T/check.out")"
plan "$T/r" --vm 101 --gpus all --profile nosuch
[ "$rc" = 2 ] && grep -q "no VM profile 'nosuch'" "$T/plan.err" || fail "unknown profile: exit $rc"

# Hugepages need numa and a memory size that is a multiple of the page.
fresh
plan "$T/r" --vm 101 --gpus all --profile linux-ml-hugepages
content_of "$T/plan.json" /etc/pve/qemu-server/101.conf >"$T/after.conf"
grep -q '^hugepages: 2$' "$T/after.conf" || fail "hugepages not planned"
"${CHECK[@]}" vm "$T/after.conf" >"$T/check.out" || fail "hugepages: checker: $(cat "$T/check.out")"

# NUMA affinity: both cards on node 1 of a two-node host.
fresh
for n in 0 1; do mkdir -p "$T/r/sys/devices/system/node/node$n"; done
echo "0-23,48-71" >"$T/r/sys/devices/system/node/node0/cpulist"
echo "24-47,72-95" >"$T/r/sys/devices/system/node/node1/cpulist"
for f in 0 1 2 3; do
  for slot in 81 82; do
    d=$(readlink -f "$T/r/sys/bus/pci/devices/0000:$slot:00.$f")
    echo 1 >"$d/numa_node"
  done
done
plan "$T/r" --vm 101 --gpus 0000:81:00,0000:82:00
content_of "$T/plan.json" /etc/pve/qemu-server/101.conf >"$T/after.conf"
grep -q '^affinity: 24-47,72-95$' "$T/after.conf" || fail "affinity: $(grep ^affinity "$T/after.conf" || echo none) ($(grep -i affinity "$T/plan.err" || true))"
"${CHECK[@]}" vm "$T/after.conf" >"$T/check.out" || fail "affinity: checker: $(cat "$T/check.out")"

# --mapping: pci.cfg in PVE's format; existing mappings kept byte for byte.
fresh
mkdir -p "$T/r/etc/pve/mapping"
printf 'nic0\n\tmap id=8086:1521,node=pve2,path=0000:03:00.0,iommugroup=30,subsystem-id=8086:0001\n\tdescription uplink\n\ngpu\n\tmap id=10de:1e07,node=pve2,path=0000:41:00,iommugroup=40,subsystem-id=10de:12fa\n\n' >"$T/r/etc/pve/mapping/pci.cfg"
cp "$T/r/etc/pve/mapping/pci.cfg" "$T/pci.before"
plan "$T/r" --vm 101 --gpus 0000:01:00,0000:41:00 --mapping gpu
[ "$rc" = 0 ] || fail "mapping: exit $rc ($(cat "$T/plan.err"))"
content_of "$T/plan.json" /etc/pve/mapping/pci.cfg >"$T/pci.after" || fail "mapping: pci.cfg not planned"
content_of "$T/plan.json" /etc/pve/qemu-server/101.conf >"$T/after.conf"
"${CHECK[@]}" mapping "$T/pci.after" >"$T/check.out" || fail "mapping: checker: $(cat "$T/check.out")"
"${CHECK[@]}" vm "$T/after.conf" >"$T/check.out" || fail "mapping vm: checker: $(cat "$T/check.out")"
grep -q '^hostpci0: mapping=gpu,pcie=1$' "$T/after.conf" || fail "mapping: hostpci0 is $(grep ^hostpci0 "$T/after.conf")"
grep -q '^hostpci1: mapping=gpu-1,pcie=1$' "$T/after.conf" || fail "mapping: hostpci1 is $(grep ^hostpci1 "$T/after.conf")"
python3 - "$T/pci.before" "$T/pci.after" <<'EOF' || fail "mapping: existing lines not kept"
import sys
before, after = open(sys.argv[1]).read().split("\n"), open(sys.argv[2]).read().split("\n")
it = iter(after)
sys.exit(0 if all(any(line == a for a in it) for line in before) else 1)
EOF
golden "mapping/pci.cfg" "$T/pci.after"
plan "$T/r" --vm 101 --gpus all --mapping 9bad
[ "$rc" = 2 ] || fail "bad mapping id: exit $rc"

finish "vm_proxmox: $checked configs checked, refusals, qm create, profiles, affinity and mappings ok"
