// SPDX-License-Identifier: GPL-2.0-or-later
// A selected card against its GPU profile (data/gpu_profile.hpp, the card's
// profile_row that scan set): its functions compared with its model's layout.
#include <algorithm>
#include <map>

#include "plan/plan_detail.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

std::string class_text(std::uint16_t class16)
{
    return util::hex(class16, 4);
}

// What a missing function means and what to do (docs/facts.md: nvidia).
std::string missing_advice(const scan::GpuCard& card, const ProfileFunction& f)
{
    std::string out;
    if (card.vendor_row != nullptr && card.vendor_row->hidden_audio && f.class16 == 0x0403) {
        out = "Linux 5.3 and later expose an " + card.vendor_row->name
              + " audio function that the firmware hid, so on this host it was "
                "most likely removed through sysfs, or this board has none. ";
    } else {
        out = "This board may not have it, or it was removed through sysfs. ";
    }
    return out
           + "A removed function comes back with 'echo 1 > /sys/bus/pci/rescan'; run 'passthru plan' again once "
             "'passthru scan' shows it, so the binding and the VM include it";
}

} // namespace

void check_function_layout(const scan::Inventory& inv, const scan::GpuCard& card, const std::string& label, Plan& plan)
{
    const GpuProfile* profile = card.profile_row.get();
    if (profile == nullptr || profile->functions.empty()) {
        return;
    }
    const std::string source = "the profile " + profile->file;
    std::map<int, const scan::PciDevice*> shown;
    for (const auto& addr : card.functions) {
        shown[addr.function] = inv.find(addr);
    }
    for (const auto& f : profile->functions) {
        const std::string expected = "function " + std::to_string(f.function) + " (" + f.role + ", class " + class_text(f.class16) + ")";
        const auto it = shown.find(f.function);
        if (it == shown.end()) {
            plan.warnings.push_back(label + ": " + source + " lists " + expected + ", but the host shows no " + card.slot + "."
                                    + std::to_string(f.function) + ", so the VM will not get it. " + missing_advice(card, f));
            continue;
        }
        const auto cls = it->second != nullptr ? it->second->class16() : std::nullopt;
        if (cls != f.class16) {
            plan.warnings.push_back(label + ": " + card.slot + "." + std::to_string(f.function) + " is class "
                                    + (cls ? class_text(*cls) : std::string("unknown")) + " where " + source + " lists " + expected
                                    + ": the profile may describe another board, so check its memory and notes against the card");
        }
    }
    for (const auto& [number, device] : shown) {
        const bool listed = std::any_of(profile->functions.begin(), profile->functions.end(),
                                        [n = number](const ProfileFunction& f) { return f.function == n; });
        if (!listed) {
            const auto cls = device != nullptr ? device->class16() : std::nullopt;
            plan.notes.push_back(label + ": the host shows " + card.slot + "." + std::to_string(number) + " (class "
                                 + (cls ? class_text(*cls) : std::string("unknown")) + "), which " + source
                                 + " does not list; it goes to the VM with the card like every function of the slot");
        }
    }
}

} // namespace passthru::plan::detail
