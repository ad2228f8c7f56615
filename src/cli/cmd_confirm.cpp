// SPDX-License-Identifier: GPL-2.0-or-later
// passthru confirm: keeps a network change applied with --apply-network
// --confirm-timeout. Run it from a new connection: that the connection works
// is what the guard waits to hear (apply/network_guard.hpp).
#include <cstdio>
#include <cstdlib>

#include "apply/network_guard.hpp"
#include "cli/commands.hpp"

namespace passthru::cli {

void confirm_options(po::options_description& /*options*/) {}

int run_confirm(Context& ctx, const po::variables_map& /*vm*/)
{
    // SSH_CONNECTION describes this machine's session, so it only means
    // something when the root is this machine.
    std::optional<std::string> ssh;
    if (ctx.fs.is_live()) {
        if (const char* env = std::getenv("SSH_CONNECTION"); env != nullptr) {
            ssh = env;
        }
    }
    auto done = apply::confirm_network(ctx.fs, ssh);
    if (!done) {
        Error err = done.error();
        if (err.code() == Errc::not_found) {
            err.with_hint("confirm answers a 'passthru apply --apply-network --confirm-timeout N' that is still waiting");
        }
        throw err;
    }
    std::puts("confirmed: the waiting apply keeps the new network configuration");
    return exit_code::ok;
}

} // namespace passthru::cli
