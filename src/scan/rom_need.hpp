// SPDX-License-Identifier: GPL-2.0-or-later
// Whether a card is likely to need a ROM file (QEMU's romfile=) in its VM, and why
// (docs/facts.md: rom-files). scan lists it as a problem of severity info; plan as a note.
#pragma once

#include <optional>
#include <string>

#include "data/gpu_profile.hpp"
#include "scan/inventory.hpp"

namespace passthru::scan {

// Why CARD likely needs a ROM file, with how to get one; nullopt: nothing says so.
// The reasons: a 3D controller (class 0302) of the card's vendor beside another
// vendor's display function (a MUX-less laptop GPU, whose VBIOS lives in the system
// firmware), the card's model when its profile says so (GpuCard::profile_row:
// profiles/gpus `rom_file`, with its source), or the boot VGA card (the firmware ran, and
// may have changed, its ROM).
std::optional<std::string> rom_file_need(const Inventory& inventory, const GpuCard& card);

} // namespace passthru::scan
