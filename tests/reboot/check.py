#!/usr/bin/env python3
"""Host side of the reboot test (tests/reboot/run.sh, tests/reboot/README.md).

  check.py boot-entry grub GRUB_CFG         prints KPATH, IPATH, APPEND (shell assignments)
  check.py boot-entry systemd-boot ENTRY    for the entry GRUB / systemd-boot boots by default
  check.py boot --loader L --iommu I --boot N --dir D
                                            judges what boot N recorded (D/bootN/results)

Every check prints one line; the evidence (drivers per function, /proc/cmdline, verify's
exit code) is printed too, so the test log shows what each boot found. Exit 1 on a failure.
"""

import argparse
import os
import re
import shlex
import sys

CARD_VGA = "0000:04:00.0"
CARD_AUDIO = "0000:04:00.1"
HOST_HDA = "0000:00:1b.0"
# the test host's command line before passthru (tests/reboot/run.sh: ROOT_UUID, HOST_ARGS)
BASE_CMDLINE = "root=UUID=5e1f0c4a-7d2b-4c39-9a51-3b0d2e6f8a17 ro console=ttyS0 no_timer_check panic=-1"


def base_cmdline(iommu):
    return BASE_CMDLINE + (" intel_iommu=on" if iommu == "intel" else "")


def boot_vga(iommu):
    return "0000:00:08.0" if iommu == "amd" else "0000:00:01.0"


# --- the boot loaders' default entries ----------------------------------------------------
def grub_default_entry(cfg):
    """The first menuentry of a grub.cfg made by grub-mkconfig (GRUB_DEFAULT=0): its linux
    path and arguments and its initrd, with GRUB's own variables left as they are."""
    depth = 0
    in_entry = False
    linux = initrd = None
    for raw in cfg.splitlines():
        line = raw.strip()
        if not in_entry and re.match(r"menuentry\s", line):
            in_entry = True
            depth = 0
        if in_entry:
            if line.startswith("linux") and linux is None:
                linux = shlex.split(line)[1:]
            elif line.startswith("initrd") and initrd is None:
                initrd = shlex.split(line)[1:]
            depth += line.count("{") - line.count("}")
            if depth <= 0 and "}" in line:
                break
    if not linux or not initrd:
        raise SystemExit("grub.cfg: the first menuentry has no linux/initrd line")
    return linux[0], initrd[0], " ".join(linux[1:])


def loader_entry(text):
    """A systemd-boot entry (Boot Loader Specification type 1): linux, initrd, options."""
    keys = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        k, _, v = line.partition(" ")
        keys.setdefault(k, v.strip())
    for k in ("linux", "initrd", "options"):
        if k not in keys:
            raise SystemExit("loader entry: no '%s' line" % k)
    return keys["linux"], keys["initrd"], keys["options"]


def cmd_boot_entry(kind, path):
    text = open(path, encoding="utf-8").read()
    k, i, a = grub_default_entry(text) if kind == "grub" else loader_entry(text)
    print("KPATH=%s IPATH=%s APPEND=%s" % (shlex.quote(k), shlex.quote(i), shlex.quote(a)))


# --- results --------------------------------------------------------------------------------
class Checker:
    def __init__(self, label):
        self.label = label
        self.failures = 0

    def check(self, ok, what, detail=""):
        print("  %s %s: %s" % ("ok  " if ok else "FAIL", self.label, what))
        if not ok:
            self.failures += 1
            if detail:
                for line in str(detail).rstrip().splitlines()[-25:]:
                    print("         | " + line)
        return ok


def read(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return None
    with open(p, encoding="utf-8", errors="replace") as f:
        return f.read()


def rc(d, step):
    t = read(d, step + ".rc")
    return int(t.strip()) if t and t.strip().lstrip("-").isdigit() else None


def step_text(d, step):
    return "exit %s\n%s%s" % (rc(d, step), read(d, step + ".out") or "", read(d, step + ".err") or "")


def drivers(d):
    out = {}
    for line in (read(d, "drivers.txt") or "").splitlines():
        parts = line.split()
        if len(parts) == 3:
            out[parts[0]] = parts[1]
    return out


def group_of(d, addr):
    for line in (read(d, "groups.txt") or "").splitlines():
        parts = line.split()
        if addr in parts[1:]:
            return parts[0]
    return None


def planned_args(loader, boot1, iommu):
    """The arguments apply added to the boot configuration, read from what it wrote."""
    if loader == "grub":
        t = read(boot1, "etc/default_grub.d_passthru.cfg") or ""
        m = re.search(r'^GRUB_CMDLINE_LINUX_DEFAULT="\$GRUB_CMDLINE_LINUX_DEFAULT (.*)"\s*$', t, re.M)
        return m.group(1).split() if m else []
    t = read(boot1, "etc/kernel_cmdline") or ""
    base = base_cmdline(iommu).split()
    return [a for a in t.split() if a not in base]


def evidence(ck, d, n):
    drv = drivers(d)
    print("  -- boot %d evidence --" % n)
    print("     /proc/cmdline: %s" % (read(d, "cmdline.txt") or "?").strip())
    for a in (CARD_VGA, CARD_AUDIO, HOST_HDA):
        print("     %s: %s" % (a, drv.get(a, "?")))
    print("     /dev/vfio: %s" % " ".join((read(d, "dev-vfio.txt") or "").split()))
    for step in ("apply", "verify", "rollback"):
        if rc(d, step) is not None:
            print("     passthru %s: exit %s" % (step, rc(d, step)))
    state = (read(d, "system-state.txt") or "").strip()
    print("     systemd: %s; failed units: %s" % (state, " ".join((read(d, "failed-units.txt") or "").split()[:8]) or "none"))


def host_drivers_ok(ck, drv, iommu, what):
    ck.check(drv.get(HOST_HDA) == "snd_hda_intel", "the host's HDA %s is on snd_hda_intel %s" % (HOST_HDA, what), drv.get(HOST_HDA))
    ck.check(drv.get(boot_vga(iommu)) == "bochs-drm", "the boot VGA %s is on bochs-drm %s" % (boot_vga(iommu), what), drv.get(boot_vga(iommu)))


def check_boot1(ck, a, d, loader, iommu):
    drv = drivers(d)
    ck.check(drv.get(CARD_VGA) == "bochs-drm" and drv.get(CARD_AUDIO) == "snd_hda_intel",
             "before apply the card is on its host drivers (bochs-drm, snd_hda_intel)", read(d, "drivers.txt"))
    host_drivers_ok(ck, drv, iommu, "before apply")
    if loader == "grub":
        ck.check(rc(d, "baseline-update-grub") == 0, "update-grub (grub-mkconfig) makes the host's grub.cfg", step_text(d, "baseline-update-grub"))
        before = read(d, "grub.cfg.before") or ""
        try:
            _, _, args = grub_default_entry(before)
            ck.check(args == base_cmdline(iommu),
                     "boot 1 ran with the command line grub-mkconfig makes before apply", args)
        except SystemExit as e:
            ck.check(False, "grub.cfg before apply has a default entry", e)
    ck.check(rc(d, "apply") == 0, "passthru apply --vm 101 --gpus 0000:04:00 --yes exits 0", step_text(d, "apply"))
    ck.check(read(d, "etc/modprobe.d_passthru-vfio.conf") is not None, "apply wrote /etc/modprobe.d/passthru-vfio.conf")
    args = planned_args(loader, d, iommu)
    ck.check(len(args) > 0, "apply put kernel arguments into the %s configuration: %s" % (loader, " ".join(args)),
             read(d, "etc/default_grub.d_passthru.cfg") or read(d, "etc/kernel_cmdline"))
    ck.check("iommu=pt" in args, "the planned arguments include iommu=pt", " ".join(args))
    if loader == "grub":
        cfg = read(d, "grub.cfg") or ""
        try:
            _, _, newargs = grub_default_entry(cfg)
        except SystemExit as e:
            newargs = str(e)
        ck.check(all(x in newargs.split() for x in args), "update-grub (run by apply) put them into grub.cfg's default entry", newargs)
    else:
        ent = read(d, "loader-entry.conf") or ""
        ck.check(all(x in ent.split() for x in args), "proxmox-boot-tool refresh (run by apply) put them into the loader entry", ent)
    conf = read(d, "etc/pve_qemu-server_101.conf") or ""
    ck.check(re.search(r"^hostpci\d+: .*0000:04:00", conf, re.M) is not None or re.search(r"^hostpci\d+: .*04:00", conf, re.M) is not None,
             "VM 101 has a hostpci entry for the card", conf)


def check_boot2(ck, a, d, boot1, loader, iommu):
    drv = drivers(d)
    cmdline = (read(d, "cmdline.txt") or "").split()
    args = planned_args(loader, boot1, iommu)
    ck.check(len(args) > 0 and all(x in cmdline for x in args), "/proc/cmdline carries the planned arguments " + " ".join(args), " ".join(cmdline))
    ck.check(drv.get(CARD_VGA) == "vfio-pci", "the card's display %s is on vfio-pci after the reboot" % CARD_VGA, read(d, "drivers.txt"))
    ck.check(drv.get(CARD_AUDIO) == "vfio-pci", "the card's audio %s is on vfio-pci after the reboot" % CARD_AUDIO, read(d, "drivers.txt"))
    host_drivers_ok(ck, drv, iommu, "after the reboot (same ids as the card's functions)")
    files = read(d, "initramfs-files.txt") or ""
    ck.check("etc/modprobe.d/passthru-vfio.conf" in files, "the rebuilt initramfs holds passthru's modprobe.d file", files[-400:])
    grp = group_of(d, CARD_VGA)
    vfio = (read(d, "dev-vfio.txt") or "").split()
    ck.check(grp is not None and grp in vfio, "/dev/vfio/%s (the card's IOMMU group) exists" % grp, " ".join(vfio))
    ck.check(rc(d, "verify") == 0, "passthru verify --vm 101 exits 0 after the reboot", step_text(d, "verify"))
    ck.check(rc(d, "rollback") == 0, "passthru rollback --yes exits 0", step_text(d, "rollback"))
    if loader == "grub":
        try:
            _, _, newargs = grub_default_entry(read(d, "grub.cfg") or "")
        except SystemExit as e:
            newargs = str(e)
        ck.check(not any(x in newargs.split() for x in args), "after rollback grub.cfg's default entry has none of them", newargs)
    else:
        ent = read(d, "loader-entry.conf") or ""
        ck.check(not any(x in ent.split() for x in args), "after rollback the loader entry has none of them", ent)


def check_boot3(ck, a, d, boot1, loader, iommu):
    drv = drivers(d)
    cmdline = (read(d, "cmdline.txt") or "").split()
    args = planned_args(loader, boot1, iommu)
    ck.check(not any(x in cmdline for x in args), "/proc/cmdline no longer carries " + " ".join(args), " ".join(cmdline))
    ck.check(drv.get(CARD_VGA) == "bochs-drm" and drv.get(CARD_AUDIO) == "snd_hda_intel",
             "the card is back on its host drivers (bochs-drm, snd_hda_intel)", read(d, "drivers.txt"))
    host_drivers_ok(ck, drv, iommu, "after rollback")
    ck.check(not os.path.exists(os.path.join(d, "etc/modprobe.d_passthru-vfio.conf")), "/etc/modprobe.d/passthru-vfio.conf is gone")
    files = read(d, "initramfs-files.txt") or ""
    ck.check("lib/modules" in files and "etc/modprobe.d/passthru-vfio.conf" not in files,
             "the initramfs rebuilt by rollback no longer holds passthru's modprobe.d file", files[-400:])
    v = rc(d, "verify")
    out = (read(d, "verify.out") or "") + (read(d, "verify.err") or "")
    ck.check(v is not None and v != 0, "passthru verify --vm 101 fails after rollback (exit %s)" % v, out)
    # rollback took the card out of VM 101 too, so verify has nothing of the VM's to check
    # and must say so with a fix, not pass
    ck.check(re.search(r"^\s*FAIL \S.*$", out, re.M) is not None and "fix:" in out,
             "verify says why it fails (a FAIL line with its fix)", out)
    conf = read(d, "etc/pve_qemu-server_101.conf") or ""
    ck.check(conf != "" and re.search(r"^hostpci\d+:.*04:00", conf, re.M) is None,
             "VM 101's config no longer passes the card", conf)
    print("     verify said:")
    for line in out.strip().splitlines()[:12]:
        print("       " + line)


def cmd_boot(a):
    d = os.path.join(a.dir, "boot%d" % a.boot, "results")
    boot1 = os.path.join(a.dir, "boot1", "results")
    ck = Checker("%s boot %d" % (a.loader, a.boot))
    print("checks of %s boot %d (%s):" % (a.loader, a.boot, a.iommu))
    ck.check(read(d, "finished") is not None, "the step of boot %d ran to its end" % a.boot)
    appended = (open(os.path.join(a.dir, "boot%d" % a.boot, "append.txt")).read().split())
    cmdline = (read(d, "cmdline.txt") or "").split()
    ck.check(cmdline == appended, "the guest's /proc/cmdline is the one the boot loader's entry gives",
             "booted: %s\nguest:  %s" % (" ".join(appended), " ".join(cmdline)))
    failed_units = (read(d, "failed-units.txt") or "").strip()
    ck.check(failed_units == "", "no systemd unit failed", failed_units)
    if a.boot == 1:
        check_boot1(ck, a, d, a.loader, a.iommu)
    elif a.boot == 2:
        check_boot2(ck, a, d, boot1, a.loader, a.iommu)
    else:
        check_boot3(ck, a, d, boot1, a.loader, a.iommu)
    evidence(ck, d, a.boot)
    return 1 if ck.failures else 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "boot-entry":
        if len(sys.argv) != 4 or sys.argv[2] not in ("grub", "systemd-boot"):
            raise SystemExit("usage: check.py boot-entry grub|systemd-boot FILE")
        cmd_boot_entry(sys.argv[2], sys.argv[3])
        return 0
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["boot"])
    p.add_argument("--loader", required=True, choices=["grub", "systemd-boot"])
    p.add_argument("--iommu", required=True, choices=["intel", "amd"])
    p.add_argument("--boot", required=True, type=int, choices=[1, 2, 3])
    p.add_argument("--dir", required=True)
    return cmd_boot(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
