// SPDX-License-Identifier: GPL-2.0-or-later
// The memory BARs of a PCI function, from its sysfs `resource` file
// (docs/facts.md: address-space).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace passthru::scan {

// One assigned memory BAR (resource lines 0-5; I/O ports, the ROM and SR-IOV
// BARs are left out).
struct MemBar
{
    int index = 0;          // BAR number, 0-5
    std::uint64_t size = 0; // bytes
    bool is_64bit = false;  // IORESOURCE_MEM_64
    bool prefetchable = false;
};

// The memory BARs of a `resource` file (one "0xSTART 0xEND 0xFLAGS" line per
// resource, as the kernel's resource_show prints it). Unassigned (all zero) and
// malformed lines are skipped; nullopt when the text has no well-formed line at all.
std::optional<std::vector<MemBar>> parse_pci_resource(std::string_view text);

// Whether any of BAR0-BAR5 of a `resource` file is assigned (memory or I/O ports; the
// ROM and SR-IOV lines aside); nullopt when the text has no well-formed line at all.
std::optional<bool> any_assigned_bar(std::string_view text);

// Bytes of the 64-bit prefetchable BARs of BARS.
std::uint64_t prefetchable64_bytes(const std::vector<MemBar>& bars);

} // namespace passthru::scan
