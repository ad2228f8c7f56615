// SPDX-License-Identifier: GPL-2.0-or-later
// sysfs attributes scan parses itself: a device's `resource` file (its BARs)
// and PCI addresses (device directory names, slots). Any text gives a value
// or none, never a crash; an address prints as text that parses to the same.
#include "fuzz.hpp"
#include "scan/pci_address.hpp"
#include "scan/pci_resource.hpp"

using namespace passthru;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto text = fuzz::text_of(data, size);
    if (const auto bars = scan::parse_pci_resource(text)) {
        for (const auto& bar : *bars) {
            fuzz::require(bar.size > 0, "a parsed BAR has a size");
        }
        (void)scan::prefetchable64_bytes(*bars);
    }
    if (const auto address = scan::PciAddress::parse(text)) {
        fuzz::require(scan::PciAddress::parse(address->str()) == address, "an address prints as text that parses to the same");
    }
    if (const auto slot = scan::parse_slot(text)) {
        fuzz::require(scan::parse_slot(slot->slot()) == slot, "a slot prints as text that parses to the same");
    }
    return 0;
}
