// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../support/rom_image.hpp"
#include "format/pci_rom.hpp"

using namespace passthru;
namespace rom = passthru::format::pci_rom;
using passthru::testing::RomImage;

namespace {

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

namespace {

// One ROM broken in exactly one way, the check that must refuse it and the words of
// that check's message.
struct BrokenRom
{
    const char* check;
    std::string bytes;
    rom::Problem problem;
    const char* message;
};

std::string with_byte(std::string b, std::size_t at, char value)
{
    b[at] = value;
    return b;
}

// A legacy image whose byte AT is VALUE and whose checksum is made right again, so
// that only the change itself is wrong.
std::string reseal(std::string b, std::size_t at, char value)
{
    b[at] = value;
    unsigned sum = 0;
    for (std::size_t k = 0; k + 1 < b.size(); ++k) {
        sum += static_cast<unsigned char>(b[k]);
    }
    b.back() = static_cast<char>((0x100U - (sum & 0xffU)) & 0xffU);
    return b;
}

std::vector<BrokenRom> broken_roms()
{
    const std::string good = RomImage{}.bytes();
    RomImage efi;
    efi.code_type = 3;
    RomImage open;
    open.last = false;
    RomImage listed;
    listed.code_type = 3;
    listed.device_list = {0x2206};
    std::string endless_list = listed.bytes();
    for (std::size_t k = 0x40; k < endless_list.size(); ++k) {
        endless_list[k] = '\x01';
    }
    std::string many;
    for (int i = 0; i < 17; ++i) {
        many += open.bytes();
    }
    RomImage other;
    other.device = 0x2204;
    return {
        {"empty", "", rom::Problem::empty, "the file is empty"},
        {"signature", with_byte(good, 0, '\x56'), rom::Problem::no_signature, "image 0 at 0x0 does not start with 55 AA"},
        {"nvflash header", "NVGI" + std::string(0x1000 - 4, '\0') + good, rom::Problem::nvflash_header, "NVIDIA's NVGI header"},
        {"header cut", good.substr(0, 0x10), rom::Problem::truncated, "the file ends inside the header of image 0"},
        {"PCIR past the file", reseal(reseal(good, 0x18, '\xf0'), 0x19, '\x7f'), rom::Problem::truncated, "lies past the end of the file"},
        {"PCIR signature", reseal(good, 0x20, 'X'), rom::Problem::no_pcir, "which is not 'PCIR'"},
        {"PCIR length", reseal(good, 0x2a, '\x10'), rom::Problem::pcir_length, "is 16 bytes long, below 24"},
        {"PCIR past the image", reseal(reseal(good, 0x2a, '\xff'), 0x2b, '\x0f'), rom::Problem::no_pcir, "runs past the image"},
        {"zero length", reseal(reseal(good, 0x30, '\0'), 0x31, '\0'), rom::Problem::zero_length, "gives its length as 0"},
        {"image past the file", good.substr(0, 700), rom::Problem::truncated, "is 1024 bytes long, but the file ends 700 bytes"},
        {"device list", endless_list, rom::Problem::device_list, "the device list of image 0 at 0x0 runs past the image"},
        {"checksum", with_byte(good, 0x100, '\x01'), rom::Problem::checksum, "has a bad checksum (its bytes sum to 0x01"},
        {"EFI signature", with_byte(efi.bytes(), 4, '\0'), rom::Problem::efi_signature, "lacks the EFI signature 0x0EF1"},
        {"last image", open.bytes(), rom::Problem::no_last_image, "which does not say it is the last"},
        {"image count", many, rom::Problem::too_many_images, "more than 16 images, none marked the last"},
        {"vendor:device", other.bytes(), rom::Problem::id_mismatch, "not for the card's 10de:2484"},
    };
}

} // namespace

TEST_SUITE("format::pci_rom")
{
    TEST_CASE("each check refuses a ROM broken in exactly its way, with its own message")
    {
        for (const auto& broken : broken_roms()) {
            CAPTURE(broken.check);
            const auto v = rom::check_for(broken.bytes, 0x10de, 0x2484);
            REQUIRE(v.problem.has_value());
            CHECK(*v.problem == broken.problem);
            CHECK(v.detail.find(broken.message) != std::string::npos);
        }
    }

    TEST_CASE("the broken ROMs differ from a good one only where they are broken")
    {
        // The table's ROMs would prove nothing if the good image itself were refused.
        CHECK(rom::check_for(RomImage{}.bytes(), 0x10de, 0x2484).ok());
        RomImage efi;
        efi.code_type = 3;
        CHECK(rom::check_for(efi.bytes(), 0x10de, 0x2484).ok());
        CHECK(rom::check_for(reseal(RomImage{}.bytes(), 0x100, '\x42'), 0x10de, 0x2484).ok());
    }
}
