// SPDX-License-Identifier: GPL-2.0-or-later
// A PCI option ROM (a card's VBIOS, or a file meant for QEMU's romfile=) checked image by
// image: bytes in, a typed verdict out, no host access (docs/facts.md: rom-files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace passthru::format::pci_rom {

// PCIR "code type" (PCI Firmware Specification 3.0, the PCI Data Structure).
enum class CodeType : std::uint8_t
{
    x86 = 0, // legacy PC-AT BIOS code: the image has a checksum
    open_firmware = 1,
    pa_risc = 2,
    efi = 3, // a UEFI driver (a graphics card's GOP driver)
    other = 0xff,
};

struct Image
{
    std::size_t offset = 0; // of its 0x55AA header in the file
    std::size_t length = 0; // bytes (PCIR image length x 512)
    std::uint16_t vendor = 0;
    std::uint16_t device = 0;
    std::vector<std::uint16_t> device_list; // PCIR 3.0 device list (empty without one)
    std::uint8_t pcir_revision = 0;
    std::uint32_t class_code = 0; // 24 bits
    CodeType code_type = CodeType::other;
    std::uint8_t raw_code_type = 0;
    bool last = false;
    std::optional<std::uint16_t> efi_subsystem; // an EFI image's: 11 boot-service driver (GOP), ...
};

// Why a file is not a ROM the card can use.
enum class Problem
{
    empty,           // no bytes at all
    no_signature,    // an image does not start with 55 AA
    nvflash_header,  // an nvflash dump: NVIDIA's NVGI header precedes the 55 AA image
    truncated,       // the file ends inside a header, the PCIR structure or the image
    no_pcir,         // the PCI Data Structure pointer does not lead to "PCIR"
    pcir_length,     // the PCIR structure length is below the 0x18 bytes every revision has
    zero_length,     // an image length of 0
    device_list,     // a PCIR 3.0 device list that runs past the image
    checksum,        // an x86 image whose bytes do not sum to 0 mod 256
    efi_signature,   // an EFI image without the 0x0EF1 signature
    no_last_image,   // the last image in the file does not say it is the last
    too_many_images, // more images than any card carries (a loop of headers)
    id_mismatch,     // no image is for the card (vendor:device and device lists)
};

struct Verdict
{
    std::vector<Image> images; // what was read, up to the problem
    std::optional<Problem> problem;
    std::string detail; // one line: what is wrong, where (empty when there is no problem)

    bool ok() const { return !problem.has_value(); }
    bool has_uefi() const;   // an EFI image (code type 3, signature 0x0EF1)
    bool has_legacy() const; // an x86 image
    // "x86 (legacy BIOS) + UEFI (GOP)": what the file holds, for messages.
    std::string summary() const;
};

// The structure of the images (signatures, PCIR, lengths, checksums, the last-image flag).
Verdict check(std::string_view bytes);

// check() and then: some image is for VENDOR:DEVICE (its PCIR ids, or the id in its PCIR
// 3.0 device list).
Verdict check_for(std::string_view bytes, std::uint16_t vendor, std::uint16_t device);

std::string_view to_string(Problem problem);

} // namespace passthru::format::pci_rom
