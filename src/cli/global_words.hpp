// SPDX-License-Identifier: GPL-2.0-or-later
// The global options a printed `passthru` command must carry to mean what
// this run meant: `--root DIR` (and `--data-dir DIR`) when given. Every
// command passthru tells the user to run next goes through here, so a hint
// made deep in the planner ("run 'passthru scan'") still names the tree in use.
#pragma once

#include <string>
#include <string_view>

namespace passthru::cli {

// Set once by main when the command's options are known: " --root DIR
// --data-dir DIR" (shell-quoted; each only when it changes the meaning), ""
// on the live host with the installed data.
void set_global_words(std::string words);
const std::string& global_words();

// TEXT with the global words put after every "passthru COMMAND" in it that
// is a command to run: a command name from the table, quoted ('passthru
// scan', "(passthru plan ...)"), or followed by an option, the end or
// punctuation ("e.g. passthru apply --vm 101"); prose such as "another
// passthru apply or rollback is running" stays. Unchanged when there are no
// words, or when they follow already.
std::string with_global_words(std::string_view text);

} // namespace passthru::cli
