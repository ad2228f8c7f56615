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
import glob
import json
import xml.etree.ElementTree as ET
import os
import re
import shlex
import sys

CARD_VGA = "0000:04:00.0"
CARD_AUDIO = "0000:04:00.1"
HOST_HDA = "0000:00:1b.0"
# the test host's command line before passthru (tests/reboot/run.sh: ROOT_UUID, HOST_ARGS)
BASE_CMDLINE = "root=UUID=5e1f0c4a-7d2b-4c39-9a51-3b0d2e6f8a17 ro console=ttyS0 no_timer_check panic=-1 mitigations=off"


def base_cmdline(iommu):
    return BASE_CMDLINE + (" intel_iommu=on" if iommu == "intel" else "")


def boot_vga(iommu):
    return "0000:00:08.0" if iommu == "amd" else "0000:00:01.0"


# --- the boot loaders' entries ---------------------------------------------------------------
GRUBENV_HEADER = "# GRUB Environment Block\n"
GRUBENV_SIZE = 1024


def grubenv_read(data):
    """GRUB's environment block (/boot/grub/grubenv, grub-editenv(1)): name=value lines
    after the header, padded with '#' to 1024 bytes. An absent or empty file is empty."""
    env = {}
    text = data.decode("utf-8", errors="replace") if data else ""
    if text and not text.startswith(GRUBENV_HEADER):
        raise SystemExit("grubenv: no '# GRUB Environment Block' header")
    for line in text[len(GRUBENV_HEADER):].split("\n"):
        if line and not line.startswith("#") and "=" in line:
            k, _, v = line.partition("=")
            env[k] = v
    return env


def grubenv_write(env):
    body = GRUBENV_HEADER + "".join("%s=%s\n" % (k, v) for k, v in env.items())
    data = body.encode("utf-8")
    if len(data) > GRUBENV_SIZE:
        raise SystemExit("grubenv: the variables do not fit into 1024 bytes")
    return data + b"#" * (GRUBENV_SIZE - len(data))


def grub_menu(cfg):
    """The menu grub-mkconfig wrote: top-level items in order, each a dict with kind
    ('menuentry' or 'submenu'), title, id, and for an entry its linux and initrd lines,
    for a submenu its entries. GRUB's own variables are left as they are."""
    items = []
    stack = []  # the open items, outermost first
    for raw in cfg.splitlines():
        line = raw.strip()
        m = re.match(r"(menuentry|submenu)\s", line)
        if m and line.endswith("{"):
            words = shlex.split(line[:-1])
            ident = None
            for i, w in enumerate(words):
                if w in ("$menuentry_id_option", "--id") and i + 1 < len(words):
                    ident = words[i + 1]
            item = {"kind": m.group(1), "title": words[1], "id": ident, "linux": None, "initrd": None, "entries": []}
            (stack[-1]["entries"] if stack else items).append(item)
            stack.append(item)
            continue
        if not stack:
            continue
        top = stack[-1]
        if top["kind"] == "menuentry":
            if re.match(r"linux(16|efi)?\s", line) and top["linux"] is None:
                top["linux"] = shlex.split(line)[1:]
            elif re.match(r"initrd(16|efi)?\s", line) and top["initrd"] is None:
                top["initrd"] = shlex.split(line)[1:]
        if line == "}":
            stack.pop()
    return items


def grub_default_setting(cfg):
    """What 00_header sets 'default' to when there is no one-time selection, and whether
    grub.cfg honours next_entry at all (the 'set default="${next_entry}"' branch)."""
    honours_next = re.search(r'^\s*set default="\$\{next_entry\}"\s*$', cfg, re.M) is not None
    default = "0"
    for m in re.finditer(r'^\s*set default="([^"]*)"\s*$', cfg, re.M):
        if m.group(1) != "${next_entry}":
            default = m.group(1)
    return default, honours_next


def grub_find(items, name):
    """GRUB's lookup of a default: a number counts the top-level items, else an id or a
    title; 'A>B' goes into submenu A. None when nothing matches."""
    head, _, rest = name.partition(">")
    found = None
    if head.isdigit():
        found = items[int(head)] if int(head) < len(items) else None
    else:
        found = next((it for it in items if it["id"] == head or it["title"] == head), None)
    if found is None:
        return None
    if rest:
        return grub_find(found["entries"], rest) if found["kind"] == "submenu" else None
    return found if found["kind"] == "menuentry" else None


def grub_boot_entry(cfg, env):
    """The entry GRUB boots with this grub.cfg and environment block, as Debian's 00_header
    decides it (docs/facts.md: trial-boot): a non-empty next_entry first (GRUB then sets it
    empty with save_env, so it counts once); else the default, where "${saved_entry}" reads
    saved_entry; a default that names no entry falls back to the first one, as GRUB does.
    Returns (entry, next_entry used or "")."""
    items = grub_menu(cfg)
    default, honours_next = grub_default_setting(cfg)
    used = ""
    if honours_next and env.get("next_entry"):
        used = default = env["next_entry"]
    elif default == "${saved_entry}":
        default = env.get("saved_entry", "0")
    entry = grub_find(items, default) or grub_find(items, "0")
    if entry is None or not entry["linux"] or not entry["initrd"]:
        raise SystemExit("grub.cfg: the entry GRUB boots (%s) has no linux/initrd line" % default)
    return entry, used


def grub_default_entry(cfg):
    """The entry GRUB boots without a one-time selection: its linux path and arguments and
    its initrd."""
    entry, _ = grub_boot_entry(cfg, {})
    return entry["linux"][0], entry["initrd"][0], " ".join(entry["linux"][1:])


def grub_entry_by_id(cfg, ident):
    """A top-level menu entry by its id, or None."""
    return next((it for it in grub_menu(cfg) if it["id"] == ident), None)


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


# --- systemd-boot: the ESP (read back with mtools) and the Boot Loader Interface -------------
def esp_entries(a, n):
    """The loader entries on the ESP after boot N (run.sh esp_read): {file name: text}."""
    d = os.path.join(a.dir, "boot%d" % n, "esp", "loader", "entries")
    return {os.path.basename(p): open(p, encoding="utf-8").read() for p in sorted(glob.glob(os.path.join(d, "*.conf")))}


def esp_kernel_entry(a, n):
    """The text of the one proxmox-<kver>.conf on the ESP after boot N ("" when not exactly one)."""
    ents = [t for name, t in esp_entries(a, n).items() if name.startswith("proxmox-")]
    return ents[0] if len(ents) == 1 else ""


def efivar(d, name, recorded="efivars"):
    """A Boot Loader Interface variable as the guest's efivarfs showed it (guest/step
    record_efivars; "efivars" at the start of the step, "efivars-trial" after apply --trial,
    "efivars-confirm" after confirm): 4 bytes of attributes, then the value, UTF-16LE strings
    ending in NUL. Returns the list of strings (LoaderEntries holds several), or None when it
    was not set."""
    p = os.path.join(d, recorded, name)
    if not os.path.exists(p):
        return None
    text = open(p, "rb").read()[4:].decode("utf-16-le", errors="replace")
    return [x for x in text.split("\0") if x]


def efivar_one(d, name):
    v = efivar(d, name)
    return v[0] if v else None


def sdboot_cmdline(options, initrd):
    """The kernel command line systemd-boot gives a type 1 entry (seen with Debian 12's
    systemd-boot 252 and Debian 13's 257): initrd= with the entry's initrd path in the ESP's DOS form
    (backslashes) first, then the options line. The kernel's EFI stub loads the initrd
    through the LINUX_EFI_INITRD_MEDIA_GUID device path systemd-boot also offers, and
    ignores the word."""
    return ["initrd=" + initrd.replace("/", "\\")] + options.split()


def check_systemd_boot(ck, a, d):
    """Every boot of a systemd-boot host: the firmware was UEFI, systemd-boot booted the entry
    expected (run.sh entry.txt) and says so in LoaderEntrySelected, and /proc/cmdline is that
    entry's options."""
    expected = booted_entry(a, a.boot)
    ck.check((read(d, "firmware.txt") or "").strip() == "uefi", "the guest was booted through UEFI (/sys/firmware/efi)",
             read(d, "firmware.txt"))
    selected = efivar_one(d, "LoaderEntrySelected")
    ck.check(selected == expected, "systemd-boot booted %s (LoaderEntrySelected)" % expected, selected)
    ck.check(expected in (efivar(d, "LoaderEntries") or []), "systemd-boot found %s on the ESP (LoaderEntries)" % expected,
             efivar(d, "LoaderEntries"))
    p = os.path.join(a.dir, "boot%d" % a.boot, "entry.booted")
    _, initrd, options = loader_entry(open(p, encoding="utf-8").read())
    cmdline = (read(d, "cmdline.txt") or "").split()
    ck.check(cmdline == sdboot_cmdline(options, initrd),
             "/proc/cmdline is initrd=<the entry's initrd> (systemd-boot puts it first), then the entry's options",
             "entry:  %s\nguest:  %s" % (" ".join(sdboot_cmdline(options, initrd)), " ".join(cmdline)))


def cmd_boot_entry(kind, path, grubenv=None):
    """Prints the entry the boot loader boots now as shell assignments. GRUB: with the
    environment block GRUBENV, also NEXT_ENTRY (the one-time selection this boot uses up,
    or empty) and ENTRY (the entry's id or title)."""
    text = open(path, encoding="utf-8").read()
    if kind == "grub":
        env = {}
        if grubenv and os.path.exists(grubenv):
            env = grubenv_read(open(grubenv, "rb").read())
        entry, used = grub_boot_entry(text, env)
        k, i, a = entry["linux"][0], entry["initrd"][0], " ".join(entry["linux"][1:])
        print("NEXT_ENTRY=%s ENTRY=%s" % (shlex.quote(used), shlex.quote(entry["id"] or entry["title"])))
    else:
        k, i, a = loader_entry(text)
    print("KPATH=%s IPATH=%s APPEND=%s" % (shlex.quote(k), shlex.quote(i), shlex.quote(a)))


def cmd_grubenv_used(src, dest):
    """What GRUB's 00_header does to the block when it boots next_entry: 'set next_entry='
    and 'save_env next_entry', so the variable stays with an empty value."""
    env = grubenv_read(open(src, "rb").read())
    env["next_entry"] = ""
    with open(dest, "wb") as f:
        f.write(grubenv_write(env))


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
    return drivers_file(d, "drivers.txt")


def drivers_file(d, name):
    out = {}
    for line in (read(d, name) or "").splitlines():
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
    for step in ("apply", "verify", "rollback", "trial-apply", "kernel-pin", "kernel-trial", "confirm"):
        if rc(d, step) is not None:
            print("     passthru %s: exit %s" % (step, rc(d, step)))
    pbt = (read(d, "proxmox-boot-tool.log") or "").strip().splitlines()
    if pbt:
        print("     proxmox-boot-tool calls so far: %s" % "; ".join(pbt))
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
        ent = esp_kernel_entry(a, 1)
        ck.check(all(x in ent.split() for x in args), "proxmox-boot-tool refresh (run by apply) put them into the loader entry on the ESP", ent)
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
    vline = re.search(r"^\s*ok\s+(VFIO takes IOMMU group %s \(viable, type1 container\): .*)$" % grp, read(d, "verify.out") or "", re.M)
    ck.check(vline is not None and CARD_VGA in vline.group(1) and CARD_AUDIO in vline.group(1),
             "verify's VFIO check: %s" % (vline.group(1) if vline else "group %s not taken" % grp), step_text(d, "verify"))
    check_vm_start(ck, d)
    if loader == "grub":
        check_libvirt(ck, d)
    if a.kernel_trial:
        return  # the kernel trial comes before the rollback (boot 3, check_boot_kernel_trial)
    ck.check(rc(d, "rollback") == 0, "passthru rollback --yes exits 0", step_text(d, "rollback"))
    if loader == "grub":
        try:
            _, _, newargs = grub_default_entry(read(d, "grub.cfg") or "")
        except SystemExit as e:
            newargs = str(e)
        ck.check(not any(x in newargs.split() for x in args), "after rollback grub.cfg's default entry has none of them", newargs)
    else:
        ent = esp_kernel_entry(a, 2)
        ck.check(ent != "" and not any(x in ent.split() for x in args), "after rollback the loader entry on the ESP has none of them", ent)


# --- the VM starts (README: "The VM starts") ----------------------------------------------
def vm_functions(d):
    """(host address, qdev id, root port, guest function) of each vfio-pci argument in
    vm101.args, the arguments the guest started QEMU with."""
    out = []
    for line in (read(d, "vm101.args") or "").splitlines():
        if not line.startswith("vfio-pci,"):
            continue
        props = dict(p.split("=", 1) for p in line.split(",")[1:] if "=" in p)
        fn = props.get("addr", "0x0").split(".")
        out.append((props.get("host"), props.get("id"), props.get("bus"), int(fn[1]) if len(fn) == 2 else 0))
    return out


def qmp_pci_devices(d, name):
    """The devices of the last query-pci answer in a QMP transcript, each with the qdev id
    of the bridge it sits behind ('' on a root bus)."""
    last = None
    for line in (read(d, name) or "").splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and isinstance(msg.get("return"), list):
            last = msg["return"]
    out = []

    def walk(devices, parent):
        for dev in devices or []:
            out.append((parent, dev))
            bridge = dev.get("pci_bridge") or {}
            walk(bridge.get("devices"), dev.get("qdev_id", ""))
    for bus in last or []:
        walk(bus.get("devices"), "")
    return out


def ids_of(d):
    out = {}
    for line in (read(d, "ids.txt") or "").splitlines():
        parts = line.split()
        if len(parts) == 3:
            out[parts[0]] = (int(parts[1], 16), int(parts[2], 16))
    return out


def check_vm_started(ck, d, step, what):
    """QEMU ran and query-pci showed every passed function at its planned place."""
    ok = ck.check(rc(d, step) == 0, "VM 101 started with the card (%s): QEMU exit %s" % (what, rc(d, step)), step_text(d, step))
    functions = vm_functions(d)
    ck.check(len(functions) >= 2, "qemu-server's arguments pass the card's functions: %s" % " ".join(f[0] or "?" for f in functions),
             read(d, "vm101.args"))
    devices = qmp_pci_devices(d, step + ".qmp")
    ids = ids_of(d)
    for host, qid, port, fn in functions:
        found = [(p, dev) for p, dev in devices if dev.get("qdev_id") == qid]
        want = ids.get(host)
        got = None
        if found:
            p, dev = found[0]
            got = (p, dev.get("slot"), dev.get("function"), (dev.get("id") or {}).get("vendor"), (dev.get("id") or {}).get("device"))
        ok &= ck.check(want is not None and got == (port, 0, fn, want[0], want[1]),
                       "%s: QEMU realized %s as vfio-pci behind %s, slot 0 function %d, id %04x:%04x" % (
                           what, host, port, fn, want[0] if want else 0, want[1] if want else 0),
                       "query-pci: %s" % (got,))
    return ok


def check_vm_start(ck, d):
    check_vm_started(ck, d, "vm-start", "as booted")
    # the broken group: the card's audio function on its host driver again
    drv = drivers_file(d, "drivers-broken.txt")
    ck.check(drv.get(CARD_AUDIO) == "snd_hda_intel", "the test moved %s back to snd_hda_intel" % CARD_AUDIO, read(d, "drivers-broken.txt"))
    vtext = step_text(d, "verify-broken")
    ck.check(rc(d, "verify-broken") not in (0, None) and CARD_AUDIO in vtext and "snd_hda_intel" in vtext,
             "passthru verify fails on the broken group and names %s on snd_hda_intel" % CARD_AUDIO, vtext)
    qtext = step_text(d, "vm-start-broken")
    ck.check(rc(d, "vm-start-broken") not in (0, None) and "not viable" in qtext,
             "QEMU refuses to start VM 101 on the broken group (\"not viable\")", qtext)
    drv = drivers_file(d, "drivers-restored.txt")
    ck.check(drv.get(CARD_AUDIO) == "vfio-pci", "the test put %s back on vfio-pci" % CARD_AUDIO, read(d, "drivers-restored.txt"))
    ck.check(rc(d, "verify-restored") == 0, "passthru verify passes again", step_text(d, "verify-restored"))
    check_vm_started(ck, d, "vm-start-restored", "the function back on vfio-pci")
    print("  -- the broken group: verify and QEMU side by side --")
    print("     verify --vm 101 (exit %s):" % rc(d, "verify-broken"))
    for line in (read(d, "verify-broken.out") or "").splitlines() + (read(d, "verify-broken.err") or "").splitlines():
        if CARD_AUDIO in line or "FAIL" in line or "fail" in line:
            print("       | " + line)
    print("     QEMU (exit %s):" % rc(d, "vm-start-broken"))
    for line in (read(d, "vm-start-broken.err") or "").splitlines()[:6]:
        print("       | " + line)


def domain_hostdevs(text):
    """(host address, alias) of each PCI hostdev of a libvirt domain XML."""
    try:
        root = ET.fromstring(text or "")
    except ET.ParseError:
        return []
    out = []
    for h in root.findall("devices/hostdev"):
        s = h.find("source/address")
        if h.get("type") != "pci" or s is None:
            continue
        addr = "%04x:%02x:%02x.%x" % tuple(int(s.get(k), 16) for k in ("domain", "bus", "slot", "function"))
        alias = h.find("alias")
        out.append((addr, alias.get("name") if alias is not None else None))
    return out


def check_libvirt(ck, d):
    """The libvirt backend on a GRUB host: apply, start through libvirt's qemu driver, roll back."""
    ck.check(rc(d, "libvirt-define") == 0, "virsh define: the libvirt domain 101 without the card", step_text(d, "libvirt-define"))
    ck.check(rc(d, "libvirt-apply") == 0, "passthru apply --backend libvirt --connect qemu:///system --vm 101 exits 0",
             step_text(d, "libvirt-apply"))
    # the host's files already say VM 101: the plan made after the reboot is the same, so
    # this generation holds the domain only (no file, no update-initramfs)
    ck.check("0 file(s) written, 0 after-step(s)" in (read(d, "libvirt-apply.out") or ""),
             "after the reboot passthru plans the same host files: the libvirt generation writes none and runs nothing",
             step_text(d, "libvirt-apply"))
    defined = domain_hostdevs(read(d, "libvirt-defined.xml"))
    ck.check(sorted(a for a, _ in defined) == [CARD_VGA, CARD_AUDIO],
             "libvirt's definition of 101 holds both card functions as hostdevs", read(d, "libvirt-defined.xml"))
    ck.check(rc(d, "libvirt-start") == 0, "libvirt's qemu driver started domain 101 with the card (virsh start)",
             step_text(d, "libvirt-start"))
    ck.check((read(d, "libvirt-state.txt") or "").strip() == "running", "the domain was running",
             read(d, "libvirt-state.txt"))
    live = domain_hostdevs(read(d, "libvirt-live.xml"))
    ck.check(sorted(a for a, _ in live) == [CARD_VGA, CARD_AUDIO] and all(al for _, al in live),
             "the running domain's hostdevs: %s" % ", ".join("%s as %s" % x for x in live), read(d, "libvirt-live.xml"))
    devices = qmp_pci_devices(d, "libvirt-query-pci.json")
    ids = ids_of(d)
    for addr, alias in live:
        found = [dev for _, dev in devices if dev.get("qdev_id") == alias]
        want = ids.get(addr)
        got = (found[0].get("id") or {}) if found else {}
        ck.check(want is not None and (got.get("vendor"), got.get("device")) == want,
                 "QEMU (started by libvirt) realized %s as %s with id %04x:%04x" % (addr, alias, want[0] if want else 0, want[1] if want else 0),
                 "query-pci: %s" % got)
    ck.check(rc(d, "libvirt-undefine") == 0, "virsh undefine 101", step_text(d, "libvirt-undefine"))
    ck.check(rc(d, "libvirt-rollback") == 0 and "libvirt domain 101" in step_text(d, "libvirt-rollback"),
             "passthru rollback --yes undoes the domain's generation and names the domain's definition to put back",
             step_text(d, "libvirt-rollback"))


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


# --- the trial boots: boot 3 ends with apply --trial; 4 fails, 5 falls back, 6 confirms ----
TRIAL_ID = "passthru-trial"
# systemd-boot: the entry's id on every ESP (the file name, as LoaderEntrySelected names it)
TRIAL_LOADER_ENTRY = "passthru-trial.conf"
# the entry apply --trial stages under /etc, as guest/step record_etc names its copy
TRIAL_STAGED = "passthru_trial-loader-entry.conf"
TRIAL_MARKER = "passthru.trial"


def trial_entry(loader):
    """The trial entry's name as run.sh's entry.txt has it: GRUB's menu entry id, or the
    systemd-boot entry's file name."""
    return TRIAL_ID if loader == "grub" else TRIAL_LOADER_ENTRY
# what decides the default boot: left exactly as they were by a trial
DEFAULT_BOOT_FILES = ("/etc/default/grub", "/etc/default/grub.d/passthru.cfg", "/etc/kernel/cmdline")


def hashes(d, name):
    out = {}
    for line in (read(d, name) or "").splitlines():
        h, _, path = line.partition("  ")
        out[path] = h
    return out


def booted_entry(a, n):
    p = os.path.join(a.dir, "boot%d" % n, "entry.txt")
    return open(p).read().strip() if os.path.exists(p) else None


def serial_end(a, n):
    """How the machine ended: the kernel's last words on the serial console."""
    p = os.path.join(a.dir, "boot%d" % n, "serial.log")
    t = open(p, errors="replace").read() if os.path.exists(p) else ""
    if "reboot: Restarting system" in t:
        return "reboot"
    if "reboot: Power down" in t:
        return "power-off"
    return "?"


def trial_args(d, loader):
    """The trial entry's arguments: as grub-mkconfig wrote them after apply --trial, or the
    options of the systemd-boot entry apply --trial staged."""
    if loader == "grub":
        entry = grub_entry_by_id(read(d, "grub.cfg.trial") or "", TRIAL_ID)
        return entry["linux"][1:] if entry and entry["linux"] else []
    try:
        return loader_entry(read(d, "etc-trial/" + TRIAL_STAGED) or "")[2].split()
    except SystemExit:
        return []


def esp_dir_entries(d, name):
    """The loader entries the guest found on the ESP between two steps (guest/step
    record_esp, in D/NAME/entries): {file name: text}."""
    e = os.path.join(d, name, "entries")
    return {os.path.basename(p): open(p, encoding="utf-8").read() for p in sorted(glob.glob(os.path.join(e, "*.conf")))}


def proxmox_entry(entries):
    """The one proxmox-<kver>.conf among ENTRIES, "" when not exactly one."""
    ents = [t for name, t in entries.items() if name.startswith("proxmox-")]
    return ents[0] if len(ents) == 1 else ""


def revert_unit(d):
    """What systemd knew of the trial's revert unit on this boot (guest/step record_revert)."""
    out = {}
    for line in (read(d, "revert.txt") or "").splitlines():
        k, _, v = line.partition("=")
        out[k] = v
    return out


REVERT_FILES = ("/etc/systemd/system/passthru-trial-revert.service", "/etc/systemd/system/multi-user.target.d/passthru-trial.conf")


def check_trial_applied(ck, a, d, default_before):
    """apply --trial: the trial entry exists, the boot loader boots it once, the default is as
    before. DEFAULT_BEFORE: GRUB's default entry (linux, initrd, arguments) or the text of the
    systemd-boot default entry on the ESP, before apply --trial."""
    ck.check(rc(d, "trial-apply") == 0, "passthru apply --trial exits 0", step_text(d, "trial-apply"))
    out = read(d, "trial-apply.out") or ""
    steps = out.partition("Next steps, in this order:")[2]
    order = [steps.find(w) for w in ("reboot", "verify", "confirm", "rollback")]
    ck.check(steps != "" and -1 not in order and order == sorted(order),
             "apply --trial ends with the next steps in order: reboot, verify, confirm, rollback", out[-800:])
    args = trial_args(d, a.loader)
    if a.loader == "grub":
        ck.check(TRIAL_MARKER in args, "grub.cfg has the trial entry '%s' with the marker: %s" % (TRIAL_ID, " ".join(args)),
                 read(d, "grub.cfg.trial"))
        env = grubenv_read(open(os.path.join(d, "grubenv.trial"), "rb").read()) if read(d, "grubenv.trial") is not None else {}
        ck.check(env.get("next_entry") == TRIAL_ID, "grub-reboot set next_entry=%s in /boot/grub/grubenv" % TRIAL_ID, env)
        try:
            default_after = grub_default_entry(read(d, "grub.cfg.trial") or "")
        except SystemExit as e:
            default_after = str(e)
        ck.check(default_after == default_before, "grub.cfg's default entry is exactly as before apply --trial",
                 "before: %s\nafter:  %s" % (default_before, default_after))
    else:
        staged = read(d, "etc-trial/" + TRIAL_STAGED) or ""
        ck.check(TRIAL_MARKER in args and "systemd.wants=passthru-trial.timer" in args,
                 "apply --trial staged /etc/passthru/trial-loader-entry.conf with the marker and the watchdog: %s" % " ".join(args),
                 staged)
        on_esp = esp_dir_entries(d, "esp-trial")
        ck.check(on_esp.get(TRIAL_LOADER_ENTRY) == staged and staged != "",
                 "the helper put it on the ESP as loader/entries/%s, byte for byte" % TRIAL_LOADER_ENTRY,
                 (read(d, "esp-trial/error") or "") + "ESP: %s" % " ".join(on_esp))
        oneshot = efivar(d, "LoaderEntryOneShot", "efivars-trial")
        ck.check(oneshot == [TRIAL_LOADER_ENTRY], "the helper selected it for the next boot only (LoaderEntryOneShot=%s)"
                 % TRIAL_LOADER_ENTRY, oneshot)
        ck.check(proxmox_entry(on_esp) == default_before and default_before != "",
                 "the default entry on the ESP is byte for byte as before apply --trial",
                 "before:\n%s\nafter:\n%s" % (default_before, proxmox_entry(on_esp)))
        ck.check(read(d, "etc-trial/kernel_cmdline") == read(d, "etc/kernel_cmdline") and read(d, "etc/kernel_cmdline"),
                 "/etc/kernel/cmdline is as before apply --trial", read(d, "etc-trial/kernel_cmdline"))
    unit = read(d, "etc-trial/systemd_system_passthru-trial-revert.service") or ""
    dropin = read(d, "etc-trial/systemd_system_multi-user.target.d_passthru-trial.conf") or ""
    ck.check("ConditionKernelCommandLine=!%s" % TRIAL_MARKER in unit.splitlines() and "ExecStart=passthru rollback --trial-fallback" in unit.splitlines()
             and "Wants=passthru-trial-revert.service" in dropin.splitlines(),
             "the trial wrote its revert unit (skipped with %s) and the multi-user.target drop-in that starts it" % TRIAL_MARKER,
             unit + dropin)
    return args


def check_trial_boot(ck, a, d, n, args):
    """A trial boot: the one-time entry, the marker, the card on vfio-pci, scan says so."""
    if a.loader == "grub":
        ck.check(booted_entry(a, n) == TRIAL_ID, "GRUB's one-time selection booted the trial entry", booted_entry(a, n))
    else:
        # check_systemd_boot: LoaderEntrySelected is the trial entry
        ck.check(booted_entry(a, n) == TRIAL_LOADER_ENTRY, "systemd-boot's one-time selection booted the trial entry",
                 booted_entry(a, n))
        ck.check(efivar(d, "LoaderEntryOneShot") is None,
                 "systemd-boot removed LoaderEntryOneShot when it used it (the selection counts for this boot only)",
                 efivar(d, "LoaderEntryOneShot"))
    cmdline = (read(d, "cmdline.txt") or "").split()
    ck.check(TRIAL_MARKER in cmdline and all(x in cmdline for x in args if not x.startswith("BOOT_IMAGE")),
             "/proc/cmdline carries the trial's arguments and the marker %s" % TRIAL_MARKER, " ".join(cmdline))
    drv = drivers(d)
    ck.check(drv.get(CARD_VGA) == "vfio-pci" and drv.get(CARD_AUDIO) == "vfio-pci",
             "on the trial boot both card functions are on vfio-pci", read(d, "drivers.txt"))
    host_drivers_ok(ck, drv, a.iommu, "on the trial boot")
    ck.check("Trial boot" in (read(d, "scan.out") or ""), "scan says this is a trial boot", step_text(d, "scan"))
    ck.check("trial boot" in (read(d, "verify.out") or ""), "verify says this is a trial boot", step_text(d, "verify"))


def default_before_trial(a, d, esp_view):
    """The default entry before apply --trial: GRUB's (from grub.cfg), or the systemd-boot
    entry's text on the ESP as the guest read it just before (ESP_VIEW)."""
    if a.loader == "grub":
        try:
            return grub_default_entry(read(d, "grub.cfg") or "")
        except SystemExit as e:
            return str(e)
    return proxmox_entry(esp_dir_entries(d, esp_view))


def check_boot3_trial(ck, a, d):
    check_trial_applied(ck, a, d, default_before_trial(a, d, "esp-before-trial"))


def check_boot4(ck, a, d):
    b3 = os.path.join(a.dir, "boot3", "results")
    check_trial_boot(ck, a, d, 4, trial_args(b3, a.loader))
    inj = drivers_file(d, "drivers-injected.txt")
    ck.check(inj.get(CARD_AUDIO) == "snd_hda_intel", "the injected failure: the card's audio is on snd_hda_intel",
             read(d, "drivers-injected.txt"))
    v = rc(d, "verify")
    ck.check(v is not None and v != 0, "passthru verify fails on this trial boot (exit %s), so it is not confirmed" % v,
             step_text(d, "verify"))
    ck.check("passthru-trial.timer" in (read(d, "timer.txt") or ""), "the trial's watchdog timer is armed", read(d, "timer.txt"))
    rv = revert_unit(d)
    ck.check(rv.get("ConditionResult") == "no" and rv.get("ExecMainStartTimestampMonotonic") == "0",
             "the revert unit did not run on the trial boot (its condition !%s is false)" % TRIAL_MARKER, read(d, "revert.txt"))
    ck.check(serial_end(a, 4) == "reboot", "the watchdog rebooted the machine (\"reboot: Restarting system\")", serial_end(a, 4))


def check_boot5(ck, a, d):
    b3 = os.path.join(a.dir, "boot3", "results")
    ck.check(booted_entry(a, 5) not in (None, trial_entry(a.loader)),
             "%s booted the default entry again (%s)" % ("GRUB" if a.loader == "grub" else "systemd-boot", booted_entry(a, 5)))
    cmdline = (read(d, "cmdline.txt") or "").split()
    ck.check(cmdline == (read(b3, "cmdline.txt") or "").split(), "/proc/cmdline is exactly boot 3's (before apply --trial)",
             " ".join(cmdline))
    drv = drivers(d)
    ck.check(drv.get(CARD_VGA) == "bochs-drm" and drv.get(CARD_AUDIO) == "snd_hda_intel",
             "every card function is on its host driver (bochs-drm, snd_hda_intel)", read(d, "drivers.txt"))
    host_drivers_ok(ck, drv, a.iommu, "after the failed trial")
    if a.loader == "grub":
        env = grubenv_read(open(os.path.join(d, "grubenv"), "rb").read()) if read(d, "grubenv") is not None else {}
        ck.check(not env.get("next_entry"), "no one-time selection is left in grubenv", env)
        try:
            same = grub_default_entry(read(d, "grub.cfg") or "") == grub_default_entry(read(b3, "grub.cfg") or "")
        except SystemExit:
            same = False
        ck.check(same, "grub.cfg's default entry is byte for byte boot 3's")
    else:
        ck.check(efivar(d, "LoaderEntryOneShot") is None, "no one-time selection is left (LoaderEntryOneShot)",
                 efivar(d, "LoaderEntryOneShot"))
        esp = esp_dir_entries(d, "esp-fallback")
        ck.check(esp != {} and TRIAL_LOADER_ENTRY not in esp,
                 "the fallback removed the trial entry from the ESP (loader/entries: %s)" % " ".join(esp),
                 read(d, "esp-fallback/error"))
        before_esp = proxmox_entry(esp_dir_entries(b3, "esp-before-trial"))
        ck.check(before_esp != "" and proxmox_entry(esp) == before_esp,
                 "the default entry on the ESP is byte for byte boot 3's before apply --trial",
                 "before:\n%s\nnow:\n%s" % (before_esp, proxmox_entry(esp)))
    before, fallback = hashes(b3, "before-trial.sha256"), hashes(d, "after-fallback.sha256")
    ck.check(len(before) > 5 and all(before.get(f) == fallback.get(f) for f in DEFAULT_BOOT_FILES),
             "the files of the default boot (%s) are byte-identical to before apply --trial" % ", ".join(DEFAULT_BOOT_FILES),
             "\n".join("%s %s -> %s" % (f, before.get(f), fallback.get(f)) for f in DEFAULT_BOOT_FILES))
    v = rc(d, "verify")
    ck.check(v is not None and v != 0, "passthru verify fails on the default boot (exit %s)" % v, step_text(d, "verify"))
    rv = revert_unit(d)
    journal = read(d, "revert-journal.txt") or ""
    ck.check(rv.get("ConditionResult") == "yes" and rv.get("Result") == "success" and rv.get("ExecMainStatus") == "0",
             "the trial's revert unit ran on the default boot and succeeded (passthru rollback --trial-fallback exit 0)",
             (read(d, "revert.txt") or "") + journal[-3000:])
    ck.check("is a trial that was not confirmed" in journal and "Rolled back as generation" in journal,
             "its journal shows the rollback of the unconfirmed trial", journal[-3000:])
    ck.check(len(before) > 5 and before == fallback,
             "without a rollback by hand every file passthru touched is byte-identical to before apply --trial",
             "\n".join("%s %s -> %s" % (f, before.get(f), fallback.get(f)) for f in sorted(set(before) | set(fallback)) if before.get(f) != fallback.get(f)))
    ck.check(all(fallback.get(f) == "absent" for f in REVERT_FILES), "the revert unit and its drop-in removed themselves",
             "\n".join("%s %s" % (f, fallback.get(f)) for f in REVERT_FILES))
    ck.check(rc(d, "rollback-left") == 0 and "Nothing to roll back: no applied generation is active" in (read(d, "rollback-left.out") or ""),
             "passthru rollback finds nothing left to undo", step_text(d, "rollback-left"))
    print("     sha256 before apply --trial == after the fallback boot: %d files (%d absent)" % (len(before), sum(1 for h in before.values() if h == "absent")))
    # the good path starts here
    check_trial_applied(ck, a, d, default_before_trial(a, d, "esp-fallback"))


def check_boot6(ck, a, d):
    check_trial_boot(ck, a, d, 6, trial_args(os.path.join(a.dir, "boot5", "results"), a.loader))
    ck.check(rc(d, "verify") == 0, "passthru verify exits 0 on the good trial boot", step_text(d, "verify"))
    ck.check(rc(d, "confirm") == 0, "passthru confirm exits 0", step_text(d, "confirm"))
    if a.loader == "grub":
        cfg = read(d, "grub.cfg") or ""
        ck.check(grub_entry_by_id(cfg, TRIAL_ID) is None, "after confirm grub.cfg has no trial entry")
        ck.check(read(d, "etc/grub.d_42_passthru_trial") is None and read(d, "etc/systemd_system_passthru-trial.timer") is None,
                 "after confirm the trial's script and watchdog are gone")
    else:
        ck.check(read(d, "etc/" + TRIAL_STAGED) is None and read(d, "etc/systemd_system_passthru-trial.timer") is None,
                 "after confirm the staged trial entry and the watchdog are gone")
        esp = esp_entries(a, 6)
        ck.check(esp != {} and TRIAL_LOADER_ENTRY not in esp,
                 "after confirm the ESP has no trial entry (loader/entries: %s)" % " ".join(esp))
        args = planned_args(a.loader, d, a.iommu)
        ent = esp_kernel_entry(a, 6)
        ck.check(len(args) > 0 and all(x in ent.split() for x in args) and TRIAL_MARKER not in ent.split(),
                 "after confirm the default entry on the ESP carries the confirmed arguments %s (from /etc/kernel/cmdline) "
                 "and no marker" % " ".join(args), ent)
        ck.check(efivar(d, "LoaderEntryOneShot", "efivars-confirm") is None, "after confirm no one-time selection is set",
                 efivar(d, "LoaderEntryOneShot", "efivars-confirm"))
    rv = revert_unit(d)
    ck.check(rv.get("ConditionResult") == "no" and rv.get("ExecMainStartTimestampMonotonic") == "0",
             "the revert unit did not run on the good trial boot (marker present)", read(d, "revert.txt"))
    ck.check(read(d, "etc/systemd_system_passthru-trial-revert.service") is None
             and read(d, "etc/systemd_system_multi-user.target.d_passthru-trial.conf") is None,
             "after confirm the revert unit and its drop-in are gone")
    env = grubenv_read(open(os.path.join(d, "grubenv"), "rb").read()) if read(d, "grubenv") is not None else {}
    ck.check(not env.get("next_entry"), "no one-time selection is left in grubenv", env)
    ck.check(serial_end(a, 6) == "power-off", "the watchdog did not reboot the confirmed trial (the step powered off)", serial_end(a, 6))


def check_boot7(ck, a, d):
    b6 = os.path.join(a.dir, "boot6", "results")
    ck.check(booted_entry(a, 7) not in (None, trial_entry(a.loader)),
             "%s booted the default entry (%s)" % ("GRUB" if a.loader == "grub" else "systemd-boot", booted_entry(a, 7)))
    args = planned_args(a.loader, b6, a.iommu)
    cmdline = (read(d, "cmdline.txt") or "").split()
    ck.check(len(args) > 0 and all(x in cmdline for x in args) and TRIAL_MARKER not in cmdline,
             "/proc/cmdline carries the confirmed arguments %s and no trial marker" % " ".join(args), " ".join(cmdline))
    drv = drivers(d)
    ck.check(drv.get(CARD_VGA) == "vfio-pci" and drv.get(CARD_AUDIO) == "vfio-pci",
             "on the default boot after confirm both card functions are on vfio-pci", read(d, "drivers.txt"))
    host_drivers_ok(ck, drv, a.iommu, "after confirm")
    ck.check(rc(d, "verify") == 0, "passthru verify --vm 101 exits 0 on the default boot", step_text(d, "verify"))
    ck.check(revert_unit(d).get("LoadState") == "not-found", "no revert unit is left after confirm", read(d, "revert.txt"))


# --- the kernel trial (run.sh --kernel-trial, GRUB): K1 pinned in boot 1, kernel trial K2 in
# boot 2, K2's trial boot 3 (verify, confirm, rollback --to 1), boot 4 as the plain boot 3 ------
PIN_FILE = "kernel_proxmox-boot-pin"  # /etc/kernel/proxmox-boot-pin, as guest/step names its copy
PIN_DROPIN = "default_grub.d_proxmox-kernel-pin.cfg"  # /etc/default/grub.d/proxmox-kernel-pin.cfg


def grub_pin_of(d, etc):
    """The kernel the pin files in D/ETC name: (proxmox-boot-pin's first line, the kernel of
    GRUB_DEFAULT's 'A>gnulinux-KVER-advanced-ROOT' path), None for a file that is missing."""
    pin = read(d, etc + "/" + PIN_FILE)
    dropin = read(d, etc + "/" + PIN_DROPIN)
    m = re.search(r'^GRUB_DEFAULT="gnulinux-advanced-[^">]*>gnulinux-(.+)-advanced-[^"]*"$', dropin or "", re.M)
    return (pin.strip() if pin is not None else None, m.group(1) if m else (None if dropin is None else "?"))


def grub_boots_kernel(cfg, env):
    """The kernel release GRUB boots with this grub.cfg and environment block, or the error."""
    try:
        entry, _ = grub_boot_entry(cfg, env)
    except SystemExit as e:
        return str(e)
    return entry["linux"][0].rpartition("/vmlinuz-")[2]


def grubenv_of(d, name):
    return grubenv_read(open(os.path.join(d, name), "rb").read()) if read(d, name) is not None else {}


def check_kernel_pin(ck, a, d):
    k1, k2 = a.kernel_trial
    ck.check(rc(d, "kernel-pin") == 0, "passthru kernel pin %s --yes exits 0" % k1, step_text(d, "kernel-pin"))
    ck.check(grub_pin_of(d, "etc") == (k1, k1),
             "the pin names %s in /etc/kernel/proxmox-boot-pin and in GRUB_DEFAULT (/etc/default/grub.d/proxmox-kernel-pin.cfg)" % k1,
             "%s\n%s" % (read(d, "etc/" + PIN_FILE), read(d, "etc/" + PIN_DROPIN)))
    cfg = read(d, "grub.cfg") or ""
    ck.check(grub_boots_kernel(read(d, "grub.cfg.before") or "", {}) == k2,
             "before the pin grub-mkconfig's default is the newer kernel %s" % k2, grub_boots_kernel(read(d, "grub.cfg.before") or "", {}))
    ck.check(grub_boots_kernel(cfg, {}) == k1, "after the pin grub.cfg's default entry starts %s" % k1, grub_boots_kernel(cfg, {}))


def check_kernel_trial_applied(ck, a, d):
    k1, k2 = a.kernel_trial
    ck.check((read(d, "uname.txt") or "").strip() == k1, "boot 2 runs the pinned kernel %s, not the newer %s" % (k1, k2), read(d, "uname.txt"))
    out = read(d, "kernel-check.out") or ""
    ck.check(rc(d, "kernel-check") == 0 and re.search(r"^%s \(running\): ok$" % re.escape(k1), out, re.M) is not None
             and re.search(r"^%s: ok$" % re.escape(k2), out, re.M) is not None,
             "passthru kernel check: both kernels ok (each initramfs rebuilt by apply holds passthru's files)", step_text(d, "kernel-check"))
    ck.check(rc(d, "kernel-trial") == 0, "passthru kernel trial %s --yes exits 0" % k2, step_text(d, "kernel-trial"))
    cfg = read(d, "grub.cfg.trial") or ""
    entry = grub_entry_by_id(cfg, TRIAL_ID)
    linux = entry["linux"] if entry and entry["linux"] else []
    ck.check(linux[:1] == ["/boot/vmlinuz-" + k2] and TRIAL_MARKER in linux,
             "grub.cfg has the trial entry '%s' starting %s with the marker" % (TRIAL_ID, k2), " ".join(linux) or cfg[-600:])
    env = grubenv_of(d, "grubenv.trial")
    ck.check(env.get("next_entry") == TRIAL_ID, "grub-reboot set next_entry=%s" % TRIAL_ID, env)
    ck.check(grub_boots_kernel(cfg, env) == k2 and grub_boots_kernel(cfg, {}) == k1,
             "GRUB boots %s once, then its default %s again" % (k2, k1), "%s / %s" % (grub_boots_kernel(cfg, env), grub_boots_kernel(cfg, {})))
    ck.check(grub_pin_of(d, "etc-trial") == (k1, k1), "the pin of %s is untouched by the trial" % k1, grub_pin_of(d, "etc-trial"))


def check_boot_kernel_trial(ck, a, d):
    k1, k2 = a.kernel_trial
    ck.check(booted_entry(a, 3) == TRIAL_ID, "GRUB's one-time selection booted the trial entry", booted_entry(a, 3))
    ck.check((read(d, "uname.txt") or "").strip() == k2, "the trial boot runs %s" % k2, read(d, "uname.txt"))
    cmdline = (read(d, "cmdline.txt") or "").split()
    args = planned_args("grub", os.path.join(a.dir, "boot1", "results"), a.iommu)
    ck.check(TRIAL_MARKER in cmdline and len(args) > 0 and all(x in cmdline for x in args),
             "/proc/cmdline carries apply's arguments %s and the marker %s" % (" ".join(args), TRIAL_MARKER), " ".join(cmdline))
    drv = drivers(d)
    ck.check(drv.get(CARD_VGA) == "vfio-pci" and drv.get(CARD_AUDIO) == "vfio-pci",
             "under %s both card functions are on vfio-pci" % k2, read(d, "drivers.txt"))
    host_drivers_ok(ck, drv, a.iommu, "under %s" % k2)
    files = read(d, "initramfs-files.txt") or ""
    ck.check("etc/modprobe.d/passthru-vfio.conf" in files, "%s's initramfs (rebuilt by apply) holds passthru's modprobe.d file" % k2, files[-400:])
    ck.check("Trial boot" in (read(d, "scan.out") or ""), "scan says this is a trial boot", step_text(d, "scan"))
    ck.check(rc(d, "verify") == 0 and "trial boot" in (read(d, "verify.out") or ""),
             "passthru verify --vm 101 exits 0 on the trial boot of %s" % k2, step_text(d, "verify"))
    rv = revert_unit(d)
    ck.check(rv.get("ConditionResult") == "no" and rv.get("ExecMainStartTimestampMonotonic") == "0",
             "the revert unit did not run on the trial boot (marker present)", read(d, "revert.txt"))
    ck.check(rc(d, "confirm") == 0, "passthru confirm exits 0", step_text(d, "confirm"))
    cfg = read(d, "grub.cfg.confirm") or ""
    env = grubenv_of(d, "grubenv.confirm")
    ck.check(grub_pin_of(d, "etc-confirm") == (k2, k2), "confirm pinned %s (proxmox-boot-pin and GRUB_DEFAULT)" % k2,
             grub_pin_of(d, "etc-confirm"))
    ck.check(grub_entry_by_id(cfg, TRIAL_ID) is None and not env.get("next_entry") and grub_boots_kernel(cfg, env) == k2,
             "after confirm grub.cfg has no trial entry, grubenv no one-time selection, and GRUB boots %s by default" % k2,
             "%s; next_entry=%s" % (grub_boots_kernel(cfg, env), env.get("next_entry")))
    ck.check(read(d, "etc-confirm/grub.d_42_passthru_trial") is None and read(d, "etc-confirm/systemd_system_passthru-trial.timer") is None
             and read(d, "etc-confirm/systemd_system_passthru-trial-revert.service") is None,
             "after confirm the trial's script, watchdog and revert unit are gone")
    ck.check(rc(d, "rollback") == 0, "passthru rollback --to 1 --yes exits 0", step_text(d, "rollback"))
    ck.check(grub_pin_of(d, "etc") == (None, None), "after the rollback no pin file is left", grub_pin_of(d, "etc"))
    try:
        _, _, newargs = grub_default_entry(read(d, "grub.cfg") or "")
    except SystemExit as e:
        newargs = str(e)
    ck.check(not any(x in newargs.split() for x in args), "after the rollback grub.cfg's default entry has none of apply's arguments", newargs)
    ck.check(grub_boots_kernel(read(d, "grub.cfg") or "", {}) == k2,
             "after the rollback GRUB's default is again its first entry, the newest kernel %s" % k2, grub_boots_kernel(read(d, "grub.cfg") or "", {}))
    ck.check(serial_end(a, 3) == "power-off", "the watchdog did not reboot the confirmed trial (the step powered off)", serial_end(a, 3))


def cmd_boot(a):
    d = os.path.join(a.dir, "boot%d" % a.boot, "results")
    boot1 = os.path.join(a.dir, "boot1", "results")
    ck = Checker("%s boot %d" % (a.loader, a.boot))
    print("checks of %s boot %d (%s):" % (a.loader, a.boot, a.iommu))
    ck.check(read(d, "finished") is not None, "the step of boot %d ran to its end" % a.boot)
    if a.loader == "systemd-boot":
        check_systemd_boot(ck, a, d)
    else:
        appended = (open(os.path.join(a.dir, "boot%d" % a.boot, "append.txt")).read().split())
        cmdline = (read(d, "cmdline.txt") or "").split()
        ck.check(cmdline == appended, "the guest's /proc/cmdline is the one the boot loader's entry gives",
                 "booted: %s\nguest:  %s" % (" ".join(appended), " ".join(cmdline)))
    failed_units = (read(d, "failed-units.txt") or "").strip()
    ck.check(failed_units == "", "no systemd unit failed", failed_units)
    if a.kernel_trial and a.boot == 3:
        check_boot_kernel_trial(ck, a, d)
    elif a.kernel_trial and a.boot == 4:
        check_boot3(ck, a, d, boot1, a.loader, a.iommu)
    elif a.boot == 1:
        check_boot1(ck, a, d, a.loader, a.iommu)
        if a.kernel_trial:
            check_kernel_pin(ck, a, d)
    elif a.boot == 2:
        check_boot2(ck, a, d, boot1, a.loader, a.iommu)
        if a.kernel_trial:
            check_kernel_trial_applied(ck, a, d)
    elif a.boot == 3:
        check_boot3(ck, a, d, boot1, a.loader, a.iommu)
        if a.trial:
            check_boot3_trial(ck, a, d)
    else:
        {4: check_boot4, 5: check_boot5, 6: check_boot6, 7: check_boot7}[a.boot](ck, a, d)
    evidence(ck, d, a.boot)
    if a.loader == "systemd-boot":
        print("     firmware: %s; LoaderEntrySelected: %s; LoaderEntries: %s; LoaderEntryOneShot: %s"
              % ((read(d, "firmware.txt") or "?").strip(), efivar_one(d, "LoaderEntrySelected"),
                 " ".join(efivar(d, "LoaderEntries") or []), efivar_one(d, "LoaderEntryOneShot") or "(not set)"))
        print("     ESP loader entries after this boot: %s" % " ".join(esp_entries(a, a.boot)))
    elif booted_entry(a, a.boot):
        print("     GRUB entry booted: %s; the machine ended by %s" % (booted_entry(a, a.boot), serial_end(a, a.boot)))
    return 1 if ck.failures else 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "boot-entry":
        if len(sys.argv) not in (4, 5) or sys.argv[2] not in ("grub", "systemd-boot"):
            raise SystemExit("usage: check.py boot-entry grub|systemd-boot FILE [GRUBENV]")
        cmd_boot_entry(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else None)
        return 0
    if len(sys.argv) >= 2 and sys.argv[1] == "grubenv-used":
        if len(sys.argv) != 4:
            raise SystemExit("usage: check.py grubenv-used GRUBENV OUT")
        cmd_grubenv_used(sys.argv[2], sys.argv[3])
        return 0
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["boot"])
    p.add_argument("--loader", required=True, choices=["grub", "systemd-boot"])
    p.add_argument("--iommu", required=True, choices=["intel", "amd"])
    p.add_argument("--boot", required=True, type=int, choices=range(1, 8))
    p.add_argument("--dir", required=True)
    p.add_argument("--trial", action="store_true", help="the host boots the trial too (run.sh --trial): judge boot 3's apply --trial")
    p.add_argument("--kernel-trial", nargs=2, metavar=("K1", "K2"),
                   help="the host boots the kernel trial (run.sh --kernel-trial): K1 the root's kernel, K2 the second one")
    return cmd_boot(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
