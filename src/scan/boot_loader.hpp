// SPDX-License-Identifier: GPL-2.0-or-later
// One description per boot loader (docs/facts.md: boot-loader): how scan recognises it from
// the files under the root, which file holds the kernel command line and how plan edits it,
// which command refreshes what the firmware boots, and how verify explains a planned argument
// that the running kernel lacks. scan, plan, apply and verify all read this table; adding a
// boot loader is adding one entry to boot_loaders().
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::scan {

enum class Bootloader
{
    grub,              // plain GRUB: update-grub writes /boot/grub/grub.cfg
    grub_proxmox_boot, // GRUB on ESPs that proxmox-boot-tool keeps (legacy BIOS on ZFS)
    systemd_boot,      // systemd-boot on ESPs that proxmox-boot-tool keeps
    unknown,
};

// How plan edits the command line of a boot loader.
enum class CmdlineEdit
{
    grub_default, // GRUB_CMDLINE_LINUX_DEFAULT: a drop-in in /etc/default/grub.d appends, removals edit the file that carries them
    first_line,   // a one-line file whose first line is the whole command line and must keep root=
    none,         // passthru cannot place arguments
};

// How `passthru kernel pin` makes one installed kernel the default boot entry (docs/facts.md:
// kernel-pin): through the files the host's own boot-loader tool reads, so that its own
// commands (`proxmox-boot-tool kernel list`, `kernel unpin`) see the pin.
enum class KernelPin
{
    grub_default, // GRUB_DEFAULT="<advanced submenu id>><the kernel's entry id>" in a /etc/default/grub.d drop-in
                  // (proxmox-boot-tool's own drop-in and pin file where it is installed), then the refresh (update-grub)
    pin_file,     // proxmox-boot-tool's pin file /etc/kernel/proxmox-boot-pin, then the refresh (proxmox-boot-tool refresh)
    none,         // passthru cannot pin a kernel here
};

// What `proxmox-boot-tool status` said on a live host.
enum class BootProbe
{
    not_run, // not a live host, or the tool exited with an unexpected status: decide from files
    not_installed,
    no_esp,   // exit 2: /etc/kernel/proxmox-boot-uuids does not exist
    esp_uefi, // exit 0, an ESP carries systemd-boot
    esp_grub, // exit 0, the ESPs carry GRUB
};

// What detection looks at; scan fills it from the root (and the live probe).
struct BootEvidence
{
    bool uefi = false;           // /sys/firmware/efi exists
    bool esps = false;           // /etc/kernel/proxmox-boot-uuids lists an ESP
    bool kernel_cmdline = false; // /etc/kernel/cmdline exists
    bool grub_config = false;    // /etc/default/grub exists or /boot/grub is a directory
    BootProbe probe = BootProbe::not_run;
};

// Why arguments the plan added are missing from /proc/cmdline.
enum class MissCause
{
    refresh_not_run, // the generated boot configuration does not carry them yet
    not_rebooted,    // it does, but the running kernel was booted before
    unknown,         // the generated configuration cannot be read under the root
};

struct MissExplanation
{
    MissCause cause = MissCause::unknown;
    std::string fix;
};

// The programs behind the boot loaders' refresh commands (proxmox-boot-tool
// is also what scan asks for its status on a live host).
inline constexpr std::string_view k_update_grub = "update-grub";
inline constexpr std::string_view k_proxmox_boot_tool = "proxmox-boot-tool";

struct BootLoaderSpec
{
    Bootloader id = Bootloader::unknown;
    std::string_view name{}; // as scan prints it
    // The evidence text when the files (or the live probe) show this boot loader; entries
    // exclude each other, and the last one (unknown) matches anything.
    std::optional<std::string> (*detect)(const BootEvidence&) = nullptr;
    CmdlineEdit edit = CmdlineEdit::none;
    std::string_view cmdline_file{};    // the file plan edits (GRUB: the main file; drop-ins are found beside it)
    std::string_view cmdline_where{};   // "in /etc/kernel/cmdline (one line, keep root=)"
    std::string_view needs{};           // what detection needs, for the "cannot tell" hint; empty for variants
    std::vector<std::string> refresh{}; // argv of the refresh after a command-line change; empty: none
    std::string_view refresh_reason{};
    // The file the refresh regenerates and verify can read under the root, with the
    // line prefix of a boot entry's kernel line; empty when it lives on unmounted ESPs.
    std::string_view generated{};
    std::string_view generated_kernel_line{};
    KernelPin pin = KernelPin::none; // `passthru kernel pin`; the refresh above makes it take effect
};

// The trial boot ('passthru apply --trial', plan/trial.hpp): this word is on the kernel command
// line of the trial entry only, so a running kernel that carries it was booted into the trial.
inline constexpr std::string_view k_trial_marker = "passthru.trial";
// True when the command line (/proc/cmdline) carries k_trial_marker as a word of its own.
bool is_trial_boot(std::string_view cmdline);

// Every boot loader passthru knows, in detection order.
const std::vector<BootLoaderSpec>& boot_loaders();
const BootLoaderSpec& boot_loader(Bootloader id);
// The first entry whose detect() matches, with its evidence text.
std::pair<const BootLoaderSpec*, std::string> detect_boot_loader(const BootEvidence& evidence);
// "<what> in <where>, then run '<refresh>' and reboot".
std::string cmdline_howto(const BootLoaderSpec& spec, const std::string& what);
// Why `missing` (arguments the plan added) are not on the running command line.
MissExplanation explain_missing_args(const BootLoaderSpec& spec, const util::HostFs& fs, const std::vector<std::string>& missing);

// The kernels a boot entry can start: every <root>/lib/modules/<kver> with a kernel image
// /boot/vmlinuz-<kver> (what update-grub's 10_linux and proxmox-boot-tool list), newest first.
std::vector<std::string> bootable_kernels(const util::HostFs& fs);

// Errc::usage when `release` cannot be a kernel release (empty, '/', a leading '.'),
// Errc::not_found when <root>/lib/modules/<release> does not exist.
Result<void> check_release_word(const util::HostFs& fs, const std::string& release);

} // namespace passthru::scan
