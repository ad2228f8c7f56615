// SPDX-License-Identifier: GPL-2.0-or-later
// Kernel pin and unpin as plans (kernel/pin.hpp; docs/facts.md: kernel-pin).
#include "kernel/pin.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

#include "format/grammar.hpp"
#include "kernel/check.hpp"
#include "plan/plan_detail.hpp"
#include "plan/trial.hpp"
#include "scan/boot_loader.hpp"
#include "util/strings.hpp"

namespace passthru::kernel {

namespace {

// proxmox-boot-tool's program; where it is installed, plain GRUB pins through its files
// too, so its 'kernel list' shows the pin and its 'kernel unpin' undoes it.
constexpr std::string_view k_pbt_program = "/usr/sbin/proxmox-boot-tool";
constexpr std::string_view k_grub_cfg = "/boot/grub/grub.cfg";
constexpr std::string_view k_grub_default = "GRUB_DEFAULT=";

struct PinFile
{
    std::string_view path;
    std::string content;
    std::string reason;
};

// The id in "... $menuentry_id_option 'ID' {", the last quoted word before the brace.
std::optional<std::string> entry_id(std::string_view line)
{
    line = util::trim(line);
    if (!line.ends_with("' {")) {
        return std::nullopt;
    }
    line.remove_suffix(3);
    const auto open = line.rfind('\'');
    if (open == std::string_view::npos) {
        return std::nullopt;
    }
    return std::string(line.substr(open + 1));
}

// GRUB_DEFAULT for the kernel's entry in the "Advanced options" submenu that
// update-grub's 10_linux writes: "gnulinux-advanced-ROOT>gnulinux-RELEASE-advanced-ROOT"
// (ROOT: the root file system's id), as proxmox-boot-tool builds it.
Result<std::string> grub_menu_path(const util::HostFs& fs, const std::string& release)
{
    auto text = fs.read_file(k_grub_cfg);
    if (!text) {
        return fail(Errc::precondition, "cannot pin on GRUB: " + std::string(k_grub_cfg) + " cannot be read (" + text.error().what()
                                            + "); run 'update-grub', then pin again");
    }
    std::optional<std::string> submenu;
    std::vector<std::string> entries;
    for (const auto& line : util::split_lines(*text)) {
        const auto t = util::trim(line);
        auto id = entry_id(t);
        if (!id) {
            continue;
        }
        if (t.starts_with("submenu ") && id->starts_with("gnulinux-advanced-") && !submenu) {
            submenu = *id;
        } else if (t.starts_with("menuentry ")) {
            entries.push_back(*id);
        }
    }
    if (!submenu) {
        return fail(Errc::precondition, "cannot pin on GRUB: " + std::string(k_grub_cfg)
                                            + " has no 'Advanced options' submenu (gnulinux-advanced-...); run 'update-grub' with "
                                              "GRUB_DISABLE_SUBMENU unset, then pin again");
    }
    const std::string root = submenu->substr(std::string_view("gnulinux-advanced-").size());
    const std::string entry = "gnulinux-" + release + "-advanced-" + root;
    if (std::find(entries.begin(), entries.end(), entry) == entries.end()) {
        return fail(Errc::precondition, "cannot pin kernel " + release + ": " + std::string(k_grub_cfg) + " has no menu entry '" + entry
                                            + "'; run 'update-grub', then pin again");
    }
    return *submenu + ">" + entry;
}

// --- one row per way of pinning (scan::KernelPin) ----------------------------------------

struct PinRow
{
    scan::KernelPin pin;
    // The files that pin `release`, with their content.
    Result<std::vector<PinFile>> (*files)(const util::HostFs& fs, const std::string& release);
    // Every file a pin of this kind may have left, by passthru or the tool: unpin removes them.
    std::vector<std::string_view> unpin;
};

Result<std::vector<PinFile>> grub_files(const util::HostFs& fs, const std::string& release)
{
    PASSTHRU_TRY_ASSIGN(const auto path, grub_menu_path(fs, release));
    const std::string line = std::string(k_grub_default) + "\"" + path + "\"\n";
    const std::string why = "GRUB_DEFAULT names the 'Advanced options' entry of kernel " + release
                            + ", so GRUB starts it by default (sourced after /etc/default/grub)";
    if (fs.exists(k_pbt_program)) {
        // The same bytes proxmox-boot-tool's own pin writes.
        return std::vector<PinFile>{
            {plan::k_kernel_pin_file, release + "\n", "proxmox-boot-tool's pin: its 'kernel list' shows it, its 'kernel unpin' removes it"},
            {plan::k_grub_pin_dropin_pbt, line, why}};
    }
    return std::vector<PinFile>{
        {plan::k_grub_pin_dropin, "# Written by 'passthru kernel pin " + release + "'; undo with 'passthru kernel unpin'.\n" + line, why}};
}

Result<std::vector<PinFile>> pin_file_files(const util::HostFs& /*fs*/, const std::string& release)
{
    return std::vector<PinFile>{{plan::k_kernel_pin_file, release + "\n",
                                 "proxmox-boot-tool's pin: its refresh makes kernel " + release
                                     + " the default entry on every ESP (systemd-boot's loader.conf, or GRUB_DEFAULT)"}};
}

const std::vector<PinRow>& pin_rows()
{
    static const std::vector<PinRow> rows{
        {.pin = scan::KernelPin::grub_default,
         .files = grub_files,
         .unpin = {plan::k_kernel_pin_file, plan::k_next_boot_pin_file, plan::k_grub_pin_dropin_pbt, plan::k_grub_pin_dropin}},
        {.pin = scan::KernelPin::pin_file, .files = pin_file_files, .unpin = {plan::k_kernel_pin_file, plan::k_next_boot_pin_file}},
    };
    return rows;
}

// The row of this host's boot loader, or Errc::precondition.
Result<std::pair<const PinRow*, const scan::BootLoaderSpec*>> pin_row(const scan::Inventory& inventory)
{
    const auto& spec = scan::boot_loader(inventory.host.bootloader);
    const auto& rows = pin_rows();
    auto it = std::find_if(rows.begin(), rows.end(), [&](const PinRow& r) { return r.pin == spec.pin; });
    if (it == rows.end()) {
        return fail(Errc::precondition, "cannot pin a kernel: passthru pins on plain GRUB and on ESPs that proxmox-boot-tool "
                                        "manages; this host boots with "
                                            + std::string(scan::to_string(inventory.host.bootloader)));
    }
    return std::pair{&*it, &spec};
}

// KVER as plan_pin takes it: a release word, installed, with an image.
Result<void> installed_release(const util::HostFs& fs, const std::string& release)
{
    if (auto word = scan::check_release_word(fs, release); !word) {
        return fail(Errc::usage, word.error().what());
    }
    if (!format::matches(format::Grammar::kernel_release, release)) {
        return fail(Errc::usage, "'" + release + "' is not a kernel release passthru writes into a boot loader's files");
    }
    if (!fs.exists("/boot/vmlinuz-" + release)) {
        return fail(Errc::usage, "kernel " + release + " is not installed: no /boot/vmlinuz-" + release);
    }
    return {};
}

void add_refresh(plan::Plan& plan, const scan::BootLoaderSpec& spec, const std::string& what)
{
    plan.commands.push_back({plan::boot_refresh_argv(spec.id), what});
}

} // namespace

Result<plan::Plan> plan_pin(const util::HostFs& fs, const scan::Inventory& inventory, const data::DataDir& data, const std::string& release)
{
    if (auto ok = installed_release(fs, release); !ok) {
        return tl::unexpected(ok.error());
    }
    auto row = pin_row(inventory);
    if (!row) {
        return tl::unexpected(row.error());
    }
    auto files = row->first->files(fs, release);
    if (!files) {
        return tl::unexpected(files.error());
    }
    plan::Plan plan;
    plan.request.kernel = plan::KernelRequest{.action = plan::KernelAction::pin, .release = release};
    const plan::PlanContext ctx{.inventory = inventory, .fs = fs, .data = data, .request = plan.request};
    for (const auto& f : *files) {
        plan::detail::stage_file(ctx, plan, f.path, f.content, {f.reason});
    }
    if (plan.refused()) {
        return fail(Errc::precondition, plan.refusals.front().message);
    }
    if (plan.empty()) {
        return plan;
    }
    add_refresh(plan, *row->second, "makes kernel " + release + " the default boot entry");
    if (row->first->pin == scan::KernelPin::pin_file && fs.exists(plan::k_next_boot_pin_file)) {
        plan.notes.push_back(std::string(plan::k_next_boot_pin_file)
                             + " exists: proxmox-boot-tool boots its kernel once first ('proxmox-boot-tool kernel unpin --next-boot' "
                               "removes it)");
    }
    plan.notes.push_back("kernel " + release + " is the default from the next boot on; the kernel packages stay as they are");
    return plan;
}

Result<plan::Plan> plan_unpin(const util::HostFs& fs, const scan::Inventory& inventory, const data::DataDir& data)
{
    auto row = pin_row(inventory);
    if (!row) {
        return tl::unexpected(row.error());
    }
    plan::Plan plan;
    plan.request.kernel = plan::KernelRequest{.action = plan::KernelAction::unpin, .release = {}};
    const plan::PlanContext ctx{.inventory = inventory, .fs = fs, .data = data, .request = plan.request};
    for (const auto path : row->first->unpin) {
        if (fs.exists(path)) {
            plan::detail::stage_file(ctx, plan, path, std::nullopt,
                                     {"removes the kernel pin: the boot loader starts the newest kernel again"});
        }
    }
    if (plan.refused()) {
        return fail(Errc::precondition, plan.refusals.front().message);
    }
    if (!plan.empty()) {
        add_refresh(plan, *row->second, "gives the default boot entry back to the newest kernel");
    }
    return plan;
}

Result<plan::Plan> plan_kernel_trial(const util::HostFs& fs, const scan::Inventory& inventory, const data::DataDir& data,
                                     const std::string& release, int minutes, const std::optional<apply::Manifest>& configuring)
{
    if (auto ok = installed_release(fs, release); !ok) {
        return tl::unexpected(ok.error());
    }
    if (inventory.host.kernel == release) {
        return tl::unexpected(Error(Errc::usage, "kernel " + release + " is the running kernel: a trial boots another one once")
                                  .with_hint("'passthru kernel pin " + release + "' keeps it as the default"));
    }
    // The trial entry starts KVER: the trial machinery names the running kernel's release.
    scan::Inventory trial_inventory = inventory;
    trial_inventory.host.kernel = release;
    plan::Plan plan;
    plan.request.kernel = plan::KernelRequest{.action = plan::KernelAction::trial, .release = release};
    plan.request.trial_minutes = minutes;
    const plan::PlanContext ctx{.inventory = trial_inventory, .fs = fs, .data = data, .request = plan.request};
    plan::plan_trial(ctx, plan);
    if (plan.refused()) {
        Error err(Errc::precondition, plan.refusals.front().message);
        for (const auto& h : plan.refusals.front().hints) {
            err.with_hint(h);
        }
        return tl::unexpected(err);
    }
    // What verify checks on the trial boot: the cards and arguments passthru configured.
    if (configuring) {
        plan.gpus = configuring->gpus;
        plan.kernel_args.add = configuring->kernel_args;
    }
    plan.notes.push_back("the trial entry boots kernel " + release
                         + " once with the default entry's command line; "
                           "'passthru confirm' on that boot pins it, the watchdog or any other boot goes back to the default entry");
    return plan;
}

Result<plan::Plan> plan_kernel_trial_confirm(const util::HostFs& fs, const scan::Inventory& inventory, const data::DataDir& data,
                                             const std::string& release)
{
    if (inventory.host.kernel != release) {
        return fail(Errc::precondition, "not confirmed: this trial boot runs kernel " + inventory.host.kernel.value_or("?")
                                            + ", not the trial's kernel " + release);
    }
    auto made = plan_pin(fs, inventory, data, release);
    if (!made) {
        return made;
    }
    const plan::PlanContext ctx{.inventory = inventory, .fs = fs, .data = data, .request = made->request};
    plan::end_trial(ctx, *made);
    return made;
}

std::optional<std::string> pinned_kernel(const util::HostFs& fs)
{
    if (auto text = fs.read_file(plan::k_kernel_pin_file)) {
        const auto lines = util::split_lines(*text);
        if (!lines.empty() && !util::trim(lines.front()).empty()) {
            return std::string(util::trim(lines.front()));
        }
    }
    auto text = fs.read_file(plan::k_grub_pin_dropin);
    if (!text) {
        return std::nullopt;
    }
    for (const auto& line : util::split_lines(*text)) {
        if (!line.starts_with(k_grub_default)) {
            continue;
        }
        // "gnulinux-advanced-ROOT>gnulinux-RELEASE-advanced-ROOT"
        const auto gt = line.find('>');
        const auto adv = line.rfind("-advanced-");
        constexpr std::string_view head = "gnulinux-";
        if (gt != std::string::npos && adv != std::string::npos && adv > gt + 1 + head.size()) {
            return line.substr(gt + 1 + head.size(), adv - gt - 1 - head.size());
        }
    }
    return std::nullopt;
}

} // namespace passthru::kernel
