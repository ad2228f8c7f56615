// SPDX-License-Identifier: GPL-2.0-or-later
// passthru confirm: answers what is waiting for it.
// - A network change applied with --apply-network --confirm-timeout: run it
//   from a new connection; that the connection works is what the guard waits
//   to hear (apply/network_guard.hpp).
// - A trial boot (apply --trial, plan/trial.hpp): on the trial boot, once
//   verify passes, the trial's configuration becomes the default as one more
//   journaled generation, and the trial entry and its watchdog go. A kernel
//   trial (passthru kernel trial KVER): KVER is pinned (kernel/pin.hpp).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "apply/journal.hpp"
#include "apply/network_guard.hpp"
#include "apply/rollback.hpp"
#include "apply/verify.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "cli/plan_render.hpp"
#include "cli/request_options.hpp"
#include "kernel/pin.hpp"
#include "plan/request.hpp"
#include "plan/trial.hpp"
#include "scan/boot_loader.hpp"

namespace passthru::cli {

namespace {

// confirm plans from the request the trial's manifest holds; an edited request would
// make another guest or other cards the default. The request is taken only as what the
// trial applied: its cards are the ones the generation recorded, and every guest config
// and mapping it changes is a file the trial wrote, the arguments it puts on the default
// entry are on the trial boot's command line, and it changes no network (a trial never does).
void check_trial_request(const apply::Manifest& m, const plan::Plan& made, const std::string& booted)
{
    const auto slots = [](const std::vector<plan::SelectedGpu>& gpus) {
        std::set<std::string> out;
        for (const auto& g : gpus) {
            out.insert(g.slot);
        }
        return out;
    };
    std::string why;
    if (slots(made.gpus) != slots(m.gpus)) {
        why = "its cards are not the ones the trial applied";
    }
    if (why.empty() && made.request.network) {
        why = "a trial changes no network, and this request does";
    }
    std::string words = " " + booted + " ";
    std::replace_if(
        words.begin(), words.end(), [](char c) { return c == '\n' || c == '\t'; }, ' ');
    for (const auto& arg : made.kernel_args.add) {
        if (why.empty() && words.find(" " + arg + " ") == std::string::npos) {
            why = "it puts " + arg + " on the command line, which the trial boot did not have";
        }
    }
    for (const auto& f : made.files) {
        const bool guest =
            f.path.starts_with("/etc/pve/qemu-server/") || f.path.starts_with("/etc/pve/lxc/") || f.path == plan::k_pci_mapping_file;
        const auto wrote = [&f](const apply::JournalFile& j) { return j.path == f.path; };
        if (why.empty() && guest && std::none_of(m.files.begin(), m.files.end(), wrote)) {
            why = "it changes " + f.path + ", which the trial did not write";
        }
    }
    if (!why.empty()) {
        throw Error(Errc::precondition, "not confirmed: the request in generation " + std::to_string(m.id) + "'s manifest (passthru plan "
                                            + request_to_options(made.request) + ") is not what that trial applied: " + why)
            .with_hint("the manifest was changed since the trial was applied; 'passthru rollback' removes the trial");
    }
}

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
    if (!made->refused()) {
        check_trial_request(m, *made, *inventory.host.cmdline);
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
