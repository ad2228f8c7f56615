// SPDX-License-Identifier: GPL-2.0-or-later
// The trial boot (plan/trial.hpp; docs/facts.md: trial-boot).
#include "plan/trial.hpp"

#include <algorithm>
#include <tuple>

#include "plan/common.hpp"
#include "scan/boot_loader.hpp"
#include "util/strings.hpp"

namespace passthru::plan {

namespace {

constexpr std::string_view k_modprobe_d = "/etc/modprobe.d/";
constexpr std::string_view k_own_modprobe = "/etc/modprobe.d/passthru-vfio.conf";

// A kernel argument or release the trial writes into a shell script and a
// grub.cfg line: plain words only, so nothing needs quoting in either.
bool plain_word(std::string_view w)
{
    return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || std::string_view("_.,:=+-/").find(c) != std::string_view::npos;
    });
}

bool is_cmdline_file(std::string_view path)
{
    return path == "/etc/default/grub" || path.starts_with("/etc/default/grub.d/");
}

void refuse(Plan& plan, std::string message, std::string hint)
{
    plan.refusals.push_back({std::move(message), {std::move(hint)}});
}

// What a trial cannot keep to one boot; false after a refusal.
bool trial_possible(const PlanContext& ctx, Plan& plan)
{
    const auto& host = ctx.inventory.host;
    const std::string instead = "run 'passthru apply' without --trial (rollback undoes it), with a console or the BMC at hand";
    if (host.bootloader != scan::Bootloader::grub) {
        refuse(plan,
               "--trial needs plain GRUB (a one-time menu entry); this host boots with " + std::string(scan::to_string(host.bootloader))
                   + (host.proxmox_boot_tool ? " through proxmox-boot-tool, whose one-shot pin selects a kernel, not a command line" : ""),
               instead);
        return false;
    }
    if (ctx.request.network) {
        refuse(plan, "--trial does not cover network changes: Proxmox VE applies /etc/network/interfaces.new on every boot",
               "apply the network change on its own, without --trial");
        return false;
    }
    if (!host.kernel || !plain_word(*host.kernel)) {
        refuse(plan, "--trial needs the running kernel release (/proc/sys/kernel/osrelease) to name the trial entry's kernel", instead);
        return false;
    }
    for (const auto& f : plan.files) {
        if (f.path.starts_with(k_modprobe_d) && f.path != k_own_modprobe) {
            refuse(plan, "--trial cannot keep the edit of " + f.path + " to one boot: modprobe reads it on every boot",
                   "fix that file by hand (the plan shows how), then plan the trial again; or " + instead);
            return false;
        }
    }
    for (const auto& list : {plan.kernel_args.add, plan.kernel_args.remove, plan.trial_args}) {
        for (const auto& a : list) {
            if (!plain_word(a)) {
                refuse(plan, "--trial will not write the argument '" + a + "' into a GRUB script", instead);
                return false;
            }
        }
    }
    return true;
}

// The script grub-mkconfig runs: one menu entry with the trial's command line.
bool stage_grub_script(const PlanContext& ctx, Plan& plan, const std::vector<std::string>& args)
{
    nlohmann::json remove = nlohmann::json::array();
    for (const auto& token : plan.kernel_args.remove) {
        remove.push_back({{"pattern", "'" + token + "'"}});
    }
    const nlohmann::json values{{"vm", ctx.request.vm},
                                {"kernel", *ctx.inventory.host.kernel},
                                {"entry_id", k_trial_entry_id},
                                {"remove", remove},
                                {"args", util::join(args, " ")}};
    auto text = render_template(ctx.data, "grub-trial.mustache", values);
    if (!text) {
        plan.refusals.push_back({text.error().what(), text.error().hints()});
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

bool stage_watchdog(const PlanContext& ctx, Plan& plan)
{
    const int minutes = *ctx.request.trial_minutes;
    const nlohmann::json values{
        {"vm", ctx.request.vm}, {"minutes", minutes}, {"marker", scan::k_trial_marker}, {"script", k_trial_grub_script}};
    for (const auto& [path, name] :
         {std::pair{k_trial_timer, "passthru-trial.timer.mustache"}, std::pair{k_trial_service, "passthru-trial.service.mustache"}}) {
        auto text = render_template(ctx.data, name, values);
        if (!text) {
            plan.refusals.push_back({text.error().what(), text.error().hints()});
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
    const nlohmann::json values{
        {"vm", ctx.request.vm}, {"marker", scan::k_trial_marker}, {"dropin", k_trial_dropin}, {"unit", k_trial_revert_unit}};
    const std::string why = "the trial's fallback: on any boot without " + std::string(scan::k_trial_marker)
                            + " (the default entry after the watchdog's reboot or a reset) 'passthru rollback --trial-fallback' "
                              "restores the files from before the trial by itself";
    for (const auto& [path, name, reason] :
         {std::tuple{k_trial_revert, "passthru-trial-revert.service.mustache", why},
          std::tuple{k_trial_dropin, "passthru-trial-target.conf.mustache",
                     "makes multi-user.target start " + std::string(k_trial_revert_unit) + " on every boot (removed with the trial)"}}) {
        auto text = render_template(ctx.data, name, values);
        if (!text) {
            plan.refusals.push_back({text.error().what(), text.error().hints()});
            return false;
        }
        detail::stage_file(ctx, plan, path, *text, {reason});
    }
    return !plan.refused();
}

void trial_commands(Plan& plan)
{
    const auto& refresh = scan::boot_loader(scan::Bootloader::grub).refresh;
    auto& cmds = plan.commands;
    cmds.erase(std::remove_if(cmds.begin(), cmds.end(), [&](const PlannedCommand& c) { return c.argv == refresh; }), cmds.end());
    cmds.push_back({refresh, "regenerates /boot/grub/grub.cfg with the trial entry (the default entry is generated as before)"});
    cmds.push_back({{"grub-reboot", std::string(k_trial_entry_id)},
                    "selects the trial entry for the next boot only (next_entry in /boot/grub/grubenv, cleared when GRUB uses it)"});
}

} // namespace

std::vector<std::string_view> trial_files()
{
    return {k_trial_grub_script, k_trial_timer, k_trial_service, k_trial_revert, k_trial_dropin};
}

void plan_trial(const PlanContext& ctx, Plan& plan)
{
    if (!trial_possible(ctx, plan)) {
        return;
    }
    plan.files.erase(std::remove_if(plan.files.begin(), plan.files.end(), [](const FileChange& f) { return is_cmdline_file(f.path); }),
                     plan.files.end());
    std::vector<std::string> args = plan.kernel_args.add;
    args.insert(args.end(), plan.trial_args.begin(), plan.trial_args.end());
    plan.kernel_args.add = args; // what verify looks for on the trial boot
    args.emplace_back(scan::k_trial_marker);
    args.push_back("systemd.wants=passthru-trial.timer");
    if (!stage_grub_script(ctx, plan, args) || !stage_watchdog(ctx, plan) || !stage_revert(ctx, plan)) {
        return;
    }
    trial_commands(plan);
    std::erase_if(plan.notes,
                  [](const std::string& n) { return n.starts_with("a reboot is needed") || n.starts_with("after the reboot"); });
}

Result<Plan> make_confirm_plan(const scan::Inventory& inventory, const util::HostFs& fs, const DataDir& data, Request request)
{
    request.trial_minutes.reset();
    auto made = make_plan(inventory, fs, data, request);
    if (!made || made->refused()) {
        return made;
    }
    Plan& plan = *made;
    const PlanContext ctx{inventory, fs, data, plan.request, {}, nullptr};
    bool removed = false;
    for (const auto path : trial_files()) {
        removed = detail::stage_file(ctx, plan, path, std::nullopt,
                                     {"confirm: the trial is over, its configuration becomes the default; removing this file also "
                                      "disarms the watchdog"})
                  || removed;
    }
    const auto& refresh = scan::boot_loader(scan::Bootloader::grub).refresh;
    const bool refreshes =
        std::any_of(plan.commands.begin(), plan.commands.end(), [&](const PlannedCommand& c) { return c.argv == refresh; });
    if (removed && !refreshes) {
        plan.commands.push_back({refresh, "regenerates /boot/grub/grub.cfg without the trial entry"});
    }
    if (removed) {
        // GRUB clears the one-time selection when it uses it, except where it
        // cannot write /boot/grub/grubenv (docs/facts.md: trial-boot).
        plan.commands.push_back({{"grub-editenv", "/boot/grub/grubenv", "unset", "next_entry"},
                                 "clears GRUB's one-time selection of the trial entry, in case GRUB could not (a /boot on LVM, RAID, "
                                 "btrfs or ZFS)"});
    }
    return made;
}

} // namespace passthru::plan
