// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/card_state.hpp"

#include <algorithm>

#include "util/strings.hpp"

namespace passthru::scan {

namespace {

// Functions below the same bridge that belong to another slot: a secondary bus reset of
// that bridge resets them too.
std::vector<PciAddress> siblings_of(const Inventory& inventory, const PciDevice& dev)
{
    std::vector<PciAddress> out;
    for (const auto& d : inventory.devices) {
        if (d.parent == dev.parent && d.address.slot() != dev.address.slot()) {
            out.push_back(d.address);
        }
    }
    return out;
}

std::string describe_resets(const std::vector<std::string>& methods, const std::vector<PciAddress>& siblings)
{
    std::vector<std::string> parts;
    for (const auto& m : methods) {
        if (m != "bus") {
            parts.push_back(m);
            continue;
        }
        if (siblings.empty()) {
            parts.emplace_back("bus (the card alone on its bus)");
        } else {
            std::vector<std::string> names;
            names.reserve(siblings.size());
            for (const auto& s : siblings) {
                names.push_back(s.str());
            }
            parts.push_back("bus (also resets " + util::join(names, ", ") + ")");
        }
    }
    return parts.empty() ? "none" : util::join(parts, ", ");
}

} // namespace

CardState card_state(const Inventory& inventory, const GpuCard& card)
{
    const data::GpuProfile* profile = card.profile_row.get();
    CardState state;
    for (const auto& fn : card.functions) {
        const auto* d = inventory.find(fn);
        if (d == nullptr) {
            continue;
        }
        if (d->power_state == "D3cold") {
            state.stuck.push_back(fn.str() + " is in D3cold (powered down) and does not wake");
        }
        if (d->config_all_ones) {
            state.stuck.push_back(fn.str() + "'s config space reads all ones: the function does not answer");
        }
        for (const auto& t : inventory.ready_timeouts) {
            if (t.function == fn.str()) {
                state.stuck.push_back(fn.str() + " did not come back after " + t.event + " (kernel log since boot: \"" + t.message + "\")");
                state.reset_timed_out = true;
            }
        }
    }
    const auto* first = inventory.first_function(card);
    if (first != nullptr) {
        const bool bus = std::find(first->reset_methods.begin(), first->reset_methods.end(), "bus") != first->reset_methods.end();
        if (bus && first->parent) {
            state.bus_siblings = siblings_of(inventory, *first);
        }
        state.resets = describe_resets(first->reset_methods, state.bus_siblings);
        state.no_reset = first->reset_methods.empty();
    }
    state.fix = k_power_off_fix;
    if (profile != nullptr && profile->reset) {
        const auto& r = *profile->reset;
        state.fix += std::string(r.warm_reboot_resets ? "; for the " + profile->name + ", a warm reboot has been reported to reset it: "
                                                      : "; the " + profile->name + " is known for it: ")
                     + r.detail + " (" + r.source + ")";
    }
    return state;
}

} // namespace passthru::scan
