// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to apply/: what the files of the transaction engine share
// (apply/transaction.cpp: the steps of a transaction; apply/transaction_after_steps.cpp:
// running and journaling the after-steps; apply/transaction_restore.cpp: putting a
// generation back). Not a public interface.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "apply/journal.hpp"
#include "apply/transaction.hpp"
#include "util/command_runner.hpp"
#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::apply::detail {

// Throws r's error, if it has one.
void check(Result<void> r);
// Throws (Errc::io, "interrupted by SIGTERM") when an apply caught a signal
// that ends a process (util/signals.hpp): the failure path then restores the
// pre-images. A rollback is never stopped half-way: it carries on to its end.
void check_signal(GenerationKind kind);
// One line for the user (Progress::step), when someone listens.
void emit(const Progress& progress, std::string_view text);
// Where a host path is on this machine, for the hand-made repair commands.
std::string shown(const util::HostFs& fs, std::string_view host_path);
// What a path is, for messages: "a regular file", "a symbolic link", "missing" ...
std::string type_name(util::FileType type);

// Removes the temporary files an interrupted atomic write may have left next to
// `path`; one line per failure in failures.
void remove_temp_files(const util::HostFs& fs, const std::string& path, std::vector<std::string>& failures);

// Runs an after-step and, when it really ran (not only recorded under --root),
// says how long it took.
Result<util::CommandResult> run_timed(util::CommandRunner& runner, const std::vector<std::string>& argv, const Progress& progress,
                                      const std::string& prefix);
// Runs after-step i of commands and records its outcome in it; throws Error
// when it cannot run or fails.
void run_after_step(const util::HostFs& fs, util::CommandRunner& runner, std::vector<JournalCommand>& commands, std::size_t i,
                    const Progress& progress);
// Records every journaled file's checksum as the after-steps left it.
void record_after_state(const util::HostFs& fs, Manifest& m);
// What an after-step allocated and nothing frees on a restore: one line per
// volume, with the command that removes it.
std::vector<std::string> kept_resources(const JournalCommand& cmd);

} // namespace passthru::apply::detail
