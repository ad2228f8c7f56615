// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/rom_need.hpp"

namespace passthru::scan {

namespace {

bool is_3d_controller(const Inventory& inventory, const GpuCard& card)
{
    for (const auto& fn : card.functions) {
        const auto* d = inventory.find(fn);
        if (d != nullptr && d->class16() == pci_class::display_3d) {
            return true;
        }
    }
    return false;
}

// Another vendor's display function (an Intel or AMD iGPU beside the GeForce).
bool has_other_vendors_display(const Inventory& inventory, const GpuCard& card)
{
    for (const auto& d : inventory.devices) {
        if (d.is_display() && d.vendor && *d.vendor != card.vendor) {
            return true;
        }
    }
    return false;
}

} // namespace

std::optional<std::string> rom_file_need(const Inventory& inventory, const GpuCard& card)
{
    const data::GpuProfile* profile = card.profile_row.get();
    const std::string dump = "passthru rom dump " + card.slot + " FILE";
    const std::string give = "; then plan with --romfile " + card.slot + "=FILE, which checks it and sets romfile=";
    if (is_3d_controller(inventory, card) && has_other_vendors_display(inventory, card)) {
        return card.slot
               + " is a 3D controller (class 0302) beside another vendor's display: a laptop GPU without a "
                 "display MUX keeps its VBIOS in the system firmware, and the guest driver fails without a ROM file; take "
                 "it from the firmware update of the laptop (its VBIOS image), and check it with '"
               + dump + "' where the card exposes a ROM" + give;
    }
    if (profile != nullptr && profile->rom_file) {
        return card.slot + " is a " + profile->name + ": " + profile->rom_file->why + " (" + profile->rom_file->source + "); '" + dump
               + "' reads its ROM while no driver holds it" + give;
    }
    if (card.boot_vga) {
        return card.slot
               + " is the boot VGA card: the firmware ran its ROM, so the guest may need a clean ROM file; "
                 "dump it while another card is the boot VGA ('"
               + dump + "'), or take it from the card maker's firmware update" + give;
    }
    return std::nullopt;
}

} // namespace passthru::scan
