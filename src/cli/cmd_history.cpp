// SPDX-License-Identifier: GPL-2.0-or-later
// Placeholder until the history command lands; it refuses instead of pretending.
#include "cli/commands.hpp"

namespace passthru::cli {

void history_options(po::options_description& /*options*/) {}

int run_history(Context& /*ctx*/, const po::variables_map& /*vm*/)
{
    throw Error(Errc::internal, "the 'history' command is not built yet");
}

} // namespace passthru::cli
