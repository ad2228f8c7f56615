// SPDX-License-Identifier: GPL-2.0-or-later
// passthru rom dump: a card's option ROM read through sysfs (the `rom` switch on, the
// bytes read, the switch off again whatever happened) and checked by format/pci_rom
// (docs/facts.md: rom-files).
#pragma once

#include <string>

#include "format/pci_rom.hpp"
#include "scan/inventory.hpp"
#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::apply {

struct RomDump
{
    std::string function; // "0000:02:00.0"
    std::string bytes;    // the ROM as read, padding included
    format::pci_rom::Verdict verdict;
};

// The ROM of CARD's display function. Refused (Errc::precondition, exit 3) when a host
// driver holds the card or the function has no `rom`; Errc::io with the reason when a
// step fails (EIO on the read: the boot VGA card's shadowed ROM, or a card that does not
// expose it). The switch is turned off again after every read, and a failure to do so
// is an error of its own.
RomDump dump_rom(const util::HostFs& fs, const scan::Inventory& inventory, const scan::GpuCard& card);

} // namespace passthru::apply
