// SPDX-License-Identifier: GPL-2.0-or-later
// The after-steps: the commands passthru runs after it wrote the files. One
// table (after_step.cpp), one row per kind of step: how its argv is built,
// which written files call for it, what it changes and how it is undone, and
// the argv rollback accepts in a journal. Planners build their commands from
// it, apply journals a step's effects from it, rollback undoes them and
// manifest_check validates a recorded command by it. The facts behind each
// row are in docs/facts.md, "After-steps".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scan/boot_loader.hpp"

namespace passthru::plan {

struct Plan;

// Every kind of after-step passthru plans.
enum class StepKind : std::uint8_t
{
    update_initramfs,     // update-initramfs -u -k all
    boot_refresh,         // a boot loader's refresh (scan's boot-loader table: update-grub, proxmox-boot-tool refresh)
    ifreload,             // ifreload -a
    qm_set_efidisk,       // qm set VMID --efidisk0 STORAGE:1,...
    qm_create,            // qm create VMID OPTIONS...
    grub_reboot,          // grub-reboot ENTRY (the trial entry)
    grub_editenv_unset,   // grub-editenv GRUBENV unset next_entry
    trial_loader_install, // trial-loader-entry install FILE
    trial_loader_remove,  // trial-loader-entry remove
    pvesm_free,           // pvesm free VOLID
};

enum class StepUndo
{
    rerun,   // regenerates boot or network state from journaled files: re-run once they are restored
    files,   // edits only files the generation journals: restoring them undoes it (what it creates is listed)
    manual,  // no safe automatic undo: rollback lists the exact commands and runs none
    command, // undone by one command of its own (StepEffects::undo_argv), which rollback runs
};

std::string_view to_string(StepUndo undo);

// A resource an after-step allocates, found in a file it edits after it ran.
struct StepCreates
{
    std::string kind;        // "volume"
    std::string vm;          // the VMID
    std::string config_key;  // the VM config key that names it ("efidisk0")
    std::string config_path; // the VM config file that key is in
};

struct StepEffects
{
    StepUndo undo = StepUndo::manual;
    std::vector<std::string> edits;     // host files it rewrites (the generation journals them)
    std::vector<StepCreates> creates;   // resources it allocates
    std::vector<std::string> manual;    // StepUndo::manual: the commands that undo it by hand
    std::vector<std::string> undo_argv; // StepUndo::command: the command that undoes it
    std::string what;                   // one line: what the step changes
};

// One row of the table.
struct StepRow
{
    StepKind kind;
    // argv[0]'s base name; empty for the boot refresh, whose programs are the
    // boot loaders' (its `is` names them).
    std::string_view program;
    // Regenerates what the next boot uses (the initramfs, the boot loader's
    // files): apply tells the user to reboot and verify after it.
    bool boot_refresh = false;
    // This row's command among those of its program (any arguments): the row
    // whose effects an argv has. Given the whole argv, argv[0] trusted.
    bool (*is)(const std::vector<std::string>& argv) = nullptr;
    // Exactly the argv passthru plans for it, argv[0] the program as
    // planned: the only shape rollback and recovery accept in a manifest.
    bool (*shape)(const std::vector<std::string>& argv) = nullptr;
    StepEffects (*effects)(const std::vector<std::string>& argv) = nullptr;
    // Whether writing PATH calls for this step on a host that boots with
    // LOADER; null: no file does (the step is planned for its own reasons).
    bool (*needed_by)(std::string_view path, scan::Bootloader loader) = nullptr;
    // The argv the step runs with when files called for it (needed_by is set);
    // the boot refresh takes its boot loader's from scan's boot-loader table.
    std::vector<std::string> (*argv)(scan::Bootloader loader) = nullptr;
    // Why it runs when files called for it (the planned command's reason).
    std::string (*why)(scan::Bootloader loader) = nullptr;
};

// Every row, one per StepKind, in the order file-derived steps run.
const std::vector<StepRow>& after_steps();
const StepRow& after_step(StepKind kind);

// The kind of a command, matched as apply and rollback read it (a tool's
// name or its path in the system directories); nullopt: not an after-step.
std::optional<StepKind> step_kind(const std::vector<std::string>& argv);
// The kind whose shape a recorded argv has exactly (manifest_check); nullopt:
// passthru never plans this argv.
std::optional<StepKind> recorded_step_kind(const std::vector<std::string>& argv);
// True when the command regenerates what the next boot uses (StepRow::boot_refresh).
bool is_boot_refresh_step(const std::vector<std::string>& argv);

// The effects of the after-step argv (the table's row for it; a command the
// table does not know is manual with no known undo).
StepEffects after_step_effects(const std::vector<std::string>& argv);

// The steps the written PATHS call for on a host that boots with LOADER, in
// table order: update-initramfs for modprobe.d and the initramfs module list,
// the boot loader's refresh for its command-line files (when it has one),
// ifreload for /etc/network/interfaces.
std::vector<StepKind> steps_for_files(const std::vector<std::string>& paths, scan::Bootloader loader);
// Adds to PLAN's commands, with their reasons, the steps its files call for
// that it does not have yet.
void add_file_steps(Plan& plan, scan::Bootloader loader);

// --- the argv of each kind ------------------------------------------------------
std::vector<std::string> update_initramfs_argv();
std::vector<std::string> update_grub_argv();          // scan's boot-loader table: plain GRUB's refresh
std::vector<std::string> proxmox_boot_refresh_argv(); // scan's boot-loader table: the ESPs' refresh
// The refresh of LOADER's boot files; empty when it has none.
std::vector<std::string> boot_refresh_argv(scan::Bootloader loader);
std::vector<std::string> ifreload_argv();
std::vector<std::string> qm_set_efidisk_argv(const std::string& vmid, const std::string& volume);
std::vector<std::string> qm_create_argv(const std::string& vmid, const std::vector<std::string>& options);
std::vector<std::string> grub_reboot_argv(); // selects the trial entry for one boot
std::vector<std::string> grub_editenv_unset_argv();
std::vector<std::string> trial_loader_install_argv();
std::vector<std::string> trial_loader_remove_argv();
// The command that deletes a volume passthru's after-step allocated.
std::vector<std::string> free_volume_argv(const std::string& volume);

// "STORAGE:NAME", as qm and pvesm name a volume (no "..", not absolute).
bool is_volume_id(const std::string& id);

// The VM config file a VMID's qm commands edit.
std::string qm_config_path(std::string_view vmid);

} // namespace passthru::plan
