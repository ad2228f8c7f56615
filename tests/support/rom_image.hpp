// SPDX-License-Identifier: GPL-2.0-or-later
// ROM images built byte by byte for the tests (never a vendor ROM in the tree): the
// unit tests of format/pci_rom and tests/support/make_rom.cpp, which writes one for
// the integration tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace passthru::testing {

// A ROM image as a card's firmware lays it out, built here byte by byte (no vendor ROM
// in the tree): 55 AA, the PCIR pointer at 0x18, the PCI data structure at 0x20, an
// optional PCIR 3.0 device list at 0x40, the x86 checksum in the last byte.
struct RomImage
{
    std::uint16_t vendor = 0x10de;
    std::uint16_t device = 0x2484;
    std::uint8_t code_type = 0; // x86
    bool last = true;
    std::size_t units = 2; // 1 KiB
    std::uint8_t revision = 3;
    std::vector<std::uint16_t> device_list;
    std::uint16_t efi_subsystem = 11;

    std::string bytes() const
    {
        std::string b(units * 512, '\0');
        const auto put16 = [&b](std::size_t at, std::uint16_t v) {
            b[at] = static_cast<char>(v & 0xffU);
            b[at + 1] = static_cast<char>(v >> 8U);
        };
        b[0] = '\x55';
        b[1] = '\xaa';
        b[2] = static_cast<char>(units);
        if (code_type == 3) {
            put16(4, 0x0ef1);
            put16(8, efi_subsystem);
            put16(10, 0x8664);
        }
        put16(0x18, 0x20);
        b.replace(0x20, 4, "PCIR");
        put16(0x24, vendor);
        put16(0x26, device);
        put16(0x28, device_list.empty() ? 0 : 0x20); // from the PCIR start: 0x40
        put16(0x2a, 0x1c);
        b[0x2c] = static_cast<char>(revision);
        b[0x2f] = 0x03; // class 03: display
        put16(0x30, static_cast<std::uint16_t>(units));
        b[0x34] = static_cast<char>(code_type);
        b[0x35] = static_cast<char>(last ? 0x80 : 0x00);
        std::size_t at = 0x40;
        for (auto id : device_list) {
            put16(at, id);
            at += 2;
        }
        if (code_type == 0) {
            unsigned sum = 0;
            for (std::size_t k = 0; k + 1 < b.size(); ++k) {
                sum += static_cast<unsigned char>(b[k]);
            }
            b.back() = static_cast<char>((0x100U - (sum & 0xffU)) & 0xffU);
        }
        return b;
    }
};

} // namespace passthru::testing
