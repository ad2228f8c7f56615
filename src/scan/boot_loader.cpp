// SPDX-License-Identifier: GPL-2.0-or-later
// The boot-loader table (docs/facts.md: boot-loader).
#include "scan/boot_loader.hpp"

#include <algorithm>
#include <stdexcept>

#include "data/kernel_regressions.hpp"
#include "util/strings.hpp"

namespace passthru::scan {

namespace {

constexpr std::string_view k_pbt_files = "/etc/kernel/proxmox-boot-uuids lists an ESP";

// The live probe decided; a file rule only applies when it did not.
bool probed(const BootEvidence& e)
{
    return e.probe != BootProbe::not_run;
}

std::optional<std::string> detect_grub(const BootEvidence& e)
{
    if (e.probe == BootProbe::not_installed) {
        return "proxmox-boot-tool is not installed: plain GRUB";
    }
    if (e.probe == BootProbe::no_esp) {
        return "proxmox-boot-tool status exited 2 (no ESP configured): plain GRUB";
    }
    if (!probed(e) && !e.esps && e.grub_config) {
        return "no /etc/kernel/proxmox-boot-uuids; /etc/default/grub exists: plain GRUB";
    }
    return std::nullopt;
}

std::optional<std::string> detect_grub_proxmox_boot(const BootEvidence& e)
{
    if (e.probe == BootProbe::esp_grub) {
        return "proxmox-boot-tool status: ESPs configured with grub";
    }
    if (!probed(e) && e.esps && !(e.uefi && e.kernel_cmdline)) {
        return std::string(k_pbt_files) + " but " + (e.uefi ? "/etc/kernel/cmdline is missing" : "the host booted in legacy BIOS mode")
               + ": GRUB via proxmox-boot-tool";
    }
    return std::nullopt;
}

std::optional<std::string> detect_systemd_boot(const BootEvidence& e)
{
    if (e.probe == BootProbe::esp_uefi) {
        return "proxmox-boot-tool status: an ESP is configured with uefi (systemd-boot)";
    }
    if (!probed(e) && e.esps && e.uefi && e.kernel_cmdline) {
        return std::string(k_pbt_files) + ", /sys/firmware/efi exists and /etc/kernel/cmdline exists: systemd-boot via proxmox-boot-tool";
    }
    return std::nullopt;
}

std::optional<std::string> detect_unknown(const BootEvidence& /*evidence*/)
{
    return "neither /etc/kernel/proxmox-boot-uuids nor /etc/default/grub found";
}

constexpr std::string_view k_grub_where = "in GRUB_CMDLINE_LINUX_DEFAULT (/etc/default/grub or a /etc/default/grub.d/*.cfg drop-in)";
constexpr std::string_view k_pbt_reason = "copies the new kernel command line to every ESP that proxmox-boot-tool manages";

std::vector<BootLoaderSpec> make_table()
{
    std::vector<BootLoaderSpec> t;
    t.push_back({.id = Bootloader::grub,
                 .name = "grub",
                 .detect = detect_grub,
                 .edit = CmdlineEdit::grub_default,
                 .cmdline_file = "/etc/default/grub",
                 .cmdline_where = k_grub_where,
                 .needs = "GRUB needs /etc/default/grub",
                 .refresh = {std::string(k_update_grub)},
                 .refresh_reason = "regenerates /boot/grub/grub.cfg with the new kernel command line",
                 .generated = "/boot/grub/grub.cfg",
                 .generated_kernel_line = "linux",
                 .pin = KernelPin::grub_default});
    t.push_back({.id = Bootloader::grub_proxmox_boot,
                 .name = "grub",
                 .detect = detect_grub_proxmox_boot,
                 .edit = CmdlineEdit::grub_default,
                 .cmdline_file = "/etc/default/grub",
                 .cmdline_where = k_grub_where,
                 .refresh = {std::string(k_proxmox_boot_tool), "refresh"},
                 .refresh_reason = k_pbt_reason,
                 .pin = KernelPin::pin_file});
    t.push_back({.id = Bootloader::systemd_boot,
                 .name = "systemd-boot",
                 .detect = detect_systemd_boot,
                 .edit = CmdlineEdit::first_line,
                 .cmdline_file = "/etc/kernel/cmdline",
                 .cmdline_where = "in /etc/kernel/cmdline (one line, keep root=)",
                 .needs = "systemd-boot needs /etc/kernel/proxmox-boot-uuids and /etc/kernel/cmdline",
                 .refresh = {std::string(k_proxmox_boot_tool), "refresh"},
                 .refresh_reason = k_pbt_reason,
                 .pin = KernelPin::pin_file});
    t.push_back({.id = Bootloader::unknown,
                 .name = "unknown",
                 .detect = detect_unknown,
                 .edit = CmdlineEdit::none,
                 .cmdline_where = "on the kernel command line of your boot loader"});
    return t;
}

// The kernel lines of the boot entries in a generated GRUB-style configuration.
std::vector<std::vector<std::string>> kernel_lines(std::string_view text, std::string_view keyword)
{
    std::vector<std::vector<std::string>> out;
    for (const auto& line : util::split_lines(text)) {
        auto tokens = util::split(line, " \t");
        if (!tokens.empty() && tokens.front() == keyword) {
            out.push_back(std::move(tokens));
        }
    }
    return out;
}

} // namespace

const std::vector<BootLoaderSpec>& boot_loaders()
{
    static const std::vector<BootLoaderSpec> table = make_table();
    return table;
}

const BootLoaderSpec& boot_loader(Bootloader id)
{
    for (const auto& spec : boot_loaders()) {
        if (spec.id == id) {
            return spec;
        }
    }
    throw std::logic_error("boot loader without a table entry");
}

std::pair<const BootLoaderSpec*, std::string> detect_boot_loader(const BootEvidence& evidence)
{
    for (const auto& spec : boot_loaders()) {
        if (auto why = spec.detect(evidence)) {
            return {&spec, std::move(*why)};
        }
    }
    throw std::logic_error("the boot-loader table has no catch-all entry");
}

bool is_trial_boot(std::string_view cmdline)
{
    const auto words = util::split(cmdline, " \t\n");
    return std::any_of(words.begin(), words.end(), [](const std::string& w) { return w == k_trial_marker; });
}

std::string cmdline_howto(const BootLoaderSpec& spec, const std::string& what)
{
    std::string out = what + " " + std::string(spec.cmdline_where);
    if (!spec.refresh.empty()) {
        out += ", then run '" + util::join(spec.refresh, " ") + "'";
    }
    return out + " and reboot";
}

MissExplanation explain_missing_args(const BootLoaderSpec& spec, const util::HostFs& fs, const std::vector<std::string>& missing)
{
    MissExplanation out;
    out.fix = "the boot loader was not refreshed or the host was not rebooted: run update-grub (GRUB) or proxmox-boot-tool refresh "
              "(systemd-boot), then reboot";
    if (spec.generated.empty()) {
        return out;
    }
    auto text = fs.read_file(spec.generated);
    if (!text) {
        return out;
    }
    const std::string refresh = util::join(spec.refresh, " ");
    for (const auto& tokens : kernel_lines(*text, spec.generated_kernel_line)) {
        const bool carries = std::all_of(missing.begin(), missing.end(), [&](const std::string& arg) {
            return std::find(tokens.begin(), tokens.end(), arg) != tokens.end();
        });
        if (carries) {
            out.cause = MissCause::not_rebooted;
            out.fix = "not rebooted: " + std::string(spec.generated) + " already carries them (" + refresh
                      + " ran), but the running kernel was booted before; reboot";
            return out;
        }
    }
    out.cause = MissCause::refresh_not_run;
    out.fix = "refresh not run: no boot entry in " + std::string(spec.generated) + " carries them yet; run '" + refresh + "', then reboot";
    return out;
}

std::vector<std::string> bootable_kernels(const util::HostFs& fs)
{
    std::vector<std::string> out;
    const auto names = fs.list_dir("/lib/modules");
    if (!names) {
        return out;
    }
    for (const auto& name : *names) {
        if (check_release_word(fs, name) && fs.exists("/boot/vmlinuz-" + name)) {
            out.push_back(name);
        }
    }
    std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
        const auto x = data::release_numbers(a);
        const auto y = data::release_numbers(b);
        const int c = x && y ? data::compare_releases(*x, *y) : 0;
        return c != 0 ? c > 0 : a > b;
    });
    return out;
}

Result<void> check_release_word(const util::HostFs& fs, const std::string& release)
{
    if (release.empty() || release.size() > 200 || release.find('/') != std::string::npos || release.starts_with('.')
        || release.find_first_of(" \t\n\r") != std::string::npos) {
        std::string shown = release.substr(0, 64);
        std::replace_if(
            shown.begin(), shown.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }, '?');
        return fail(Errc::usage, "'" + shown + "' is not a kernel release");
    }
    if (!fs.is_dir("/lib/modules/" + release)) {
        return fail(Errc::not_found, "kernel " + release + " is not installed (no /lib/modules/" + release + ")");
    }
    return {};
}

} // namespace passthru::scan
