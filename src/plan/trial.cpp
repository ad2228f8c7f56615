// SPDX-License-Identifier: GPL-2.0-or-later
// The trial boot (plan/trial.hpp; docs/facts.md: trial-boot).
#include "plan/trial.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>

#include "format/grammar.hpp"
#include "format/kernel_cmdline.hpp"
#include "plan/after_step.hpp"
#include "plan/plan_detail.hpp"
#include "scan/boot_loader.hpp"
#include "util/strings.hpp"

namespace passthru::plan {

namespace {

// A kernel argument or release the trial writes into a shell script and a
// grub.cfg line: plain words only, so nothing needs quoting in either.
bool plain_word(std::string_view w)
{
    return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || std::string_view("_.,:=+-/").find(c) != std::string_view::npos;
    });
}

// The files the default entry's command line comes from: a trial leaves them alone.
bool is_cmdline_file(const scan::BootLoaderSpec& loader, std::string_view path)
{
    if (loader.edit == scan::CmdlineEdit::grub_default) {
        return path == loader.cmdline_file || k_default_grub_d.contains(path);
    }
    return path == loader.cmdline_file;
}

void refuse(Plan& plan, std::string message, std::string hint)
{
    plan.refusals.push_back({std::move(message), {std::move(hint)}});
}

// One row per boot loader a trial can use: the trial entry it stages, how
// that entry is put in place and selected for one boot, and what confirm
// runs when the trial is over (docs/facts.md: trial-boot).
struct TrialLoader
{
    scan::Bootloader id;
    std::string_view staged;      // the trial entry's file; the watchdog's ConditionPathExists=
    bool grub;                    // the watchdog clears GRUB's next_entry itself (templates)
    std::string reboot_step;      // apply's next step 1
    std::string boot_again;       // how to select the trial entry once more (confirm's hint)
    std::string_view refresh_why; // confirm: why the refresh runs when the rooms did not plan it
    bool (*stage_entry)(const PlanContext& ctx, Plan& plan, const std::vector<std::string>& args);
    void (*commands)(Plan& plan);         // after the rooms' commands: the selection for one boot
    void (*confirm_commands)(Plan& plan); // after confirm removed the trial entry
};

const TrialLoader* trial_loader(scan::Bootloader id);

// What a trial cannot keep to one boot; false after a refusal.
bool trial_possible(const PlanContext& ctx, Plan& plan)
{
    const auto& host = ctx.inventory.host;
    const std::string instead = "run 'passthru apply' without --trial (rollback undoes it), with a console or the BMC at hand";
    if (trial_loader(host.bootloader) == nullptr) {
        refuse(plan,
               "--trial needs plain GRUB or systemd-boot through proxmox-boot-tool (a boot entry of its own, selected for one boot); "
               "this host boots with "
                   + std::string(scan::to_string(host.bootloader)) + (host.proxmox_boot_tool ? " through proxmox-boot-tool" : ""),
               instead);
        return false;
    }
    if (ctx.request.network) {
        refuse(plan, "--trial does not cover network changes: Proxmox VE applies /etc/network/interfaces.new on every boot",
               "apply the network change on its own, without --trial");
        return false;
    }
    if (!host.kernel || !plain_word(*host.kernel) || !format::matches(format::Grammar::kernel_release, *host.kernel)) {
        refuse(plan, "--trial needs the running kernel release (/proc/sys/kernel/osrelease) to name the trial entry's kernel", instead);
        return false;
    }
    for (const auto& f : plan.files) {
        if (k_modprobe_d.contains(f.path) && f.path != k_modprobe_conf) {
            refuse(plan, "--trial cannot keep the edit of " + f.path + " to one boot: modprobe reads it on every boot",
                   "fix that file by hand (the plan shows how), then plan the trial again; or " + instead);
            return false;
        }
    }
    for (const auto& list : {plan.kernel_args.add, plan.kernel_args.remove, plan.trial_args}) {
        for (const auto& a : list) {
            if (!plain_word(a)) {
                refuse(plan, "--trial will not write the argument '" + a + "' into the trial entry", instead);
                return false;
            }
        }
    }
    return true;
}

// --- GRUB: a /etc/grub.d script, update-grub, grub-reboot -------------------

// The script grub-mkconfig runs: one menu entry with the trial's command line.
bool stage_grub_script(const PlanContext& ctx, Plan& plan, const std::vector<std::string>& args)
{
    nlohmann::json remove = nlohmann::json::array();
    for (const auto& token : plan.kernel_args.remove) {
        remove.push_back({{"pattern", "'" + token + "'"}});
    }
    const nlohmann::json values{{"vm", ctx.request.vm},
                                {"kernel_trial", ctx.request.kernel.has_value()},
                                {"kernel", *ctx.inventory.host.kernel},
                                {"entry_id", k_trial_entry_id},
                                {"remove", remove},
                                {"args", util::join(args, " ")}};
    const auto text = render_or_refuse(ctx, plan, "grub-trial.mustache", values);
    if (!text) {
        return false;
    }
    std::vector<std::string> reasons{"adds the GRUB menu entry '" + std::string(k_trial_entry_id) + "' for kernel "
                                         + *ctx.inventory.host.kernel + ": the default entry's arguments plus " + util::join(args, " "),
                                     "the default entry is not touched; grub-reboot selects this one for the next boot only"};
    if (!plan.kernel_args.remove.empty()) {
        reasons.push_back("leaves out " + util::join(plan.kernel_args.remove, " ") + " on the trial entry only");
    }
    if (!detail::stage_file(ctx, plan, k_trial_grub_script, *text, reasons)) {
        return !plan.refused();
    }
    plan.files.back().mode = 0755; // grub-mkconfig runs only executable scripts
    return true;
}

void grub_commands(Plan& plan)
{
    plan.commands.push_back(
        {update_grub_argv(), "regenerates /boot/grub/grub.cfg with the trial entry (the default entry is generated as before)"});
    plan.commands.push_back(
        {grub_reboot_argv(),
         "selects the trial entry for the next boot only (next_entry in /boot/grub/grubenv, cleared when GRUB uses it)"});
}

void grub_confirm_commands(Plan& plan)
{
    // GRUB clears the one-time selection when it uses it, except where it
    // cannot write /boot/grub/grubenv (docs/facts.md: trial-boot).
    plan.commands.push_back({grub_editenv_unset_argv(),
                             "clears GRUB's one-time selection of the trial entry, in case GRUB could not (a /boot on LVM, RAID, "
                             "btrfs or ZFS)"});
}

// --- systemd-boot through proxmox-boot-tool: an own entry on every ESP -------

// The default entries' options as they would be after the plan: the first
// line of /etc/kernel/cmdline with the rooms' edit applied (the rooms staged
// it; the trial takes that change out again), or the file as it is.
std::optional<std::string> default_options(const PlanContext& ctx, const Plan& plan, std::string_view cmdline_file)
{
    for (const auto& f : plan.files) {
        if (f.path == cmdline_file && f.after) {
            const auto lines = util::split_lines(*f.after);
            return lines.empty() ? std::string() : lines.front();
        }
    }
    auto text = ctx.fs.read_file(cmdline_file);
    if (!text) {
        return std::nullopt;
    }
    const auto lines = util::split_lines(*text);
    return lines.empty() ? std::string() : lines.front();
}

// The Boot Loader Specification entry the helper copies to every ESP.
bool stage_loader_entry(const PlanContext& ctx, Plan& plan, const std::vector<std::string>& args)
{
    const auto& loader = scan::boot_loader(scan::Bootloader::systemd_boot);
    const auto first = default_options(ctx, plan, loader.cmdline_file);
    if (!first) {
        refuse(plan, "--trial on systemd-boot needs " + std::string(loader.cmdline_file) + ", the default entries' command line",
               "create it (one line, with root=), run 'proxmox-boot-tool refresh', and plan again");
        return false;
    }
    std::vector<std::string> options;
    const format::KernelCmdline line(*first);
    for (const auto& word : line.tokens()) {
        if (auto bad = format::invalid_value(format::Grammar::kernel_arg, word, "the argument")) {
            refuse(plan, "--trial will not copy " + std::string(loader.cmdline_file) + " into the trial entry: " + *bad,
                   "fix the first line of " + std::string(loader.cmdline_file) + " and plan again");
            return false;
        }
        options.push_back(word);
    }
    for (const auto& a : plan.trial_args) {
        options.push_back(a);
    }
    options.emplace_back(scan::k_trial_marker);
    options.emplace_back("systemd.wants=passthru-trial.timer");
    const std::string& kernel = *ctx.inventory.host.kernel;
    const nlohmann::json values{{"vm", ctx.request.vm},
                                {"kernel_trial", ctx.request.kernel.has_value()},
                                {"path", k_trial_loader_entry},
                                {"helper", trial_loader_helper()},
                                {"entry_id", k_trial_loader_entry_id},
                                {"kernel", kernel},
                                {"options", util::join(options, " ")}};
    const auto text = render_or_refuse(ctx, plan, "trial-loader-entry.conf.mustache", values);
    if (!text) {
        return false;
    }
    std::vector<std::string> reasons{
        "the systemd-boot entry '" + std::string(k_trial_loader_entry_id) + "' for kernel " + kernel + ": the first line of "
            + std::string(loader.cmdline_file) + " with the planned arguments, plus " + util::join(args, " "),
        std::string(loader.cmdline_file) + " and the default entries are not touched; the helper copies this entry to every ESP "
            + "and selects it for the next boot only"};
    detail::stage_file(ctx, plan, k_trial_loader_entry, *text, reasons);
    return !plan.refused();
}

void systemd_boot_commands(Plan& plan)
{
    plan.commands.push_back({proxmox_boot_refresh_argv(),
                             "copies the kernel and the rebuilt initrd to every ESP (the default entries keep their command "
                             "line: /etc/kernel/cmdline is unchanged)"});
    plan.commands.push_back(
        {trial_loader_install_argv(), "copies the trial entry to every ESP as loader/entries/" + std::string(k_trial_loader_entry_id)
                                          + " and selects it for the next boot only (LoaderEntryOneShot, removed by systemd-boot when it "
                                            "uses it)"});
}

void systemd_boot_confirm_commands(Plan& plan)
{
    plan.commands.push_back(
        {trial_loader_remove_argv(), "removes the trial entry from every ESP, and its one-time selection if systemd-boot has not used it"});
}

const std::vector<TrialLoader>& trial_loaders()
{
    static const std::vector<TrialLoader> rows{
        {.id = scan::Bootloader::grub,
         .staged = k_trial_grub_script,
         .grub = true,
         .reboot_step = "GRUB boots the trial entry '" + std::string(k_trial_entry_id) + "' once; the default entry is unchanged",
         .boot_again = "grub-reboot " + std::string(k_trial_entry_id),
         .refresh_why = "regenerates /boot/grub/grub.cfg without the trial entry",
         .stage_entry = stage_grub_script,
         .commands = grub_commands,
         .confirm_commands = grub_confirm_commands},
        {.id = scan::Bootloader::systemd_boot,
         .staged = k_trial_loader_entry,
         .grub = false,
         .reboot_step =
             "systemd-boot boots the trial entry '" + std::string(k_trial_loader_entry_id) + "' once; the default entries are unchanged",
         .boot_again = trial_loader_helper() + " install " + std::string(k_trial_loader_entry),
         .refresh_why = "copies the kernels and initrds to every ESP",
         .stage_entry = stage_loader_entry,
         .commands = systemd_boot_commands,
         .confirm_commands = systemd_boot_confirm_commands},
    };
    return rows;
}

const TrialLoader* trial_loader(scan::Bootloader id)
{
    const auto& rows = trial_loaders();
    auto it = std::find_if(rows.begin(), rows.end(), [&](const TrialLoader& l) { return l.id == id; });
    return it == rows.end() ? nullptr : &*it;
}

// --- what every boot loader's trial has ---------------------------------------

bool stage_watchdog(const PlanContext& ctx, Plan& plan, const TrialLoader& loader)
{
    const int minutes = *ctx.request.trial_minutes;
    const nlohmann::json values{{"vm", ctx.request.vm},
                                {"kernel_trial", ctx.request.kernel.has_value()},
                                {"kernel", ctx.inventory.host.kernel.value_or("")},
                                {"minutes", minutes},
                                {"marker", scan::k_trial_marker},
                                {"staged", loader.staged},
                                {"grub", loader.grub},
                                {"selection", loader.grub
                                                  ? "Before the reboot it clears GRUB's one-time selection itself, for a /boot that GRUB "
                                                    "cannot write (LVM, RAID, btrfs, ZFS: see grub-reboot(8))."
                                                  : "systemd-boot removed its one-time selection (LoaderEntryOneShot) when it booted "
                                                    "the trial entry, so the reboot boots the default entry."}};
    for (const auto& [path, name] :
         {std::pair{k_trial_timer, "passthru-trial.timer.mustache"}, std::pair{k_trial_service, "passthru-trial.service.mustache"}}) {
        const auto text = render_or_refuse(ctx, plan, name, values);
        if (!text) {
            return false;
        }
        detail::stage_file(ctx, plan, path, *text,
                           {"the trial's watchdog: " + std::to_string(minutes)
                            + " min after the trial boot it reboots into the unchanged default entry unless 'passthru confirm' ran; "
                              "it is started only by the trial entry's command line (systemd.wants=)"});
    }
    return !plan.refused();
}

// The fallback: a unit every boot starts that rolls the trial back on a boot
// without the marker (docs/facts.md: trial-boot).
bool stage_revert(const PlanContext& ctx, Plan& plan)
{
    const nlohmann::json values{{"vm", ctx.request.vm},
                                {"kernel_trial", ctx.request.kernel.has_value()},
                                {"kernel", ctx.inventory.host.kernel.value_or("")},
                                {"marker", scan::k_trial_marker},
                                {"dropin", k_trial_dropin},
                                {"unit", k_trial_revert_unit}};
    const std::string why = "the trial's fallback: on any boot without " + std::string(scan::k_trial_marker)
                            + " (the default entry after the watchdog's reboot or a reset) 'passthru rollback --trial-fallback' "
                              "restores the files from before the trial by itself";
    for (const auto& [path, name, reason] :
         {std::tuple{k_trial_revert, "passthru-trial-revert.service.mustache", why},
          std::tuple{k_trial_dropin, "passthru-trial-target.conf.mustache",
                     "makes multi-user.target start " + std::string(k_trial_revert_unit) + " on every boot (removed with the trial)"}}) {
        const auto text = render_or_refuse(ctx, plan, name, values);
        if (!text) {
            return false;
        }
        detail::stage_file(ctx, plan, path, *text, {reason});
    }
    return !plan.refused();
}

// The rooms' commands (update-initramfs), the loader's refresh moved after
// them, then the loader's one-time selection.
void trial_commands(Plan& plan, const TrialLoader& loader)
{
    const auto refresh = boot_refresh_argv(loader.id);
    auto& cmds = plan.commands;
    cmds.erase(std::remove_if(cmds.begin(), cmds.end(), [&](const PlannedCommand& c) { return c.argv == refresh; }), cmds.end());
    loader.commands(plan);
}

} // namespace

std::vector<std::string_view> trial_files()
{
    return {k_trial_grub_script, k_trial_loader_entry, k_trial_timer, k_trial_service, k_trial_revert, k_trial_dropin};
}

std::string trial_loader_helper()
{
    return std::string(PASSTHRU_INSTALLED_HELPER_DIR) + "/" + std::string(k_trial_loader_helper_name);
}

std::string trial_reboot_step(const Plan& plan)
{
    for (const auto& row : trial_loaders()) {
        if (std::any_of(plan.files.begin(), plan.files.end(), [&](const FileChange& f) { return f.path == row.staged; })) {
            return row.reboot_step;
        }
    }
    return {};
}

std::string trial_boot_again(scan::Bootloader loader)
{
    const auto* row = trial_loader(loader);
    return row == nullptr ? std::string() : row->boot_again;
}

void plan_trial(const PlanContext& ctx, Plan& plan)
{
    if (!trial_possible(ctx, plan)) {
        return;
    }
    const TrialLoader& loader = *trial_loader(ctx.inventory.host.bootloader);
    const auto& spec = scan::boot_loader(loader.id);
    std::vector<std::string> args = plan.kernel_args.add;
    args.insert(args.end(), plan.trial_args.begin(), plan.trial_args.end());
    args.emplace_back(scan::k_trial_marker);
    args.push_back("systemd.wants=passthru-trial.timer");
    // The entry is staged before the command-line files go: systemd-boot's
    // entry starts from the rooms' edit of /etc/kernel/cmdline.
    if (!loader.stage_entry(ctx, plan, args)) {
        return;
    }
    plan.files.erase(
        std::remove_if(plan.files.begin(), plan.files.end(), [&](const FileChange& f) { return is_cmdline_file(spec, f.path); }),
        plan.files.end());
    plan.kernel_args.add.insert(plan.kernel_args.add.end(), plan.trial_args.begin(), plan.trial_args.end()); // what verify looks for
    if (!stage_watchdog(ctx, plan, loader) || !stage_revert(ctx, plan)) {
        return;
    }
    trial_commands(plan, loader);
    std::erase_if(plan.notes,
                  [](const std::string& n) { return n.starts_with("a reboot is needed") || n.starts_with("after the reboot"); });
}

bool end_trial(const PlanContext& ctx, Plan& plan)
{
    const TrialLoader* loader = trial_loader(ctx.inventory.host.bootloader);
    if (loader == nullptr) {
        return false; // no trial is possible here, so there is none to end
    }
    bool removed = false;
    for (const auto path : trial_files()) {
        removed = detail::stage_file(ctx, plan, path, std::nullopt,
                                     {"confirm: the trial is over, its configuration becomes the default; removing this file also "
                                      "disarms the watchdog"})
                  || removed;
    }
    if (!removed) {
        return false;
    }
    const auto refresh = boot_refresh_argv(loader->id);
    const bool refreshes =
        std::any_of(plan.commands.begin(), plan.commands.end(), [&](const PlannedCommand& c) { return c.argv == refresh; });
    if (!refreshes) {
        plan.commands.push_back({refresh, std::string(loader->refresh_why)});
    }
    loader->confirm_commands(plan);
    return true;
}

Result<Plan> make_confirm_plan(const scan::Inventory& inventory, const util::HostFs& fs, const data::DataDir& data, Request request)
{
    request.trial_minutes.reset();
    auto made = make_plan(inventory, fs, data, request);
    if (!made || made->refused()) {
        return made;
    }
    Plan& plan = *made;
    const PlanContext ctx{.inventory = inventory, .fs = fs, .data = data, .request = plan.request};
    end_trial(ctx, plan);
    return made;
}

} // namespace passthru::plan
