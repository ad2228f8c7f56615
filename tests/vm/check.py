#!/usr/bin/env python3
"""Host-side checks of one real-kernel boot (called by tests/vm/run.sh).

Reads the guest's serial log, extracts the files the guest sent (tests/vm/guest-init.sh
describes the protocol), and checks them against the topology QEMU was given
(tests/vm/run.sh, qemu_args). Prints one line per check; exits 1 if any failed.
"""

import argparse
import base64
import difflib
import io
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from capture_norm import normalise_redacted  # noqa: E402

# --- the topology QEMU was given (tests/vm/run.sh) ----------------------------------------
CARD_SLOT = "0000:04:00"
CARD_VGA = "0000:04:00.0"
CARD_AUDIO = "0000:04:00.1"
HOST_HDA = "0000:00:1b.0"


def boot_vga_addr(variant):
    return "0000:00:08.0" if variant == "amd" else "0000:00:01.0"


def expected_devices(variant):
    """address -> (vendor, device, class[:4], host driver)."""
    d = {
        boot_vga_addr(variant): ("1234", "1111", "0300", "bochs-drm"),
        "0000:01:00.0": ("8086", "10d3", "0200", "e1000e"),
        "0000:02:00.0": ("1af4", "1041", "0200", "virtio-pci"),
        "0000:03:00.0": ("1b36", "0010", "0108", "nvme"),
        CARD_VGA: ("1234", "1111", "0380", "bochs-drm"),
        CARD_AUDIO: ("8086", "293e", "0403", "snd_hda_intel"),
        "0000:05:00.0": ("1b36", "000e", "0604", None),
        "0000:06:01.0": ("8086", "100e", "0200", "e1000"),
        "0000:06:02.0": ("1af4", "1000", "0200", "virtio-pci"),
        "0000:00:07.0": ("1b36", "000d", "0c03", "xhci_hcd"),
        HOST_HDA: ("8086", "293e", "0403", "snd_hda_intel"),
        "0000:00:1f.2": ("8086", "2922", "0106", "ahci"),
        "0000:00:1f.3": ("8086", "2930", "0c05", "i801_smbus"),
    }
    for n, port in enumerate(["02", "03", "04", "05", "06"], start=1):
        d["0000:00:%s.0" % port] = ("1b36", "000c", "0604", "pcieport")
    return d


# --- results ------------------------------------------------------------------------------
class Checker:
    def __init__(self, variant):
        self.variant = variant
        self.failures = 0
        self.passes = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passes += 1
            print("  ok   %s" % what)
        else:
            self.failures += 1
            print("  FAIL %s%s" % (what, (": " + detail) if detail else ""))
        return ok


def parse_serial(text):
    """-> (files: name -> bytes, log lines, done flag)."""
    files, logs, done = {}, [], False
    cur, buf = None, []
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        if cur is not None:
            if line == "@@PT:EOF " + cur:
                try:
                    files[cur] = base64.b64decode("".join(buf))
                except ValueError:
                    files[cur] = None
                cur, buf = None, []
            elif re.fullmatch(r"[A-Za-z0-9+/=]*", line):
                buf.append(line)
            # anything else is a stray kernel line interleaved with the block: skip it
            continue
        if line.startswith("@@PT:FILE "):
            cur, buf = line[len("@@PT:FILE "):], []
        elif line.startswith("@@PT:LOG "):
            logs.append(line[len("@@PT:LOG "):])
        elif line == "@@PT:DONE":
            done = True
    return files, logs, done


def text(files, name):
    data = files.get(name)
    return None if data is None else data.decode("utf-8", "replace")


def rc(files, step):
    t = text(files, step + ".rc")
    try:
        return int(t.strip())
    except (AttributeError, ValueError):
        return None


def parse_drivers(t):
    """'addr driver override' lines -> {addr: driver or None}."""
    out = {}
    for line in (t or "").splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith("0000:"):
            out[parts[0]] = None if parts[1] == "-" else parts[1]
    return out


def parse_groups(t):
    """'N addr addr...' lines -> {addr: N}."""
    out = {}
    for line in (t or "").splitlines():
        parts = line.split()
        if parts and parts[0].isdigit():
            for a in parts[1:]:
                out[a] = int(parts[0])
    return out


def step_detail(files, step):
    err = (text(files, step + ".err") or "").strip()
    out = (text(files, step + ".out") or "").strip()
    d = "exit %s" % rc(files, step)
    if err:
        d += "; stderr: " + err[-600:]
    elif out:
        d += "; stdout: " + out[-300:]
    return d


def lines_of(t):
    return [l for l in (t or "").splitlines() if l.strip()]


# --- checks of the boot itself --------------------------------------------------------------
def check_topology(ck, drivers, groups):
    """Drivers and IOMMU groups the kernel gave the emulated devices."""
    v = ck.variant
    exp = expected_devices(v)
    missing = sorted(set(exp) - set(drivers))
    ck.check(not missing, "the guest sees every emulated PCI function", "missing " + ", ".join(missing))
    wrong = ["%s on %s, expected %s" % (a, drivers.get(a), d)
             for a, (_, _, _, d) in sorted(exp.items()) if a in drivers and drivers[a] != d]
    ck.check(not wrong, "each function is on its host driver", "; ".join(wrong))
    if v == "none":
        ck.check(not groups, "no IOMMU groups without an IOMMU", "groups: %s" % groups)
        return
    card = groups.get(CARD_VGA)
    members = sorted(a for a, g in groups.items() if g == card)
    ck.check(card is not None and members == [CARD_VGA, CARD_AUDIO],
             "the card's display and audio functions share one group, alone", "group %s: %s" % (card, members))
    br = groups.get("0000:05:00.0")
    members = sorted(a for a, g in groups.items() if g == br)
    ck.check(members == ["0000:05:00.0", "0000:06:01.0", "0000:06:02.0"],
             "the PCIe-to-PCI bridge shares its group with the devices behind it", str(members))
    alone = ["0000:00:0%d.0" % p for p in range(2, 7)] + ["0000:01:00.0", "0000:02:00.0", "0000:03:00.0",
                                                          HOST_HDA, boot_vga_addr(v)]
    bad = [a for a in alone if a not in groups or list(groups.values()).count(groups[a]) != 1]
    ck.check(not bad, "root ports and endpoints behind them have groups of their own", ", ".join(bad))


# --- the captured sysfs trees -------------------------------------------------------------
STABLE_FILES = {"vendor", "device", "class", "subsystem_vendor", "subsystem_device", "revision", "boot_vga",
                "numa_node", "current_link_speed", "current_link_width", "max_link_speed", "max_link_width",
                "reset_method", "driver_override", "type", "secondary_bus_number", "subordinate_bus_number"}


def unpack_capture(data, dest):
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as t:
        for m in t.getmembers():
            if m.name.startswith("/") or ".." in m.name.split("/") or not (m.isfile() or m.isdir() or m.issym()):
                raise ValueError("unexpected member in capture: " + m.name)
        t.extractall(dest)


def prune_empty_dirs(root):
    """Git keeps no empty directories: make the capture what a clone of the fixture holds."""
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        if dirpath != root and not os.listdir(dirpath):
            os.rmdir(dirpath)


def check_tree(ck, root, label):
    bad = []
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            if os.path.islink(p):
                t = os.readlink(p)
                real = os.path.realpath(p)
                if t.startswith("/"):
                    bad.append("%s -> %s is absolute" % (os.path.relpath(p, root), t))
                elif not (real + "/").startswith(os.path.realpath(root) + "/"):
                    bad.append("%s -> %s leaves the tree" % (os.path.relpath(p, root), t))
                elif not os.path.exists(p):
                    bad.append("%s -> %s dangles" % (os.path.relpath(p, root), t))
    ck.check(not bad, "%s: every symlink is relative and resolves inside the tree" % label, "; ".join(bad[:8]))
    devs = os.path.join(root, "sys/bus/pci/devices")
    incomplete = [a for a in sorted(os.listdir(devs))
                  if not all(os.path.isfile(os.path.join(devs, a, f)) for f in ("vendor", "device", "class", "config"))]
    ck.check(os.listdir(devs) and not incomplete, "%s: every PCI function has vendor, device, class, config" % label,
             ", ".join(incomplete))
    exp = expected_devices(ck.variant)
    wrong = []
    for a, (ven, dev, cls, _) in sorted(exp.items()):
        d = os.path.join(devs, a)
        try:
            got = tuple(open(os.path.join(d, f)).read().strip() for f in ("vendor", "device", "class"))
        except OSError:
            wrong.append(a + " missing")
            continue
        if got != ("0x" + ven, "0x" + dev, "0x" + cls + got[2][6:]):
            wrong.append("%s is %s" % (a, ":".join(got)))
    ck.check(not wrong, "%s: vendor, device and class are those of the emulated devices" % label, "; ".join(wrong))
    try:
        bv = open(os.path.join(devs, boot_vga_addr(ck.variant), "boot_vga")).read().strip()
    except OSError as e:
        bv = str(e)
    # The kernel shows boot_vga only on VGA-class (0300) functions; the card is 0380.
    card_has = os.path.exists(os.path.join(devs, CARD_VGA, "boot_vga"))
    ck.check(bv == "1" and not card_has, "%s: boot_vga is 1 on the std VGA; the 0380 card has none" % label,
             "std VGA: %s, card has boot_vga: %s" % (bv, card_has))


def signature(root, skip):
    """path -> description, for comparing a capture with a committed fixture; top-level
    directories in skip are left out."""
    sig = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir.split(os.sep)[0] in skip:
            continue
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in skip]
            filenames = [f for f in filenames if f not in skip]
        for n in sorted(dirnames + filenames):
            p = os.path.join(dirpath, n)
            rel = os.path.normpath(os.path.join(rel_dir, n))
            if os.path.islink(p):
                sig[rel] = "link " + os.readlink(p)
            elif os.path.isdir(p):
                continue  # implied by what it holds (git keeps no empty directories)
            elif n in STABLE_FILES or rel.startswith("etc" + os.sep):
                with open(p, "rb") as f:
                    sig[rel] = "file " + f.read().decode("utf-8", "replace").strip()
            else:
                sig[rel] = "file"
    return sig


def compare_with_fixture(ck, tree, fixture, label, skip):
    if not os.path.isdir(fixture):
        ck.check(False, "%s matches the committed fixture %s" % (label, fixture),
                 "the fixture does not exist: run tests/vm/run.sh --capture and commit it")
        return
    a, b = signature(fixture, skip), signature(tree, skip)
    diffs = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            diffs.append("%s: fixture %r, kernel %r" % (k, a.get(k), b.get(k)))
    ck.check(not diffs, "%s matches the committed fixture %s" % (label, os.path.relpath(fixture)),
             "%d differences (if the kernel changed on purpose, rerun tests/vm/run.sh --capture and commit): %s"
             % (len(diffs), "; ".join(diffs[:6])))


def store_fixture(tree, fixture):
    if os.path.isdir(fixture):
        shutil.rmtree(fixture)
    shutil.copytree(tree, fixture, symlinks=True)
    print("  captured %s" % os.path.relpath(fixture))


# --- passthru scan --json -----------------------------------------------------------------
def check_scan(ck, files, drivers, groups, before_root):
    v = ck.variant
    code = rc(files, "scan")
    ck.check(code == 0, "passthru scan --json exits 0", step_detail(files, "scan"))
    try:
        doc = json.loads(text(files, "scan.out") or "")
    except ValueError as e:
        ck.check(False, "scan --json prints one JSON document", str(e))
        return
    ck.check(doc.get("schema") == "passthru.scan/1", "scan schema is passthru.scan/1", repr(doc.get("schema")))
    host = doc.get("host") or {}
    osrelease = open(os.path.join(before_root, "proc/sys/kernel/osrelease")).read().strip()
    cmdline = open(os.path.join(before_root, "proc/cmdline")).read().strip()
    cpuinfo = open(os.path.join(before_root, "proc/cpuinfo")).read()
    vendor_id = re.search(r"^vendor_id\s*:\s*(\S+)", cpuinfo, re.M).group(1)
    cpu_vendor = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(vendor_id, vendor_id)
    ck.check(host.get("kernel") == osrelease, "scan host.kernel is the running kernel", repr(host.get("kernel")))
    ck.check((host.get("cmdline") or "").strip() == cmdline, "scan host.cmdline is /proc/cmdline",
             repr(host.get("cmdline")))
    ck.check(host.get("cpu_vendor") == cpu_vendor, "scan host.cpu_vendor is %s" % cpu_vendor,
             repr(host.get("cpu_vendor")))
    ck.check(host.get("bootloader") == "grub", "scan host.bootloader is grub (plain GRUB host)",
             repr(host.get("bootloader")))
    iommu = host.get("iommu") or {}
    ngroups = len(set(groups.values()))
    if v == "none":
        ck.check(iommu.get("enabled") is False and iommu.get("groups") == 0,
                 "scan reports the IOMMU off with 0 groups", repr(iommu))
        ck.check(iommu.get("interrupt_remapping") is not True, "scan does not claim interrupt remapping",
                 repr(iommu))
    else:
        ck.check(iommu.get("enabled") is True and iommu.get("groups") == ngroups,
                 "scan reports the IOMMU on with the kernel's %d groups" % ngroups, repr(iommu))
        ck.check(iommu.get("interrupt_remapping") is True, "scan reports interrupt remapping on", repr(iommu))

    devs = {d.get("address"): d for d in doc.get("devices") or []}
    ck.check(set(devs) == set(drivers), "scan lists exactly the kernel's PCI functions",
             "only in scan: %s; only in kernel: %s" % (sorted(set(devs) - set(drivers)),
                                                        sorted(set(drivers) - set(devs))))
    wrong = []
    for a, d in sorted(devs.items()):
        if a not in drivers:
            continue
        if d.get("driver") != drivers[a]:
            wrong.append("%s driver %r (kernel: %r)" % (a, d.get("driver"), drivers[a]))
        if d.get("iommu_group") != groups.get(a):
            wrong.append("%s group %r (kernel: %r)" % (a, d.get("iommu_group"), groups.get(a)))
        if d.get("boot_vga") is not (a == boot_vga_addr(v)):
            wrong.append("%s boot_vga %r" % (a, d.get("boot_vga")))
    for a, (ven, dev, cls, _) in expected_devices(v).items():
        d = devs.get(a, {})
        if (d.get("vendor"), d.get("device"), d.get("class")) != (ven, dev, cls):
            wrong.append("%s is %s:%s class %s (emulated: %s:%s class %s)" % (
                a, d.get("vendor"), d.get("device"), d.get("class"), ven, dev, cls))
    ck.check(not wrong, "scan devices: driver, group, boot_vga, ids and class match the kernel", "; ".join(wrong[:8]))
    e1000e, e1000 = devs.get("0000:01:00.0", {}), devs.get("0000:06:01.0", {})
    ck.check(isinstance(e1000e.get("link"), dict) and e1000.get("link") is None,
             "scan link: present for a PCIe endpoint, null for conventional PCI",
             "e1000e %r, e1000 %r" % (e1000e.get("link"), e1000.get("link")))

    gpus = {g.get("slot"): g for g in doc.get("gpus") or []}
    card = gpus.get(CARD_SLOT)
    if ck.check(card is not None, "scan finds the display+audio card at %s" % CARD_SLOT, "gpus: %s" % sorted(gpus)):
        ck.check(sorted(card.get("functions") or []) == [CARD_VGA, CARD_AUDIO],
                 "the card has both functions", repr(card.get("functions")))
        ck.check(card.get("vendor") == "1234", "the card's vendor is 1234", repr(card.get("vendor")))
        ck.check(card.get("boot_vga") is False, "the card is not the boot VGA", repr(card.get("boot_vga")))
        if v == "none":
            ck.check(not card.get("iommu_groups"), "the card has no IOMMU group", repr(card.get("iommu_groups")))
        else:
            ck.check(card.get("iommu_groups") == [groups.get(CARD_VGA)], "the card is in one IOMMU group",
                     repr(card.get("iommu_groups")))
            ck.check(card.get("isolation") == "clean" and not card.get("shares_with")
                     and not card.get("host_critical"), "the card's group is clean",
                     "%r shares_with %r host_critical %r" % (card.get("isolation"), card.get("shares_with"),
                                                            card.get("host_critical")))
    vga = gpus.get(boot_vga_addr(v)[:-2])
    ck.check(vga is not None and vga.get("boot_vga") is True, "scan lists the std VGA as the boot VGA card",
             repr(vga))
    problems = doc.get("problems") or []
    everything = json.dumps(problems)
    ck.check("amd_iommu=on" not in everything, "no problem suggests the invalid amd_iommu=on")
    if v == "none":
        iommu_errors = [p for p in problems if p.get("severity") == "error" and "iommu" in
                        (p.get("message", "") + p.get("fix", "")).lower()]
        ck.check(bool(iommu_errors), "scan reports the missing IOMMU as an error with a fix", everything[:400])
        if cpu_vendor == "Intel":
            ck.check(any("intel_iommu=on" in (p.get("fix") or "") for p in iommu_errors),
                     "the fix for an Intel CPU says intel_iommu=on", everything[:400])


# --- plan / apply / reload / verify --------------------------------------------------------
def refusal_ok(files, step):
    err = lines_of(text(files, step + ".err"))
    first = err[0] if err else ""
    return rc(files, step) == 3 and first.startswith("passthru: error:") and "iommu" in " ".join(err).lower()


def check_passthrough(ck, files, drivers_before, groups):
    v = ck.variant
    drivers_after = parse_drivers(text(files, "drivers-after.out"))
    shown = text(files, "changes.out") or ""
    # "==> new|changed|removed PATH" blocks, then "==> stub log"
    changes, stub_log = {}, ""
    for block in re.split(r"^==> ", shown, flags=re.M)[1:]:
        head, _, body = block.partition("\n")
        if head == "stub log":
            stub_log = body
        else:
            kind, _, path = head.partition(" ")
            changes[path] = (kind, body)
    written = sorted(changes)
    # `proxmox-boot-tool status` is a query (scan and plan ask it); everything else changes the host.
    stub_log = "".join(l + "\n" for l in stub_log.splitlines() if not l.startswith("proxmox-boot-tool status"))
    if v == "none":
        for step in ("plan", "apply", "verify"):
            ck.check(refusal_ok(files, step), "without an IOMMU `passthru %s` refuses (exit 3, one clear "
                     "error line naming the IOMMU)" % step, step_detail(files, step))
        ck.check(not written and not stub_log, "the refused apply changed nothing under /etc and ran nothing",
                 "changed: %s; stub log: %r" % (written, stub_log))
        lost = ["%s: %s -> %s" % (a, drivers_before.get(a), drivers_after.get(a))
                for a in sorted(set(drivers_before) | set(drivers_after)) if drivers_before.get(a) != drivers_after.get(a)]
        ck.check(not lost, "no device changed or lost its driver", "; ".join(lost))
        return
    ck.check(rc(files, "plan") == 0, "passthru plan --vm 101 --gpus %s --json exits 0" % CARD_SLOT,
             step_detail(files, "plan"))
    try:
        json.loads(text(files, "plan.out") or "")
        ok, why = True, ""
    except ValueError as e:
        ok, why = False, str(e)
    ck.check(ok, "plan --json prints one JSON document", why)
    ck.check(rc(files, "apply") == 0, "passthru apply --vm 101 --gpus %s --yes exits 0" % CARD_SLOT,
             step_detail(files, "apply"))
    ck.check(any(w.startswith("/etc/modprobe.d/") for w in written), "apply wrote /etc/modprobe.d/*.conf",
             "files: %s" % written)
    ck.check(any(l.startswith("update-initramfs") for l in stub_log.splitlines()), "apply ran update-initramfs",
             repr(stub_log))
    ck.check(any(l.startswith("update-grub") for l in stub_log.splitlines()),
             "apply ran update-grub (plain GRUB host)", repr(stub_log))
    grub = "".join(body for path, (kind, body) in changes.items() if path.startswith("/etc/default/grub"))
    if v == "intel" and not ck.intel_iommu_default_on:
        # Debian's kernels (12's 6.1 and 13's 6.12 alike) have CONFIG_INTEL_IOMMU_DEFAULT_ON
        # unset: the guest has VT-d only because QEMU passes intel_iommu=on, so the host's
        # boot config must carry it.
        ck.check("intel_iommu=on" in grub, "apply put intel_iommu=on in the GRUB configuration (the kernel's "
                 "config leaves VT-d off by default)", "GRUB files written: %r" % grub[-300:])
    ck.check("amd_iommu=on" not in shown, "nothing written contains amd_iommu=on")
    vmconf = changes.get("/etc/pve/qemu-server/101.conf", ("", ""))[1]
    qm = [l for l in stub_log.splitlines() if l.startswith("qm ")]
    ck.check(re.search(r"^hostpci\d+:.*04:00", vmconf, re.M) is not None
             or any("hostpci" in l and "04:00" in l for l in qm),
             "apply gives VM 101 the card (hostpci in 101.conf or qm set)", "101.conf: %r; qm: %r" % (vmconf, qm))
    ck.check(rc(files, "reload") == 0, "the card's host drivers unload and modprobe loads them again",
             step_detail(files, "reload"))
    on_vfio = [a for a in (CARD_VGA, CARD_AUDIO) if drivers_after.get(a) == "vfio-pci"]
    ck.check(len(on_vfio) == 2, "after the simulated boot both card functions are on vfio-pci",
             "; ".join("%s on %s" % (a, drivers_after.get(a)) for a in (CARD_VGA, CARD_AUDIO)))
    changed = ["%s: %s -> %s" % (a, drivers_before.get(a), drivers_after.get(a))
               for a in sorted(drivers_before) if a not in (CARD_VGA, CARD_AUDIO)
               and drivers_before.get(a) != drivers_after.get(a)]
    ck.check(not changed, "every other device keeps its driver (the host HDA %s with the same id, the boot VGA)"
             % HOST_HDA, "; ".join(changed))
    ck.check(rc(files, "verify") == 0, "passthru verify --vm 101 exits 0", step_detail(files, "verify"))
    vout = (text(files, "verify.out") or "") + (text(files, "verify.err") or "")
    ck.check(all(a[5:] in vout for a in (CARD_VGA, CARD_AUDIO)) and "vfio-pci" in vout,
             "verify reports both card functions on vfio-pci", vout[-400:])
    grp = groups.get(CARD_VGA)
    ck.check(re.search(r"\s%s$" % grp, text(files, "dev-vfio.out") or "", re.M) is not None,
             "/dev/vfio/%s exists" % grp, text(files, "dev-vfio.out"))
    check_vfio_answers(ck, files, grp, vout)


def check_capture(ck, files, hostname):
    """passthru capture on the live guest: scan --json and plan --json of the unpacked archive
    (--root) answer as the live guest did, up to redacted values. The boot loader's evidence
    may differ: live, scan asks `proxmox-boot-tool status`, whose answer is no file."""
    ck.check(rc(files, "pt-capture") == 0, "passthru capture /tmp/c.tar.gz exits 0", step_detail(files, "pt-capture"))
    ck.check(rc(files, "pt-capture-unpack") == 0, "tar unpacks the capture", step_detail(files, "pt-capture-unpack"))
    try:
        manifest = json.loads(text(files, "pt-capture-manifest.out") or "")
        print("  capture manifest: passthru %s, %s, members %s" % (manifest.get("passthru_version"), manifest.get("created"),
                                                                 json.dumps(manifest.get("members"), sort_keys=True)))
        for r in manifest.get("redacted", []):
            print("  capture redacted: %s: %s x%s" % (r.get("file"), r.get("kind"), r.get("count")))
        ok, why = manifest.get("schema") == "passthru.capture/1", ""
    except (ValueError, AttributeError) as e:
        ok, why = False, str(e)
    ck.check(ok, "CAPTURE.json is a passthru.capture/1 document", why)

    def norm(t):
        if hostname:
            t = re.sub(r'(?<![\w.-])' + re.escape(hostname) + r'(?![\w-])', 'HOST', t)
        return normalise_redacted(t)

    try:
        live = json.loads(text(files, "scan.out") or "")
        captured = json.loads(text(files, "pt-capture-scan.out") or "")
    except ValueError as e:
        ck.check(False, "scan --json of the live guest and of its capture are JSON", "%s; %s" % (e, step_detail(files, "pt-capture-scan")))
        return
    ev = [d.get("host", {}).pop("bootloader_evidence", None) for d in (live, captured)]
    if ev[0] != ev[1]:
        print("  note: boot loader evidence live %r, from the capture %r" % (ev[0], ev[1]))
    a = norm(json.dumps(live, indent=1, sort_keys=True)).splitlines()
    b = norm(json.dumps(captured, indent=1, sort_keys=True)).splitlines()
    ck.check(a == b, "scan --json of the capture (--root) equals the live guest's, up to redacted values",
             "\n".join(list(difflib.unified_diff(a, b, "live", "capture", lineterm=""))[:40]))
    code_live, code_cap = rc(files, "plan"), rc(files, "pt-capture-plan")
    a = norm(text(files, "plan.out") or "").splitlines()
    b = norm(text(files, "pt-capture-plan.out") or "").splitlines()
    ck.check(code_live == code_cap and a == b,
             "plan --vm 101 --gpus %s --json of the capture equals the live guest's, up to redacted values" % CARD_SLOT,
             "exit %s live, %s capture; %s" % (code_live, code_cap,
                                               "\n".join(list(difflib.unified_diff(a, b, "live", "capture", lineterm=""))[:40])))


def check_capture_planted(ck, files):
    """A second capture of the live guest after a secret, addresses, a MAC and another node's
    name were planted in the files capture reads (guest-init.sh, capture_planted): the guest
    lists each value that survives in a member's name or bytes, and which planted files were
    packed at all (so that the check is not vacuous)."""
    out = text(files, "pt-capture-planted.out") or ""
    packed = re.findall(r"^packed: (\S+)$", out, re.M)
    survive = re.findall(r"^survives: (\S+)$", out, re.M)
    ck.check(rc(files, "pt-capture-planted") == 0 and not survive and len(packed) == 3,
             "no value planted in the live guest's VM config, storage.cfg and task log survives its capture",
             "packed %s; survive %s; %s" % (packed, survive, step_detail(files, "pt-capture-planted")))


def check_vfio_answers(ck, files, grp, vout):
    """verify asked the guest kernel's VFIO itself: the group viable in a type1 container,
    a device descriptor and described regions for both card functions; and with another
    process holding the group open (as a running VM's QEMU does), a note naming it."""
    line = re.search(r"^\s*ok\s+VFIO takes IOMMU group %s \(viable, type1 container\): (.*)$" % grp, vout, re.M)
    taken = {a: (int(r), int(i)) for a, r, i in
             re.findall(r"(0000:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) \((\d+) regions, (\d+) interrupt types\)",
                        line.group(1) if line else "")}
    ck.check(sorted(taken) == [CARD_VGA, CARD_AUDIO] and all(r > 0 and i > 0 for r, i in taken.values()),
             "verify's VFIO check: group %s viable, a type1 container, a device fd with regions and interrupts for "
             "both card functions" % grp, line.group(0) if line else vout[-600:])
    ck.check(not re.search(r"^\s*(FAIL|note)\s+.*VFIO", vout, re.M), "verify has no VFIO failure or note on the idle group",
             vout[-600:])
    if line:
        print("       evidence: %s" % line.group(0).strip())
    bout = (text(files, "verify-busy.out") or "") + (text(files, "verify-busy.err") or "")
    holder = re.search(r"holder pid (\d+)", bout)
    busy = holder and re.search(r"^\s*note\s+/dev/vfio/%s is in use by process %s( \([^)]*\))? \(open: Device or resource "
                                r"busy\): this is what a running VM looks like" % (grp, holder.group(1)), bout, re.M)
    ck.check(rc(files, "verify-busy") == 0 and busy is not None,
             "with another process holding /dev/vfio/%s, verify exits 0 and names that process in a note" % grp,
             step_detail(files, "verify-busy"))
    if busy:
        print("       evidence: %s" % busy.group(0).strip())


def check_rom_dump(ck, files):
    """passthru rom dump of the std VGA: refused while bochs holds it, then read through
    sysfs, checked as an x86 option ROM for 1234:1111 and written (docs/facts.md: rom-files)."""
    out = (text(files, "rom-dump.out") or "") + (text(files, "rom-dump.err") or "")
    ck.check("held rc=3" in out and re.search(r"refused: 0000:00:0[18]\.0 is held by bochs", out) is not None,
             "rom dump refuses the std VGA while bochs holds it", out[-600:])
    ck.check("dump rc=0" in out and re.search(r"x86 \(legacy BIOS\) for 1234:1111", out) is not None
             and "saved file:  55 aa" in out,
             "rom dump reads the std VGA's ROM through sysfs and checks it as an x86 option ROM for 1234:1111", out[-600:])


def check_container(ck, files):
    """Debian's lxc starts an unprivileged container with the cgroup rules pve-container writes
    for "dev0: /dev/nvidia0" (guest-init.sh: ct_check; docs/facts.md: ct-devices): the allowed
    node c 195:0, with no driver behind major 195, opens with ENXIO; c 195:1, named by no rule,
    with EPERM."""
    out = text(files, "ct.out") or ""
    detail = out.strip() + "\n  stderr (last lines):\n    " + "\n    ".join((text(files, "ct.err") or "").splitlines()[-8:])
    lxc_log = text(files, "lxc.log") or ""
    if "lxc-start rc=" not in out or "nvidia0 rc=" not in out:
        detail += "\n  lxc.log (last lines):\n    " + "\n    ".join(lxc_log.splitlines()[-25:])
    ck.check(rc(files, "ct") == 0, "lxc-start runs the unprivileged container to its end", detail)
    ck.check(re.search(r"^nvidia0 rc=[1-9]\d* .*No such device or address", out, re.M) is not None,
             "inside, /dev/nvidia0 (allowed by c 195:0 rw, no driver) fails to open with ENXIO", detail)
    ck.check(re.search(r"^nvidia1 rc=[1-9]\d* .*Operation not permitted", out, re.M) is not None,
             "inside, /dev/nvidia1 (c 195:1, named by no rule) fails to open with EPERM", detail)


def check_smoke(ck, files, groups):
    drivers_after = parse_drivers(text(files, "drivers-after.out"))
    got = [drivers_after.get(a) for a in (CARD_VGA, CARD_AUDIO)]
    if ck.variant == "none":
        # The kernel's own behaviour that passthru must guard against (REAL-KERNEL.md pitfall 10).
        ck.check(got == [None, None], "without an IOMMU vfio-pci cannot take the card (left driverless)", str(got))
        return
    ck.check(got == ["vfio-pci", "vfio-pci"], "driver_override binds both card functions to vfio-pci", str(got))
    grp = groups.get(CARD_VGA)
    ck.check(re.search(r"\s%s$" % grp, text(files, "smoke-bind.out") or "", re.M) is not None,
             "/dev/vfio/%s exists" % grp)


def fixture_name(variant, state):
    base = "qemu-" + ("noiommu" if variant == "none" else variant)
    return base if state == "before" else base + "-vfio"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", required=True, choices=["intel", "amd", "none"])
    ap.add_argument("--serial", required=True)
    ap.add_argument("--qemu-rc", type=int, required=True)
    ap.add_argument("--qemu-stderr")
    ap.add_argument("--out", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--timeout", type=int, default=0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--capture", action="store_true")
    ap.add_argument("--debian", choices=["12", "13"], default="12")
    ap.add_argument("--kernel-config", help="the booted kernel's config (boot/config-VERSION of its package)")
    a = ap.parse_args()
    ck = Checker(a.variant)
    ck.intel_iommu_default_on = None
    if a.kernel_config:
        with open(a.kernel_config, encoding="utf-8", errors="replace") as f:
            config = f.read().splitlines()
        ck.intel_iommu_default_on = "CONFIG_INTEL_IOMMU_DEFAULT_ON=y" in config

    with open(a.serial, encoding="utf-8", errors="replace") as f:
        serial = f.read()
    files, logs, done = parse_serial(serial)
    res = os.path.join(a.out, "results")
    os.makedirs(res, exist_ok=True)
    for name, data in files.items():
        if data is not None and "/" not in name:
            with open(os.path.join(res, name), "wb") as f:
                f.write(data)
    for l in logs:
        print("  guest: " + l)

    qerr = ""
    if a.qemu_stderr and os.path.exists(a.qemu_stderr):
        qerr = "".join(l for l in open(a.qemu_stderr) if "has no peer" not in l).strip()
    timed_out = a.qemu_rc in (124, 137)
    ck.check(a.qemu_rc == 0, "qemu ran and exited 0",
             ("timed out after %ds" % a.timeout if timed_out else "exit %d" % a.qemu_rc) + ("; " + qerr if qerr else ""))
    if not ck.check(done, "the guest finished its sequence and powered off"):
        tail = [l.rstrip("\r") for l in serial.splitlines() if not l.startswith(("@@PT:", "  "))][-25:]
        print("  last serial lines:\n    " + "\n    ".join(tail))
    ck.check(rc(files, "load") == 0, "kmod modprobe loads the host drivers", step_detail(files, "load"))
    drivers = parse_drivers(text(files, "drivers-before.out"))
    groups = parse_groups(text(files, "groups.out"))
    check_topology(ck, drivers, groups)

    tmp = tempfile.mkdtemp(prefix="captures.", dir=a.out)
    trees = {}
    states = ["before"] + ([] if a.variant == "none" else ["after"])
    for state in states:
        data = files.get("capture-%s.tgz" % state)
        if not ck.check(data is not None, "the guest sent its %s-state sysfs capture" % state):
            continue
        tree = os.path.join(tmp, state)
        try:
            unpack_capture(data, tree)
        except (ValueError, tarfile.TarError) as e:
            ck.check(False, "the %s-state capture unpacks" % state, str(e))
            continue
        prune_empty_dirs(tree)
        trees[state] = tree
        check_tree(ck, tree, fixture_name(a.variant, state))

    if a.smoke:
        check_smoke(ck, files, groups)
    elif "before" in trees:
        check_scan(ck, files, drivers, groups, trees["before"])
        check_passthrough(ck, files, drivers, groups)
        check_rom_dump(ck, files)
        hostname_file = os.path.join(trees["before"], "etc", "hostname")
        hostname = open(hostname_file).read().strip() if os.path.exists(hostname_file) else ""
        check_capture(ck, files, hostname)
        if a.variant == "intel" and a.debian == "12":
            check_container(ck, files)
        check_capture_planted(ck, files)

    for state, tree in sorted(trees.items()):
        fixture = os.path.join(a.fixtures, fixture_name(a.variant, state))
        if a.debian != "12":
            # The committed captures are Debian 12's kernel; 6.12 shows other attributes.
            print("  note: the %s-state capture is not compared with %s (a Debian 12 capture)"
                  % (state, fixture_name(a.variant, state)))
        elif a.capture:
            store_fixture(tree, fixture)
        else:
            # proc/ changes with every boot (counters, bogomips); the "after" /etc is what
            # apply wrote, which the checks above judge, not the fixture.
            skip = {"proc"} | ({"etc"} if state == "after" else set())
            compare_with_fixture(ck, tree, fixture, fixture_name(a.variant, state), skip)

    print("%s: %d passed, %d failed" % (a.variant, ck.passes, ck.failures))
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())
