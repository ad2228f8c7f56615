// SPDX-License-Identifier: GPL-2.0-or-later
// passthru verify [--vm VMID] [--gpus LIST]: after the reboot, checks that
// the IOMMU is on, the planned kernel arguments are active, every selected
// function is on vfio-pci with no host driver in its group, /dev/vfio/<group>
// exists, VFIO takes each group on the live host (a note under --root), and
// the VM config passes the cards. What to check comes from
// --vm/--gpus, else from the newest active generation. Exit 0 when all is
// well, 1 with the problems and their fixes, 3 when the IOMMU is off.
#include <cstdio>
#include <set>

#include "apply/journal.hpp"
#include "apply/rollback.hpp"
#include "apply/verify.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "plan/planner.hpp"
#include "scan/scanner.hpp"
#include "util/strings.hpp"

namespace passthru::cli {

void verify_options(po::options_description& options)
{
    options.add_options()("vm", po::value<std::uint64_t>(), "check the cards VM VMID's config passes (hostpci entries)")(
        "gpus", po::value<std::string>(), "check these cards: all, indexes from scan (0,2) or slots (0000:01:00)");
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
// the newest active generation (with its kernel arguments).
apply::VerifyTarget verify_target(Context& ctx, const po::variables_map& vm, const scan::Inventory& inventory)
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
            auto fns = apply::vm_config_functions(inventory, ctx.fs, *target.vmid);
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
        const apply::Journal journal(ctx.fs);
        const auto active = apply::active_generations(journal.load_all());
        if (active.empty()) {
            throw Error(Errc::usage, "nothing to verify: no applied generation, and neither --vm nor --gpus was given")
                .with_hint("e.g. passthru verify --vm 101, or apply a plan first");
        }
        return apply::target_of_generation(active.back());
    }
    return target;
}

} // namespace

int run_verify(Context& ctx, const po::variables_map& vm)
{
    const data::DataDir data(ctx.fs, ctx.global.data_dir);
    const scan::Inventory inventory = scan_with_data(ctx, data);
    const apply::VerifyTarget target = verify_target(ctx, vm, inventory);
    const auto report = apply::verify_host(inventory, ctx.fs, target);
    std::printf("Verifying %s\n", target.source.c_str());
    const bool trial = inventory.host.cmdline && scan::is_trial_boot(*inventory.host.cmdline);
    if (trial) {
        std::printf("  trial boot: this boot came from the passthru trial entry (%s on the command line); the default entry is "
                    "unchanged\n",
                    scan::k_trial_marker.data());
    }
    std::size_t failed = 0;
    for (const auto& c : report.checks) {
        if (c.note) {
            std::printf("  %s %s\n", util::styled("note", util::Style::yellow, ctx.color_out).c_str(), c.what.c_str());
        } else if (c.ok) {
            std::printf("  %s %s\n", util::styled("ok  ", util::Style::green, ctx.color_out).c_str(), c.what.c_str());
        } else {
            ++failed;
            std::printf("  %s %s\n", util::styled("FAIL", util::Style::red, ctx.color_out).c_str(), c.what.c_str());
            std::printf("       fix: %s\n", c.fix.c_str());
        }
    }
    if (!report.iommu_on) {
        std::fprintf(stderr, "passthru: error: the IOMMU is off, so no device can be passed through\n");
        return exit_code::refused;
    }
    if (failed != 0) {
        std::fprintf(stderr, "passthru: error: %zu check(s) failed; see the fixes above\n", failed);
        if (trial) {
            std::fprintf(stderr,
                         "hint: a trial boot: do not confirm it; 'passthru rollback', or reboot into the unchanged default entry\n");
        }
        return exit_code::error;
    }
    if (trial) {
        std::printf("Everything is ready on this trial boot: 'passthru confirm' makes it the default (or 'passthru rollback').\n");
        return exit_code::ok;
    }
    std::printf("Everything is ready: start the VM.\n");
    return exit_code::ok;
}

} // namespace passthru::cli
