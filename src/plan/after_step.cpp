// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/after_step.hpp"

#include <algorithm>
#include <stdexcept>

#include "format/grammar.hpp"
#include "plan/paths.hpp"
#include "plan/plan.hpp"
#include "plan/trial.hpp"
#include "util/command_runner.hpp"
#include "util/host_fs.hpp"

namespace passthru::plan {

namespace {

using Argv = std::vector<std::string>;

bool has(const Argv& argv, std::string_view word)
{
    return std::find(argv.begin(), argv.end(), word) != argv.end();
}

std::string arg(const Argv& argv, std::size_t i)
{
    return i < argv.size() ? argv[i] : std::string();
}

bool any_args(const Argv& /*argv*/)
{
    return true;
}

bool is_vm_id(const std::string& id)
{
    return format::matches(format::Grammar::vm_id, id);
}

StepEffects regenerates(std::string what)
{
    StepEffects e;
    e.undo = StepUndo::rerun;
    e.what = std::move(what);
    return e;
}

StepEffects undone_by_files(std::string what)
{
    StepEffects e;
    e.undo = StepUndo::files;
    e.what = std::move(what);
    return e;
}

// The command-line files of LOADER, as plan/host/cmdline.cpp edits them: its
// cmdline_file, and for GRUB the drop-ins beside it.
bool is_cmdline_file(std::string_view path, scan::Bootloader loader)
{
    const auto& spec = scan::boot_loader(loader);
    if (spec.edit == scan::CmdlineEdit::none) {
        return false;
    }
    return path == spec.cmdline_file || (spec.edit == scan::CmdlineEdit::grub_default && k_default_grub_d.contains(path));
}

// A boot loader's refresh command, matched as step_kind reads it: its program
// (by name or system path, any arguments), or exactly its argv (the shape).
bool runs_a_refresh_program(const Argv& argv)
{
    const std::string_view name = util::base_name(argv.front());
    return std::any_of(scan::boot_loaders().begin(), scan::boot_loaders().end(),
                       [&](const scan::BootLoaderSpec& spec) { return !spec.refresh.empty() && spec.refresh.front() == name; });
}

bool is_a_refresh(const Argv& argv)
{
    return std::any_of(scan::boot_loaders().begin(), scan::boot_loaders().end(),
                       [&](const scan::BootLoaderSpec& spec) { return !spec.refresh.empty() && spec.refresh == argv; });
}

std::string refresh_why(scan::Bootloader loader)
{
    return std::string(scan::boot_loader(loader).refresh_reason);
}

// --- the rows -------------------------------------------------------------------
// docs/facts.md: after-steps. The boot and network regenerators write only
// what they derive from /etc; run again after /etc is restored, they derive
// the old state.

StepRow update_initramfs_row()
{
    return {.kind = StepKind::update_initramfs,
            .program = "update-initramfs",
            .boot_refresh = true,
            .is = any_args,
            .shape = [](const Argv& a) { return a == update_initramfs_argv(); },
            .effects = [](const Argv&) { return regenerates("rebuilds the initramfs images in /boot from /etc"); },
            // mkinitramfs copies /etc/modprobe.d and reads the module list;
            // modules-load.d and /etc/modules are systemd-modules-load's.
            .needed_by = [](std::string_view path, scan::Bootloader) { return path == k_initramfs_modules || k_modprobe_d.contains(path); },
            .argv = [](scan::Bootloader) { return update_initramfs_argv(); },
            .why =
                [](scan::Bootloader) {
                    return std::string("mkinitramfs copies /etc/modprobe.d and the /etc/initramfs-tools/modules list into every "
                                       "initramfs: the early binding only works once they are rebuilt");
                }};
}

// update-grub, proxmox-boot-tool refresh: the boot loaders' refresh commands,
// one row fed by scan/boot_loader's table (the argv and why it runs). A
// command-line file calls for it when its boot loader has a refresh, and the
// step runs that boot loader's.
StepRow boot_refresh_row()
{
    return {.kind = StepKind::boot_refresh,
            .program = {},
            .boot_refresh = true,
            .is = runs_a_refresh_program,
            .shape = is_a_refresh,
            .effects = [](const Argv&) { return regenerates("regenerates the boot loader's files from /etc"); },
            .needed_by = [](std::string_view path,
                            scan::Bootloader loader) { return !boot_refresh_argv(loader).empty() && is_cmdline_file(path, loader); },
            .argv = boot_refresh_argv,
            .why = refresh_why};
}

// Only --apply-network writes /etc/network/interfaces itself (otherwise
// interfaces.new, which PVE applies).
StepRow ifreload_row()
{
    return {.kind = StepKind::ifreload,
            .program = "ifreload",
            .is = any_args,
            .shape = [](const Argv& a) { return a == ifreload_argv(); },
            .effects = [](const Argv&) { return regenerates("brings the running network in line with /etc/network/interfaces"); },
            .needed_by = [](std::string_view path, scan::Bootloader) { return path == k_interfaces; },
            .argv = [](scan::Bootloader) { return ifreload_argv(); },
            .why = [](scan::Bootloader) { return std::string("apply the new network configuration now (--apply-network)"); }};
}

// qm set VMID --efidisk0 STORAGE:1,...: allocates a volume and writes
// efidisk0 into the VM config (docs/facts.md: after-steps, qm).
StepRow qm_set_efidisk_row()
{
    return {.kind = StepKind::qm_set_efidisk,
            .program = "qm",
            .is = [](const Argv& a) { return arg(a, 1) == "set" && has(a, "--efidisk0"); },
            .shape = [](const Argv& a) { return a.size() == 5 && a[0] == "qm" && a[1] == "set" && is_vm_id(a[2]) && a[3] == "--efidisk0"; },
            .effects =
                [](const Argv& a) {
                    StepEffects e = undone_by_files("allocates an EFI vars volume and adds efidisk0 to VM " + arg(a, 2) + "'s config");
                    e.edits = {qm_config_path(arg(a, 2))};
                    e.creates = {StepCreates{"volume", arg(a, 2), "efidisk0", qm_config_path(arg(a, 2))}};
                    return e;
                }};
}

// qm create VMID ...: a new VM with its disks. Destroying a VM is not
// something to do behind the user's back; it is never run again either.
StepRow qm_create_row()
{
    return {.kind = StepKind::qm_create,
            .program = "qm",
            .is = [](const Argv& a) { return arg(a, 1) == "create"; },
            .shape = [](const Argv& a) { return a.size() >= 3 && a[0] == "qm" && a[1] == "create" && is_vm_id(a[2]); },
            .effects =
                [](const Argv& a) {
                    StepEffects e;
                    e.undo = StepUndo::manual;
                    e.manual = {"qm destroy " + arg(a, 2) + "   # removes VM " + arg(a, 2) + " and the disks it owns"};
                    e.what = "creates VM " + arg(a, 2) + " and its disks";
                    return e;
                }};
}

// grub-reboot ENTRY (apply --trial): sets next_entry in GRUB's environment
// block, which GRUB clears when it boots that entry once (docs/facts.md:
// trial-boot). Undone by unsetting it: harmless when the trial boot already
// used it up.
StepRow grub_reboot_row()
{
    return {.kind = StepKind::grub_reboot,
            .program = "grub-reboot",
            .is = any_args,
            .shape = [](const Argv& a) { return a == grub_reboot_argv(); },
            .effects =
                [](const Argv& a) {
                    StepEffects e;
                    e.undo = StepUndo::command;
                    e.undo_argv = grub_editenv_unset_argv();
                    e.what = "selects GRUB menu entry " + arg(a, 1) + " for the next boot only";
                    return e;
                }};
}

StepRow grub_editenv_unset_row()
{
    return {.kind = StepKind::grub_editenv_unset,
            .program = "grub-editenv",
            .is = [](const Argv& a) { return has(a, "unset") && has(a, "next_entry"); },
            .shape = [](const Argv& a) { return a == grub_editenv_unset_argv(); },
            .effects = [](const Argv&) { return undone_by_files("clears GRUB's one-time boot selection (the default entry boots next)"); }};
}

// trial-loader-entry install FILE (apply --trial on systemd-boot): the trial
// entry on every ESP and LoaderEntryOneShot, neither of them a file under
// /etc; undone by the helper's own remove (docs/facts.md: trial-boot). The
// shape names the helper by the path this build installs it to.
StepRow trial_loader_install_row()
{
    return {.kind = StepKind::trial_loader_install,
            .program = k_trial_loader_helper_name,
            .is = [](const Argv& a) { return arg(a, 1) == "install"; },
            .shape = [](const Argv& a) { return a == trial_loader_install_argv(); },
            .effects =
                [](const Argv& a) {
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
StepRow trial_loader_remove_row()
{
    return {.kind = StepKind::trial_loader_remove,
            .program = k_trial_loader_helper_name,
            .is = [](const Argv& a) { return arg(a, 1) == "remove"; },
            .shape = [](const Argv& a) { return a == trial_loader_remove_argv(); },
            .effects =
                [](const Argv&) {
                    return undone_by_files("removes the trial entry " + std::string(k_trial_loader_entry_id)
                                           + " from every ESP, and its one-time selection (the default entry boots next)");
                }};
}

// pvesm free VOLID (rollback --remove-volumes): the data is gone.
StepRow pvesm_free_row()
{
    return {.kind = StepKind::pvesm_free,
            .program = "pvesm",
            .is = [](const Argv& a) { return arg(a, 1) == "free"; },
            .shape = [](const Argv& a) { return a.size() == 3 && a[0] == "pvesm" && a[1] == "free" && is_volume_id(a[2]); },
            .effects =
                [](const Argv& a) {
                    StepEffects e;
                    e.undo = StepUndo::manual;
                    e.manual = {"# " + arg(a, 2) + " was deleted; it cannot be brought back"};
                    e.what = "deletes volume " + arg(a, 2);
                    return e;
                }};
}

std::vector<StepRow> make_steps()
{
    std::vector<StepRow> rows{update_initramfs_row(),    boot_refresh_row(), ifreload_row(),           qm_set_efidisk_row(),
                              qm_create_row(),           grub_reboot_row(),  grub_editenv_unset_row(), trial_loader_install_row(),
                              trial_loader_remove_row(), pvesm_free_row()};
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (static_cast<std::size_t>(rows[i].kind) != i) {
            throw std::logic_error("the after-step table is not in StepKind order");
        }
    }
    return rows;
}

} // namespace

const std::vector<StepRow>& after_steps()
{
    static const std::vector<StepRow> rows = make_steps();
    return rows;
}

const StepRow& after_step(StepKind kind)
{
    return after_steps().at(static_cast<std::size_t>(kind));
}

std::optional<StepKind> step_kind(const std::vector<std::string>& argv)
{
    // Rows match only commands passthru may run: a tool's name or its path
    // in the system directories, never "/tmp/x/update-grub" (util/command_runner.hpp).
    if (argv.empty() || !util::is_trusted_command(argv.front())) {
        return std::nullopt;
    }
    const std::string_view name = util::base_name(argv.front());
    for (const auto& row : after_steps()) {
        if ((row.program.empty() || row.program == name) && row.is(argv)) {
            return row.kind;
        }
    }
    return std::nullopt;
}

std::optional<StepKind> recorded_step_kind(const std::vector<std::string>& argv)
{
    for (const auto& row : after_steps()) {
        if (row.shape(argv)) {
            return row.kind;
        }
    }
    return std::nullopt;
}

bool is_boot_refresh_step(const std::vector<std::string>& argv)
{
    const auto kind = step_kind(argv);
    return kind && after_step(*kind).boot_refresh;
}

StepEffects after_step_effects(const std::vector<std::string>& argv)
{
    if (const auto kind = step_kind(argv)) {
        return after_step(*kind).effects(argv);
    }
    StepEffects unknown;
    unknown.undo = StepUndo::manual;
    unknown.what = "a command passthru has no undo for";
    return unknown;
}

std::vector<StepKind> steps_for_files(const std::vector<std::string>& paths, scan::Bootloader loader)
{
    std::vector<StepKind> out;
    for (const auto& row : after_steps()) {
        if (row.needed_by != nullptr
            && std::any_of(paths.begin(), paths.end(), [&](const std::string& p) { return row.needed_by(p, loader); })) {
            out.push_back(row.kind);
        }
    }
    return out;
}

void add_file_steps(Plan& plan, scan::Bootloader loader)
{
    std::vector<std::string> paths;
    paths.reserve(plan.files.size());
    for (const auto& f : plan.files) {
        paths.push_back(f.path);
    }
    for (const auto kind : steps_for_files(paths, loader)) {
        // Planned already: the very argv (a trial's update-grub is not the
        // refresh a proxmox-boot-tool host's command-line file calls for).
        const StepRow& row = after_step(kind);
        auto argv = row.argv(loader);
        if (std::any_of(plan.commands.begin(), plan.commands.end(), [&](const PlannedCommand& c) { return c.argv == argv; })) {
            continue;
        }
        plan.commands.push_back({std::move(argv), row.why(loader)});
    }
}

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

bool is_volume_id(const std::string& id)
{
    const auto colon = id.find(':');
    if (colon == std::string::npos || !format::matches(format::Grammar::storage_id, id.substr(0, colon))) {
        return false;
    }
    const std::string name = id.substr(colon + 1);
    return !name.empty() && name.find("..") == std::string::npos && name.front() != '/'
           && name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-") == std::string::npos;
}

std::string qm_config_path(std::string_view vmid)
{
    return k_qemu_server_d.file(std::string(vmid) + ".conf");
}

// --- the argv of each kind ------------------------------------------------------

std::vector<std::string> update_initramfs_argv()
{
    return {std::string(after_step(StepKind::update_initramfs).program), "-u", "-k", "all"};
}

std::vector<std::string> update_grub_argv()
{
    return scan::boot_loader(scan::Bootloader::grub).refresh;
}

std::vector<std::string> proxmox_boot_refresh_argv()
{
    return scan::boot_loader(scan::Bootloader::systemd_boot).refresh;
}

std::vector<std::string> boot_refresh_argv(scan::Bootloader loader)
{
    return scan::boot_loader(loader).refresh;
}

std::vector<std::string> ifreload_argv()
{
    return {std::string(after_step(StepKind::ifreload).program), "-a"};
}

std::vector<std::string> qm_set_efidisk_argv(const std::string& vmid, const std::string& volume)
{
    return {std::string(after_step(StepKind::qm_set_efidisk).program), "set", vmid, "--efidisk0", volume};
}

std::vector<std::string> qm_create_argv(const std::string& vmid, const std::vector<std::string>& options)
{
    std::vector<std::string> argv{std::string(after_step(StepKind::qm_create).program), "create", vmid};
    argv.insert(argv.end(), options.begin(), options.end());
    return argv;
}

std::vector<std::string> grub_reboot_argv()
{
    return {std::string(after_step(StepKind::grub_reboot).program), std::string(k_trial_entry_id)};
}

std::vector<std::string> grub_editenv_unset_argv()
{
    return {std::string(after_step(StepKind::grub_editenv_unset).program), std::string(k_grubenv), "unset", "next_entry"};
}

std::vector<std::string> trial_loader_install_argv()
{
    return {trial_loader_helper(), "install", std::string(k_trial_loader_entry)};
}

std::vector<std::string> trial_loader_remove_argv()
{
    return {trial_loader_helper(), "remove"};
}

std::vector<std::string> free_volume_argv(const std::string& volume)
{
    return {std::string(after_step(StepKind::pvesm_free).program), "free", volume};
}

} // namespace passthru::plan
