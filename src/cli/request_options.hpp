// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "cli/commands.hpp"
#include "plan/plan.hpp"

namespace passthru::cli {

// The request options shared by `plan` and `apply` (defined once so they
// cannot drift): --vm, --gpus, --acs-override, --backend, --connect,
// --mapping, --profile and the bond/bridge options.
void add_request_options(po::options_description& options);
// True when any request option was given (apply: plan afresh vs --plan FILE).
bool has_request_options(const po::variables_map& vm);
// Parses and checks the syntax of the request (throws Error with Errc::usage).
// Facts that need the host (does the NIC exist?) are checked by the planner.
plan::Request parse_request(const po::variables_map& vm);
// The request as the command-line options that give it ("--vm 101 --gpus all
// --bond ..."), shell-quoted where needed; for "Apply with:" hints.
std::string request_to_options(const plan::Request& request);

} // namespace passthru::cli
