#!/usr/bin/env python3
"""Check `passthru scan --json` (schema passthru.scan/1) against a fixture host's
description and its hand-written "expect" block.

    check_scan.py DESCRIPTION.json ROOT SCAN.json

Devices are checked against the description (every function, ids, class, subsystem,
driver, boot_vga, link) and against the tree (IOMMU group link, NUMA node); GPU cards,
verdicts, boot VGA, host readiness and required problems against "expect".
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_lspci import load  # noqa: E402  (same description loader)


def functions(desc):
    out = {}

    def walk(fn, domain):
        bdf = "%s:%s" % (domain, fn["addr"])
        out[bdf] = fn
        sriov = fn.get("sriov")
        if sriov:
            bus, rest = fn["addr"].split(":")
            dev, func = rest.split(".")
            rid = (int(bus, 16) << 8) | (int(dev, 16) << 3) | int(func)
            for i in range(sriov.get("num", 0)):
                vrid = rid + sriov["offset"] + i * sriov["stride"]
                vbdf = "%s:%02x:%02x.%d" % (domain, vrid >> 8, (vrid >> 3) & 0x1F, vrid & 7)
                out[vbdf] = {"id": fn["id"].split(":")[0] + ":" + sriov["vf_device"], "class": fn["class"],
                             "subsys": sriov.get("vf_subsys", fn.get("subsys")), "driver": sriov.get("vf_driver"),
                             "vf": True}
        for child in fn.get("children", []):
            walk(child, domain)

    for rc in desc["pci"]:
        for fn in rc["functions"]:
            walk(fn, rc.get("domain", "0000"))
    return out


def speed_number(value):
    """'8.0 GT/s PCIe', '8.0 GT/s', 8, 8.0 -> 8.0; None/'Unknown' -> None."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    m = re.match(r"\s*([0-9.]+)", str(value))
    return float(m.group(1)) if m else None


def main(argv):
    desc_path, root, scan_path = argv[1:4]
    desc = load(desc_path)
    exp = desc["expect"]
    name = desc["name"]
    errors = []

    def err(msg):
        errors.append(msg)

    with open(scan_path, encoding="utf-8") as fh:
        scan = json.load(fh)
    if scan.get("schema") != "passthru.scan/1":
        err("schema is %r" % scan.get("schema"))

    # ---------------- host
    host = scan.get("host", {})
    eh = exp["host"]
    for key in ("cpu_vendor", "kernel", "bootloader"):
        if host.get(key) != eh[key]:
            err("host.%s = %r, expected %r" % (key, host.get(key), eh[key]))
    # The release and qemu-server come from the root's dpkg status; a description
    # that lists the packages says which versions scan must report.
    packages = desc["host"].get("packages") or {}
    for key, package in (("pve_version", "pve-manager"), ("qemu_server_version", "qemu-server")):
        if packages.get(package) and host.get(key) != packages[package]["version"]:
            err("host.%s = %r, expected %r (dpkg status)" % (key, host.get(key), packages[package]["version"]))
    if host.get("cmdline") != desc["host"]["cmdline"]:
        err("host.cmdline = %r, expected %r" % (host.get("cmdline"), desc["host"]["cmdline"]))
    # An NVIDIA vGPU host only where the description says so (scan/vgpu.cpp).
    vgpu = (host.get("vgpu") or {}).get("host")
    if vgpu is not bool(eh.get("vgpu", False)):
        err("host.vgpu.host = %r, expected %r" % (vgpu, bool(eh.get("vgpu", False))))
    iommu = host.get("iommu") or {}
    for key in ("enabled", "groups", "interrupt_remapping"):
        if iommu.get(key) != eh["iommu"][key]:
            err("host.iommu.%s = %r, expected %r" % (key, iommu.get(key), eh["iommu"][key]))

    # ---------------- devices
    want = functions(desc)
    devices = {d.get("address"): d for d in scan.get("devices", [])}
    if len(devices) != len(scan.get("devices", [])):
        err("duplicate device addresses")
    if set(devices) != set(want):
        err("device set differs: only in scan %s, only in description %s"
            % (sorted(set(devices) - set(want)), sorted(set(want) - set(devices))))
    for bdf in sorted(set(devices) & set(want)):
        d, w = devices[bdf], want[bdf]
        vendor, device = w["id"].split(":")
        if d.get("vendor") != vendor or d.get("device") != device:
            err("%s: id %s:%s, expected %s" % (bdf, d.get("vendor"), d.get("device"), w["id"]))
        if d.get("class") != w["class"][:4]:
            err("%s: class %r, expected %r" % (bdf, d.get("class"), w["class"][:4]))
        if w.get("subsys"):
            if d.get("subsystem") != w["subsys"]:
                err("%s: subsystem %r, expected %r" % (bdf, d.get("subsystem"), w["subsys"]))
        elif d.get("subsystem") not in (None, "0000:0000"):
            err("%s: subsystem %r, expected none" % (bdf, d.get("subsystem")))
        if d.get("driver") != w.get("driver"):
            err("%s: driver %r, expected %r" % (bdf, d.get("driver"), w.get("driver")))
        if bool(d.get("boot_vga")) != bool(w.get("boot_vga")):
            err("%s: boot_vga %r, expected %r" % (bdf, d.get("boot_vga"), bool(w.get("boot_vga"))))
        link_path = os.path.join(root, "sys/bus/pci/devices", bdf, "iommu_group")
        group = int(os.path.basename(os.readlink(link_path))) if os.path.islink(link_path) else None
        if d.get("iommu_group") != group:
            err("%s: iommu_group %r, tree says %r" % (bdf, d.get("iommu_group"), group))
        with open(os.path.join(root, "sys/bus/pci/devices", bdf, "numa_node"), encoding="utf-8") as fh:
            numa = int(fh.read())
        if d.get("numa_node") not in ((numa,) if numa >= 0 else (None, -1)):
            err("%s: numa_node %r, tree says %r" % (bdf, d.get("numa_node"), numa))
        link = d.get("link")
        wl = w.get("link") if not w.get("vf") and w.get("kind") != "rciep" else None
        if wl:
            if not link:
                err("%s: link missing, expected %s" % (bdf, wl))
            else:
                got = (speed_number(link.get("speed")), link.get("width"),
                       speed_number(link.get("max_speed")), link.get("max_width"))
                if got != (float(wl[0]), wl[1], float(wl[2]), wl[3]):
                    err("%s: link %s, expected %s" % (bdf, got, wl))
        elif link:
            # no link registers: the kernel's "Unknown", 0 and 255 are no link at all
            err("%s: link %s but the description has no PCIe link" % (bdf, link))

    # ---------------- boot VGA
    boot = sorted(a for a, d in devices.items() if d.get("boot_vga"))
    if boot != sorted(exp["boot_vga"]):
        err("boot_vga devices %s, expected %s" % (boot, exp["boot_vga"]))

    # ---------------- GPU cards (NVIDIA targets; other vendors' GPUs may be listed)
    gpus = {g.get("slot"): g for g in scan.get("gpus", []) if g.get("vendor") == "10de"}
    egpus = {g["slot"]: g for g in exp["gpus"]}
    if set(gpus) != set(egpus):
        err("NVIDIA cards %s, expected %s" % (sorted(gpus), sorted(egpus)))
    for slot in sorted(set(gpus) & set(egpus)):
        g, e = gpus[slot], egpus[slot]
        for key in ("functions", "iommu_groups", "host_critical", "goes_along"):
            if key in e and sorted(g.get(key) or []) != sorted(e[key]):
                err("gpu %s: %s %s, expected %s" % (slot, key, g.get(key), e[key]))
        # "shares_with" in expect = every other endpoint in the card's group(s).  The scan
        # lists other GPU cards' functions in shares_with and the rest in other_endpoints.
        if "shares_with" in e:
            got = sorted(set(g.get("shares_with") or []) | set(g.get("other_endpoints") or []))
            if got != sorted(e["shares_with"]):
                err("gpu %s: shares_with+other_endpoints %s, expected %s" % (slot, got, e["shares_with"]))
        for key in ("isolation", "boot_vga"):
            if key in e and g.get(key) != e[key]:
                err("gpu %s: %s %r, expected %r" % (slot, key, g.get(key), e[key]))

    # ---------------- NVSwitches (an NVSwitch system lists every switch function with its group)
    got_sw = sorted((f, sw.get("ids", [None] * len(sw.get("functions", [])))[i], g)
                    for sw in scan.get("nvswitches", [])
                    for i, f in enumerate(sw.get("functions", []))
                    for g in (sw.get("iommu_groups") or [None])[:1])
    want_sw = sorted((s["function"], s["id"], s["iommu_group"]) for s in exp.get("nvswitches", []))
    if got_sw != want_sw:
        err("nvswitches %s, expected %s" % (got_sw, want_sw))

    # ---------------- problems
    problems = scan.get("problems", [])
    for p in problems:
        if p.get("severity") not in ("error", "warning", "info") or not p.get("message"):
            err("malformed problem %s" % p)
    for want_p in exp.get("problems", []):
        needle = want_p["contains"].lower()
        hits = [p for p in problems
                if needle in (p.get("message", "") + " " + (p.get("fix") or "")).lower()
                and ("severity" not in want_p or p.get("severity") == want_p["severity"])]
        if not hits:
            err("no problem mentions %r%s" % (want_p["contains"],
                                             " with severity %s" % want_p["severity"] if "severity" in want_p else ""))
    # a card whose link runs narrower or slower than it can must be flagged, naming the card
    for addr in exp.get("link_flags", []):
        slot = addr.rsplit(".", 1)[0]
        if not any(slot in p.get("message", "") and re.search(r"\blink\b|x\d+ of x\d+", p.get("message", ""))
                   for p in problems):
            err("no link problem names %s" % slot)

    # a function without a link (RC integrated endpoint, VF) is never named in a link
    # problem, unless another function of its slot has a link (a VF beside its PF)
    linked = {b.rsplit(".", 1)[0] for b, w in want.items()
              if w.get("link") and not w.get("vf") and w.get("kind") != "rciep"}
    for bdf, w in want.items():
        slot = bdf.rsplit(".", 1)[0]
        if slot in linked:
            continue
        for p in problems:
            if slot in p.get("message", "") and re.search(r"\blink\b|x\d+ of x\d+", p.get("message", "")):
                err("a link problem names %s, which has no PCIe link: %r" % (bdf, p.get("message")))

    for e in errors:
        print("FAIL: %s: %s" % (name, e))
    print("%s: %d devices, %d NVIDIA cards checked, %d problems" % (name, len(want), len(egpus), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
