#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Prints a golden file with every device name that passthru took from pci.ids
("(<class>: <name> [vvvv:dddd]") replaced by the name this machine's pci.ids
gives for vvvv:dddd, so a golden file made with one pci.ids release compares
strictly against output made with another (Debian 12 and Debian 13 ship
different pci.ids; names get corrected between releases).

    pci_names.py GOLDEN [PCI_IDS]      (default /usr/share/misc/pci.ids)
"""
import re
import sys


def device_names(path):
    names = {}
    vendor = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            if not line.startswith("\t"):
                if line.startswith("C "):  # the class list ends the vendors
                    break
                vendor = line[:4].lower()
            elif not line.startswith("\t\t") and vendor:
                names[(vendor, line[1:5].lower())] = line[5:].strip()
    return names


PATTERN = re.compile(r"\((?P<cls>[^:()]+): (?P<name>.*?) \[(?P<v>[0-9a-f]{4}):(?P<d>[0-9a-f]{4})\]")


def rename(names, m):
    """The PATTERN match m with the name this pci.ids (names) gives its vendor:device."""
    name = names.get((m["v"], m["d"]), m["name"])
    return f"({m['cls']}: {name} [{m['v']}:{m['d']}]"


def main():
    golden = sys.argv[1]
    ids = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/misc/pci.ids"
    names = device_names(ids)
    with open(golden, encoding="utf-8") as f:
        sys.stdout.write(PATTERN.sub(lambda m: rename(names, m), f.read()))


if __name__ == "__main__":
    main()
