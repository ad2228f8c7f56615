#!/usr/bin/env python3
"""Check that lspci, reading a fixture tree through libpci's linux-sysfs method, sees
exactly what the host description says.  Used by lspci_agrees.sh.

    check_lspci.py DESCRIPTION.json ROOT NNK_OUTPUT VV_OUTPUT

NNK_OUTPUT is `lspci -D -nnk` and VV_OUTPUT is `lspci -D -vv -nn`, both run with
-A linux-sysfs -O sysfs.path=ROOT/sys/bus/pci.  The expected functions are taken from the
description alone (SR-IOV VF addresses computed from offset/stride here, independently of
the generator); link speed/width, IOMMU group and NUMA node are compared with the tree's
sysfs attributes, so config space and sysfs must agree.
"""

import json
import os
import re
import sys


def merge(base, over):
    out = dict(base)
    for key, val in over.items():
        if isinstance(val, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], val)
        else:
            out[key] = val
    return out


def load(path):
    with open(path, encoding="utf-8") as fh:
        desc = json.load(fh)
    if "base" in desc:
        base = load(os.path.join(os.path.dirname(path), desc["base"]))
        desc = merge(base, {k: v for k, v in desc.items() if k != "base"})
    # "function_patches": fields set on functions of the inherited topology (a driver).
    patches = desc.get("function_patches") or {}

    def patch(functions):
        for f in functions:
            f.update(patches.get(f["addr"], {}))
            patch(f.get("children") or [])

    for bus in desc.get("pci", []):
        patch(bus["functions"])
    return desc


def expected_functions(desc):
    out = {}

    def walk(fn, domain):
        bdf = "%s:%s" % (domain, fn["addr"])
        out[bdf] = {"id": fn["id"], "class": fn["class"][:4], "subsys": fn.get("subsys"),
                    "driver": fn.get("driver"), "rev": fn.get("rev", "00")}
        sriov = fn.get("sriov")
        if sriov:
            bus, rest = fn["addr"].split(":")
            dev, func = rest.split(".")
            rid = (int(bus, 16) << 8) | (int(dev, 16) << 3) | int(func)
            for i in range(sriov.get("num", 0)):
                vrid = rid + sriov["offset"] + i * sriov["stride"]
                vbdf = "%s:%02x:%02x.%d" % (domain, vrid >> 8, (vrid >> 3) & 0x1F, vrid & 7)
                out[vbdf] = {"id": fn["id"].split(":")[0] + ":" + sriov["vf_device"], "class": fn["class"][:4],
                             "subsys": sriov.get("vf_subsys", fn.get("subsys")), "driver": sriov.get("vf_driver"),
                             "rev": fn.get("rev", "00")}
        for child in fn.get("children", []):
            walk(child, domain)

    for rc in desc["pci"]:
        for fn in rc["functions"]:
            walk(fn, rc.get("domain", "0000"))
    return out


HEAD = re.compile(r"^([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) .*\[([0-9a-f]{4})\]: .*\[([0-9a-f]{4}):([0-9a-f]{4})\]"
                  r"(?: \(rev ([0-9a-f]{2})\))?")


def parse_blocks(text):
    blocks = {}
    cur = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith("\t") and not line.startswith(" "):
            m = HEAD.match(line)
            if not m:
                raise SystemExit("cannot parse lspci line: %r" % line)
            cur = m.group(1)
            blocks[cur] = {"class": m.group(2), "id": "%s:%s" % (m.group(3), m.group(4)),
                           "rev": m.group(5) or "00", "lines": []}
        else:
            blocks[cur]["lines"].append(line.strip())
    return blocks


def read(root, rel):
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return None


def main(argv):
    desc_path, root, nnk_path, vv_path = argv[1:5]
    desc = load(desc_path)
    want = expected_functions(desc)
    with open(nnk_path, encoding="utf-8") as fh:
        nnk = parse_blocks(fh.read())
    with open(vv_path, encoding="utf-8") as fh:
        vv = parse_blocks(fh.read())
    errors = []
    if set(nnk) != set(want):
        errors.append("function set differs: only in lspci %s, only in description %s"
                      % (sorted(set(nnk) - set(want)), sorted(set(want) - set(nnk))))
    for bdf in sorted(set(nnk) & set(want)):
        got, exp = nnk[bdf], want[bdf]
        if got["id"] != exp["id"]:
            errors.append("%s: id %s, expected %s" % (bdf, got["id"], exp["id"]))
        if got["class"] != exp["class"]:
            errors.append("%s: class %s, expected %s" % (bdf, got["class"], exp["class"]))
        if got["rev"] != exp["rev"]:
            errors.append("%s: rev %s, expected %s" % (bdf, got["rev"], exp["rev"]))
        subs = [l for l in got["lines"] if l.startswith("Subsystem:")]
        if exp["subsys"]:
            if len(subs) != 1 or not subs[0].endswith("[%s]" % exp["subsys"]):
                errors.append("%s: subsystem %s, expected %s" % (bdf, subs, exp["subsys"]))
        elif subs:
            errors.append("%s: unexpected %s" % (bdf, subs))
        drivers = [l.split(":", 1)[1].strip() for l in got["lines"] if l.startswith("Kernel driver in use:")]
        if drivers != ([exp["driver"]] if exp["driver"] else []):
            errors.append("%s: driver %s, expected %s" % (bdf, drivers, exp["driver"]))

        # -vv: link capability/status against the tree's sysfs attributes
        dev = os.path.join("sys/bus/pci/devices", bdf)
        lines = vv.get(bdf, {}).get("lines", [])
        cur_speed = read(root, dev + "/current_link_speed")
        if cur_speed is not None and cur_speed != "Unknown":
            cap = [l for l in lines if l.startswith("LnkCap:")]
            sta = [l for l in lines if l.startswith("LnkSta:")]
            pat = re.compile(r"Speed ([0-9.]+)GT/s[^,]*, Width x(\d+)")
            mc = pat.search(cap[0]) if cap else None
            ms = pat.search(sta[0]) if sta else None
            max_speed = read(root, dev + "/max_link_speed").split()[0]
            if not mc or float(mc.group(1)) != float(max_speed) or mc.group(2) != read(root, dev + "/max_link_width"):
                errors.append("%s: LnkCap %s vs sysfs max %s x%s" % (bdf, cap, max_speed, read(root, dev + "/max_link_width")))
            if not ms or float(ms.group(1)) != float(cur_speed.split()[0]) or ms.group(2) != read(root, dev + "/current_link_width"):
                errors.append("%s: LnkSta %s vs sysfs current %s x%s" % (bdf, sta, cur_speed, read(root, dev + "/current_link_width")))
        group_link = os.path.join(root, dev, "iommu_group")
        groups = [l.split(":", 1)[1].strip() for l in lines if l.startswith("IOMMU group:")]
        if os.path.islink(group_link):
            want_group = os.path.basename(os.readlink(group_link))
            if groups != [want_group]:
                errors.append("%s: lspci IOMMU group %s, tree %s" % (bdf, groups, want_group))
        elif groups:
            errors.append("%s: lspci shows IOMMU group %s but the tree has none" % (bdf, groups))
        numa = read(root, dev + "/numa_node")
        shown = [l.split(":", 1)[1].strip() for l in lines if l.startswith("NUMA node:")]
        if numa is not None and numa != "-1" and shown != [numa]:
            errors.append("%s: lspci NUMA node %s, tree %s" % (bdf, shown, numa))
    for e in errors:
        print("FAIL: %s: %s" % (desc.get("name"), e))
    print("%s: %d functions checked, %d problems" % (desc.get("name"), len(want), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
