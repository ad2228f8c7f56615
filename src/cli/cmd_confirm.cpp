// SPDX-License-Identifier: GPL-2.0-or-later
// Placeholder until the confirm command lands; it refuses instead of pretending.
#include "cli/commands.hpp"

namespace passthru::cli {

void confirm_options(po::options_description& /*options*/) {}

int run_confirm(Context& /*ctx*/, const po::variables_map& /*vm*/)
{
    throw Error(Errc::internal, "the 'confirm' command is not built yet");
}

} // namespace passthru::cli
