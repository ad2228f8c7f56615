// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/help.hpp"

#include <sstream>

namespace passthru::cli {

namespace {

// Raw strings keep the text readable; each ends without a trailing newline.
const std::vector<CommandDoc> k_command_docs{
    {"scan", "[--json]",
     R"(Reads the host and prints what matters for passthrough: CPU and its
virtualisation extension, kernel, Proxmox VE version, boot loader (GRUB or
systemd-boot through proxmox-boot-tool, with the evidence), kernel command
line, whether the IOMMU is on and how many groups it made, every PCI device
by IOMMU group with its bound driver and link, the GPU cards (numbered from
0, the numbers --gpus accepts) with their isolation verdict, and the
problems found, each with its fix.

scan only reads. It never writes to the host and is safe to run at any time,
also without root.)"},
    {"plan", "--vm VMID --gpus SEL [OPTIONS]",
     R"(Works out every change that passthrough of the selected GPU cards to the
VM needs on this host and prints it: each file with the reason for every
change and the unified diff against the current content, the commands to run
after (update-initramfs, the boot loader refresh, the VM's configuration),
warnings and refusals. plan changes nothing on the host: it only records the
plan as the host's pending plan (/var/lib/passthru/pending-plan.json, mode
0600; as root on a live host), which apply --dry-run and apply take up when
they are given no request. --out FILE saves it elsewhere instead.

A card is passed with all its functions (a Turing card has four: VGA, audio,
USB and UCSI). An IOMMU group is never split: a group shared with another
endpoint is refused with exit status 3, naming the devices and the ways out.

The kernel command line goes where the detected boot loader reads it: a GRUB
drop-in /etc/default/grub.d/passthru.cfg (then update-grub), or
/etc/kernel/cmdline for systemd-boot (then proxmox-boot-tool refresh).)"},
    {"apply", "[--dry-run] [--yes] [--trial [--trial-minutes N]] [--plan FILE | FILE | --vm VMID --gpus SEL ...]",
     R"(Makes the planned changes as one transaction. Without a request or --plan
it applies the pending plan that plan recorded, and refuses it (exit 1) if a
file it was made from changed since: plan again. With --dry-run it prints the
same diffs and commands as plan and writes nothing at all.

apply FILE is apply --plan FILE: it applies the plan saved in FILE with all
the checks of --plan, never the pending plan. FILE together with --plan, with
the request options or with a second word is a usage error (exit 2).

Otherwise it takes the lock /var/lib/passthru/lock, records a new generation
(the pre-image of every file it will touch and a manifest) and syncs it to
disk before it changes anything, replaces each file atomically (keeping owner
and mode), runs the after-steps (update-initramfs -u -k all, the boot loader
refresh), and marks the generation committed. If any step fails, the files
already changed are restored from the pre-images in reverse order and the
exit status is 1; if a restore fails the status is 4 and every affected path
is listed. Applying the same request again changes nothing and records no
generation.

On the live host (--root /) apply needs root. The changes take effect at the
next boot: reboot, then run passthru verify.

With --trial (plain GRUB, or systemd-boot through proxmox-boot-tool) the
default boot entry stays exactly as it was: the new kernel command line and
the vfio binding live on a separate entry, "passthru trial", selected for the
next boot only. On GRUB it is a menu entry (/etc/grub.d/42_passthru_trial)
that grub-reboot selects. On systemd-boot /etc/kernel/cmdline is not touched:
apply stages /etc/passthru/trial-loader-entry.conf, and after
proxmox-boot-tool refresh the helper /usr/lib/passthru/trial-loader-entry
copies it to every ESP as loader/entries/passthru-trial.conf and selects it
once (the LoaderEntryOneShot EFI variable); rollback and confirm run its
remove. What binds the cards (vfio_pci.ids=, modprobe.blacklist=, or the
install hook of an address binding) acts only on a boot whose command line
carries passthru.trial, so any other boot leaves every device on its host
driver. The trial boot starts a watchdog timer that reboots into the default
entry after --trial-minutes (default 10) unless passthru confirm ran. Any
boot without passthru.trial (that reboot, a reset) runs the trial's revert
unit, passthru-trial-revert.service, once it reaches multi-user.target: it
runs rollback --trial-fallback, and the files are byte for byte as before
apply --trial with nobody logging in. This
protects against a configuration that boots but fails verify or cuts the
host off; a trial boot that hangs before userspace still needs a reset (the
BMC, or a hardware watchdog), after which the boot loader boots the default
entry. On /boot on LVM, RAID, btrfs or ZFS GRUB cannot clear its one-time
selection, so a reset repeats the trial until the watchdog or rollback
clears it; systemd-boot removes its selection when it reads it. Refused on
GRUB through proxmox-boot-tool (legacy BIOS) and with network changes.)"},
    {"verify", "[--vm VMID] [--gpus SEL]",
     R"(Run after the reboot. Checks that the IOMMU is on, that the kernel
arguments passthru set are active, that every function of the cards is bound
to vfio-pci and to no host driver, that /dev/vfio/GROUP exists for their
groups, and that the VM's configuration carries the cards. On the host
itself it then asks VFIO as QEMU does: it opens each group, which must be
viable, attaches it to a new type1 container, opens every function and reads
its regions, and lets go again; a group a running VM holds is named as such,
as a note and not a failure. Under --root that check is a note: not checked.
The cards are those of --gpus, else those VM VMID's configuration passes,
else those of the newest applied generation. Each failed check is printed
with what to do; the exit status is non-zero when any check fails. verify
changes no file.)"},
    {"history", "[--json]",
     R"(Lists the generations recorded under /var/lib/passthru/generations, oldest
first: number, kind (apply or rollback), time, state (pending, committed,
rolled-back, restore-failed), the request and the files each one changed.
A generation an interrupted run left pending is reported by every command
until passthru rollback has restored it.)"},
    {"rollback", "[--to N] [--force] [--dry-run] [--trial-fallback]",
     R"(Undoes the newest apply generation that is still in effect: restores the
files it changed from their pre-images, removes the files it created, and
runs the after-steps again, so that the host boots as it did before. With
--to N the host returns to how it was before generation N (N and every later
generation are undone). A rollback is itself recorded as a generation, so it
is journaled and listed by history like an apply.

A file that was changed by hand since it was applied is not overwritten
unless --force is given. A generation left pending by an interrupted run is
restored first.

--trial-fallback is what the trial's revert unit runs: it undoes the newest
generation only when that is a trial nobody confirmed, and refuses (exit 3,
nothing written) on the trial boot (passthru.trial on /proc/cmdline), when
/proc/cmdline cannot be read, after an interrupted generation, and when the
newest applied generation is not such a trial. It takes neither --to nor
--force (exit 2).)"},
    {"confirm", "",
     R"(After apply --trial, on the trial boot: checks as verify does and, when
every check passes, makes the trial configuration the default as one more
journaled generation (the binding in modprobe.d, the arguments on the
default entry) and removes the trial entry, its watchdog and its revert
unit. It refuses
(exit 3) on any other boot or when a check fails; rollback then removes the
trial.

Otherwise it keeps a network change that apply made live with
--apply-network and --confirm-timeout. Without passthru confirm within the
timeout, the previous /etc/network/interfaces is restored and reloaded, so
that a bond or bridge change that cut off the remote session undoes itself.)"},
    {"explain", "VMID [--kernel-log FILE] [--json]",
     R"(Says why the VM's most recent start failed and what to do. It reads the
start task Proxmox VE recorded (the newest qmstart task of VMID in
/var/log/pve/tasks/index, index.1 and active, and its log under
/var/log/pve/tasks/X/UPID), the kernel's log (--kernel-log FILE, a captured
dmesg, dmesg -x or journalctl -k; else /var/log/kern.log under --root; on the
host itself the ring buffer /dev/kmsg, read without waiting), the VM's
configuration and passthru's journal, and matches every line against the
known failures of profiles/failures.json. Each cause found names this host's
device, its driver, its IOMMU group and the group's other devices, and says
the fix: the passthru plan command with the option that fixes it, or the
manual step (a firmware setting, another slot). Lines of a failed start that
no known failure matches are printed as not placed. Exit status 0 when a
known cause was found or there is no failed start (the latest start
succeeded, is running, or none is recorded), 1 when the start failed for a
reason passthru does not know, 2 for a bad VMID or an unreadable or binary
--kernel-log. explain changes nothing. --json prints one document of schema
passthru.explain/1 (docs/explain-json.md).)"},
    {"capture", "FILE [--keep-hostnames] [--keep-addresses] [--force]",
     R"(Writes the files of the host that passthru reads to FILE, a tar archive laid
out as a --root tree, so that a problem seen on this host can be reproduced
elsewhere:

  passthru capture /tmp/host.tar.gz
  mkdir host && tar -xzf /tmp/host.tar.gz -C host
  passthru --root host scan

It records every path that scan, and plan of every VM config (with all GPUs
and with each card alone), read, listed, looked at or whose link was read,
and packs exactly those: symlinks as symlinks (sysfs is mostly links),
directories, and files with the bytes that were read of them (a file only
listed or looked at is packed empty; device nodes and files nobody read,
such as a PCI BAR, never are). It also packs the VM configs, Proxmox VE's
task lists (/var/log/pve/tasks/index, index.1, active) and the logs of qmstart
tasks, and the module indexes libkmod reads (/lib/modules/RELEASE/modules.*).
Nothing outside the root is packed, and nothing under it is written.

Private data is replaced: VM config secrets (cipassword, sshkeys, and any key
with password, secret or token in its name; args is kept), IP addresses (the
host's /24 networks become 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 and
then 198.18.0.0/15, the host part and prefix lengths kept; IPv6 prefixes
become 2001:db8:0:N::/64), MAC addresses (by locally administered ones,
02:00:00:00:xx:xx) and host names (/etc/hostname and the nodes of
/etc/pve/nodes become node1, node2 ..., in files and in path names alike).
The same value is replaced the same way everywhere. --keep-addresses keeps IP
and MAC addresses, --keep-hostnames the names; secrets always go.
CAPTURE.json at the top of the archive names the passthru version, the date
and, per file, the kind and number of replacements, never the values.

FILE ending in .tar is not compressed, in .tar.xz or .txz compressed with xz,
any other name with gzip. FILE is written through a temporary file and a
rename: it is the whole archive or is left as it was. An existing FILE is
refused (exit 3) unless --force is given; a symlink or anything but a regular
file at FILE is refused even then.)"},
    {"rom", "dump SLOT FILE [--force]",
     R"(Reads the option ROM of one card (SLOT as --gpus takes it: an index from scan
or a slot) through sysfs and saves it to FILE on this machine:

  passthru rom dump 0000:01:00 /root/card.rom

The card's display function must be held by no driver or by vfio-pci (after
the reboot into vfio-pci); a card a host driver holds is refused (exit 3). The
ROM is switched on (its sysfs rom file), read, and switched off again whatever
the read gave. The bytes are checked as a PCI option ROM for the card: the
55 AA signature, the PCIR structure, the image lengths, the x86 checksum, the
UEFI image's signature, the last-image flag, and the card's vendor:device
among the images' ids. FILE is written only when they pass; a read that fails
(EIO: the boot VGA card's shadowed ROM, or a card that does not expose it) or
bytes that fail a check exit 1 and write nothing. An existing FILE is refused
(exit 3) unless --force is given.)"},
};

const std::vector<ExitCodeDoc> k_exit_codes{
    {exit_code::ok, "success, or nothing to do (explain: a known cause was found, or no start failed)"},
    {exit_code::error, "error; the host is unchanged or was rolled back (explain: a failed start it cannot explain)"},
    {exit_code::usage, "usage error or bad input"},
    {exit_code::refused, "refused: the host or request is unsafe (nothing was changed)"},
    {exit_code::rollback_failed, "rollback failed: manual attention needed (the affected paths are listed)"},
    {exit_code::pending, "changes are pending (with --exit-code)"},
    {exit_code::internal, "internal error (a bug in passthru), or out of memory"},
};

std::string exit_codes_text()
{
    std::string out = "Exit codes:\n";
    for (const auto& e : k_exit_codes) {
        std::string code = std::to_string(e.code);
        out += "  " + code + std::string(4 - code.size(), ' ') + std::string(e.meaning) + "\n";
    }
    return out;
}

} // namespace

void add_global_options(po::options_description& options)
{
    options.add_options()("help,h", "show help and exit")("version", "show the version and exit")(
        "root", po::value<std::string>()->default_value("/")->value_name("DIR"), "act on the host tree under DIR instead of /")(
        "data-dir", po::value<std::string>()->value_name("DIR"),
        "read templates and profiles from DIR first")("color", po::value<std::string>()->default_value("auto")->value_name("WHEN"),
                                                      "colour output: auto (on a terminal, unless NO_COLOR is set), always, never");
}

const std::vector<ExitCodeDoc>& exit_code_docs()
{
    return k_exit_codes;
}

const CommandDoc* command_doc(std::string_view name)
{
    for (const auto& doc : k_command_docs) {
        if (doc.name == name) {
            return &doc;
        }
    }
    return nullptr;
}

std::string main_help(const po::options_description& global)
{
    std::ostringstream out;
    out << "usage: passthru [--root DIR] COMMAND [OPTIONS]\n\n"
           "Takes a Proxmox VE host with NVIDIA GPUs to working VFIO passthrough: scan, plan,\n"
           "apply (journaled, reversible), reboot, verify; rollback undoes it.\n\n"
           "Commands:\n";
    for (const auto& c : commands()) {
        out << "  " << c.name << std::string(10 - c.name.size(), ' ') << c.summary << '\n';
    }
    out << '\n' << global << '\n' << exit_codes_text();
    out << "\nRun 'passthru COMMAND --help' for a command's options; 'man passthru' for the whole story.\n";
    return out.str();
}

std::string usage_line(std::string_view command)
{
    std::string out = "passthru [--root DIR] " + std::string(command);
    const CommandDoc* doc = command_doc(command);
    if (doc != nullptr && !doc->synopsis.empty()) {
        out += " " + std::string(doc->synopsis);
    }
    return out;
}

std::string command_help(const Command& command, const po::options_description& options, const po::options_description& global)
{
    std::ostringstream out;
    const CommandDoc* doc = command_doc(command.name);
    out << "usage: " << usage_line(command.name) << "\n\n" << command.summary << "\n\n";
    if (doc != nullptr) {
        out << doc->description << "\n\n";
    }
    out << options << '\n' << global << '\n' << exit_codes_text();
    return out.str();
}

} // namespace passthru::cli
