// SPDX-License-Identifier: GPL-2.0-or-later
// What another member of a card's IOMMU group means for passing the card: the rule
// the kernel's VFIO and Proxmox VE's start apply (docs/facts.md: group-rule).
#pragma once

#include <string_view>

#include "scan/inventory.hpp"

namespace passthru::scan {

enum class GroupMember
{
    bridge,     // a PCI bridge or PCIe port (0604/0609): VFIO accepts it next to a passed device
    goes_along, // a bridge-class (06xx) function with no driver and no BARs: it claims no DMA
                // ownership, and Proxmox VE binds it to vfio-pci with the group at start
    endpoint,   // anything else: with a host driver, or BARs, or of another class
};

// DEV is nullptr when the group lists a function the scan has no record of (an endpoint).
GroupMember group_member(const PciDevice* dev);

// "no driver, no BARs": why a function goes along, as scan, plan and verify say it.
inline constexpr std::string_view k_goes_along_why = "goes along: no driver, no BARs";

} // namespace passthru::scan
