// SPDX-License-Identifier: GPL-2.0-or-later
// passthru kernel check [KVER...] [--json]: for each installed kernel (default: every one a
// boot entry can start), whether passthrough will work when it boots (kernel/check.hpp).
// Exit 0 when every checked kernel is fine, 11 when one would break passthrough.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "apply/journal.hpp"
#include "apply/rollback.hpp"
#include "apply/verify.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "kernel/check.hpp"

namespace passthru::cli {

void kernel_options(po::options_description& options)
{
    options.add_options()("json", "print the verdicts as one JSON document (schema passthru.kernel-check/1)");
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
    if (broken != 0) {
        std::fprintf(stderr, "passthru: error: %zu of %zu kernel(s) would break passthrough; see the fixes above\n", broken,
                     verdicts.size());
        return exit_code::kernel_breaks;
    }
    return exit_code::ok;
}

int run_check(Context& ctx, const po::variables_map& vm, const std::vector<std::string>& words)
{
    std::vector<std::string> releases(words.begin() + 1, words.end());
    for (const auto& r : releases) {
        if (auto ok = kernel::check_release_word(ctx.fs, r); !ok) {
            throw ok.error();
        }
    }
    if (releases.empty()) {
        releases = kernel::bootable_kernels(ctx.fs);
        if (releases.empty()) {
            throw Error(Errc::not_found, "no installed kernel: no /lib/modules/RELEASE has a /boot/vmlinuz-RELEASE")
                .with_hint("name the kernels: passthru kernel check KVER...");
        }
    }
    const data::DataDir data(ctx.fs, ctx.global.data_dir);
    const scan::Inventory inventory = scan_with_data(ctx, data);
    kernel::CheckInputs inputs;
    auto regressions = data::load_kernel_regressions(data);
    if (!regressions) {
        throw regressions.error();
    }
    inputs.regressions = std::move(*regressions);
    const apply::Journal journal(ctx.fs);
    const auto active = apply::active_generations(journal.load_all());
    if (!active.empty()) {
        inputs.functions = apply::target_of_generation(active.back()).functions;
    }
    auto verdicts = kernel::check_kernels(ctx.fs, inventory, data, inputs, releases);
    if (!verdicts) {
        throw verdicts.error();
    }
    return vm.count("json") != 0U ? print_json(*verdicts) : print_text(ctx, *verdicts);
}

} // namespace

int run_kernel(Context& ctx, const po::variables_map& vm)
{
    const auto words = vm.count(k_operand_key) != 0U ? vm[k_operand_key].as<std::vector<std::string>>() : std::vector<std::string>{};
    if (words.empty()) {
        throw Error(Errc::usage, "kernel: say what to do: check [KVER...]").with_hint("e.g. passthru kernel check");
    }
    if (words.front() == "check") {
        return run_check(ctx, vm, words);
    }
    throw Error(Errc::usage, "kernel: unknown action '" + words.front() + "'; usage: passthru [--root DIR] kernel check [KVER...]");
}

} // namespace passthru::cli
