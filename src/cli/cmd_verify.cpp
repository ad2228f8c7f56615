// SPDX-License-Identifier: GPL-2.0-or-later
// passthru verify [--vm VMID] [--gpus LIST]: after the reboot, checks that
// the IOMMU is on, the planned kernel arguments are active, every selected
// function is on vfio-pci with no host driver in its group, /dev/vfio/<group>
// exists, and the VM config passes the cards. What to check comes from
// --vm/--gpus, else from the newest active generation. Exit 0 when all is
// well, 1 with the problems and their fixes, 3 when the IOMMU is off.
#include <cstdio>
#include <set>

#include "apply/journal.hpp"
#include "apply/rollback.hpp"
#include "apply/verify.hpp"
#include "cli/commands.hpp"
#include "scan/scanner.hpp"
#include "util/strings.hpp"

namespace passthru::cli {

namespace {

std::vector<scan::PciAddress> select_gpus(const scan::Inventory& inv, const std::string& spec)
{
    std::vector<scan::PciAddress> out;
    auto add_card = [&](const scan::GpuCard& card) { out.insert(out.end(), card.functions.begin(), card.functions.end()); };
    if (spec == "all") { // as in plan: every NVIDIA card
        for (const auto& card : inv.gpus) {
            if (card.is_nvidia()) {
                add_card(card);
            }
        }
        if (out.empty()) {
            throw Error(Errc::usage, "--gpus all: this host has no NVIDIA GPU").with_hint("pass a card by its slot, e.g. --gpus 0000:04:00");
        }
        return out;
    }
    for (const auto& item : util::split(spec, ",")) {
        const auto index = util::parse_int(item);
        if (index && item.find_first_not_of("0123456789") == std::string::npos) {
            if (*index < 0 || static_cast<std::size_t>(*index) >= inv.gpus.size()) {
                throw Error(Errc::usage, "--gpus: there is no GPU " + item + " (scan lists " + std::to_string(inv.gpus.size()) + ")");
            }
            add_card(inv.gpus[static_cast<std::size_t>(*index)]);
            continue;
        }
        const auto slot = scan::parse_slot(item);
        const auto* card = slot ? inv.find_gpu(slot->slot()) : nullptr;
        if (card == nullptr) {
            throw Error(Errc::usage, "--gpus: '" + item + "' is not a GPU index or slot from 'passthru scan'");
        }
        add_card(*card);
    }
    return out;
}

} // namespace

void verify_options(po::options_description& options)
{
    options.add_options()
        ("vm", po::value<std::uint64_t>(), "check the cards VM VMID's config passes (hostpci entries)")
        ("gpus", po::value<std::string>(), "check these cards: all, indexes from scan (0,2) or slots (0000:01:00)");
}

int run_verify(Context& ctx, const po::variables_map& vm)
{
    auto inventory = scan::scan_host(ctx.fs, ctx.runner);
    if (!inventory) {
        throw inventory.error();
    }
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
            auto fns = apply::vm_config_functions(*inventory, ctx.fs, *target.vmid);
            if (!fns) {
                throw Error(Errc::not_found, fns.error().what()).with_hint("give --gpus to check cards without a VM config");
            }
            add(*fns);
            target.source += "'s config";
        }
    }
    if (vm.count("gpus") != 0U) {
        add(select_gpus(*inventory, vm["gpus"].as<std::string>()));
        target.source += std::string(target.source.empty() ? "" : ", ") + "--gpus " + vm["gpus"].as<std::string>();
    }
    if (target.source.empty()) {
        const apply::Journal journal(ctx.fs);
        const auto active = apply::active_generations(journal.load_all());
        if (active.empty()) {
            throw Error(Errc::usage, "nothing to verify: no applied generation, and neither --vm nor --gpus was given")
                .with_hint("e.g. passthru verify --vm 101, or apply a plan first");
        }
        const auto& m = active.back();
        target.source = "generation " + std::to_string(m.id);
        target.kernel_args = m.kernel_args;
        std::vector<scan::PciAddress> fns;
        for (const auto& g : m.gpus) {
            for (const auto& f : g.value("functions", std::vector<std::string>{})) {
                if (auto a = scan::PciAddress::parse(f)) {
                    fns.push_back(*a);
                }
            }
        }
        add(fns);
        if (m.request.is_object() && m.request.contains("vmid") && m.request["vmid"].is_number_unsigned()) {
            target.vmid = m.request["vmid"].get<std::uint64_t>();
        }
    }

    const auto report = apply::verify_host(*inventory, ctx.fs, target);
    std::printf("Verifying %s\n", target.source.c_str());
    std::size_t failed = 0;
    for (const auto& c : report.checks) {
        if (c.ok) {
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
        return exit_code::error;
    }
    std::printf("Everything is ready: start the VM.\n");
    return exit_code::ok;
}

} // namespace passthru::cli
