// SPDX-License-Identifier: GPL-2.0-or-later
#include "apply/rom_dump.hpp"

#include "util/signals.hpp"

namespace passthru::apply {

namespace {

const scan::PciDevice* display_function(const scan::Inventory& inventory, const scan::GpuCard& card)
{
    for (const auto& fn : card.functions) {
        const auto* d = inventory.find(fn);
        if (d != nullptr && d->is_display()) {
            return d;
        }
    }
    return nullptr;
}

// Why reading failed, and what gets the ROM instead.
Error read_failed(const scan::PciDevice& dev, const Error& cause)
{
    const std::string a = dev.address.str();
    Error e(Errc::io, "rom dump: reading the ROM of " + a + " failed: " + cause.what());
    if (dev.boot_vga) {
        e.with_hint(a
                    + " is the boot VGA card: the firmware ran its ROM and the kernel offers the shadowed copy, which "
                      "often cannot be read back; dump it with the card as a second card (another card as the boot VGA), "
                      "or take the ROM file from the card maker's firmware update");
    } else {
        e.with_hint("some cards do not expose their ROM through the ROM BAR: take the file from the card maker's firmware "
                    "update, or dump it on another host where the card is not the one in use");
    }
    return e;
}

} // namespace

RomDump dump_rom(const util::HostFs& fs, const scan::Inventory& inventory, const scan::GpuCard& card)
{
    const auto* dev = display_function(inventory, card);
    if (dev == nullptr || !dev->vendor || !dev->device) {
        throw Error(Errc::precondition, "rom dump: " + card.slot + " has no display function with known ids");
    }
    const std::string a = dev->address.str();
    if (dev->driver && *dev->driver != "vfio-pci") {
        throw Error(Errc::precondition, "refused: " + a + " is held by " + *dev->driver
                                            + ", which may have changed or hidden the ROM; passthru reads it only from a card "
                                              "that no driver or vfio-pci holds")
            .with_hint("dump it after the reboot into vfio-pci (passthru apply, then passthru verify)");
    }
    const std::string rom = dev->sysfs_path + "/rom";
    if (!fs.exists(rom)) {
        throw Error(Errc::precondition, "refused: " + a + " has no ROM BAR (no " + rom + ")")
            .with_hint("take the ROM file from the card maker's firmware update");
    }
    // A signal while the switch is on waits until it is off again (util/signals.hpp).
    const util::SignalScope hold_signals;
    if (auto on = fs.write_attr(rom, "1"); !on) {
        throw Error(Errc::io, "rom dump: cannot enable the ROM of " + a + ": " + on.error().what());
    }
    auto bytes = fs.read_file(rom);
    // Off again whatever the read gave: the switch is the kernel's, not the card's, but it
    // must not stay on for whoever reads next.
    auto off = fs.write_attr(rom, "0");
    if (!bytes) {
        throw read_failed(*dev, bytes.error());
    }
    if (!off) {
        throw Error(Errc::io, "rom dump: the ROM of " + a + " was read, but it could not be disabled again: " + off.error().what())
            .with_hint("echo 0 > " + rom);
    }
    RomDump out;
    out.function = a;
    out.verdict = format::pci_rom::check_for(*bytes, *dev->vendor, *dev->device);
    out.bytes = std::move(*bytes);
    return out;
}

} // namespace passthru::apply
