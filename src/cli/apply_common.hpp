// SPDX-License-Identifier: GPL-2.0-or-later
// What apply, rollback, history and verify share in the CLI: the root check,
// the progress display, the notice about an interrupted generation.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "apply/journal.hpp"
#include "apply/transaction.hpp"
#include "cli/commands.hpp"
#include "plan/planner.hpp"
#include "scan/inventory.hpp"

namespace passthru::cli {

// On the live root, changing the host needs euid 0; under --root, a tree
// passthru may write (cli/root_guard.hpp): otherwise an Errc::usage error
// (exit 2) before anything is read or written.
void require_root(const Context& ctx, std::string_view command);

// Steps as "passthru: STEP" lines on stderr; command output (live) as
// "  | LINE" so update-initramfs's minutes of work are visible.
apply::Progress cli_progress(const Context& ctx);

// Called by main before every command: when a generation was interrupted (a
// kill -9, a power cut) and nobody is working on it, say so and how to undo
// it. apply and rollback handle it themselves, so they are skipped.
void notice_interrupted(const Context& ctx, std::string_view command);

// scan_host with the kernel cut-offs of the data directory (profiles/host/kernel.json,
// read once through `data`); throws the error of a broken data file (exit 2) or of the scan.
scan::Inventory scan_with_data(const Context& ctx, const data::DataDir& data);

// The request with this command's session filled in (Context::ssh_connection):
// what every plan the CLI makes is made from, fresh, saved or pending.
plan::Request in_session(const Context& ctx, plan::Request request);

// The libvirt seam for the transaction (apply/libvirt_apply.*).
const apply::DomainHooks& libvirt_hooks();

// The global options in use, " --root DIR" (shell-quoted) when working on a
// tree and " --data-dir DIR" when given, "" otherwise: for the commands
// passthru tells the user to run next (cli/global_words.hpp).
std::string root_option(const Context& ctx);

// Applies a plan as one journaled generation under the journal's lock and
// says what was done, how to undo it and what comes next (cli/cmd_apply.cpp).
int commit_plan(Context& ctx, const apply::Journal& journal, const plan::Plan& p);

// The newest active generation, when it is a trial (apply --trial) that
// nobody confirmed yet (confirm makes a newer, normal generation).
std::optional<apply::Manifest> active_trial(const apply::Journal& journal);

// Before a new generation (apply, kernel pin/unpin/trial): an interrupted generation or
// an unconfirmed trial refuses it (Errc::precondition, exit 3), with the way out and
// "then AGAIN"; under --dry-run the interrupted one is a warning and the trial no refusal.
void refuse_unfinished(const Context& ctx, const apply::Journal& journal, bool dry_run, std::string_view again);

// Asks "QUESTION ROOT? [y/N]" on stderr (ROOT: "this host" or the --root
// directory) and reads the answer; true for y/yes. Without a terminal on
// standard input it refuses (Errc::usage, exit 2) with the --yes hint:
// apply and rollback never change a host unasked.
bool ask_confirmation(const Context& ctx, std::string_view command, std::string_view question);

// Prints the commands the runner recorded instead of running (under --root).
void print_recorded_commands(const Context& ctx);

} // namespace passthru::cli
