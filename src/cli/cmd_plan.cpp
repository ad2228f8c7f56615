// SPDX-License-Identifier: GPL-2.0-or-later
// Placeholder until the plan command lands; it refuses instead of pretending.
#include "cli/commands.hpp"

namespace passthru::cli {

void plan_options(po::options_description& /*options*/) {}

int run_plan(Context& /*ctx*/, const po::variables_map& /*vm*/)
{
    throw Error(Errc::internal, "the 'plan' command is not built yet");
}

} // namespace passthru::cli
