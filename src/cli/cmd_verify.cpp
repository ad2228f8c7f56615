// SPDX-License-Identifier: GPL-2.0-or-later
// passthru verify [--vm VMID] [--gpus LIST]: after the reboot, checks that
// the IOMMU is on, the planned kernel arguments are active, every selected
// function is on vfio-pci with no host driver in its group, /dev/vfio/<group>
// exists, VFIO takes each group on the live host (a note under --root), and
// the VM config passes the cards. What to check comes from
// --vm/--gpus, else from the newest active generation; the kernel arguments
// always from that generation, so `verify --vm N` checks all that plain
// verify does. A root whose running command line lacks the generation's
// kernel arguments has not booted with it: verify says so first and groups
// the failures per card. Exit 0 when all is well, 1 with the problems and
// their fixes, 3 when the IOMMU is off.
// verify --ct N checks container N's NVIDIA devices instead (apply/verify_ct.hpp):
// the nodes on the host and, when it runs, inside it through pct exec (lxc-attach
// where pct is missing). Exit 0, or 1 with the fixes.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>

#include "apply/journal.hpp"
#include "apply/rollback.hpp"
#include "apply/verify.hpp"
#include "apply/verify_ct.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "cli/global_words.hpp"
#include "plan/planner.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"
#include "util/strings.hpp"

namespace passthru::cli {

void verify_options(po::options_description& options)
{
    options.add_options()("vm", po::value<std::uint64_t>()->value_name("VMID"),
                          "check the cards VM VMID's config passes (hostpci entries)")(
        "gpus", po::value<std::string>()->value_name("SEL"), "check these cards: all, indexes from scan (0,2) or slots (0000:01:00)")(
        "ct", po::value<std::uint64_t>()->value_name("CTID"),
        "check container CTID's NVIDIA devices: the nodes on the host and, when it runs, inside it");
}

namespace {

std::vector<scan::PciAddress> select_gpus(const scan::Inventory& inv, const std::string& spec)
{
    auto cards = plan::select_cards(inv, spec);
    if (!cards) {
        throw cards.error();
    }
    std::vector<scan::PciAddress> out;
    for (const auto* card : *cards) {
        out.insert(out.end(), card->functions.begin(), card->functions.end());
    }
    return out;
}

// What to check: the functions of --vm's config and of --gpus, else those of
// the newest active generation; its kernel arguments in every case.
apply::VerifyTarget verify_target(const po::variables_map& vm, const scan::Inventory& inventory, const util::HostFs& fs,
                                  const std::optional<apply::Manifest>& newest)
{
    apply::VerifyTarget target;
    std::set<scan::PciAddress> seen;
    auto add = [&](const std::vector<scan::PciAddress>& fns) {
        for (const auto& f : fns) {
            if (seen.insert(f).second) {
                target.functions.push_back(f);
            }
        }
    };
    if (vm.count("vm") != 0U) {
        target.vmid = vm["vm"].as<std::uint64_t>();
        target.source = "VM " + std::to_string(*target.vmid);
        if (vm.count("gpus") == 0U) {
            auto fns = apply::vm_config_functions(inventory, fs, *target.vmid);
            if (!fns) {
                throw Error(Errc::not_found, fns.error().what()).with_hint("give --gpus to check cards without a VM config");
            }
            add(*fns);
            target.source += "'s config";
        }
    }
    if (vm.count("gpus") != 0U) {
        add(select_gpus(inventory, vm["gpus"].as<std::string>()));
        target.source += std::string(target.source.empty() ? "" : ", ") + "--gpus " + vm["gpus"].as<std::string>();
    }
    if (target.source.empty()) {
        if (!newest) {
            throw Error(Errc::usage, "nothing to verify: no applied generation, and neither --vm nor --gpus was given")
                .with_hint("e.g. passthru verify --vm 101, or apply a plan first");
        }
        return apply::target_of_generation(*newest);
    }
    if (newest) {
        target.kernel_args = newest->kernel_args;
        target.source += ", kernel arguments of generation " + std::to_string(newest->id);
    }
    return target;
}

// The kernel arguments generation `m` put on the command line that the
// running kernel (/proc/cmdline) lacks: all of them means that nothing has
// booted with its files yet (a copy of a tree, or before the reboot).
std::vector<std::string> args_not_booted(const scan::Inventory& inventory, const apply::Manifest& m)
{
    const auto running = util::split(inventory.host.cmdline.value_or(""), " \t\n");
    std::vector<std::string> missing;
    for (const auto& arg : m.kernel_args) {
        if (std::find(running.begin(), running.end(), arg) == running.end()) {
            missing.push_back(arg);
        }
    }
    return missing;
}

// The card (domain:bus:slot) a check is about, from the PCI function that
// starts its text ("0000:01:00.1 is bound to ..."); empty for host-wide checks.
std::string card_of(const std::string& what)
{
    const auto addr = scan::PciAddress::parse(what.substr(0, what.find(' ')));
    if (!addr) {
        return {};
    }
    const std::string a = addr->str();
    return a.substr(0, a.rfind('.'));
}

// The failures, each card's under one heading when `per_card` (an unbooted root).
std::size_t print_checks(const Context& ctx, const apply::VerifyReport& report, bool per_card)
{
    std::size_t failed = 0;
    std::string card; // the heading printed last
    for (const auto& c : report.checks) {
        const std::string this_card = per_card && !c.ok && !c.note ? card_of(c.what) : std::string();
        if (!this_card.empty() && this_card != card) {
            std::printf("  card %s:\n", this_card.c_str());
        }
        card = this_card;
        const std::string indent = this_card.empty() ? "  " : "    ";
        if (c.note) {
            std::printf("  %s %s\n", util::styled("note", util::Style::yellow, ctx.color_out).c_str(), c.what.c_str());
        } else if (c.ok) {
            std::printf("  %s %s\n", util::styled("ok  ", util::Style::green, ctx.color_out).c_str(), c.what.c_str());
        } else {
            ++failed;
            std::printf("%s%s %s\n", indent.c_str(), util::styled("FAIL", util::Style::red, ctx.color_out).c_str(), c.what.c_str());
            std::printf("%s     fix: %s\n", indent.c_str(), with_global_words(c.fix).c_str());
        }
    }
    return failed;
}

// Runs argv inside container `id`: pct exec, or lxc-attach where pct is not installed.
apply::CtExec container_exec(const Context& ctx, const std::string& id)
{
    if (!ctx.fs.is_live()) {
        return {};
    }
    return [&ctx, id](const std::vector<std::string>& argv) -> Result<util::CommandResult> {
        std::vector<std::string> pct{"pct", "exec", id, "--"};
        pct.insert(pct.end(), argv.begin(), argv.end());
        auto r = ctx.runner.query(pct);
        if (r || r.error().code() != Errc::not_found) {
            return r;
        }
        std::vector<std::string> attach{"lxc-attach", "-n", id, "--"};
        attach.insert(attach.end(), argv.begin(), argv.end());
        return ctx.runner.query(attach);
    };
}

int run_verify_ct(Context& ctx, const po::variables_map& vm)
{
    if (vm.count("vm") != 0U || vm.count("gpus") != 0U) {
        throw Error(Errc::usage, "verify --ct checks one container: give it without --vm and --gpus")
            .with_hint("e.g. passthru verify --ct 105, and passthru verify --vm 101 for the VM");
    }
    const std::uint64_t ctid = vm["ct"].as<std::uint64_t>();
    if (ctid < 100 || ctid > 999999999) {
        throw Error(Errc::usage, "--ct " + std::to_string(ctid) + ": a container id is a number from 100 to 999999999");
    }
    const data::DataDir data(ctx.fs, ctx.global.data_dir);
    const scan::Inventory inventory = scan_with_data(ctx, data);
    auto report = apply::verify_container(inventory, ctx.fs, ctid, container_exec(ctx, std::to_string(ctid)));
    if (!report) {
        throw Error(report.error()).with_hint("pct list shows the containers of this node");
    }
    std::printf("Verifying container %llu's NVIDIA devices\n", static_cast<unsigned long long>(ctid));
    const std::size_t failed = print_checks(ctx, *report, false);
    if (failed != 0) {
        std::fprintf(stderr, "passthru: error: %zu check(s) failed; see the fixes above\n", failed);
        return exit_code::error;
    }
    std::printf("Everything is ready: container %llu has its NVIDIA devices.\n", static_cast<unsigned long long>(ctid));
    return exit_code::ok;
}

} // namespace

int run_verify(Context& ctx, const po::variables_map& vm)
{
    if (vm.count("ct") != 0U) {
        return run_verify_ct(ctx, vm);
    }
    const data::DataDir data(ctx.fs, ctx.global.data_dir);
    const scan::Inventory inventory = scan_with_data(ctx, data);
    const apply::Journal journal(ctx.fs);
    const auto active = apply::active_generations(journal.load_all());
    const std::optional<apply::Manifest> newest = apply::newest_configuring(active);
    const apply::VerifyTarget target = verify_target(vm, inventory, ctx.fs, newest);
    const auto report = apply::verify_host(inventory, ctx.fs, target);
    // First: whether anything booted with the files checked.
    const std::vector<std::string> unbooted = newest ? args_not_booted(inventory, *newest) : std::vector<std::string>{};
    const bool not_booted = !unbooted.empty() && unbooted.size() == newest->kernel_args.size();
    if (not_booted) {
        std::printf("Not booted with generation %llu: the running kernel's command line (/proc/cmdline%s) lacks %s, which it "
                    "added.\n  Nothing has booted with these files yet: the checks below show what a boot has not taken up.\n",
                    static_cast<unsigned long long>(newest->id), ctx.fs.is_live() ? "" : (" under " + ctx.fs.root().string()).c_str(),
                    util::join(unbooted, " ").c_str());
    }
    std::printf("Verifying %s\n", target.source.c_str());
    const bool trial = inventory.host.cmdline && scan::is_trial_boot(*inventory.host.cmdline);
    if (trial) {
        std::printf("  trial boot: this boot came from the passthru trial entry (%s on the command line); the default entry is "
                    "unchanged\n",
                    scan::k_trial_marker.data());
    }
    const std::size_t failed = print_checks(ctx, report, not_booted);
    if (!report.iommu_on) {
        std::fprintf(stderr, "passthru: error: the IOMMU is off, so no device can be passed through\n");
        return exit_code::refused;
    }
    if (failed != 0) {
        std::fprintf(stderr, "passthru: error: %zu check(s) failed; see the fixes above\n", failed);
        if (not_booted) {
            // The same verify again: with the --vm and --gpus given.
            const std::string again = (vm.count("vm") != 0U ? " --vm " + std::to_string(vm["vm"].as<std::uint64_t>()) : std::string())
                                      + (vm.count("gpus") != 0U ? " --gpus " + util::shell_quote({vm["gpus"].as<std::string>()}) : "");
            std::fprintf(stderr, "hint: reboot with generation %llu first%s, then run 'passthru%s verify%s' again\n",
                         static_cast<unsigned long long>(newest->id), ctx.fs.is_live() ? "" : " (this is a tree, not a booted host)",
                         global_words().c_str(), again.c_str());
        }
        if (trial) {
            std::fprintf(stderr,
                         "hint: a trial boot: do not confirm it; 'passthru%s rollback', or reboot into the unchanged default entry\n",
                         global_words().c_str());
        }
        return exit_code::error;
    }
    if (trial) {
        std::printf("%s\n", with_global_words(
                                "Everything is ready on this trial boot: 'passthru confirm' makes it the default (or 'passthru rollback').")
                                .c_str());
        return exit_code::ok;
    }
    std::printf("Everything is ready: start the VM.\n");
    return exit_code::ok;
}

} // namespace passthru::cli
