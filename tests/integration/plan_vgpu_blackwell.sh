#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The two hosts of the newest cards (docs/facts.md: vgpu, gpu-models):
# - vgpu-epyc, an NVIDIA vGPU host: scan reports it with its evidence; passing
#   the A40 binds it by address, and no line the plan adds to any file mentions
#   nvidia (no softdep, no blacklist: the vGPU manager needs the driver); kmod
#   reads the modprobe.d result; the VM config passes the Proxmox checks; the
#   card whose VFs serve vGPUs is refused (exit 3, nothing planned).
# - blackwell-5090, an RTX 5090 desktop: the profile's reset warning shows, and
#   the two functions are bound by id.
source "$(dirname "$0")/lib.inc"
need_binary
need jq modprobe python3
CHECK=(python3 "$SRC/tests/integration/pve_conf_check.py")

plan_json() { # ROOT ARGS... -> $T/plan.json, $T/plan.err, $RC
    RC=0
    "$P" --root "$1" plan --json "${@:2}" >"$T/plan.json" 2>"$T/plan.err" || RC=$?
}
# added_lines ROOT PLAN: every line a planned file has that the file on ROOT did not have.
added_lines() {
    local n i path
    n=$(jq '.files | length' "$2")
    for ((i = 0; i < n; i++)); do
        path=$(jq -r ".files[$i].path" "$2")
        jq -j ".files[$i].content // \"\"" "$2" >"$T/after"
        if [ -f "$1$path" ]; then cp "$1$path" "$T/before"; else : >"$T/before"; fi
        grep -vxF -f "$T/before" "$T/after" | sed "s|^|$path: |" || true
    done
}

# --- vgpu-epyc: scan ---------------------------------------------------------
copy_host vgpu-epyc "$T/vgpu"
"$P" --root "$T/vgpu" scan --json >"$T/scan.json" || fail "vgpu: scan --json failed"
jq -e '.host.vgpu.host == true' "$T/scan.json" >/dev/null || fail "vgpu: scan does not report a vGPU host"
for want in 'unit /usr/lib/systemd/system/nvidia-vgpu-mgr.service' 'unit /usr/lib/systemd/system/nvidia-vgpud.service' \
    "pve-nvidia-sriov@ALL.service is enabled" '0000:01:00.0 has 4 SR-IOV virtual functions enabled' \
    'the nvidia driver holds 0000:01:00.0, 0000:41:00.0'; do
    jq -e --arg w "$want" '.host.vgpu.evidence | any(contains($w))' "$T/scan.json" >/dev/null ||
        fail "vgpu: scan evidence lacks '$want': $(jq -c .host.vgpu.evidence "$T/scan.json")"
done
"$P" --root "$T/vgpu" scan >"$T/scan.txt" || fail "vgpu: scan failed"
grep -q '^  NVIDIA vGPU .*set up for vGPU: .*plan keeps the nvidia driver' "$T/scan.txt" || fail "vgpu: human scan has no vGPU line"
copy_host turing-4fn "$T/plain"
"$P" --root "$T/plain" scan --json >"$T/plain.json"
jq -e '.host.vgpu == {"host": false, "evidence": []}' "$T/plain.json" >/dev/null || fail "turing-4fn is reported as a vGPU host"
ok "vgpu: scan reports the vGPU host with its evidence, a plain host is none"

# --- vgpu-epyc: pass the A40 -------------------------------------------------
plan_json "$T/vgpu" --vm 101 --gpus 0000:41:00
if [ "$RC" != 0 ]; then
    fail "vgpu --gpus 0000:41:00: exit $RC: $(head -3 "$T/plan.err")"
else
    added_lines "$T/vgpu" "$T/plan.json" >"$T/added.txt"
    [ -s "$T/added.txt" ] || fail "vgpu: the plan adds no line at all"
    if grep -i 'nvidia' "$T/added.txt"; then fail "vgpu: a planned line mentions nvidia"; fi
    jq -e '.binding == "address"' "$T/plan.json" >/dev/null || fail "vgpu: not bound by address"
    jq -e '[.files[] | select(.path == "/etc/modprobe.d/passthru-vfio.conf") | .reasons[]] | any(test("binds by address .*this host serves vGPUs"))' "$T/plan.json" >/dev/null ||
        fail "vgpu: the binding reason does not name the vGPU host"
    jq -e '.notes | any(test("^NVIDIA vGPU host .*keeps the nvidia driver \\(no softdep for nvidia, nvidia_drm\\) and blacklists no NVIDIA driver"))' "$T/plan.json" >/dev/null ||
        fail "vgpu: no note saying what is kept and why: $(jq -c .notes "$T/plan.json")"
    jq -e '.refusals == [] and (.warnings | all(test("goes to VM") | not))' "$T/plan.json" >/dev/null || fail "vgpu: unexpected refusal or warning"
    # kmod reads the planned modprobe.d file: the A40 by address, the PRO 6000 untouched.
    mkdir -p "$T/conf"
    jq -j '.files[] | select(.path == "/etc/modprobe.d/passthru-vfio.conf") | .content' "$T/plan.json" >"$T/conf/passthru-vfio.conf"
    modprobe -C "$T/conf" --showconfig >"$T/show.txt" 2>"$T/show.err"
    if grep -qi 'ignoring bad line\|error' "$T/show.err"; then fail "vgpu: kmod rejects a line: $(cat "$T/show.err")"; fi
    grep -q '^install vfio_pci .*0000:41:00.0' "$T/show.txt" || fail "vgpu: no install command binding 0000:41:00.0"
    if grep -q '0000:01:00' "$T/show.txt"; then fail "vgpu: the vGPU card 0000:01:00 is in the modprobe configuration"; fi
    if grep -Eq '^(softdep|blacklist) nvidia' "$T/show.txt"; then fail "vgpu: kmod sees an nvidia softdep or blacklist"; fi
    # The VM config passes the project's Proxmox config checks.
    jq -j '.files[] | select(.path == "/etc/pve/qemu-server/101.conf") | .content' "$T/plan.json" >"$T/101.conf"
    grep -q '^hostpci0: 0000:41:00,pcie=1$' "$T/101.conf" || fail "vgpu: VM 101 does not get 0000:41:00: $(grep hostpci "$T/101.conf")"
    "${CHECK[@]}" vm "$T/101.conf" >"$T/check.out" || fail "vgpu: Proxmox config check: $(cat "$T/check.out")"
    ok "vgpu --gpus 0000:41:00: by address, no added line mentions nvidia, kmod and the Proxmox checks accept it"
fi

# --- vgpu-epyc: the card that serves vGPUs is refused --------------------------
for gpus in 0000:01:00 all; do
    plan_json "$T/vgpu" --vm 101 --gpus "$gpus"
    if [ "$RC" != 3 ]; then
        fail "vgpu --gpus $gpus: exit $RC, expected 3"
        continue
    fi
    jq -e '(.files == []) and (.refusals | any(.message | test("0000:01:00.0 has 4 SR-IOV virtual functions enabled")))
           and (.refusals | any(.hints | any(test("pve-nvidia-sriov@0000:01:00.0.service"))))' "$T/plan.json" >/dev/null ||
        fail "vgpu --gpus $gpus: refusal without the VFs or the way out: $(jq -c .refusals "$T/plan.json")"
done
ok "vgpu: the card with enabled VFs is refused with the way out"

# --- blackwell-5090 ----------------------------------------------------------
copy_host blackwell-5090 "$T/bw"
plan_json "$T/bw" --vm 101 --gpus all
if [ "$RC" != 0 ]; then
    fail "blackwell --gpus all: exit $RC: $(head -3 "$T/plan.err")"
else
    jq -e '.warnings | map(select(test("^GeForce RTX 5090 \\(0000:01:00\\): known issue: after a VM that used the card stops"))) | length == 1' "$T/plan.json" >/dev/null ||
        fail "blackwell: no reset warning: $(jq -c .warnings "$T/plan.json")"
    jq -e '.warnings | any(test("What to do: .*power the host off completely.*reported in: "))' "$T/plan.json" >/dev/null ||
        fail "blackwell: the warning lacks what to do or the reports"
    jq -e '.vfio_ids == ["10de:22e8", "10de:2b85"] and .binding == "ids"' "$T/plan.json" >/dev/null ||
        fail "blackwell: ids $(jq -c .vfio_ids "$T/plan.json"), binding $(jq -r .binding "$T/plan.json")"
    jq -e '.gpus[0].name == "GeForce RTX 5090"' "$T/plan.json" >/dev/null || fail "blackwell: the card is not named by its profile"
    ok "blackwell-5090: the reset warning with what to do, both functions bound by id"
fi

# The large-BAR computation on blackwell-5090 (46-bit Core i9-14900K): the note spells it out,
# and the cpu line the plan writes for VM 101 gives the guest what the note says.
jq -e '.notes | any(test("^VM 101: guest address space for the GPUs. 64-bit BARs \\(0000:01:00: 32 GiB \\+ 32 MiB = 32800 MiB, rounded up to a multiple of its largest BAR = 64 GiB\\): the BARs need 64 GiB plus 256 MiB .* gives the guest 46 address bits, .*: they fit$"))' "$T/plan.json" >/dev/null ||
    fail "blackwell: no address-space note with the computation: $(jq -c .notes "$T/plan.json")"
jq -j '.files[] | select(.path == "/etc/pve/qemu-server/101.conf") | .content' "$T/plan.json" >"$T/bw101.conf"
grep -q '^cpu: host' "$T/bw101.conf" || fail "blackwell: VM 101 cpu is $(grep '^cpu' "$T/bw101.conf")"
"${CHECK[@]}" vm "$T/bw101.conf" >"$T/check.out" || fail "blackwell: Proxmox config check: $(cat "$T/check.out")"
ok "blackwell-5090: the address-space computation in the plan, cpu host gives 46 bits"

# The libvirt backend follows the same computation: a domain without <cpu> (qemu64, OVMF's
# 32 GiB window) gets host-passthrough with <maxphysaddr mode='passthrough'/>; libvirt's schema accepts it.
if command -v virt-xml-validate >/dev/null; then
    cat >"$T/node.xml" <<'XML'
<node>
  <cpu><mhz>3200</mhz><model>x86_64</model><nodes>1</nodes><sockets>1</sockets><cores>24</cores><threads>1</threads></cpu>
  <memory>67108864</memory>
  <domain type='kvm'>
    <name>bar</name>
    <memory unit='KiB'>16777216</memory>
    <vcpu placement='static'>8</vcpu>
    <os>
      <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>
      <loader readonly='yes' type='pflash'>/usr/share/OVMF/OVMF_CODE_4M.fd</loader>
    </os>
    <devices>
      <emulator>/usr/bin/qemu-system-x86_64</emulator>
      <controller type='pci' index='0' model='pcie-root'/>
    </devices>
  </domain>
</node>
XML
    plan_json "$T/bw" --backend libvirt --connect "test://$T/node.xml" --vm bar --gpus all
    if [ "$RC" != 0 ]; then
        fail "blackwell libvirt: exit $RC: $(head -3 "$T/plan.err")"
    else
        jq -j '.domains[0].after_xml' "$T/plan.json" >"$T/bar.xml"
        grep -q "<maxphysaddr mode='passthrough'/>" "$T/bar.xml" || fail "blackwell libvirt: no maxphysaddr passthrough"
        grep -q "<cpu mode='host-passthrough'" "$T/bar.xml" || fail "blackwell libvirt: no host-passthrough cpu"
        virt-xml-validate "$T/bar.xml" domain >"$T/validate.out" 2>&1 || fail "blackwell libvirt: schema: $(cat "$T/validate.out")"
        jq -e '.domains[0].reasons | any(test("maxphysaddr mode=.passthrough.*need 64 GiB, but cpu qemu64"))' "$T/plan.json" >/dev/null ||
            fail "blackwell libvirt: the reason does not give the computation: $(jq -c .domains[0].reasons "$T/plan.json")"
        ok "blackwell libvirt: host-passthrough with maxphysaddr passthrough, valid against libvirt's schema"
    fi
fi

finish "vGPU and Blackwell hosts"
