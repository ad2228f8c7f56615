// SPDX-License-Identifier: GPL-2.0-or-later
// The cards of the inventory: the GPU cards and the NVSwitches, each the functions
// of one slot, with the verdict on what else shares their IOMMU groups.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "scan/group_rule.hpp"
#include "scan/scanner.hpp"

namespace passthru::scan {

namespace {

using DevicePredicate = std::function<bool(const PciDevice&)>;

const PciDevice* find_device(const std::vector<PciDevice>& devices, const PciAddress& a)
{
    const auto it =
        std::lower_bound(devices.begin(), devices.end(), a, [](const PciDevice& d, const PciAddress& x) { return d.address < x; });
    return (it != devices.end() && it->address == a) ? &*it : nullptr;
}

// Slots holding a function `defines` accepts (never a virtual function), with every
// function of the slot and its groups.
std::map<std::string, GpuCard> cards_of(const std::vector<PciDevice>& devices, const DevicePredicate& defines, const GpuVendors& vendors)
{
    std::map<std::string, GpuCard> cards;
    for (const auto& dev : devices) {
        if (!defines(dev) || dev.is_virtfn || !dev.vendor) {
            continue;
        }
        auto& card = cards[dev.address.slot()];
        card.slot = dev.address.slot();
        card.vendor = *dev.vendor;
        card.vendor_row = vendors.find(card.vendor);
    }
    for (const auto& dev : devices) {
        auto it = cards.find(dev.address.slot());
        if (it == cards.end() || dev.is_virtfn) {
            continue;
        }
        auto& card = it->second;
        card.functions.push_back(dev.address);
        card.boot_vga = card.boot_vga || dev.boot_vga;
        if (!card.numa_node && dev.numa_node) {
            card.numa_node = dev.numa_node;
        }
        if (dev.iommu_group && std::find(card.iommu_groups.begin(), card.iommu_groups.end(), *dev.iommu_group) == card.iommu_groups.end()) {
            card.iommu_groups.push_back(*dev.iommu_group);
        }
    }
    return cards;
}

// The group verdict of one card: the other members of its groups, bridges and the
// functions that go along aside (scan/group_rule.hpp), are peers (shares_with: they can go along to the same VM) or other endpoints.
void judge_groups(GpuCard& card, const std::vector<PciDevice>& devices, const std::map<int, IommuGroup>& groups,
                  const std::function<bool(const PciAddress&)>& is_peer)
{
    std::sort(card.iommu_groups.begin(), card.iommu_groups.end());
    if (card.iommu_groups.empty()) {
        card.isolation = Isolation::unknown;
        return;
    }
    std::set<PciAddress> seen;
    for (int number : card.iommu_groups) {
        const auto git = groups.find(number);
        if (git == groups.end()) {
            continue;
        }
        for (const auto& member : git->second.devices) {
            if (std::find(card.functions.begin(), card.functions.end(), member) != card.functions.end() || !seen.insert(member).second) {
                continue;
            }
            const PciDevice* dev = find_device(devices, member);
            const GroupMember kind = group_member(dev);
            if (kind == GroupMember::bridge) {
                continue;
            }
            // A peer (another card's function: an NVSwitch is class 0680) moves with the
            // card before anything goes along.
            if (is_peer(member) && !(dev != nullptr && dev->is_virtfn)) {
                card.shares_with.push_back(member);
                continue;
            }
            if (kind == GroupMember::goes_along) {
                card.goes_along.push_back(member);
                continue;
            }
            card.other_endpoints.push_back(member);
            if (dev == nullptr || dev->is_storage() || dev->is_network()) {
                card.host_critical.push_back(member);
            }
        }
    }
    card.isolation = !card.other_endpoints.empty() ? Isolation::shared
                     : !card.shares_with.empty()   ? Isolation::shared_with_gpu
                                                   : Isolation::clean;
}

} // namespace

std::vector<GpuCard> find_gpu_cards(const std::vector<PciDevice>& devices, const std::map<int, IommuGroup>& groups,
                                    const GpuVendors& vendors)
{
    auto cards = cards_of(
        devices, [](const PciDevice& d) { return d.is_display(); }, vendors);
    std::vector<GpuCard> out;
    for (auto& [slot, card] : cards) {
        judge_groups(card, devices, groups, [&cards](const PciAddress& a) { return cards.contains(a.slot()); });
        out.push_back(std::move(card));
    }
    return out;
}

std::vector<GpuCard> find_nvswitches(const std::vector<PciDevice>& devices, const std::map<int, IommuGroup>& groups,
                                     const GpuVendors& vendors)
{
    auto switches = cards_of(
        devices, [&vendors](const PciDevice& d) { return d.is_gpu_switch(vendors); }, vendors);
    const auto gpus = cards_of(
        devices, [](const PciDevice& d) { return d.is_display(); }, vendors);
    std::vector<GpuCard> out;
    for (auto& [slot, sw] : switches) {
        judge_groups(sw, devices, groups, [&](const PciAddress& a) { return switches.contains(a.slot()) || gpus.contains(a.slot()); });
        out.push_back(std::move(sw));
    }
    return out;
}

void assign_vendors(Inventory& inventory, const GpuVendors& vendors)
{
    for (auto* cards : {&inventory.gpus, &inventory.nvswitches}) {
        for (auto& card : *cards) {
            card.vendor_row = vendors.find(card.vendor);
        }
    }
    inventory.vendors = vendors;
}

void assign_profiles(Inventory& inventory, std::vector<data::GpuProfile> profiles)
{
    const auto rows = std::make_shared<const std::vector<data::GpuProfile>>(std::move(profiles));
    for (auto* cards : {&inventory.gpus, &inventory.nvswitches}) {
        for (auto& card : *cards) {
            const auto* first = inventory.first_function(card);
            const auto* row = first != nullptr ? data::find_profile(*rows, first->vendor_device()) : nullptr;
            card.profile_row = row != nullptr ? std::shared_ptr<const data::GpuProfile>(rows, row) : nullptr;
        }
    }
}

} // namespace passthru::scan
