// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "format/pci_rom.hpp"

using namespace passthru;
namespace rom = passthru::format::pci_rom;

namespace {

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

// A card's usual ROM: the legacy image, then the UEFI GOP driver (the last).
std::string legacy_and_gop()
{
    RomImage legacy;
    legacy.last = false;
    RomImage gop;
    gop.code_type = 3;
    return legacy.bytes() + gop.bytes();
}

std::optional<rom::Problem> problem_of(const std::string& bytes)
{
    return rom::check_for(bytes, 0x10de, 0x2484).problem;
}

} // namespace

TEST_SUITE("format::pci_rom")
{
    TEST_CASE("a legacy image and a UEFI GOP image: both read, for the card, GOP recognised")
    {
        const auto v = rom::check_for(legacy_and_gop(), 0x10de, 0x2484);
        REQUIRE(v.ok());
        REQUIRE(v.images.size() == 2);
        CHECK(v.images[0].code_type == rom::CodeType::x86);
        CHECK(v.images[0].length == 1024);
        CHECK(v.images[1].offset == 1024);
        CHECK(v.images[1].code_type == rom::CodeType::efi);
        CHECK(v.images[1].efi_subsystem == 11);
        CHECK(v.images[1].last);
        CHECK(v.has_legacy());
        CHECK(v.has_uefi());
        CHECK(v.summary() == "x86 (legacy BIOS) for 10de:2484 + UEFI (GOP driver) for 10de:2484");
    }

    TEST_CASE("padding after the last image (a ROM BAR read whole) is not read")
    {
        CHECK(rom::check_for(legacy_and_gop() + std::string(4096, '\xff'), 0x10de, 0x2484).ok());
    }

    TEST_CASE("signature: an empty file, bytes that are no ROM, an nvflash dump with its NVGI header")
    {
        CHECK(problem_of("") == rom::Problem::empty);
        CHECK(problem_of(std::string(2048, '\0')) == rom::Problem::no_signature);
        CHECK(problem_of("NVGI" + std::string(0x1000 - 4, '\0') + legacy_and_gop()) == rom::Problem::nvflash_header);
        // the second image's header is broken
        RomImage first;
        first.last = false;
        CHECK(problem_of(first.bytes() + std::string(1024, '\x11')) == rom::Problem::no_signature);
    }

    TEST_CASE("PCIR: a pointer to anything else, a pointer past the file, a structure length below 24")
    {
        auto b = RomImage{}.bytes();
        b[0x20] = 'X';
        CHECK(problem_of(b) == rom::Problem::no_pcir);
        b = RomImage{}.bytes();
        b[0x18] = '\xf0';
        b[0x19] = '\x7f';
        CHECK(problem_of(b) == rom::Problem::truncated);
        b = RomImage{}.bytes();
        b[0x2a] = 0x10;
        CHECK(problem_of(b) == rom::Problem::pcir_length);
    }

    TEST_CASE("image lengths: zero, longer than the file, a file that ends inside the header")
    {
        RomImage zero;
        auto b = zero.bytes();
        b[0x30] = 0;
        b[0x31] = 0;
        CHECK(problem_of(b) == rom::Problem::zero_length);
        b = RomImage{}.bytes();
        CHECK(problem_of(b.substr(0, 700)) == rom::Problem::truncated);
        CHECK(problem_of(b.substr(0, 0x10)) == rom::Problem::truncated);
    }

    TEST_CASE("checksum: an x86 image with one byte changed is refused; an EFI image has none to check")
    {
        auto b = RomImage{}.bytes();
        b[0x100] = static_cast<char>(b[0x100] + 1);
        CHECK(problem_of(b) == rom::Problem::checksum);
        RomImage efi;
        efi.code_type = 3;
        b = efi.bytes();
        b[0x100] = 0x42;
        CHECK(rom::check_for(b, 0x10de, 0x2484).ok());
    }

    TEST_CASE("UEFI: code type 3 without the 0x0EF1 signature is refused")
    {
        RomImage efi;
        efi.code_type = 3;
        auto b = efi.bytes();
        b[4] = 0;
        CHECK(problem_of(b) == rom::Problem::efi_signature);
    }

    TEST_CASE("the last image must say so, and a chain of headers is bounded")
    {
        RomImage open;
        open.last = false;
        CHECK(problem_of(open.bytes()) == rom::Problem::no_last_image);
        std::string many;
        for (int i = 0; i < 17; ++i) {
            many += open.bytes();
        }
        CHECK(problem_of(many) == rom::Problem::too_many_images);
    }

    TEST_CASE("vendor:device: another card's ROM is refused; a PCIR 3.0 device list names the card")
    {
        RomImage other;
        other.device = 0x2204;
        const auto v = rom::check_for(other.bytes(), 0x10de, 0x2484);
        CHECK(v.problem == rom::Problem::id_mismatch);
        CHECK(v.detail == "the ROM is for x86 (legacy BIOS) for 10de:2204, not for the card's 10de:2484");
        other.device_list = {0x2206, 0x2484};
        CHECK(rom::check_for(other.bytes(), 0x10de, 0x2484).ok());
        other.vendor = 0x1002;
        CHECK(rom::check_for(other.bytes(), 0x10de, 0x2484).problem == rom::Problem::id_mismatch);
        // a device list before PCIR 3.0 is not one
        RomImage old = other;
        old.vendor = 0x10de;
        old.revision = 0;
        CHECK(rom::check_for(old.bytes(), 0x10de, 0x2484).problem == rom::Problem::id_mismatch);
    }

    TEST_CASE("a device list that runs past its image is refused")
    {
        // an EFI image, so that the checksum is out of the question
        RomImage efi;
        efi.device_list = {0x2206};
        efi.code_type = 3;
        auto b = efi.bytes();
        for (std::size_t k = 0x40; k < b.size(); ++k) {
            b[k] = '\x01';
        }
        CHECK(problem_of(b) == rom::Problem::device_list);
    }
}
