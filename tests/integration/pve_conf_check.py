#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Independent checker for Proxmox VE VM configs and PCI mapping files.

Written from Proxmox VE's own sources (qemu-server's parse_vm_config,
PCI.pm, CPUConfig.pm, Machine.pm, Memory.pm; pve-common
SectionConfig/JSONSchema; docs/facts.md, vm-config and pci-mapping), not
from passthru's C++ code, so a rule the planner gets wrong is caught here.

  pve_conf_check.py vm FILE...        check VM configs (<vmid>.conf)
  pve_conf_check.py mapping FILE...   check /etc/pve/mapping/pci.cfg files
  pve_conf_check.py qm-create ARGS... check the config a 'qm create' would write

  --qemu-server VERSION (before the command): also reject options the host's
  qemu-server does not know yet (hostpci driver= exists from 9.0.25 on,
  qemu-server debian/changelog 9.0.25).

Exit status 0 when every file passes, 1 with one line per problem.
"""
import os
import re
import sys

KEY_LINE = re.compile(r"^([a-z][a-z_\-]*\d*):\s*(.+?)\s*$")
ARGS_LINE = re.compile(r"^(args):\s*(.*\S)\s*$")
SECTION = re.compile(r"^\[(PENDING|special:(?:cloudinit|fleecing)|[a-z][a-z0-9_\-]+)\]\s*$")
VMID = re.compile(r"^[1-9][0-9]{2,8}$")
PCIID = r"(?:[a-f0-9]{4,}:)?[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?"
HOSTPCI_HOST = re.compile(rf"^{PCIID}(?:;{PCIID})*$")
CONFIGID = re.compile(r"^[a-z][a-z0-9_-]+$", re.I)
MACHINE = re.compile(
    r"^(pc|pc(-i440fx)?-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|q35|pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?"
    r"|virt(?:-\d+(\.\d+)+)?(\+pve\d+)?)$")
Q35 = re.compile(r"^(q35|pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?)$")
CPU_FLAG = re.compile(r"^([+-])([a-zA-Z0-9\-_\.]+)$")
CPU_FLAGS_ALLOWED = {"nested-virt", "md-clear", "pcid", "spec-ctrl", "ssbd", "ibpb", "virt-ssbd", "amd-ssbd",
                     "amd-no-ssb", "pdpe1gb", "hv-tlbflush", "hv-evmcs", "aes"}
CPU_MODELS = {"host", "max", "kvm32", "kvm64", "qemu32", "qemu64", "x86-64-v2", "x86-64-v2-AES", "x86-64-v3",
              "x86-64-v4", "EPYC", "EPYC-IBPB", "EPYC-Rome", "EPYC-Milan", "EPYC-Genoa", "Skylake-Server",
              "Cascadelake-Server", "Icelake-Server", "SapphireRapids", "Haswell", "Broadwell", "Skylake-Client"}
HV_VENDOR = re.compile(r"^[a-zA-Z0-9]{1,12}$")
BOOL = {"1", "on", "yes", "true", "0", "off", "no", "false"}
# hostpci options and the qemu-server version that introduced them (none: always there).
HOSTPCI_SINCE = {"driver": (9, 0, 25)}
QEMU_SERVER = None  # (major, minor, patch) of the host's qemu-server, from --qemu-server
HOSTPCI_KEYS = {"host", "mapping", "rombar", "romfile", "pcie", "x-vga", "legacy-igd", "mdev", "vendor-id",
                "device-id", "sub-vendor-id", "sub-device-id", "driver"}
HOSTPCI_BOOLS = {"rombar", "pcie", "x-vga", "legacy-igd"}
ID16 = re.compile(r"^0x[0-9a-fA-F]{4}$")
CPUSET = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
MAP_PATH = re.compile(r"^(?:[a-f0-9]{4,}:[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?;)*"
                      r"[a-f0-9]{4,}:[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?$")
VENDOR_DEVICE = re.compile(r"^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{4}$")


def truthy(v):
    return v is not None and v.lower() in ("1", "on", "yes", "true")


def prop_string(value, default_key):
    """Splits a property string; returns (dict, problems)."""
    out, problems = {}, []
    for part in value.split(","):
        if part == "":
            problems.append("empty part in property string")
            continue
        if "=" in part:
            k, v = part.split("=", 1)
        else:
            k, v = default_key, part
        if k in out:
            problems.append(f"duplicate key '{k}' in property string")
        out[k] = v
    return out, problems


def check_section(name, entries, problems, where):
    keys = {}
    for lineno, key, value in entries:
        if key in keys:
            problems.append(f"{where}:{lineno}: [{name or 'current'}] duplicate key '{key}'")
        keys[key] = value

    def bad(lineno, msg):
        problems.append(f"{where}:{lineno}: [{name or 'current'}] {msg}")

    machine_type = None
    if "machine" in keys:
        m, p = prop_string(keys["machine"], "type")
        machine_type = m.get("type")
    line_of = {k: n for n, k, _ in entries}
    for lineno, key, value in entries:
        if key == "machine":
            m, p = prop_string(value, "type")
            for e in p:
                bad(lineno, f"machine: {e}")
            if not MACHINE.match(m.get("type", "")) or len(m.get("type", "")) > 40:
                bad(lineno, f"machine type '{m.get('type')}' does not match PVE's pattern")
            for k in m:
                if k not in ("type", "viommu", "aw-bits", "enable-s3", "enable-s4"):
                    bad(lineno, f"machine: unknown option '{k}'")
        elif re.match(r"^hostpci\d+$", key):
            n = int(key[7:])
            if n > 15:
                bad(lineno, f"{key}: only hostpci0-hostpci15 exist")
            hp, p = prop_string(value, "host")
            for e in p:
                bad(lineno, f"{key}: {e}")
            for k in hp:
                if k not in HOSTPCI_KEYS:
                    bad(lineno, f"{key}: unknown option '{k}'")
                elif QEMU_SERVER is not None and HOSTPCI_SINCE.get(k, (0,)) > QEMU_SERVER:
                    since = ".".join(map(str, HOSTPCI_SINCE[k]))
                    have = ".".join(map(str, QEMU_SERVER))
                    bad(lineno, f"{key}: option '{k}' needs qemu-server {since}, the host has {have}")
            if ("host" in hp) == ("mapping" in hp):
                bad(lineno, f"{key}: exactly one of host and mapping must be set")
            if "host" in hp and not HOSTPCI_HOST.match(hp["host"]):
                bad(lineno, f"{key}: host '{hp['host']}' does not match the PCI id pattern (lowercase hex, ';' between ids)")
            if "mapping" in hp and not CONFIGID.match(hp["mapping"]):
                bad(lineno, f"{key}: mapping '{hp['mapping']}' is not a valid id")
            for k in HOSTPCI_BOOLS:
                if k in hp and hp[k].lower() not in BOOL:
                    bad(lineno, f"{key}: {k} must be a boolean")
            for k in ("vendor-id", "device-id", "sub-vendor-id", "sub-device-id"):
                if k in hp and not ID16.match(hp[k]):
                    bad(lineno, f"{key}: {k} must look like 0x10de")
            if truthy(hp.get("pcie")) and not (machine_type and Q35.match(machine_type)):
                bad(lineno, f"{key}: pcie=1 needs a q35 machine (machine: {machine_type})")
        elif key == "cpu":
            c, p = prop_string(value, "cputype")
            for e in p:
                bad(lineno, f"cpu: {e}")
            t = c.get("cputype", "")
            if t not in CPU_MODELS and not t.startswith("custom-"):
                bad(lineno, f"cpu: '{t}' is not a built-in model")
            for k in c:
                if k not in ("cputype", "flags", "hidden", "hv-vendor-id", "phys-bits", "guest-phys-bits", "level"):
                    bad(lineno, f"cpu: option '{k}' is not allowed in a VM config")
            if "hidden" in c and c["hidden"].lower() not in BOOL:
                bad(lineno, "cpu: hidden must be a boolean")
            if "hv-vendor-id" in c and not HV_VENDOR.match(c["hv-vendor-id"]):
                bad(lineno, "cpu: hv-vendor-id must be 1-12 letters or digits")
            if "flags" in c:
                for f in c["flags"].split(";"):
                    m = CPU_FLAG.match(f)
                    if not m or m.group(2) not in CPU_FLAGS_ALLOWED:
                        bad(lineno, f"cpu: flag '{f}' is not in PVE's VM flag allow-list")
        elif key == "numa":
            if value.lower() not in BOOL:
                bad(lineno, "numa must be a boolean")
        elif key == "bios":
            if value not in ("seabios", "ovmf"):
                bad(lineno, "bios must be seabios or ovmf")
        elif key == "balloon":
            if not re.match(r"^\d+$", value):
                bad(lineno, "balloon must be an integer >= 0")
        elif key == "affinity":
            if not CPUSET.match(value):
                bad(lineno, f"affinity '{value}' is not a cpuset")
        elif key == "memory":
            mm, p = prop_string(value, "current")
            if not re.match(r"^\d+$", mm.get("current", "")) or int(mm["current"]) < 16:
                bad(lineno, "memory must be an integer >= 16 (MiB)")
        elif key == "hugepages":
            if value not in ("any", "2", "1024"):
                bad(lineno, "hugepages must be any, 2 or 1024")
            if not truthy(keys.get("numa")):
                bad(lineno, "hugepages need numa: 1")
            mem = prop_string(keys.get("memory", "512"), "current")[0].get("current", "512")
            if mem.isdigit():
                page = 1024 if value == "1024" else 2
                if int(mem) % page or int(mem) % 2:
                    bad(lineno, f"memory {mem} is not a multiple of the {page} MiB huge page size")
        elif key == "efidisk0":
            e, p = prop_string(value, "file")
            if "efitype" in e and e["efitype"] not in ("2m", "4m"):
                bad(lineno, "efidisk0: efitype must be 2m or 4m")
    if keys.get("bios") == "ovmf" and "efidisk0" not in keys and name == "":
        problems.append(f"{where}: warning-only: bios ovmf without efidisk0 (PVE uses a temporary efivars disk)")


def check_vm(path, text, problems):
    base = os.path.basename(path)
    m = re.match(r"^(\d+)\.conf$", base)
    if m and not VMID.match(m.group(1)):
        problems.append(f"{path}: VMID {m.group(1)} is outside 100-999999999")
    sections = {"": []}
    order = [""]
    current = ""
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.strip() == "" or line.startswith("#"):
            continue
        s = SECTION.match(line)
        if s:
            current = s.group(1)
            if current in sections:
                problems.append(f"{path}:{lineno}: section [{current}] appears twice")
            sections[current] = []
            order.append(current)
            continue
        if line.startswith("["):
            problems.append(f"{path}:{lineno}: unknown section {line!r} (PVE skips it)")
            continue
        kv = ARGS_LINE.match(line) or KEY_LINE.match(line)
        if not kv:
            problems.append(f"{path}:{lineno}: not a PVE config line: {line!r}")
            continue
        sections[current].append((lineno, kv.group(1), kv.group(2)))
    for name in order:
        if name.startswith("special:"):
            continue
        check_section(name, sections[name], problems, path)


def check_mapping(path, text, problems):
    current = None
    seen = set()
    has_map = {}
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.strip() == "":
            current = None
            continue
        if line.startswith("#"):
            continue
        prop = re.match(r"^\s+(\S+)(\s+(.*\S))?\s*$", line)
        if prop:
            if current is None:
                problems.append(f"{path}:{lineno}: property outside a section")
                continue
            key, value = prop.group(1), prop.group(3) or ""
            if key == "map":
                has_map[current] = True
                m, p = prop_string(value, "node")
                for e in p:
                    problems.append(f"{path}:{lineno}: map: {e}")
                for k in m:
                    if k not in ("node", "path", "id", "subsystem-id", "iommugroup", "description"):
                        problems.append(f"{path}:{lineno}: map: unknown key '{k}'")
                for k in ("node", "path", "id"):
                    if k not in m:
                        problems.append(f"{path}:{lineno}: map: '{k}' is required")
                if "path" in m and not MAP_PATH.match(m["path"]):
                    problems.append(f"{path}:{lineno}: map: path '{m['path']}' needs the domain and lowercase hex")
                if "id" in m and not VENDOR_DEVICE.match(m["id"]):
                    problems.append(f"{path}:{lineno}: map: id '{m['id']}' is not vendor:device")
                if "subsystem-id" in m and not VENDOR_DEVICE.match(m["subsystem-id"]):
                    problems.append(f"{path}:{lineno}: map: subsystem-id '{m['subsystem-id']}' is not vendor:device")
                if "iommugroup" in m and not m["iommugroup"].isdigit():
                    problems.append(f"{path}:{lineno}: map: iommugroup must be an integer")
                if not line.startswith("\t"):
                    problems.append(f"{path}:{lineno}: PVE writes properties after a tab")
            elif key not in ("description", "mdev", "live-migration-capable"):
                problems.append(f"{path}:{lineno}: unknown property '{key}'")
            continue
        header = re.match(r"^(\S+)\s*$", line)
        if not header:
            problems.append(f"{path}:{lineno}: not a section header: {line!r}")
            continue
        current = header.group(1)
        if not CONFIGID.match(current):
            problems.append(f"{path}:{lineno}: '{current}' is not a valid mapping id")
        if current in seen:
            problems.append(f"{path}:{lineno}: mapping '{current}' defined twice")
        seen.add(current)
        has_map[current] = False
    for sid, ok in has_map.items():
        if not ok:
            problems.append(f"{path}: mapping '{sid}' has no map line")


def qm_create_to_conf(args):
    """qm create VMID --key value ... -> (vmid, config text) for the keys qm stores verbatim."""
    if len(args) < 3 or args[0] != "qm" or args[1] != "create":
        raise SystemExit("qm-create: expected 'qm create VMID --key value ...'")
    vmid = args[2]
    lines = {}
    i = 3
    while i < len(args):
        if not args[i].startswith("--") or i + 1 >= len(args):
            raise SystemExit(f"qm-create: bad argument {args[i]!r}")
        lines[args[i][2:]] = args[i + 1]
        i += 2
    # Disk allocations (STORAGE:SIZE) are rewritten by qm; check the rest.
    text = "".join(f"{k}: {v}\n" for k, v in sorted(lines.items())
                   if not re.match(r"^(scsi|virtio|sata|ide|efidisk|tpmstate)\d+$", k))
    return vmid, text


def main(argv):
    global QEMU_SERVER
    if len(argv) >= 2 and argv[0] == "--qemu-server":
        m = re.match(r"^(\d+)\.(\d+)\.(\d+)", argv[1])
        if not m:
            print(f"--qemu-server: not a version: {argv[1]}", file=sys.stderr)
            return 2
        QEMU_SERVER = tuple(int(x) for x in m.groups())
        argv = argv[2:]
    if len(argv) < 2 or argv[0] not in ("vm", "mapping", "qm-create"):
        print(__doc__, file=sys.stderr)
        return 2
    problems = []
    if argv[0] == "qm-create":
        vmid, text = qm_create_to_conf(argv[1:])
        check_vm(f"{vmid}.conf", text, problems)
    else:
        for path in argv[1:]:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            (check_vm if argv[0] == "vm" else check_mapping)(path, text, problems)
    real = [p for p in problems if "warning-only" not in p]
    for p in problems:
        print(p)
    return 1 if real else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
