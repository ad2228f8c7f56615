// SPDX-License-Identifier: GPL-2.0-or-later
// The state a card is in after a VM stopped: asleep in D3cold, not answering (config
// space that reads all ones), or given up on by the kernel after a reset (its log since
// boot: "not ready 65535ms after FLR; giving up"), and the resets the kernel has for it (docs/facts.md:
// card-state). scan lists a stuck card as an error; verify fails on it before the next
// start.
#pragma once

#include <string>
#include <vector>

#include "data/gpu_profile.hpp"
#include "scan/inventory.hpp"

namespace passthru::scan {

struct CardState
{
    // Why the card did not come back, one line per function: "0000:02:00.0 is in D3cold".
    std::vector<std::string> stuck;
    // The resets the card's first function has: "flr, bus (it alone on its bus)",
    // "bus (also resets 0000:03:00.0)", "none".
    std::string resets;
    bool no_reset = false;
    // The kernel log since boot has a give-up for one of its functions
    // (Inventory::ready_timeouts): the card stopped answering after a reset.
    bool reset_timed_out = false;
    std::vector<PciAddress> bus_siblings; // functions of other slots a bus reset also resets

    // What to do about it: k_power_off_fix, with what the model's profile knows of its resets.
    std::string fix;

    bool did_not_come_back() const { return !stuck.empty(); }
};

// What to do about a card that did not come back.
inline constexpr const char* k_power_off_fix =
    "power the host off completely and start it again: a warm reboot does not reset a card in this state";

// The reset facts of the card's model (GpuCard::profile_row, profiles/gpus) go into the
// fix, with their source.
CardState card_state(const Inventory& inventory, const GpuCard& card);

} // namespace passthru::scan
