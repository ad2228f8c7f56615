// SPDX-License-Identifier: GPL-2.0-or-later
// What each after-step changes and how it is undone: one table
// (after_step.cpp), used by apply to journal a step's effects and by rollback
// to undo them. The facts behind each row are in docs/facts.md, "After-steps".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace passthru::plan {

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

// The effects of the after-step argv (the table's row for it; a command the
// table does not know is manual with no known undo).
StepEffects after_step_effects(const std::vector<std::string>& argv);

// The VM config file a VMID's qm commands edit.
std::string qm_config_path(std::string_view vmid);

// The command that deletes a volume passthru's after-step allocated
// (`pvesm free VOLID`).
std::vector<std::string> free_volume_argv(const std::string& volume);

} // namespace passthru::plan
