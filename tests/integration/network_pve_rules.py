#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Independent check of an /etc/network/interfaces file against the rules
Proxmox VE's reader and writer follow (docs/facts.md, network;
pve-common:src/PVE/Network/Interfaces.pm). Written separately from the C++
parser on purpose: it reads the file its own way.

usage: network_pve_rules.py FILE [--bond NAME] [--bridge NAME]
exit 0 when every rule holds, 1 with one line per broken rule otherwise.
"""
import argparse
import ipaddress
import re
import sys

BOND_MODES = {"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}
XMIT_MODES = {"balance-xor", "802.3ad"}
XMIT_POLICIES = {"layer2", "layer2+3", "layer3+4", "encap2+3", "encap3+4"}
KEYWORDS = ("iface", "auto", "source", "source-directory", "mapping", "allow-", "no-auto-down", "no-scripts", "rename", "vlan")
L3 = {"address", "netmask", "gateway", "broadcast", "pointopoint"}


def read(path):
    with open(path, encoding="utf-8", newline="") as f:
        data = f.read()
    data = re.sub(r"\\\r?\n", " ", data)  # continuation lines
    stanzas = []  # dicts: name, family, method, opts: list of (key, value)
    autos = set()
    cur = None
    for raw in data.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        word = line.split()[0]
        if word == "iface":
            parts = line.split()
            cur = {"name": parts[1], "family": parts[2] if len(parts) > 2 else "",
                   "method": parts[3] if len(parts) > 3 else "", "opts": []}
            stanzas.append(cur)
        elif word == "auto" or word == "allow-auto":
            autos.update(line.split()[1:])
            cur = None
        elif word.startswith(KEYWORDS):
            cur = None
        elif cur is not None:
            key, _, value = line.partition(" ")
            cur["opts"].append((key, value.strip()))
        else:
            yield_error(f"line outside any stanza: {line!r}")
    return stanzas, autos


ERRORS = []


def yield_error(msg):
    ERRORS.append(msg)


def opt(st, key):
    vals = [v for k, v in st["opts"] if k == key]
    return vals


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--bond", default="bond0")
    ap.add_argument("--bridge", default="vmbr0")
    args = ap.parse_args()
    stanzas, autos = read(args.file)

    by_name = {}
    for st in stanzas:
        by_name.setdefault(st["name"], []).append(st)
        for key, _ in st["opts"]:
            if key.replace("_", "-") in ("bond-ports",):
                yield_error(f"{st['name']}: bond-ports is not read by Proxmox VE (use bond-slaves)")
        for key in ("bond-slaves", "bond-mode", "bond-miimon", "bond-xmit-hash-policy", "bridge-ports", "bridge-stp",
                    "bridge-fd", "bridge-vlan-aware", "bridge-vids", "address", "gateway"):
            if len(opt(st, key)) > 1:
                yield_error(f"{st['name']}: {key} given more than once")

    bonds = {st["name"]: st for st in stanzas if opt(st, "bond-slaves")}
    bridges = {st["name"]: st for st in stanzas if opt(st, "bridge-ports")}
    gateways = {}

    for name, st in bonds.items():
        mode = (opt(st, "bond-mode") or ["balance-rr"])[0]
        if mode not in BOND_MODES:
            yield_error(f"{name}: bond-mode {mode} is not a mode name PVE writes")
        miimon = opt(st, "bond-miimon")
        if not miimon or not miimon[0].isdigit() or not 0 <= int(miimon[0]) <= 255:
            yield_error(f"{name}: bond-miimon must be present and 0-255 (PVE writes 100), got {miimon}")
        xmit = opt(st, "bond-xmit-hash-policy")
        if xmit and mode not in XMIT_MODES:
            yield_error(f"{name}: bond-xmit-hash-policy with {mode}: PVE writes it only for balance-xor/802.3ad")
        if xmit and xmit[0] not in XMIT_POLICIES:
            yield_error(f"{name}: bond-xmit-hash-policy {xmit[0]} unknown")
        if st["method"] != "manual":
            yield_error(f"{name}: a bond under a bridge is 'inet manual' (got {st['method']})")
        for k, _ in st["opts"]:
            if k in L3:
                yield_error(f"{name}: the bond carries {k}; the address belongs on the bridge")
        if name not in autos:
            yield_error(f"{name}: no auto line")
        for slave in opt(st, "bond-slaves")[0].split():
            if slave not in by_name:
                yield_error(f"{name}: member {slave} has no iface stanza (PVE writes 'iface {slave} inet manual')")
            for s in by_name.get(slave, []):
                if s["method"] != "manual":
                    yield_error(f"{slave}: bond member must be 'manual' (got {s['method']})")
                for k, _ in s["opts"]:
                    if k in L3:
                        yield_error(f"{slave}: bond member carries {k}")

    for name, st in bridges.items():
        stp = (opt(st, "bridge-stp") or ["off"])[0]
        if stp not in ("on", "off", "yes", "no"):
            yield_error(f"{name}: bridge-stp {stp}")
        fd = opt(st, "bridge-fd")
        stp_on = stp in ("on", "yes")
        if not stp_on and fd != ["0"]:
            yield_error(f"{name}: with STP off PVE writes bridge-fd 0 (got {fd})")
        if stp_on and (not fd or not fd[0].isdigit() or not 2 <= int(fd[0]) <= 30):
            yield_error(f"{name}: with STP on bridge-fd must be 2-30 (got {fd})")
        vlan = opt(st, "bridge-vlan-aware")
        if vlan and vlan[0] != "yes":
            yield_error(f"{name}: 'bridge-vlan-aware {vlan[0]}' is read as yes by PVE; omit it instead")
        if opt(st, "bridge-vids") and not vlan:
            yield_error(f"{name}: bridge-vids without bridge-vlan-aware yes")
        for port in opt(st, "bridge-ports")[0].split():
            if port != "none" and port not in by_name:
                yield_error(f"{name}: port {port} has no iface stanza")
        if st["method"] == "static" and not opt(st, "address"):
            yield_error(f"{name}: inet static without an address")
        if st["method"] == "dhcp" and opt(st, "address"):
            yield_error(f"{name}: inet dhcp with a static address")

    for st in stanzas:
        for a in opt(st, "address"):
            try:
                iface = ipaddress.ip_interface(a)
            except ValueError:
                yield_error(f"{st['name']}: address {a} does not parse")
                continue
            for g in opt(st, "gateway"):
                try:
                    gw = ipaddress.ip_address(g)
                except ValueError:
                    yield_error(f"{st['name']}: gateway {g} does not parse")
                    continue
                if "/" in a and gw not in iface.network:
                    yield_error(f"{st['name']}: gateway {g} outside {a}")
        for g in opt(st, "gateway"):
            fam = st["family"]
            if fam in gateways:
                yield_error(f"two {fam} gateways: {gateways[fam]} and {st['name']}")
            gateways[fam] = st["name"]

    if args.bond not in bonds:
        yield_error(f"no bond {args.bond} with bond-slaves")
    if args.bridge not in bridges:
        yield_error(f"no bridge {args.bridge} with bridge-ports")
    elif args.bond not in opt(bridges[args.bridge], "bridge-ports")[0].split():
        yield_error(f"{args.bridge}: {args.bond} is not among its ports")

    for e in ERRORS:
        print(f"{args.file}: {e}")
    return 1 if ERRORS else 0


if __name__ == "__main__":
    sys.exit(main())
