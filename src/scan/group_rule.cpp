// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/group_rule.hpp"

namespace passthru::scan {

GroupMember group_member(const PciDevice* dev)
{
    if (dev == nullptr) {
        return GroupMember::endpoint;
    }
    if (dev->is_bridge_like()) {
        return GroupMember::bridge;
    }
    // A host bridge such as AMD's 1022:1482 "PCIe Dummy Host Bridge": no driver means no
    // DMA-API user, so the kernel's group stays viable; BARs (or a resource file that
    // could not be read) would mean a device that can do something, so it stays an endpoint.
    if (dev->base_class() == pci_class::base_bridge && !dev->driver && dev->has_bars.has_value() && !*dev->has_bars && !dev->is_virtfn) {
        return GroupMember::goes_along;
    }
    return GroupMember::endpoint;
}

} // namespace passthru::scan
