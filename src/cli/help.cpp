// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/help.hpp"

#include <algorithm>
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
also without root.)",
     "none of its own: it only reads, and the default action ends it at once."},
    {"plan", "[--vm VMID --gpus SEL] [--ct VMID --gpus SEL ...] [OPTIONS]",
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
/etc/kernel/cmdline for systemd-boot (then proxmox-boot-tool refresh).

--ct VMID gives cards to a Proxmox VE container instead: the cards stay on
the host's nvidia driver and the container's /etc/pve/lxc/VMID.conf gets a
devN: line for each card's /dev/nvidiaM and for /dev/nvidiactl,
/dev/nvidia-uvm and /dev/nvidia-uvm-tools (and /dev/nvidia-modeset and
/dev/nvidia-caps/* where the host has them), with gid= the container's video
group when it is unprivileged; every other line stays byte for byte. A
running container is refused. The host gets
/etc/systemd/system/passthru-nvidia-nodes.service, which makes the nodes at
boot with nvidia-modprobe, and a drop-in that runs it before
pve-guests.service starts the containers. passthru installs no driver: a
kernel without the nvidia module is refused. Each --gpus binds to the --vm
or --ct before it, so one plan serves a VM and containers:
--vm 101 --gpus 0,1 --ct 105 --gpus 2 --ct 106 --gpus 2 is one journaled
generation, and rollback undoes all of it.)",
     "none of its own: it ends at once; a pending plan is written atomically under the journal's lock, so it is there whole or not at "
     "all."},
    {"apply",
     "[--dry-run] [--yes] [--trial [--trial-minutes N]] [--plan FILE | FILE | --vm VMID --gpus SEL ... | --ct VMID --gpus SEL ...]",
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

A kill can leave remains in the journal: the temporary file of a write cut off
before its rename, or a generation cut off before its manifest was written
(the host was not touched then). The next command that takes the lock removes
them: apply, rollback, confirm of a trial, and plan when it records the
pending plan. The commands that only read (scan, verify, history, explain)
leave them.

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
GRUB through proxmox-boot-tool (legacy BIOS) and with network changes.)",
     "while the transaction is live, SIGINT, SIGTERM and every other signal that ends a process stop it at the next step, and the files "
     "written so far are restored (exit 1, \"interrupted by SIGTERM\"); SIGHUP lets it finish. While the network guard waits, SIGHUP "
     "leaves it waiting for a confirm from a new connection and the other signals restore the previous network at once; if the process is "
     "killed all the same, a detached restorer puts the previous /etc/network/interfaces back at the deadline and the generation is left "
     "interrupted for rollback."},
    {"verify", "[--vm VMID] [--gpus SEL] | --ct CTID",
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
changes no file.

The kernel arguments of the newest applied generation are checked in every
case, with --vm and --gpus too. When the running kernel's command line
(/proc/cmdline under --root) lacks every argument that generation added,
nothing has booted with its files yet (a copy of a host tree, or before the
reboot): verify says so first and lists the failures per card.

With --ct CTID, verify checks container CTID's NVIDIA devices instead: every
/dev/nvidia* node its devN:, lxc.mount.entry and lxc.cgroup2.devices.allow lines
name exists on the host as a character device with the right numbers (195 and
the card's minor from /proc/driver/nvidia/gpus/*/information, 255 for
nvidiactl, nvidia-uvm's major from /proc/devices), a bind-mounted node has its
cgroup rule, and no rule names a minor no card has. When the container runs,
it also checks from inside (pct exec, or lxc-attach) that each node opens and
that the NVIDIA userspace (libnvidia-ml) is the version of the host's module
(/proc/driver/nvidia/version); under --root that is a note. Exit 0 when all is
well, 1 with the fixes.)",
     "none of its own: it only reads."},
    {"history", "[--json]",
     R"(Lists the generations recorded under /var/lib/passthru/generations, oldest
first: number, kind (apply or rollback), time, state (pending, committed,
rolled-back, restore-failed), the request and the files each one changed.
A generation an interrupted run left pending is reported by every command
until passthru rollback has restored it.)",
     "none of its own: it only reads."},
    {"rollback", "[--to N] [--force] [--dry-run] [--yes] [--trial-fallback]",
     R"(Undoes the newest apply generation that is still in effect: restores the
files it changed from their pre-images, removes the files it created, and
runs the after-steps again, so that the host boots as it did before. With
--to N the host returns to how it was before generation N (N and every later
generation are undone). A rollback is itself recorded as a generation, so it
is journaled and listed by history like an apply.

Like apply, it first shows what it will restore and asks; when standard
input is not a terminal it refuses (exit 2, nothing written) unless --yes is
given. With nothing to undo it says so and exits 0, so that rollback --yes
can run twice.

A file that was changed by hand since it was applied is not overwritten
unless --force is given. A generation left pending by an interrupted run is
restored first.

--trial-fallback is what the trial's revert unit runs: it undoes the newest
generation only when that is a trial nobody confirmed, and refuses (exit 3,
nothing written) on the trial boot (passthru.trial on /proc/cmdline), when
/proc/cmdline cannot be read, after an interrupted generation, and when the
newest applied generation is not such a trial. It takes neither --to nor
--force (exit 2).)",
     "a rollback is never stopped half-way: SIGHUP, SIGINT, SIGTERM and the other signals that end a process are held until it has "
     "finished."},
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
that a bond or bridge change that cut off the remote session undoes itself.)",
     "confirming a trial is a transaction, as apply: SIGINT, SIGTERM and the like undo it, SIGHUP lets it finish; confirming a network "
     "change is one atomic rename, done or not."},
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
reason passthru does not know or when a task list exists but cannot be read
(a directory, a FIFO, no permission, over the size limit: a failed start
could hide in it), 2 for a bad VMID or an unreadable or binary
--kernel-log. explain changes nothing. --json prints one document of schema
passthru.explain/1 (docs/explain-json.md); bytes of a log that are not UTF-8
appear in it as U+FFFD.)",
     "none of its own: it only reads."},
    {"kernel",
     "check [KVER...] [--json] [--hook] | pin KVER [--dry-run] [--yes] [--skip-check] | unpin [--dry-run] [--yes] | trial KVER "
     "[--trial-minutes N] [--dry-run] [--yes] [--skip-check]",
     R"(Says for each installed kernel whether passthrough will work when it boots:
every KVER given, else every /lib/modules/KVER that has a /boot/vmlinuz-KVER
(what the boot loaders' entries start). For each kernel it reads the
initramfs image itself (/boot/initrd.img-KVER: the uncompressed cpio parts
and the compressed one, gzip, zstd or xz), which must hold the host's
/etc/modprobe.d/passthru-vfio.conf byte for byte and the vfio modules that
/etc/initramfs-tools/modules lists; asks that kernel's module tree through
libkmod for vfio, vfio_iommu_type1, vfio_pci and every module passthru's
modprobe.d softdeps; names a host driver of profiles/host/drivers.json that
the kernel has, that claims a function passthru passes, and that the
modprobe.d file neither softdeps nor blacklists (nova_core on a kernel newer
than the plan); names every DKMS module built for the running kernel but not
for this one (/var/lib/dkms/MODULE/VERSION/KVER/ARCH/module); and every known
regression of profiles/host/kernel-regressions.json whose range holds the
kernel. One line per kernel: ok, or "breaks passthrough" with each problem
and its fix. --json prints one document of schema passthru.kernel-check/1.
Exit status 0 when every kernel is fine, 11 when one would break
passthrough, 1 for a KVER that is not installed, 2 for a word that cannot
be a kernel release. kernel check changes nothing.

kernel check --hook KVER is what the kernel hook runs when apt installs a
kernel (/etc/kernel/postinst.d/passthru, which apply writes, runs
/usr/lib/passthru/kernel-postinst with the new kernel's release): the verdict
for that kernel in apt's output, and the policy of /etc/passthru/kernel.conf.
With "on-break = pin" in it, a new kernel that would break passthrough makes
passthru pin the last good kernel, the running one when its own check
passes, as kernel pin does; "on-break = warn" (the default) only prints. The
hook always exits 0: a verdict never fails a package installation.

kernel pin KVER makes the installed kernel KVER the one the boot loader
starts by default, through the files the host's own boot-loader tool reads:
on ESPs that proxmox-boot-tool manages, its pin file /etc/kernel/proxmox-boot-pin,
then proxmox-boot-tool refresh; on plain GRUB, GRUB_DEFAULT naming the
kernel's entry under "Advanced options" of /boot/grub/grub.cfg, in
/etc/default/grub.d/proxmox-kernel-pin.cfg (with the pin file) where
proxmox-boot-tool is installed, else in /etc/default/grub.d/passthru-kernel-pin.cfg,
then update-grub. kernel unpin removes those files (and proxmox-boot-tool's
/etc/kernel/next-boot-pin) and refreshes. Both are plans applied as one
journaled generation, like apply: --dry-run shows the diffs and commands and
writes nothing, history lists the generation, rollback restores the files
byte for byte and re-runs the refresh. A KVER that is not installed
(/lib/modules/KVER and /boot/vmlinuz-KVER) is refused with exit status 2; one
that kernel check says would break passthrough with exit status 11, unless
--skip-check; a boot loader passthru cannot pin on, or a grub.cfg without the
kernel's entry, with exit status 3.

kernel trial KVER boots the installed kernel KVER once, with the machinery
of apply --trial: a separate boot entry starts KVER with the default
entry's command line and passthru.trial, selected for the next boot only
(grub-reboot on plain GRUB; the helper trial-loader-entry and
LoaderEntryOneShot on systemd-boot through proxmox-boot-tool), and the
watchdog reboots into the unchanged default entry after --trial-minutes
(default 10) unless confirmed. On the trial boot run passthru verify (it
checks the cards and arguments of the newest apply), then passthru confirm:
KVER becomes the default, pinned as kernel pin does, and the trial's files
go. Any boot without passthru.trial rolls the trial back by itself. The
running kernel, a KVER that is not installed (exit 2) or that kernel check
flags (exit 11, unless --skip-check) is refused.)",
     "check: none of its own, it only reads. pin, unpin, trial, and the pin of check --hook: as apply, the transaction answers them: "
     "SIGHUP "
     "lets it finish, SIGINT and SIGTERM undo what it changed."},
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

Private data is replaced by what a value is, in every file packed (a path
such as /proc/PID/net is read as /proc/net first): secrets (the value of any
key with password, passwd, passphrase, secret, token or credential in its
name, of key, sshkeys and *_key, in key=value, key: value and key value lines
alike: storage.cfg's password, a kernel parameter, a JSON field), the free
text of VM configs (the # description lines, description, args and every
serial=), IP addresses, in text and in /proc/net's hex (the host's /24
networks become 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 and then
198.18.0.0/15, the host part and prefix lengths kept; IPv6 prefixes become
2001:db8:0:N::/64), MAC addresses (by locally administered ones,
02:00:00:00:xx:xx) and the names of this host and of the cluster's nodes
(from /etc/hostname, /etc/hosts, corosync.conf's nodelist, /etc/pve/nodes,
node= and nodes values of /etc/pve and every UPID; they become node1, node2
...). A name is replaced where it stands as a name: everywhere in /etc/pve,
corosync's files, /etc/hosts and the task logs, elsewhere with its domain or
as the value of node, host, hostname or server; never after @ (the realm of
alice@pve) nor as a volume group or pool (vgname pve). The same value is
replaced the same way everywhere. --keep-addresses keeps IP and MAC
addresses, --keep-hostnames the names; secrets always go. Kept as read:
binary sysfs attributes (PCI config space, ROM, VPD, resource). A file whose
name is not UTF-8 is not packed; CAPTURE.json's skipped list and the
summary name it, its bytes escaped.
CAPTURE.json at the top of the archive names the passthru version, the date
and, per file, the kind and number of replacements, never the values.

FILE ending in .tar is not compressed, in .tar.xz or .txz compressed with xz,
any other name with gzip. FILE is written through a temporary file and a
rename: it is the whole archive or is left as it was. An existing FILE is
refused (exit 3) unless --force is given; a symlink or anything but a regular
file at FILE is refused even then.)",
     "none of its own: it ends at once; FILE is only put in place whole (written to a temporary file, then renamed)."},
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
(exit 3) unless --force is given.)",
     "held while the ROM is switched on: it is switched off again first, then the command ends; FILE is written only whole."},
};

const std::vector<ExitCodeDoc> k_exit_codes{
    {exit_code::ok, "success, or nothing to do (explain: a known cause was found, or no start failed)"},
    {exit_code::error, "error; the host is unchanged or was rolled back (explain: a failed start it cannot explain)"},
    {exit_code::usage, "usage error or bad input; apply or rollback without --yes and no terminal"},
    {exit_code::refused, "refused: the host or request is unsafe (nothing was changed)"},
    {exit_code::rollback_failed, "rollback failed: manual attention needed (the affected paths are listed)"},
    {exit_code::pending, "changes are pending (with --exit-code)"},
    {exit_code::kernel_breaks, "kernel check: a checked kernel would break passthrough; kernel pin: refused, the kernel would break it"},
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

// "-y, --yes" or "--vm VMID"; the value's default goes to the description.
struct OptionLine
{
    std::string names;
    std::string text;
};

OptionLine option_line(const po::option_description& option)
{
    OptionLine line;
    const std::string short_name = option.canonical_display_name(po::command_line_style::allow_dash_for_short);
    if (!short_name.empty() && short_name.size() == 2 && short_name != "--" && short_name[0] == '-') {
        line.names = short_name + ", ";
    }
    line.names += "--" + option.long_name();
    line.text = option.description();
    if (option.semantic()->max_tokens() > 0) {
        std::string value = option.semantic()->name(); // "DIR (=/)", "arg"
        std::string fallback;
        if (const std::size_t at = value.find(" (="); at != std::string::npos) {
            fallback = value.substr(at + 3, value.size() - at - 4);
            value.erase(at);
        }
        line.names += " " + (value == "arg" ? std::string("VALUE") : value);
        if (!fallback.empty()) {
            line.text += " (default " + fallback + ")";
        }
    }
    return line;
}

// TEXT wrapped at word boundaries to `width` columns, each line after the
// first indented by `indent` spaces; a word longer than a line is kept whole.
std::string wrap(const std::string& text, std::size_t first_column, std::size_t indent, std::size_t width)
{
    std::string out;
    std::size_t column = first_column;
    std::istringstream words(text);
    std::string word;
    bool first = true;
    while (words >> word) {
        if (!first && column + 1 + word.size() > width) {
            out += "\n" + std::string(indent, ' ');
            column = indent;
        } else if (!first) {
            out += ' ';
            ++column;
        }
        out += word;
        column += word.size();
        first = false;
    }
    return out;
}

} // namespace

std::string did_you_mean(const std::string& typed, const po::options_description& options)
{
    std::string word = typed;
    word.erase(0, word.find_first_not_of('-'));
    word = word.substr(0, word.find('='));
    // Levenshtein distance, one row at a time.
    const auto distance = [](const std::string& a, const std::string& b) {
        std::vector<std::size_t> row(b.size() + 1);
        for (std::size_t j = 0; j <= b.size(); ++j) {
            row[j] = j;
        }
        for (std::size_t i = 1; i <= a.size(); ++i) {
            std::size_t diagonal = row[0];
            row[0] = i;
            for (std::size_t j = 1; j <= b.size(); ++j) {
                const std::size_t up = row[j];
                row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
                diagonal = up;
            }
        }
        return row[b.size()];
    };
    std::string best;
    std::size_t best_distance = 3;
    for (const auto& option : options.options()) {
        const std::string& name = option->long_name();
        if (name.empty() || name == "operand") {
            continue;
        }
        if (const std::size_t d = distance(word, name); d < best_distance) {
            best = name;
            best_distance = d;
        }
    }
    return best.empty() || word.size() < 2 ? std::string() : " (did you mean --" + best + "?)";
}

std::string options_text(std::string_view caption, const po::options_description& options)
{
    constexpr std::size_t k_width = 80;
    constexpr std::size_t k_max_column = 28;
    std::vector<OptionLine> lines;
    for (const auto& option : options.options()) {
        lines.push_back(option_line(*option));
    }
    std::size_t column = 0;
    for (const auto& l : lines) {
        if (l.names.size() + 4 <= k_max_column) {
            column = std::max(column, l.names.size() + 4);
        }
    }
    std::string out = std::string(caption) + ":\n";
    for (const auto& l : lines) {
        std::string row = "  " + l.names;
        if (row.size() + 2 > column) {
            row += "\n" + std::string(column, ' ');
        } else {
            row += std::string(column - row.size(), ' ');
        }
        out += row + wrap(l.text, column, column, k_width) + "\n";
    }
    return out;
}

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
    out << '\n' << options_text("Global options", global) << '\n' << exit_codes_text();
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
        out << "On SIGHUP, SIGINT, SIGTERM: " << doc->signals << "\n\n";
    }
    out << options_text(std::string(command.name) + " options", options) << '\n';
    // The global options and the exit codes are told once, in passthru --help.
    std::string globals;
    for (const auto& option : global.options()) {
        if (option->long_name() != "help" && option->long_name() != "version") {
            globals += (globals.empty() ? "" : ", ") + option_line(*option).names;
        }
    }
    out << wrap("The global options (" + globals
                    + ") go before or after the command; they and the exit codes are in "
                      "'passthru --help'.",
                0, 0, 80)
        << '\n';
    return out.str();
}

} // namespace passthru::cli
