// SPDX-License-Identifier: GPL-2.0-or-later
// passthru kernel check [KVER...] [--json] [--hook]: for each installed kernel (default: every
// one a boot entry can start), whether passthrough will work when it boots (kernel/check.hpp).
// Exit 0 when every checked kernel is fine, 11 when one would break passthrough. --hook (one
// KVER, what helpers/kernel-postinst runs) also applies /etc/passthru/kernel.conf
// (kernel/policy.hpp): on-break = pin pins the last good kernel.
// passthru kernel pin KVER / unpin [--dry-run] [--yes] [--skip-check]: the default boot
// entry, as one journaled generation (kernel/pin.hpp). passthru kernel trial KVER: boots KVER
// once through the trial machinery; 'passthru confirm' on that boot pins it.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "apply/journal.hpp"
#include "apply/rollback.hpp"
#include "apply/verify.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "cli/plan_render.hpp"
#include "kernel/check.hpp"
#include "kernel/pin.hpp"
#include "kernel/policy.hpp"
#include "plan/trial.hpp"
#include "scan/boot_loader.hpp"
#include "util/strings.hpp"

namespace passthru::cli {

void kernel_options(po::options_description& options)
{
    options.add_options()("json", "check: print the verdicts as one JSON document (schema passthru.kernel-check/1)")(
        "hook", "check: run as the kernel hook does (one KVER): also apply /etc/passthru/kernel.conf, whose on-break = pin pins the "
                "last good kernel when KVER would break passthrough")("dry-run",
                                                                      "pin, unpin, trial: show the diff and the commands, write nothing")(
        "yes,y", "pin, unpin, trial: do not ask for confirmation (needed when standard input is not a terminal)")(
        "skip-check", "pin, trial: go on even though 'kernel check' says KVER would break passthrough")(
        "trial-minutes", po::value<int>()->value_name("MIN"),
        "trial: reboot into the default entry this many minutes after the trial boot unless confirmed (default 10)");
}

namespace {

int print_json(const std::vector<kernel::KernelVerdict>& verdicts)
{
    nlohmann::json kernels = nlohmann::json::array();
    bool all_ok = true;
    for (const auto& v : verdicts) {
        nlohmann::json problems = nlohmann::json::array();
        for (const auto& p : v.problems) {
            problems.push_back({{"check", p.check}, {"what", p.what}, {"fix", p.fix}});
        }
        kernels.push_back({{"release", v.release}, {"running", v.running}, {"ok", v.ok()}, {"problems", problems}, {"notes", v.notes}});
        all_ok = all_ok && v.ok();
    }
    const nlohmann::json doc{{"schema", "passthru.kernel-check/1"}, {"ok", all_ok}, {"kernels", kernels}};
    std::fputs((doc.dump(2) + "\n").c_str(), stdout);
    return all_ok ? exit_code::ok : exit_code::kernel_breaks;
}

int print_text(const Context& ctx, const std::vector<kernel::KernelVerdict>& verdicts)
{
    std::size_t broken = 0;
    for (const auto& v : verdicts) {
        const std::string name = v.release + (v.running ? " (running)" : "");
        if (v.ok()) {
            std::printf("%s: %s\n", name.c_str(), util::styled("ok", util::Style::green, ctx.color_out).c_str());
        } else {
            ++broken;
            std::printf("%s: %s\n", name.c_str(), util::styled("breaks passthrough", util::Style::red, ctx.color_out).c_str());
            for (const auto& p : v.problems) {
                std::printf("  - %s\n    fix: %s\n", p.what.c_str(), p.fix.c_str());
            }
        }
        for (const auto& n : v.notes) {
            std::printf("  note: %s\n", n.c_str());
        }
    }
    std::fflush(stdout);
    if (broken != 0) {
        std::fprintf(stderr, "passthru: error: %zu of %zu kernel(s) would break passthrough; see the fixes above\n", broken,
                     verdicts.size());
        return exit_code::kernel_breaks;
    }
    return exit_code::ok;
}

// What a kernel action reads: the data directory and the scan, once.
struct KernelInputs
{
    data::DataDir data;
    scan::Inventory inventory;
};

KernelInputs read_inputs(const Context& ctx)
{
    data::DataDir data(ctx.fs, ctx.global.data_dir);
    scan::Inventory inventory = scan_with_data(ctx, data);
    return {std::move(data), std::move(inventory)};
}

std::vector<kernel::KernelVerdict> verdicts_for(const Context& ctx, const KernelInputs& in, const std::vector<std::string>& releases)
{
    kernel::CheckInputs inputs;
    auto regressions = data::load_kernel_regressions(in.data);
    if (!regressions) {
        throw regressions.error();
    }
    inputs.regressions = std::move(*regressions);
    const apply::Journal journal(ctx.fs);
    if (const auto configuring = apply::newest_configuring(apply::active_generations(journal.load_all()))) {
        inputs.functions = apply::target_of_generation(*configuring).functions;
    }
    auto verdicts = kernel::check_kernels(ctx.fs, in.inventory, in.data, inputs, releases);
    if (!verdicts) {
        throw verdicts.error();
    }
    return std::move(*verdicts);
}

// Shows a pin or unpin plan and applies it as one generation, as apply does a plan.
int apply_kernel_plan(Context& ctx, const po::variables_map& vm, const plan::Plan& p, std::string_view command, bool asked)
{
    const bool dry_run = vm.count("dry-run") != 0U;
    const apply::Journal journal(ctx.fs);
    refuse_unfinished(ctx, journal, dry_run, std::string(command) + " again");
    std::fputs(render_plan(p, RenderOptions{ctx.color_out, true}).c_str(), stdout);
    std::fflush(stdout);
    if (p.empty()) {
        const bool pin = p.request.kernel && p.request.kernel->action == plan::KernelAction::pin;
        std::printf("Nothing to do: %s (no generation created).\n",
                    pin ? ("kernel " + p.request.kernel->release + " is pinned already").c_str() : "no kernel is pinned");
        return exit_code::ok;
    }
    if (dry_run) {
        print_note(ctx, "dry run: nothing was written");
        return exit_code::ok;
    }
    if (!asked && vm.count("yes") == 0U && !ask_confirmation(ctx, command, "Change the default kernel of")) {
        std::fprintf(stderr, "passthru: not changed; nothing was written\n");
        return exit_code::error;
    }
    return commit_plan(ctx, journal, p);
}

// Prints why `release` is refused and returns exit 11.
int refuse_broken(const kernel::KernelVerdict& v, std::string_view what)
{
    std::fprintf(stderr, "passthru: error: refused: %s %s: it would break passthrough: %s\n", std::string(what).c_str(), v.release.c_str(),
                 v.problems.front().what.c_str());
    for (const auto& p : v.problems) {
        std::fprintf(stderr, "  hint: %s\n", p.fix.c_str());
    }
    std::fprintf(stderr, "  hint: 'passthru kernel check %s' shows every problem; --skip-check pins it anyway\n", v.release.c_str());
    return exit_code::kernel_breaks;
}

int run_pin(Context& ctx, const po::variables_map& vm, const std::vector<std::string>& words)
{
    if (words.size() != 2) {
        throw Error(Errc::usage, "kernel pin takes one kernel release; usage: passthru [--root DIR] kernel pin KVER [--dry-run] [--yes]")
            .with_hint("'passthru kernel check' lists the installed kernels");
    }
    if (vm.count("dry-run") == 0U) {
        require_root(ctx, "kernel pin");
    }
    const KernelInputs in = read_inputs(ctx);
    auto made = kernel::plan_pin(ctx.fs, in.inventory, in.data, words[1]);
    if (!made) {
        throw made.error();
    }
    if (vm.count("skip-check") == 0U) {
        const auto verdicts = verdicts_for(ctx, in, {words[1]});
        if (!verdicts.front().ok()) {
            return refuse_broken(verdicts.front(), "kernel pin");
        }
    }
    return apply_kernel_plan(ctx, vm, *made, "kernel pin", false);
}

int run_unpin(Context& ctx, const po::variables_map& vm, const std::vector<std::string>& words)
{
    if (words.size() != 1) {
        throw Error(Errc::usage, "kernel unpin takes no kernel release; usage: passthru [--root DIR] kernel unpin [--dry-run] [--yes]");
    }
    if (vm.count("dry-run") == 0U) {
        require_root(ctx, "kernel unpin");
    }
    const KernelInputs in = read_inputs(ctx);
    auto made = kernel::plan_unpin(ctx.fs, in.inventory, in.data);
    if (!made) {
        throw made.error();
    }
    return apply_kernel_plan(ctx, vm, *made, "kernel unpin", false);
}

int run_trial(Context& ctx, const po::variables_map& vm, const std::vector<std::string>& words)
{
    if (words.size() != 2) {
        throw Error(Errc::usage,
                    "kernel trial takes one kernel release; usage: passthru [--root DIR] kernel trial KVER [--trial-minutes N] "
                    "[--dry-run] [--yes]");
    }
    const int minutes = vm.count("trial-minutes") != 0U ? vm["trial-minutes"].as<int>() : plan::k_trial_default_minutes;
    if (minutes < 2 || minutes > 1440) {
        throw Error(Errc::usage, "--trial-minutes must be between 2 and 1440, not " + std::to_string(minutes));
    }
    if (vm.count("dry-run") == 0U) {
        require_root(ctx, "kernel trial");
    }
    const KernelInputs in = read_inputs(ctx);
    const apply::Journal journal(ctx.fs);
    auto made = kernel::plan_kernel_trial(ctx.fs, in.inventory, in.data, words[1], minutes,
                                          apply::newest_configuring(apply::active_generations(journal.load_all())));
    if (!made) {
        throw made.error();
    }
    if (vm.count("skip-check") == 0U) {
        const auto verdicts = verdicts_for(ctx, in, {words[1]});
        if (!verdicts.front().ok()) {
            return refuse_broken(verdicts.front(), "kernel trial");
        }
    }
    return apply_kernel_plan(ctx, vm, *made, "kernel trial", false);
}

// on-break = pin: the running kernel, when it is another one and passes its own check,
// becomes the default. Says what it did or why not; never throws.
void hook_pin(Context& ctx, const po::variables_map& vm, const KernelInputs& in, const std::string& broken)
{
    const auto say = [](const std::string& text) {
        std::printf("passthru: on-break = pin (%s): %s\n", kernel::k_policy_file.data(), text.c_str());
        std::fflush(stdout);
    };
    try {
        const auto& good = in.inventory.host.kernel;
        if (!good || *good == broken) {
            say("nothing pinned: there is no other running kernel to keep booting");
            return;
        }
        if (kernel::pinned_kernel(ctx.fs) == good) {
            say("kernel " + *good + " is pinned already; " + broken + " is not booted by default");
            return;
        }
        const auto verdicts = verdicts_for(ctx, in, {*good});
        if (!verdicts.front().ok()) {
            say("nothing pinned: the running kernel " + *good + " fails its own check too (" + verdicts.front().problems.front().what
                + ")");
            return;
        }
        require_root(ctx, "kernel pin");
        auto made = kernel::plan_pin(ctx.fs, in.inventory, in.data, *good);
        if (!made) {
            say("nothing pinned: " + std::string(made.error().what()));
            return;
        }
        say("pinning the running kernel " + *good + ", the last good one, so that " + broken + " is not booted by default");
        if (apply_kernel_plan(ctx, vm, *made, "kernel pin", true) == exit_code::ok) {
            say("kernel " + *good + " is pinned; once " + broken + " passes 'passthru kernel check " + broken
                + "', run 'passthru kernel unpin' (or 'passthru rollback')");
        }
    } catch (const Error& e) {
        say("nothing pinned: " + std::string(e.what()));
    }
}

int run_check(Context& ctx, const po::variables_map& vm, const std::vector<std::string>& words)
{
    const bool hook = vm.count("hook") != 0U;
    std::vector<std::string> releases(words.begin() + 1, words.end());
    if (hook && (releases.size() != 1 || vm.count("json") != 0U)) {
        throw Error(Errc::usage, "kernel check --hook checks one kernel, in text; usage: passthru kernel check --hook KVER");
    }
    for (const auto& r : releases) {
        if (auto ok = scan::check_release_word(ctx.fs, r); !ok) {
            throw ok.error();
        }
    }
    if (releases.empty()) {
        releases = scan::bootable_kernels(ctx.fs);
        if (releases.empty()) {
            throw Error(Errc::not_found, "no installed kernel: no /lib/modules/RELEASE has a /boot/vmlinuz-RELEASE")
                .with_hint("name the kernels: passthru kernel check KVER...");
        }
    }
    kernel::KernelPolicy policy;
    if (hook) {
        // A broken policy file must not stop the verdict: it is said, and the default used.
        if (auto loaded = kernel::load_policy(ctx.fs)) {
            policy = *loaded;
        } else {
            print_warning(ctx, std::string(loaded.error().what()) + "; using on-break = warn");
        }
    }
    const KernelInputs in = read_inputs(ctx);
    const auto verdicts = verdicts_for(ctx, in, releases);
    if (vm.count("json") != 0U) {
        return print_json(verdicts);
    }
    const int rc = print_text(ctx, verdicts);
    if (hook && rc == exit_code::kernel_breaks && policy.on_break == kernel::OnBreak::pin) {
        hook_pin(ctx, vm, in, releases.front());
    }
    return rc;
}

// The options that belong to one action only.
void check_options_fit(const po::variables_map& vm, const std::string& action)
{
    const std::vector<std::pair<const char*, std::vector<std::string>>> owners{
        {"json", {"check"}},
        {"hook", {"check"}},
        {"dry-run", {"pin", "unpin", "trial"}},
        {"yes", {"pin", "unpin", "trial"}},
        {"skip-check", {"pin", "trial"}},
        {"trial-minutes", {"trial"}},
    };
    for (const auto& [option, actions] : owners) {
        if (vm.count(option) != 0U && std::find(actions.begin(), actions.end(), action) == actions.end()) {
            throw Error(Errc::usage, "kernel " + action + ": --" + option + " goes with kernel " + util::join(actions, " or "));
        }
    }
}

} // namespace

int run_kernel(Context& ctx, const po::variables_map& vm)
{
    const auto words = vm.count(k_operand_key) != 0U ? vm[k_operand_key].as<std::vector<std::string>>() : std::vector<std::string>{};
    const std::string usage = "usage: passthru [--root DIR] kernel check [KVER...] | pin KVER | unpin | trial KVER";
    if (words.empty()) {
        throw Error(Errc::usage, "kernel: say what to do: check [KVER...], pin KVER, unpin or trial KVER")
            .with_hint("e.g. passthru kernel check");
    }
    const std::string& action = words.front();
    using Action = int (*)(Context&, const po::variables_map&, const std::vector<std::string>&);
    const std::vector<std::pair<std::string_view, Action>> actions{
        {"check", run_check}, {"pin", run_pin}, {"unpin", run_unpin}, {"trial", run_trial}};
    for (const auto& [name, run] : actions) {
        if (action == name) {
            check_options_fit(vm, action);
            return run(ctx, vm, words);
        }
    }
    throw Error(Errc::usage, "kernel: unknown action '" + action.substr(0, 40) + "'; " + usage);
}

} // namespace passthru::cli
