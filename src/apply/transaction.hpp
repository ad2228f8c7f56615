// SPDX-License-Identifier: GPL-2.0-or-later
// One journaled, reversible change of the host: the engine behind `apply`
// and `rollback`. Order of work (each step a fault-injection point):
//   1. preflight: every target is a regular file or absent and still has the
//      content the plan was made from (else refused; nothing written);
//   2. write-ahead: pre-images, then manifest.json (state "pending"), fsynced;
//   3. each file replaced atomically (HostFs::write_file_atomic), in order;
//   4. libvirt domains defined (libvirt backend);
//   5. the after-steps run through the CommandRunner (recorded under --root);
//      each is journaled with its effects (plan/after_step.hpp): files it
//      edits get pre-images too, volumes it allocates are recorded;
//   6. manifest rewritten with state "committed" and every journaled file's
//      checksum as the after-steps left it.
// Any failure in 3-6 restores the pre-images in reverse order; a kill -9
// leaves a "pending" generation that restore_generation() undoes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "apply/journal.hpp"
#include "plan/plan.hpp"
#include "util/command_runner.hpp"
#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::apply {

// The libvirt seam (implemented by apply/libvirt_apply.*; tests pass fakes).
// Without it a plan with domain changes is refused before anything is written.
struct DomainHooks
{
    std::function<Result<void>(const std::string& uri, const std::string& xml)> define;
    std::function<Result<void>(const plan::DomainChange& change)> restore;
};

// What the transaction tells the user while it works (stderr in the CLI).
struct Progress
{
    // "writing /etc/kernel/cmdline", "[1/2] update-initramfs -u -k all"
    std::function<void(std::string_view step)> step;
    // One output line of a running after-step.
    std::function<void(std::string_view line)> output;
};

// A host file to change in a transaction.
struct Change
{
    std::string path;
    FileAction action = FileAction::modify;
    // The content (sha256) the file must still have; nullopt = must be absent.
    std::optional<std::string> expected_before_sha256;
    std::optional<std::string> after; // nullopt for remove
    mode_t mode = 0644;               // for a created file
    // Rollback: the owner, group and mode the journal recorded, set exactly
    // (a file apply deleted or replaced comes back as it was).
    std::optional<util::FileOwnership> exact;
};

struct TransactionSpec
{
    GenerationKind kind = GenerationKind::apply;
    std::optional<plan::Request> request;            // stored in the manifest (apply)
    std::optional<std::uint64_t> rollback_to_before; // stored in the manifest (rollback)
    std::vector<plan::SelectedGpu> gpus;             // the selected cards, for verify
    std::vector<std::string> kernel_args;            // added kernel arguments, for verify
    std::vector<std::uint64_t> undoes;               // rollback: generations it undoes
    std::vector<Change> files;
    std::vector<plan::PlannedCommand> commands;
    std::vector<plan::DomainChange> domains;
    std::vector<std::string> remove_dirs; // rollback: directories to remove when empty, deepest first
    // Runs after the last after-step, before the commit; an error undoes the
    // whole transaction. The network lock-out guard (apply/network_guard.hpp)
    // goes here: it waits for `passthru confirm` after `ifreload -a`.
    std::function<Result<void>()> before_commit;
};

struct TransactionReport
{
    std::uint64_t generation = 0;
    std::vector<std::string> written; // host paths, in order
    std::vector<JournalCommand> commands;
};

// Converts a plan into a spec: the plan's request, cards, files, commands and domains.
TransactionSpec spec_from_plan(const plan::Plan& plan);

// Runs the transaction. The caller holds the journal lock. Throws Error:
//  - Errc::conflict / precondition from the preflight (nothing written);
//  - Errc::io (or the failing step's code) after a failure that was fully
//    restored (the generation is marked rolled-back);
//  - Errc::rollback_failed when restoring failed too (the generation is
//    marked restore-failed; the hints say what to do by hand per path).
TransactionReport run_transaction(const Journal& journal, util::CommandRunner& runner, const TransactionSpec& spec,
                                  const Progress& progress, const DomainHooks* domains);

// Outcome of undoing one generation.
struct RestoreReport
{
    std::vector<std::string> restored;   // paths written back or removed
    std::vector<std::string> failures;   // "PATH: what went wrong; what to do"
    std::vector<std::string> not_undone; // after-steps that cannot be undone automatically
    bool commands_rerun = false;
};

// Puts every file of generation `m` back to its pre-image (reverse order;
// files already equal to their pre-image are left untouched; created files
// and directories are removed), restores domains, and re-runs the after-steps
// when they had started. Updates and saves m's state (rolled-back or
// restore-failed). Never throws; failures are in the report.
RestoreReport restore_generation(const Journal& journal, util::CommandRunner& runner, Manifest& m, const Progress& progress,
                                 const DomainHooks* domains);

// After-steps that make the boot files match /etc again and are therefore
// re-run after a restore (StepUndo::rerun in plan/after_step.cpp). For the
// others the restore lists what they allocated and their manual undo.
bool rerun_after_restore(const std::vector<std::string>& argv);

// Error for an exit-4 situation, listing every failure as a hint.
Error rollback_failed_error(std::uint64_t id, std::string_view what, const RestoreReport& report);

} // namespace passthru::apply
