// SPDX-License-Identifier: GPL-2.0-or-later
// Placeholder until the rollback command lands; it refuses instead of pretending.
#include "cli/commands.hpp"

namespace passthru::cli {

void rollback_options(po::options_description& /*options*/) {}

int run_rollback(Context& /*ctx*/, const po::variables_map& /*vm*/)
{
    throw Error(Errc::internal, "the 'rollback' command is not built yet");
}

} // namespace passthru::cli
