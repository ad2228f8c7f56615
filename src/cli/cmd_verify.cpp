// SPDX-License-Identifier: GPL-2.0-or-later
// Placeholder until the verify command lands; it refuses instead of pretending.
#include "cli/commands.hpp"

namespace passthru::cli {

void verify_options(po::options_description& /*options*/) {}

int run_verify(Context& /*ctx*/, const po::variables_map& /*vm*/)
{
    throw Error(Errc::internal, "the 'verify' command is not built yet");
}

} // namespace passthru::cli
