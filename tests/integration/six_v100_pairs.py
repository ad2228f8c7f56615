#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""six_v100_pairs.py FIXTURES_DIR OUT: generates the host tree of a server with six Tesla V100,
four of them in pairs - each pair behind a PCIe switch under a root port, neither with ACS, so
the kernel puts both cards (and the switch ports) in one IOMMU group - and two on root ports of
their own. It is the t180-4xv100 description with ACS taken off those ports and two cards added,
made by the fixture generator (tests/fixtures/gen_host.py) into OUT for the cluster-mapping tests."""
import copy
import json
import os
import subprocess
import sys
import tempfile


def functions(fs):
    for f in fs:
        yield f
        yield from functions(f.get("children", []))


def description(fixtures):
    with open(os.path.join(fixtures, "descriptions", "t180-4xv100.json"), encoding="utf-8") as fh:
        d = json.load(fh)
    d.pop("expect", None)  # the base's expectations are about its own groups
    d["name"] = "six-v100-pairs"
    d["summary"] = ("t180-4xv100 with ACS off on both PLX switches and the root ports above them "
                    "(two V100 per IOMMU group) and two more V100 on root ports of their own")
    by_addr = {}
    for bus in d["pci"]:
        for f in functions(bus["functions"]):
            by_addr[f["addr"]] = f
            if f.get("kind") == "downstream" or f["addr"] in ("00:02.0", "80:02.0"):
                f["acs"] = False
    gpu = by_addr["04:00.0"]
    port = by_addr["00:01.0"]
    port.pop("secondary", None)
    port["children"] = [dict(copy.deepcopy(gpu), addr="01:00.0")]
    bus80 = next(b for b in d["pci"] if b["bus"] == "80")
    second = dict(copy.deepcopy(by_addr["80:02.0"]), addr="80:03.0", acs=True)
    second["children"] = [dict(copy.deepcopy(gpu), addr="86:00.0")]
    at = next(k for k, f in enumerate(bus80["functions"]) if f["addr"] == "80:02.0")
    bus80["functions"].insert(at + 1, second)
    return d


def main(argv):
    fixtures, out = argv[1], argv[2]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(description(fixtures), fh)
    try:
        subprocess.run([sys.executable, os.path.join(fixtures, "gen_host.py"), fh.name, out], check=True)
    finally:
        os.unlink(fh.name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
