// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string>

#include "cli/commands.hpp"

namespace passthru::cli {

// `passthru --help` and `passthru COMMAND --help`.
std::string main_help(const po::options_description& global);
std::string command_help(const Command& command, const po::options_description& options, const po::options_description& global);

} // namespace passthru::cli
