// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/after_step.hpp"

#include <algorithm>
#include <functional>

#include "plan/paths.hpp"
#include "plan/trial.hpp"
#include "scan/boot_loader.hpp"
#include "util/command_runner.hpp"
#include "util/host_fs.hpp"

namespace passthru::plan {

namespace {

bool has(const std::vector<std::string>& argv, std::string_view word)
{
    return std::find(argv.begin(), argv.end(), word) != argv.end();
}

std::string arg(const std::vector<std::string>& argv, std::size_t i)
{
    return i < argv.size() ? argv[i] : std::string();
}

// One row per after-step passthru plans: which command it is, and its effects.
struct Row
{
    std::function<bool(const std::vector<std::string>&)> matches;
    std::function<StepEffects(const std::vector<std::string>&)> effects;
};

StepEffects regenerates(std::string what)
{
    StepEffects e;
    e.undo = StepUndo::rerun;
    e.what = std::move(what);
    return e;
}

// trial-loader-entry install FILE (apply --trial on systemd-boot): the trial
// entry on every ESP and LoaderEntryOneShot, neither of them a file under
// /etc; undone by the helper's own remove (docs/facts.md: trial-boot).
Row trial_loader_install_row()
{
    return {[](const auto& a) { return util::base_name(a.front()) == k_trial_loader_helper_name && arg(a, 1) == "install"; },
            [](const auto& a) {
                StepEffects e;
                e.undo = StepUndo::command;
                e.undo_argv = {a.front(), "remove"};
                e.what = "copies the trial entry " + std::string(k_trial_loader_entry_id)
                         + " to every ESP and selects it for the next boot only (LoaderEntryOneShot)";
                return e;
            }};
}

// trial-loader-entry remove (confirm on systemd-boot): what it removes is
// not under /etc either; rolling confirm back restores the staged entry under
// /etc, and the helper's install puts it on the ESPs again when wanted.
Row trial_loader_remove_row()
{
    return {[](const auto& a) { return util::base_name(a.front()) == k_trial_loader_helper_name && arg(a, 1) == "remove"; },
            [](const auto&) {
                StepEffects e;
                e.undo = StepUndo::files;
                e.what = "removes the trial entry " + std::string(k_trial_loader_entry_id)
                         + " from every ESP, and its one-time selection (the default entry boots next)";
                return e;
            }};
}

const std::vector<Row>& table()
{
    static const std::vector<Row> rows{
        // docs/facts.md: after-steps. The boot and network regenerators write
        // only what they derive from /etc; run again after /etc is restored,
        // they derive the old state.
        {[](const auto& a) { return util::base_name(a.front()) == "update-initramfs"; },
         [](const auto&) { return regenerates("rebuilds the initramfs images in /boot from /etc"); }},
        // update-grub, proxmox-boot-tool refresh: the boot loaders' refresh
        // commands (scan/boot_loader's table).
        {[](const auto& a) { return scan::is_boot_refresh(util::base_name(a.front())); },
         [](const auto&) { return regenerates("regenerates the boot loader's files from /etc"); }},
        {[](const auto& a) { return util::base_name(a.front()) == "ifreload"; },
         [](const auto&) { return regenerates("brings the running network in line with /etc/network/interfaces"); }},
        // qm set VMID --efidisk0 STORAGE:1,...: allocates a volume and writes
        // efidisk0 into the VM config (docs/facts.md: after-steps, qm).
        {[](const auto& a) { return util::base_name(a.front()) == "qm" && arg(a, 1) == "set" && has(a, "--efidisk0"); },
         [](const auto& a) {
             StepEffects e;
             e.undo = StepUndo::files;
             e.edits = {qm_config_path(arg(a, 2))};
             e.creates = {StepCreates{"volume", arg(a, 2), "efidisk0", qm_config_path(arg(a, 2))}};
             e.what = "allocates an EFI vars volume and adds efidisk0 to VM " + arg(a, 2) + "'s config";
             return e;
         }},
        // qm create VMID ...: a new VM with its disks. Destroying a VM is not
        // something to do behind the user's back.
        {[](const auto& a) { return util::base_name(a.front()) == "qm" && arg(a, 1) == "create"; },
         [](const auto& a) {
             StepEffects e;
             e.undo = StepUndo::manual;
             e.manual = {"qm destroy " + arg(a, 2) + "   # removes VM " + arg(a, 2) + " and the disks it owns"};
             e.what = "creates VM " + arg(a, 2) + " and its disks";
             return e;
         }},
        // grub-reboot ENTRY (apply --trial): sets next_entry in GRUB's
        // environment block, which GRUB clears when it boots that entry once
        // (docs/facts.md: trial-boot). Undone by unsetting it: harmless when
        // the trial boot already used it up.
        {[](const auto& a) { return util::base_name(a.front()) == "grub-reboot"; },
         [](const auto& a) {
             StepEffects e;
             e.undo = StepUndo::command;
             e.undo_argv = {"grub-editenv", std::string(k_grubenv), "unset", "next_entry"};
             e.what = "selects GRUB menu entry " + arg(a, 1) + " for the next boot only";
             return e;
         }},
        {[](const auto& a) { return util::base_name(a.front()) == "grub-editenv" && has(a, "unset") && has(a, "next_entry"); },
         [](const auto&) {
             StepEffects e;
             e.undo = StepUndo::files;
             e.what = "clears GRUB's one-time boot selection (the default entry boots next)";
             return e;
         }},
        trial_loader_install_row(),
        trial_loader_remove_row(),
        // pvesm free VOLID (rollback --remove-volumes): the data is gone.
        {[](const auto& a) { return util::base_name(a.front()) == "pvesm" && arg(a, 1) == "free"; },
         [](const auto& a) {
             StepEffects e;
             e.undo = StepUndo::manual;
             e.manual = {"# " + arg(a, 2) + " was deleted; it cannot be brought back"};
             e.what = "deletes volume " + arg(a, 2);
             return e;
         }},
    };
    return rows;
}

} // namespace

std::string_view to_string(StepUndo undo)
{
    switch (undo) {
    case StepUndo::rerun:
        return "rerun";
    case StepUndo::files:
        return "files";
    case StepUndo::manual:
        return "manual";
    case StepUndo::command:
        return "command";
    }
    return "manual";
}

std::string qm_config_path(std::string_view vmid)
{
    return k_qemu_server_d.file(std::string(vmid) + ".conf");
}

std::vector<std::string> free_volume_argv(const std::string& volume)
{
    return {"pvesm", "free", volume};
}

StepEffects after_step_effects(const std::vector<std::string>& argv)
{
    // Rows match only commands passthru may run: a tool's name or its path
    // in the system directories, never "/tmp/x/update-grub" (util/command_runner.hpp).
    if (!argv.empty() && util::is_trusted_command(argv.front())) {
        for (const auto& row : table()) {
            if (row.matches(argv)) {
                return row.effects(argv);
            }
        }
    }
    StepEffects unknown;
    unknown.undo = StepUndo::manual;
    unknown.what = "a command passthru has no undo for";
    return unknown;
}

} // namespace passthru::plan
