#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The checks of ansible_playbook.sh on the JSON results of each ansible-playbook run.

  ansible_check.py docs PAGE DIR    every file under DIR is shown verbatim on PAGE
  ansible_check.py check T          check mode: changes and diffs reported, gpu3 refused
  ansible_check.py apply T CHECKER  the real run: each node changed exactly its plan; the mapping
                                    passthru built from the scans holds every safe node's cards,
                                    the pairs of gpu2 too, and each node's own plan agrees
  ansible_check.py again T          the second run: no change
  ansible_check.py absent T         state=absent: each applied node rolled back, the mapping with
                                    gpu1 (where it was applied), pci.cfg as it was byte for byte
  ansible_check.py absent2 T        state=absent again: no change
"""
import json
import os
import re
import subprocess
import sys

SAFE = ("gpu1", "gpu2")
PASS_TASK = "Pass the cards"
MAP_TASK = "Write the cluster PCI mapping"
MAP_NODE = "gpu1"  # the task runs once, on the first host: the mapping's generation is in gpu1's journal
VMID = {"gpu1": "101", "gpu2": "102", "gpu3": "103"}
MAPPING = {"gpu1": "rtx2080ti", "gpu2": "v100", "gpu3": "gtx1060"}
problems = []


def check(cond, what):
    if not cond:
        problems.append(what)
    return cond


def run_of(t, name):
    with open(os.path.join(t, name + ".json")) as f:
        doc = json.load(f)
    with open(os.path.join(t, name + ".rc")) as f:
        rc = int(f.read())
    return doc, rc


def task(doc, prefix):
    """host -> result of the task whose name starts with PREFIX (empty when it did not run)."""
    for play in doc["plays"]:
        for t in play["tasks"]:
            if t["task"]["name"].startswith(prefix):
                return t["hosts"]
    return {}


def refusal(t):
    with open(os.path.join(t, "refusal.line")) as f:
        return f.read().strip()


def check_refused(t, results, run):
    r = results.get("gpu3", {})
    check(r.get("failed") is True, f"{run}: gpu3 did not fail: {r}")
    check(r.get("rc") == 3, f"{run}: gpu3 rc is {r.get('rc')}, not 3")
    check(r.get("msg") == refusal(t), f"{run}: gpu3 msg {r.get('msg')!r} is not passthru's {refusal(t)!r}")
    check(r.get("refused") is True, f"{run}: gpu3 not marked refused")


def tree(root, skip=("var/lib/passthru", "etc/pve/mapping")):
    """relative path -> ('f', bytes) | ('l', target) | ('d', None), without following symlinks."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir
        for d in list(dirnames):
            rel = os.path.join(rel_dir, d)
            if rel in skip:
                dirnames.remove(d)
                continue
            full = os.path.join(dirpath, d)
            if os.path.islink(full):
                out[rel] = ("l", os.readlink(full))
                dirnames.remove(d)
            else:
                out[rel] = ("d", None)
        for name in filenames:
            rel = os.path.join(rel_dir, name)
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                out[rel] = ("l", os.readlink(full))
            else:
                with open(full, "rb") as f:
                    out[rel] = ("f", f.read())
    return out


def changed_files(before, after):
    paths = set(before) | set(after)
    return sorted("/" + p for p in paths if before.get(p) != after.get(p) and (before.get(p) or after.get(p))[0] != "d")


def mode_docs(page, directory):
    with open(page) as f:
        text = f.read()
    for dirpath, _, filenames in os.walk(directory):
        for name in filenames:
            full = os.path.join(dirpath, name)
            rel = "docs/ansible/" + os.path.relpath(full, directory)
            m = re.search(r"<!-- " + re.escape(rel) + r" -->\n```[a-z]*\n(.*?)```\n", text, re.S)
            if check(m is not None, f"{page} does not show {rel}"):
                with open(full) as f:
                    check(m.group(1) == f.read(), f"{page}: the {rel} shown differs from the file")


def mode_check(t):
    doc, rc = run_of(t, "check")
    check(rc == 2, f"check: ansible-playbook exited {rc}, not 2 (gpu3 fails)")
    results = task(doc, PASS_TASK)
    for n in SAFE:
        r = results.get(n, {})
        check(r.get("changed") is True and not r.get("failed"), f"check: {n} not reported changed: {r.get('msg')}")
        plan = r.get("plan") or {}
        check(plan.get("changes_pending") is True, f"check: {n} plan has no changes")
        paths = [f["path"] for f in plan.get("files", [])]
        diffs = r.get("diff") or []
        check(len(diffs) == len(paths) and len(paths) > 0, f"check: {n}: {len(diffs)} diffs for {len(paths)} files")
        for d, f in zip(diffs, plan.get("files", [])):
            check(d.get("after") == (f.get("content") or "") and d.get("before") == (f.get("before") or ""),
                  f"check: {n}: the diff of {f['path']} is not the plan's")
        check(any(line.startswith("Dry run") or "Nothing" in line or "Plan for" in line for line in r.get("stdout_lines", [])),
              f"check: {n}: no apply --dry-run output")
    check_refused(t, results, "check")
    mapping = task(doc, MAP_TASK)
    check(any(r.get("changed") for r in mapping.values()), "check: the mapping task reported no change")
    check(same_file(t), "check: pci.cfg was written")
    check(not task(doc, MAP_TASK)[MAP_NODE].get("generations"), "check: the mapping task applied a generation")


def same_file(t):
    """pci.cfg holds what it held before the playbook ran."""
    with open(os.path.join(t, "pci.cfg.orig"), "rb") as f:
        orig = f.read()
    with open(os.path.join(t, "pmxcfs", "pci.cfg"), "rb") as f:
        return f.read() == orig


def scan(root):
    out = subprocess.run([os.environ["PASSTHRU"], "--root", root, "scan", "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def mapping_lines(text):
    sections, current = {}, None
    for line in text.split("\n"):
        if line and not line[0].isspace():
            current = line.strip()
            sections[current] = []
        elif line.strip().startswith("map ") and current:
            sections[current].append(dict(kv.split("=", 1) for kv in line.strip()[4:].split(",")))
    return sections


def mode_apply(t, checker):
    doc, rc = run_of(t, "apply")
    check(rc == 2, f"apply: ansible-playbook exited {rc}, not 2 (gpu3 fails)")
    results = task(doc, PASS_TASK)
    for n in SAFE:
        r = results.get(n, {})
        if not check(r.get("changed") is True and not r.get("failed"), f"apply: {n}: {r.get('msg')}"):
            continue
        check(r.get("generation") == (3 if n == MAP_NODE else 1), f"apply: {n}: generation {r.get('generation')}")
        plan = r["plan"]
        before, after = tree(os.path.join(t, "start-" + n)), tree(os.path.join(t, n))
        planned = sorted(f["path"] for f in plan["files"])
        check(changed_files(before, after) == planned,
              f"apply: {n} changed {changed_files(before, after)}, the plan says {planned}")
        for f in plan["files"]:
            got = after.get(f["path"].lstrip("/"))
            want = None if f["content"] is None else ("f", f["content"].encode())
            check(got == want, f"apply: {n}: {f['path']} is not what the plan says")
        check("/etc/pve/mapping/pci.cfg" not in planned, f"apply: {n}: passthru planned pci.cfg although the mapping was written")
        conf = after.get(f"etc/pve/qemu-server/{VMID[n]}.conf", ("f", b""))[1].decode()
        check(re.search(rf"^hostpci0: mapping={MAPPING[n]},", conf, re.M) is not None, f"apply: {n}: no hostpci0 mapping in the VM")
    check_refused(t, results, "apply")
    check(tree(os.path.join(t, "start-gpu3")) == tree(os.path.join(t, "gpu3")), "apply: the refused gpu3 was changed")
    path = os.path.join(t, "pmxcfs", "pci.cfg")
    if not check(os.path.exists(path), "apply: no pci.cfg"):
        return
    out = subprocess.run([sys.executable, checker, "mapping", path], capture_output=True, text=True)
    check(out.returncode == 0, f"apply: pve_conf_check: {out.stdout}{out.stderr}")
    with open(path) as f:
        sections = mapping_lines(f.read())
    for n in SAFE:
        s = scan(os.path.join(t, "start-" + n))
        devices = {d["address"]: d for d in s["devices"]}
        cards = [g for g in s["gpus"] if g["nvidia"]]
        for k, g in enumerate(cards):
            ident = MAPPING[n] if k == 0 else f"{MAPPING[n]}-{k}"
            fn0 = devices[g["functions"][0]]
            want = {"node": n, "path": g["slot"], "id": f"{fn0['vendor']}:{fn0['device']}",
                    "subsystem-id": fn0["subsystem"], "iommugroup": str(fn0["iommu_group"])}
            check(want in sections.get(ident, []), f"apply: mapping {ident} lacks {want}: {sections.get(ident)}")
            notes = results[n]["plan"]["notes"]
            check(f"mapping {ident} already maps {g['slot']} on node {n}" in notes, f"apply: passthru on {n} did not find mapping {ident}")
    check(not any(m["node"] == "gpu3" for maps in sections.values() for m in maps), "apply: gpu3's unsafe card is mapped")
    mapped = task(doc, MAP_TASK)[MAP_NODE]
    refused = mapped.get("refused", [])
    check([r["nodes"] for r in refused] == [["gpu3"]], f"apply: the mapping runs refused are {refused}")
    check(all(r["rc"] == 3 and r["msg"].startswith("passthru: error: refused: node gpu3: GPU ") for r in refused),
          f"apply: the refusal is not passthru's, naming gpu3: {refused}")
    check(mapped.get("generations") == [1, 2], f"apply: the mapping was applied as generations {mapped.get('generations')}")


def mode_again(t):
    doc, rc = run_of(t, "again")
    check(rc == 2, f"again: ansible-playbook exited {rc}, not 2")
    for n in SAFE:
        r = task(doc, PASS_TASK).get(n, {})
        check(r.get("changed") is False and not r.get("failed"), f"again: {n} changed={r.get('changed')} {r.get('msg')}")
    check(not any(r.get("changed") for r in task(doc, MAP_TASK).values()), "again: the mapping changed")
    check_refused(t, task(doc, PASS_TASK), "again")


def mode_absent(t, name, first):
    doc, rc = run_of(t, name)
    check(rc == 0, f"{name}: ansible-playbook exited {rc}")
    results = task(doc, PASS_TASK)
    for n in SAFE:
        r = results.get(n, {})
        check(r.get("changed") is first, f"{name}: {n} changed={r.get('changed')} {r.get('msg')}")
        applied = [1, 2, 3] if n == MAP_NODE else [1]  # gpu1: the two mappings, then its VM
        check(r.get("rolled_back") == (applied if first else []), f"{name}: {n} rolled back {r.get('rolled_back')}")
    check(results.get("gpu3", {}).get("changed") is False, f"{name}: gpu3 changed")
    check(same_file(t), f"{name}: pci.cfg is not as it was before the playbook")


def main(argv):
    mode = argv[0]
    if mode == "docs":
        mode_docs(argv[1], argv[2])
    elif mode == "check":
        mode_check(argv[1])
    elif mode == "apply":
        mode_apply(argv[1], argv[2])
    elif mode == "again":
        mode_again(argv[1])
    elif mode in ("absent", "absent2"):
        mode_absent(argv[1], mode, mode == "absent")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
