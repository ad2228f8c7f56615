#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The guest address space in `passthru plan` (docs/facts.md: address-space) on
# copies of a PVE 9 and a PVE 8 fixture with four 16 GB V100s (64-bit BARs of
# 16 GiB + 32 MiB each, 128 GiB of MMIO in the guest): the plan's cpu choice
# gives the guest enough address bits, says why (human and --json), widens a
# qemu64-based profile model with phys-bits=host and +pdpe1gb, warns when the
# VM's own phys-bits setting is kept, and leaves small-BAR cards alone.
source "$(dirname "$0")/lib.inc"
need_binary
CHECK=(python3 "$SRC/tests/integration/pve_conf_check.py")

# plan ROOT ARGS...: $T/out.json and $T/out.txt (human), both with rc 0
plan() {
  "$P" --root "$1" plan "${@:2}" --json >"$T/out.json" 2>"$T/out.err" || fatal "plan --json ${*:2} failed: $(cat "$T/out.err")"
  "$P" --root "$1" plan "${@:2}" >"$T/out.txt" 2>&1 || fatal "plan ${*:2} failed: $(cat "$T/out.txt")"
}

# json_get EXPR: evaluates EXPR with p = the plan, conf = VM 101's planned config text
json_get() {
  python3 - "$T/out.json" "$1" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
conf = next((f["content"] for f in p["files"] if f["path"] == "/etc/pve/qemu-server/101.conf"), "")
reasons = next((f["reasons"] for f in p["files"] if f["path"] == "/etc/pve/qemu-server/101.conf"), [])
cpu = next((l[5:] for l in conf.split("\n") if l.startswith("cpu: ")), None)
print(eval(sys.argv[2]))
PY
}

# compat_profile ROOT: profile "compat", linux-ml with the GUI's default CPU model, as an admin override
compat_profile() {
  mkdir -p "$1/etc/passthru/profiles/vm"
  python3 - "$SRC/profiles/vm/linux-ml.json" "$1/etc/passthru/profiles/vm/compat.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["name"] = "compat"
p["cpu"]["type"] = "x86-64-v2-AES"
json.dump(p, open(sys.argv[2], "w"), indent=2)
PY
}

for host in pve90-t180-4xv100 t180-4xv100; do
  root=$T/$host
  rm -rf "$root"
  copy_host "$host" "$root"
  grep -qx 'cpu: x86-64-v2-AES' "$root/etc/pve/qemu-server/101.conf" || fatal "$host: VM 101 no longer has cpu x86-64-v2-AES"

  # 1. the default profile moves VM 101 to cpu host, and the reason says why the old model was too narrow
  plan "$root" --gpus all --vm 101
  [ "$(json_get cpu)" = host ] || fail "$host: cpu is $(json_get cpu), not host"
  why="the GPUs' 64-bit BARs need 128 GiB of MMIO, but cpu x86-64-v2-AES without phys-bits (QEMU's default of 40 bits) leaves OVMF 40 address bits and a 32 GiB window; cpu host gives 46 bits"
  [ "$(json_get "any(r.startswith('cpu: x86-64-v2-AES -> host (') and \"$why)\" in r for r in reasons)")" = True ] \
    || fail "$host: the cpu reason in --json lacks the address-space clause"
  grep -qF -- "$why" "$T/out.txt" || fail "$host: the human plan lacks the address-space clause"
  [ "$(json_get "len([w for w in p['warnings'] if 'MMIO' in w])")" = 0 ] || fail "$host: cpu host still warns about MMIO"
  ok "$host: cpu host, with the reason the old model's 40 bits were too few (human and --json)"

  # 2. a profile with a qemu64-based model gets phys-bits=host and +pdpe1gb, and PVE's rules accept the line
  compat_profile "$root"
  plan "$root" --gpus all --vm 101 --profile compat
  [ "$(json_get cpu)" = "x86-64-v2-AES,flags=+pdpe1gb,phys-bits=host" ] || fail "$host: compat cpu is $(json_get cpu)"
  json_get conf >"$T/101.conf"
  "${CHECK[@]}" vm "$T/101.conf" || fail "$host: the widened cpu line breaks PVE's config rules"
  grep -qF "phys-bits=host with +pdpe1gb gives 46 bits and a 8192 GiB window" "$T/out.txt" \
    || fail "$host: the human plan does not say why phys-bits=host and +pdpe1gb"
  [ "$(json_get "any('phys-bits=host with +pdpe1gb gives 46 bits' in r for r in reasons)")" = True ] \
    || fail "$host: the --json reasons do not say why phys-bits=host and +pdpe1gb"
  ok "$host: a qemu64-based profile model is widened with phys-bits=host and +pdpe1gb"

  # ... and a new VM from that profile is created with the same cpu line
  plan "$root" --gpus all --vm 120 --profile compat
  [ "$(json_get "[c['argv'][c['argv'].index('--cpu') + 1] for c in p['commands'] if c['argv'][:2] == ['qm', 'create']][0]")" \
    = "x86-64-v2-AES,flags=+pdpe1gb,phys-bits=host" ] || fail "$host: qm create does not widen the cpu"
  grep -q 'note: VM 120: cpu x86-64-v2-AES,flags=+pdpe1gb,phys-bits=host: the GPUs' "$T/out.txt" || fail "$host: qm create has no note"
  ok "$host: qm create widens the same way and says why"

  # 3. the VM's own phys-bits=40 is kept (the plan never drops a user's cpu option) and warned about
  sed -i 's/^cpu: .*/cpu: host,phys-bits=40/' "$root/etc/pve/qemu-server/101.conf"
  rm -rf "$root/etc/passthru/profiles/vm"
  plan "$root" --gpus all --vm 101
  [ "$(json_get cpu)" = "host,phys-bits=40" ] || fail "$host: the VM's phys-bits=40 was not kept: $(json_get cpu)"
  warning="VM 101: the GPUs' 64-bit BARs need 128 GiB of MMIO, but phys-bits=40 leaves OVMF 40 address bits and a 32 GiB window"
  [ "$(json_get "sum(w.startswith(\"$warning\") for w in p['warnings'])")" = 1 ] || fail "$host: no --json warning for phys-bits=40"
  grep -qF "warning: $warning" "$T/out.txt" || fail "$host: no human warning for phys-bits=40"
  ok "$host: the VM's phys-bits=40 is kept with a warning"

  # 4. one card fits under cpu host; the same 40-bit limit warns for one card too (32 GiB + headroom > 32 GiB)
  plan "$root" --gpus 0000:04:00 --vm 101
  grep -qF "VM 101: the GPUs' 64-bit BARs need 32 GiB of MMIO, but phys-bits=40" "$T/out.txt" || fail "$host: one card: no warning"
  ok "$host: one 16 GB card already needs more than a 40-bit guest's 32 GiB window"
done

# 5. small BARs (RTX 2080 Ti: 256 MiB) fit in any window: the qemu64-based model stays as it is, no warning
root=$T/pve92
copy_host pve92-epyc-4x2080ti "$root"
compat_profile "$root"
plan "$root" --gpus all --vm 101 --profile compat
[ "$(json_get cpu)" = "x86-64-v2-AES" ] || fail "pve92: small BARs changed the cpu to $(json_get cpu)"
[ "$(json_get "len([w for w in p['warnings'] if 'MMIO' in w])")" = 0 ] || fail "pve92: small BARs warn"
! grep -q 'MMIO' "$T/out.txt" || fail "pve92: the human plan mentions MMIO"
ok "pve92: 256 MiB BARs leave x86-64-v2-AES alone"

finish "guest address space planned on PVE 9 and PVE 8 fixtures"
