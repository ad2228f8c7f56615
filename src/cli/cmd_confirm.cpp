// SPDX-License-Identifier: GPL-2.0-or-later
// passthru confirm: answers what is waiting for it.
// - A network change applied with --apply-network --confirm-timeout: run it
//   from a new connection; that the connection works is what the guard waits
//   to hear (apply/network_guard.hpp).
// - A trial boot (apply --trial, plan/trial.hpp): on the trial boot, once
//   verify passes, the trial's configuration becomes the default as one more
//   journaled generation, and the trial entry and its watchdog go. A kernel
//   trial (passthru kernel trial KVER): KVER is pinned (kernel/pin.hpp).
#include <cstdio>
#include <cstdlib>

#include "apply/journal.hpp"
#include "apply/network_guard.hpp"
#include "apply/rollback.hpp"
#include "apply/verify.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "cli/plan_render.hpp"
#include "kernel/pin.hpp"
#include "plan/request.hpp"
#include "plan/trial.hpp"
#include "scan/boot_loader.hpp"

namespace passthru::cli {

namespace {

int confirm_trial(Context& ctx, const apply::Journal& journal, const apply::Manifest& m)
{
    const data::DataDir data(ctx.fs, ctx.global.data_dir);
    const scan::Inventory inventory = scan_with_data(ctx, data);
    const std::string gen = "generation " + std::to_string(m.id);
    if (!inventory.host.cmdline || !scan::is_trial_boot(*inventory.host.cmdline)) {
        throw Error(Errc::precondition, "not confirmed: this is not the trial boot of " + gen + " (no " + std::string(scan::k_trial_marker)
                                            + " on /proc/cmdline)")
            .with_hint("boot into the trial ('" + plan::trial_boot_again(inventory.host.bootloader)
                       + "', then reboot), run 'passthru verify', then confirm; or 'passthru rollback'");
    }
    const auto report = apply::verify_host(inventory, ctx.fs, apply::target_of_generation(m));
    if (!report.all_ok()) {
        std::string first;
        for (const auto& c : report.checks) {
            if (!c.ok) {
                first = c.what;
                break;
            }
        }
        throw Error(Errc::precondition, "not confirmed: verify fails on this trial boot: " + first)
            .with_hint("'passthru verify' shows every check; 'passthru rollback' removes the trial, and the watchdog or a reboot "
                       "brings back the unchanged default entry");
    }
    if (!m.request) {
        throw Error(Errc::parse, gen + ": its request cannot be read: not a valid passthru request: request must be an object");
    }
    if (m.request->kernel) {
        // A kernel trial (passthru kernel trial KVER): the kernel becomes the pinned default.
        auto pinned = kernel::plan_kernel_trial_confirm(ctx.fs, inventory, data, m.request->kernel->release);
        if (!pinned) {
            throw pinned.error();
        }
        std::fputs(render_plan(*pinned, RenderOptions{ctx.color_out, true}).c_str(), stdout);
        std::fflush(stdout);
        return commit_plan(ctx, journal, *pinned);
    }
    if (auto valid = plan::validate_request(*m.request); !valid) {
        throw Error(Errc::parse,
                    gen + ": its request cannot be read: not a valid passthru request: request: " + std::string(valid.error().what()));
    }
    auto made = plan::make_confirm_plan(inventory, ctx.fs, data, in_session(ctx, *m.request));
    if (!made) {
        throw made.error();
    }
    std::fputs(render_plan(*made, RenderOptions{ctx.color_out, true}).c_str(), stdout);
    std::fflush(stdout);
    if (made->refused()) {
        throw Error(Errc::precondition, "not confirmed: " + made->refusals.front().message);
    }
    return commit_plan(ctx, journal, *made);
}

} // namespace

void confirm_options(po::options_description& /*options*/) {}

int run_confirm(Context& ctx, const po::variables_map& /*vm*/)
{
    const apply::Journal journal(ctx.fs);
    if (auto trial = active_trial(journal)) {
        require_root(ctx, "confirm");
        return confirm_trial(ctx, journal, *trial);
    }
    auto done = apply::confirm_network(ctx.fs, ctx.ssh_connection);
    if (!done) {
        Error err = done.error();
        if (err.code() == Errc::not_found) {
            err.with_hint("confirm answers a 'passthru apply --apply-network --confirm-timeout N' that is still waiting, or a trial "
                          "boot ('passthru apply --trial')");
        }
        throw err;
    }
    std::puts("confirmed: the waiting apply keeps the new network configuration");
    return exit_code::ok;
}

} // namespace passthru::cli
