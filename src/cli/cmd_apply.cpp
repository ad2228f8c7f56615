// SPDX-License-Identifier: GPL-2.0-or-later
// Placeholder until the apply command lands; it refuses instead of pretending.
#include "cli/commands.hpp"

namespace passthru::cli {

void apply_options(po::options_description& /*options*/) {}

int run_apply(Context& /*ctx*/, const po::variables_map& /*vm*/)
{
    throw Error(Errc::internal, "the 'apply' command is not built yet");
}

} // namespace passthru::cli
