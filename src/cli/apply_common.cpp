// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/apply_common.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "apply/libvirt_apply.hpp"
#include "apply/rollback.hpp"
#include "cli/global_words.hpp"
#include "cli/root_guard.hpp"
#include "data/gpu_profile.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"

namespace passthru::cli {

void require_root(const Context& ctx, std::string_view command)
{
    if (ctx.fs.is_live() && ::geteuid() != 0) {
        throw Error(Errc::usage, "'passthru " + std::string(command) + "' changes the host and must run as root")
            .with_hint("run it with sudo, or give --root DIR to work on a copy of a host tree");
    }
    require_writable_root(ctx, command);
}

plan::Request in_session(const Context& ctx, plan::Request request)
{
    request.ssh_connection = ctx.ssh_connection;
    return request;
}

std::string root_option(const Context& /*ctx*/)
{
    return global_words();
}

bool ask_confirmation(const Context& ctx, std::string_view command, std::string_view question)
{
    if (::isatty(STDIN_FILENO) == 0) {
        throw Error(Errc::usage, "refusing to " + std::string(command) + " without confirmation: standard input is not a terminal")
            .with_hint("review what is shown above, then run again with --yes");
    }
    std::fflush(stdout);
    std::fprintf(stderr, "%.*s %s? [y/N] ", static_cast<int>(question.size()), question.data(),
                 ctx.fs.is_live() ? "this host" : ctx.fs.root().c_str());
    std::fflush(stderr);
    std::string line;
    if (!std::getline(std::cin, line)) {
        return false;
    }
    return line == "y" || line == "Y" || line == "yes";
}

std::optional<apply::Manifest> active_trial(const apply::Journal& journal)
{
    const auto active = apply::active_generations(journal.load_all());
    if (active.empty()) {
        return std::nullopt;
    }
    const auto& m = active.back();
    if (m.request && m.request->trial_minutes) {
        return m;
    }
    return std::nullopt;
}

void refuse_unfinished(const Context& ctx, const apply::Journal& journal, bool dry_run, std::string_view again)
{
    if (auto m = apply::find_interrupted(journal)) {
        Error err(Errc::precondition, "generation " + std::to_string(m->id) + " was interrupted and may have left the host half-changed");
        err.with_hint("run 'passthru rollback' to restore it first, then " + std::string(again));
        if (!dry_run) {
            throw err;
        }
        print_warning(ctx, err.what());
    }
    // A trial not yet confirmed keeps its watchdog: a new generation on top of
    // it would leave confirm nothing to confirm while the watchdog still reboots.
    if (auto trial = active_trial(journal); trial && !dry_run) {
        throw Error(Errc::precondition, "generation " + std::to_string(trial->id)
                                            + " is a trial boot that is not confirmed: its watchdog still reboots into the default entry")
            .with_hint("on the trial boot run 'passthru verify' and 'passthru confirm', or remove the trial with 'passthru rollback'; "
                       "then "
                       + std::string(again));
    }
}

apply::Progress cli_progress(const Context& ctx)
{
    apply::Progress p;
    const bool color = ctx.color_err;
    p.step = [color](std::string_view step) {
        std::fprintf(stderr, "passthru: %s\n", util::styled(step, util::Style::bold, color).c_str());
        std::fflush(stderr);
    };
    p.output = [](std::string_view line) {
        std::fprintf(stderr, "  | %.*s\n", static_cast<int>(line.size()), line.data());
        std::fflush(stderr);
    };
    return p;
}

void notice_interrupted(const Context& ctx, std::string_view command)
{
    if (command == "apply" || command == "rollback") {
        return;
    }
    const apply::Journal journal(ctx.fs);
    std::optional<apply::Manifest> m;
    try {
        m = apply::find_interrupted(journal);
    } catch (const Error& e) {
        print_warning(ctx, std::string("the journal cannot be used: ") + e.what());
        return;
    }
    if (!m) {
        return;
    }
    const std::string id = std::to_string(m->id);
    if (m->state == apply::GenerationState::pending) {
        print_warning(ctx, "generation " + id + " (" + std::string(apply::to_string(m->kind)) + ", started " + m->created
                               + ") was interrupted and may have left the host half-changed");
        std::fprintf(stderr, "hint: run 'passthru%s rollback' to restore every file it touched\n", global_words().c_str());
    } else {
        print_warning(ctx, "generation " + id + " could not be restored automatically: the host needs attention");
        for (const auto& step : m->manual_steps) {
            std::fprintf(stderr, "hint: %s\n", with_global_words(step).c_str());
        }
        std::fprintf(stderr, "hint: then run 'passthru%s rollback' to check and finish the restore\n", global_words().c_str());
    }
}

scan::Inventory scan_with_data(const Context& ctx, const data::DataDir& data)
{
    auto cutoffs = data::load_kernel_cutoffs(data);
    if (!cutoffs) {
        throw cutoffs.error();
    }
    auto vendors = data::load_gpu_vendors(data);
    if (!vendors) {
        throw vendors.error();
    }
    auto profiles = data::load_gpu_profiles(data);
    if (!profiles) {
        throw profiles.error();
    }
    auto inventory = scan::scan_host(ctx.fs, ctx.runner, {.cutoffs = *cutoffs, .vendors = *vendors, .gpu_profiles = std::move(*profiles)});
    if (!inventory) {
        throw inventory.error();
    }
    return std::move(*inventory);
}

const apply::DomainHooks& libvirt_hooks()
{
    static const apply::DomainHooks hooks{
        [](const std::string& uri, const std::string& xml) { return apply::define_domain_xml(uri, xml); },
        [](const plan::DomainChange& change) { return apply::restore_domain(change); },
    };
    return hooks;
}

void print_recorded_commands(const Context& ctx)
{
    if (ctx.runner.mode() != util::RunMode::record || ctx.runner.recorded().empty()) {
        return;
    }
    std::printf("Commands recorded, not run (--root %s):\n", ctx.fs.root().c_str());
    for (const auto& argv : ctx.runner.recorded()) {
        std::printf("  %s\n", util::shell_quote(argv).c_str());
    }
}

} // namespace passthru::cli
