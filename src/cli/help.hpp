// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"

namespace passthru::cli {

// The one source of passthru's documentation. `passthru --help`,
// `passthru COMMAND --help`, the man page and the shell completions are all
// rendered from these tables and from the commands' own options_description
// (the man page and completions by packaging/docgen at build time), so they
// cannot drift apart.

// The global options (--root, --data-dir, --color, --help, --version).
void add_global_options(po::options_description& options);

struct ExitCodeDoc
{
    int code;
    std::string_view meaning;
};
// Every exit code passthru uses, in order.
const std::vector<ExitCodeDoc>& exit_code_docs();

struct CommandDoc
{
    std::string_view name;
    // Argument synopsis after the command name, e.g. "--vm VMID --gpus SEL [OPTIONS]".
    std::string_view synopsis;
    // Plain text: paragraphs separated by an empty line; a line indented by
    // two spaces is literal (an example), shown as is.
    std::string_view description;
    // What the command does on SIGHUP, SIGINT and SIGTERM (one paragraph).
    std::string_view signals;
};
// The long description of a command; nullptr when the table lacks it (a
// build fails in passthru_docgen when a command lacks one).
const CommandDoc* command_doc(std::string_view name);

// "passthru [--root DIR] COMMAND SYNOPSIS": the first line of the command's
// help, also in the one-line usage errors.
std::string usage_line(std::string_view command);

// `passthru --help` and `passthru COMMAND --help`.
std::string main_help(const po::options_description& global);
// An options block as help shows it: "  --vm VMID   text" (value names, not
// "arg"; "-y, --yes"), the text wrapped at words to 80 columns.
std::string options_text(std::string_view caption, const po::options_description& options);
// " (did you mean --gpus?)" when TYPED ("--gpu") is one or two edits from one
// of the long options in OPTIONS; "" otherwise.
std::string did_you_mean(const std::string& typed, const po::options_description& options);
std::string command_help(const Command& command, const po::options_description& options, const po::options_description& global);

} // namespace passthru::cli
