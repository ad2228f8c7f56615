#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The QEMU arguments Proxmox VE's qemu-server makes of a VM config's hostpciN lines.

    hostpci.py CONFIG ADDRESSES   prints one QEMU argument per line
    hostpci.py --self-test        checks it against known cases

CONFIG is a VM config as passthru wrote it (/etc/pve/qemu-server/<vmid>.conf); ADDRESSES is
a file whose lines start with the PCI addresses the host has (the reboot test's drivers.txt),
standing in for /sys/bus/pci/devices. The reboot test starts VM 101 with these arguments
inside the guest (tests/reboot/README.md, "The VM starts").

What qemu-server does, read from its source (proxmox/qemu-server, the same in 8.2.1 and
9.1.4, the versions the test's roots claim; docs/facts.md, qemu-server):
- PVE/QemuServer/PCI.pm parse_hostpci: the value is a property string whose default key is
  `host`; `host` is a list of ids separated by `;` (alternatives are not used here: one id);
  each id is looked up with pve-common's PVE::SysFSTools::lspci, which keeps every function
  whose address starts with the id (an id without a function is every function of the slot),
  sorted by address. More than one function makes the entry multifunction.
- parse_hostpci_devices: `pcie=1` needs a q35 machine.
- print_hostpci_devices, for hostpciI with pcie=1 (not Windows 7): for I > 3 a
  `pcie-root-port` named ich9-pcie-port-(I+1) is added (print_pcie_root_port); the device goes
  to bus ich9-pcie-port-(I+1), slot 0 (get_pcie_addr_map, printed as `addr=0x0`). Ports 1-4
  come from the machine config file pve-q35-4.0.cfg (qemu-server's usr/ directory): 1c.0-1c.3
  on pcie.0, port and chassis 1-4, x-speed 16, x-width 32, multifunction on; here they are
  the same devices as -device arguments, since that file is not on a Debian host.
  For each function J: `vfio-pci,host=<address>,id=hostpciI[.J],bus=...,addr=0x0[.J]`, and on
  function 0 only: `rombar=0` when rombar is off, `x-vga=on` when x-vga is set and the VM
  does not boot OVMF, `multifunction=on`, `romfile=/usr/share/kvm/<file>`, and the
  x-pci-vendor-id / device-id / sub-vendor-id / sub-device-id overrides.
Entries without pcie=1 (on the pci.N bridges of pve-q35-4.0.cfg), mappings (pci.cfg) and
mediated devices are not what passthru writes; this refuses them instead of guessing.
"""
import re
import sys

MAX_HOSTPCI = 16
ROOT_PORT_ADDR = {4: "10.0", 5: "10.1", 6: "10.2", 7: "10.3", 8: "10.4", 9: "10.5", 10: "10.6", 11: "10.7",
                  12: "11.0", 13: "11.1", 14: "11.2", 15: "11.3"}
TRUE = {"1", "on", "yes", "true"}
FALSE = {"0", "off", "no", "false"}


def main_section(text):
    """key -> value of the config's current section (before the first [snapshot])."""
    conf = {}
    for line in text.splitlines():
        if line.startswith("["):
            break
        m = re.match(r"^([a-z][a-z0-9_-]*):\s*(.*?)\s*$", line)
        if m:
            conf[m.group(1)] = m.group(2)
    return conf


def property_string(value, default_key):
    out = {}
    for part in value.split(","):
        if "=" in part:
            k, v = part.split("=", 1)
        else:
            k, v = default_key, part
        if k in out:
            raise ValueError("duplicate key '%s' in '%s'" % (k, value))
        out[k] = v
    return out


def flag(props, key):
    v = props.get(key)
    if v is None:
        return None
    if v.lower() in TRUE:
        return True
    if v.lower() in FALSE:
        return False
    raise ValueError("%s=%s is not a boolean" % (key, v))


def lspci(filter_id, addresses):
    """PVE::SysFSTools::lspci with a string filter: addresses matching ^(0000:)?FILTER, sorted."""
    pat = re.compile(r"^(0000:)?" + re.escape(filter_id))
    return sorted(a for a in addresses if pat.match(a))


def root_port(i):
    n = i + 1
    if i <= 3:
        addr = "1c.%d" % i
    else:
        addr = ROOT_PORT_ADDR[i]
    return "pcie-root-port,id=ich9-pcie-port-%d,addr=%s,x-speed=16,x-width=32,multifunction=on,bus=pcie.0,port=%d,chassis=%d" % (
        n, addr, n, n)


def hostpci_args(conf, addresses):
    """The -device arguments (a list of strings, each one argument) and a list of the
    passed functions (address, qdev id, root port, guest function)."""
    if conf.get("machine", "").split(",")[0].split("=")[-1].find("q35") < 0:
        raise ValueError("the VM is not a q35 machine (machine: %s)" % conf.get("machine", "(unset)"))
    ovmf = conf.get("bios") == "ovmf"
    args, functions = [], []
    for i in range(MAX_HOSTPCI):
        value = conf.get("hostpci%d" % i)
        if not value:
            continue
        d = property_string(value, "host")
        if "mapping" in d or "mdev" in d or "legacy-igd" in d:
            raise ValueError("hostpci%d: mappings, mediated devices and legacy IGD are not what this test starts" % i)
        if not flag(d, "pcie"):
            raise ValueError("hostpci%d: without pcie=1 (qemu-server puts it on a pci.N bridge; passthru writes pcie=1)" % i)
        if "host" not in d or ";" in d["host"]:
            raise ValueError("hostpci%d: one host id expected, got '%s'" % (i, d.get("host")))
        ids = lspci(d["host"], addresses)
        if not ids:
            raise ValueError("no PCI device found for '%s'" % d["host"])
        # every root port the machine config file brings, then qemu-server's extra ones
        if i > 3:
            args.append(root_port(i))
        bus = "ich9-pcie-port-%d" % (i + 1)
        multi = len(ids) > 1
        for j, addr in enumerate(ids):
            mf = ".%d" % j if multi else ""
            s = "vfio-pci,host=%s,id=hostpci%d%s,bus=%s,addr=0x0%s" % (addr, i, mf, bus, mf)
            if j == 0:
                if flag(d, "rombar") is False:
                    s += ",rombar=0"
                if flag(d, "x-vga") and not ovmf:
                    s += ",x-vga=on"
                if multi:
                    s += ",multifunction=on"
                if d.get("romfile"):
                    s += ",romfile=/usr/share/kvm/%s" % d["romfile"]
                for opt in ("vendor-id", "device-id", "sub-vendor-id", "sub-device-id"):
                    if d.get(opt):
                        s += ",x-pci-%s=%s" % (opt, d[opt])
            args.append(s)
            functions.append((addr, "hostpci%d%s" % (i, mf), bus, j))
    return args, functions


def machine_args(conf):
    """The four root ports of pve-q35-4.0.cfg, as -device arguments."""
    return [root_port(i) for i in range(4)]


# Cases whose expected strings are those of qemu-server's own cfg2cmd expectations
# (qemu-server:src/test/cfg2cmd/q35-linux-hostpci.conf.cmd: the pcie=1 entries) and of the card the
# reboot test passes (docs/facts.md, qemu-server: "The lines passthru writes").
SELF_TEST = [
    ({"machine": "q35", "hostpci1": "d0:13.0,pcie=1", "hostpci3": "d0:15.1,pcie=1",
      "hostpci4": "d0:17.0,pcie=1,rombar=0", "hostpci7": "d0:15.2,pcie=1"},
     ["0000:d0:13.0", "0000:d0:15.1", "0000:d0:15.2", "0000:d0:17.0"],
     ["vfio-pci,host=0000:d0:13.0,id=hostpci1,bus=ich9-pcie-port-2,addr=0x0",
      "vfio-pci,host=0000:d0:15.1,id=hostpci3,bus=ich9-pcie-port-4,addr=0x0",
      "pcie-root-port,id=ich9-pcie-port-5,addr=10.0,x-speed=16,x-width=32,multifunction=on,bus=pcie.0,port=5,chassis=5",
      "vfio-pci,host=0000:d0:17.0,id=hostpci4,bus=ich9-pcie-port-5,addr=0x0,rombar=0",
      "pcie-root-port,id=ich9-pcie-port-8,addr=10.3,x-speed=16,x-width=32,multifunction=on,bus=pcie.0,port=8,chassis=8",
      "vfio-pci,host=0000:d0:15.2,id=hostpci7,bus=ich9-pcie-port-8,addr=0x0"]),
    ({"machine": "q35", "bios": "ovmf", "hostpci0": "0000:04:00,pcie=1,x-vga=1"},
     ["0000:00:1b.0", "0000:04:00.1", "0000:04:00.0", "0000:05:00.0"],
     ["vfio-pci,host=0000:04:00.0,id=hostpci0.0,bus=ich9-pcie-port-1,addr=0x0.0,multifunction=on",
      "vfio-pci,host=0000:04:00.1,id=hostpci0.1,bus=ich9-pcie-port-1,addr=0x0.1"]),
    ({"machine": "q35", "hostpci0": "04:00,pcie=1,x-vga=1"},
     ["0000:04:00.0", "0000:04:00.1"],
     ["vfio-pci,host=0000:04:00.0,id=hostpci0.0,bus=ich9-pcie-port-1,addr=0x0.0,x-vga=on,multifunction=on",
      "vfio-pci,host=0000:04:00.1,id=hostpci0.1,bus=ich9-pcie-port-1,addr=0x0.1"]),
]
SELF_TEST_REFUSED = [
    {"machine": "pc", "hostpci0": "04:00,pcie=1"},
    {"machine": "q35", "hostpci0": "04:00"},
    {"machine": "q35", "hostpci0": "mapping=gpu,pcie=1"},
    {"machine": "q35", "hostpci0": "05:00,pcie=1"},
]


def self_test():
    failures = 0
    for conf, addresses, want in SELF_TEST:
        got, _ = hostpci_args(conf, addresses)
        if got != want:
            failures += 1
            print("FAIL %s:\n  got  %s\n  want %s" % (conf, got, want))
    for conf in SELF_TEST_REFUSED:
        try:
            got, _ = hostpci_args(conf, ["0000:04:00.0"])
            failures += 1
            print("FAIL %s: not refused: %s" % (conf, got))
        except ValueError:
            pass
    print("hostpci.py self-test: %d of %d cases %s" % (len(SELF_TEST) + len(SELF_TEST_REFUSED) - failures,
                                                       len(SELF_TEST) + len(SELF_TEST_REFUSED), "pass" if not failures else "FAIL"))
    return 1 if failures else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 3:
        raise SystemExit("usage: hostpci.py CONFIG ADDRESSES")
    with open(sys.argv[1], encoding="utf-8") as f:
        conf = main_section(f.read())
    with open(sys.argv[2], encoding="utf-8") as f:
        addresses = [line.split()[0] for line in f if line.strip()]
    try:
        args, _ = hostpci_args(conf, addresses)
    except ValueError as e:
        raise SystemExit("hostpci.py: %s" % e)
    if not args:
        raise SystemExit("hostpci.py: the config has no hostpciN line")
    for a in machine_args(conf) + args:
        print("-device")
        print(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
