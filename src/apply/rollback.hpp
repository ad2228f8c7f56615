// SPDX-License-Identifier: GPL-2.0-or-later
// Rollback and crash recovery on top of the journal.
//
// Generations are never deleted or rewritten except for their state. An
// apply generation is "active" while it is committed and no committed
// rollback generation undoes it. `rollback` undoes the newest active one;
// `rollback --to N` returns the host to how it was before generation N,
// undoing N and every active generation after it. A rollback is itself a
// generation (kind "rollback", with pre-images of what it replaces), so it
// is journaled, crash-safe and listed by `history` (as nix does with
// profile generations, the current state need not be the newest one).
//
// Recovery: a generation left "pending" (the process died) or
// "restore-failed" while nobody holds the lock is interrupted. Every command
// reports it; `apply` refuses to start until it is undone; `rollback`
// undoes it first (restore_generation), before anything else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apply/journal.hpp"
#include "apply/transaction.hpp"

namespace passthru::apply {

enum class Force
{
    no,
    yes,
};

// Whether rollback deletes the volumes the undone after-steps allocated
// (`pvesm free`), or keeps them and says how to delete them.
enum class RemoveVolumes
{
    no,
    yes,
};

enum class LockHeld
{
    by_other_or_nobody, // a held lock means a running apply: not interrupted
    by_us,              // the caller holds the lock: nobody else is running
};

// The newest generation that is pending or restore-failed, unless another
// process holds the journal lock (then a pending generation is a running apply).
std::optional<Manifest> find_interrupted(const Journal& journal, LockHeld lock = LockHeld::by_other_or_nobody);

// Apply generations that are committed and not undone by a committed rollback.
std::vector<Manifest> active_generations(const std::vector<Manifest>& all);

// The newest of `active` that configures passthrough: a 'kernel pin' or 'kernel unpin'
// generation only changes the default kernel, so verify, kernel check and explain read the
// cards and arguments of the generation before it.
std::optional<Manifest> newest_configuring(const std::vector<Manifest>& active);

// The newest active generation that recorded (under --root: listed, not
// run) every one of these after-steps, when each of them was; nullopt
// otherwise. A plan whose only work is such steps is already applied as far
// as passthru can tell: applying it again would record them again.
std::optional<std::uint64_t> steps_already_recorded(const std::vector<Manifest>& all, const std::vector<plan::PlannedCommand>& commands);

// What `rollback [--to N]` will do: the files to put back (content from the
// earliest undone generation's pre-images), the after-steps to re-run, the
// directories created by the undone generations. Drift (a file that no
// longer has the content the newest undone generation wrote) is refused
// with Errc::conflict unless force is yes.
struct RollbackPlan
{
    std::vector<std::uint64_t> undoes; // newest first
    TransactionSpec spec;
    std::vector<std::string> drifted;    // files changed since (only with --force)
    std::vector<std::string> not_undone; // after-steps with no automatic undo, and the commands that undo them by hand
    std::vector<std::string> kept;       // volumes the undone steps allocated, kept: what they are and how to delete them
    std::vector<std::uint64_t> active;   // every active apply generation, ascending (before this rollback)
};

RollbackPlan plan_rollback(const Journal& journal, std::optional<std::uint64_t> to, Force force,
                           RemoveVolumes remove_volumes = RemoveVolumes::no);

// Recovery's drift check, the same as rollback's: the files of an
// interrupted generation that are neither as they were before it nor as it
// wrote them (an edit made after the crash), in manifest order. A file that
// is no longer a regular file is left to the restore, which refuses it.
std::vector<std::string> recovery_drift(const Journal& journal, const Manifest& m);

// Keeps the current content of drifted files in generation m's directory
// (Journal::kept_path) before a forced recovery overwrites them, as a
// forced rollback keeps them in its pre-images.
void keep_drifted(const Journal& journal, const Manifest& m, const std::vector<std::string>& drifted);

} // namespace passthru::apply
