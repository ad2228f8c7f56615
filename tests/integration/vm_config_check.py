#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The per-config checks of vm_proxmox.sh in one process (a Python start costs more than
the checks themselves, and the test makes them for every fixture and input):

  vm_config_check.py PLAN.json BEFORE AFTER GOLDEN [--qemu-server VERSION] [--accept]

- writes the content PLAN.json plans for /etc/pve/qemu-server/101.conf to AFTER
  ("no change of 101.conf planned" when there is none);
- AFTER passes pve_conf_check.py's VM check (with --qemu-server: only options that
  qemu-server knows);
- apart from the keys whose value changed, BEFORE and AFTER are identical line for line
  (order, comments, sections);
- AFTER equals GOLDEN with its pci.ids names read from this machine's pci.ids
  (pci_names.py); --accept writes GOLDEN instead.
Exit 0, or 1 with one line (or a diff) per problem.
"""
import difflib
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pci_names  # noqa: E402
import pve_conf_check  # noqa: E402

CONF = "/etc/pve/qemu-server/101.conf"
KEY = re.compile(r"^([a-z][a-z_\-]*\d*):\s*(.+?)\s*$")
SECTION = re.compile(r"^\[.+\]\s*$")


def planned(plan_path, path):
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    for entry in plan["files"]:
        if entry["path"] == path:
            return entry["content"] or ""
    return None


def lines_of(text):
    out, section = [], ""
    for line in text.split("\n"):
        if SECTION.match(line):
            section = line
        m = KEY.match(line)
        out.append((section, m.group(1) if m else None, m.group(2) if m else None, line))
    return out


def preserved(before, after):
    """The diff of BEFORE and AFTER without the main section's changed keys ([] when none)."""
    b, a = lines_of(before), lines_of(after)
    bv = {k: v for s, k, v, _ in b if s == "" and k}
    av = {k: v for s, k, v, _ in a if s == "" and k}
    changed = {k for k in set(bv) | set(av) if bv.get(k) != av.get(k)}

    def strip(lines):
        return [line + "\n" for s, k, v, line in lines if not (s == "" and k in changed)]

    return list(difflib.unified_diff(strip(b), strip(a), "before", "after"))


def golden_diff(golden, after):
    names = pci_names.device_names("/usr/share/misc/pci.ids")
    with open(golden, encoding="utf-8") as f:
        expected = pci_names.PATTERN.sub(lambda m: pci_names.rename(names, m), f.read())
    if expected == after:
        return []
    return list(difflib.unified_diff(expected.splitlines(True), after.splitlines(True), golden, "planned"))


def main(argv):
    accept = "--accept" in argv
    argv = [a for a in argv if a != "--accept"]
    if len(argv) >= 6 and argv[4] == "--qemu-server":
        m = re.match(r"^(\d+)\.(\d+)\.(\d+)", argv[5])
        if not m:
            print(f"--qemu-server: not a version: {argv[5]}")
            return 2
        pve_conf_check.QEMU_SERVER = tuple(int(x) for x in m.groups())
        argv = argv[:4]
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    plan_path, before_path, after_path, golden = argv
    after = planned(plan_path, CONF)
    if after is None:
        print("no change of 101.conf planned")
        return 1
    with open(after_path, "w", encoding="utf-8") as f:
        f.write(after)
    with open(before_path, encoding="utf-8") as f:
        before = f.read()
    problems = []
    pve_conf_check.check_vm(after_path, after, problems)
    failed = [f"checker: {p}" for p in problems if "warning-only" not in p]
    diff = preserved(before, after)
    if diff:
        failed.append("untouched lines changed:\n" + "".join(diff).rstrip("\n"))
    if accept:
        os.makedirs(os.path.dirname(golden), exist_ok=True)
        with open(golden, "w", encoding="utf-8") as f:
            f.write(after)
    elif not os.path.isfile(golden):
        failed.append(f"missing golden file {golden} (run with PASSTHRU_TEST_ACCEPT=1)")
    else:
        diff = golden_diff(golden, after)
        if diff:
            failed.append("differs from its golden file:\n" + "".join(diff).rstrip("\n"))
    for p in failed:
        print(p)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
