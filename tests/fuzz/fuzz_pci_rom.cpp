// SPDX-License-Identifier: GPL-2.0-or-later
// A PCI option ROM file (plan --romfile, rom dump): any bytes give a verdict, never a
// crash; an accepted ROM's images lie inside the file, one after the other, the last
// one marked, and an accepted x86 image sums to 0.
#include "format/pci_rom.hpp"
#include "fuzz.hpp"

using namespace passthru;
namespace rom = passthru::format::pci_rom;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto bytes = fuzz::text_of(data, size);
    const auto v = rom::check(bytes);
    fuzz::require(v.ok() == v.detail.empty(), "a verdict has a detail exactly when it has a problem");
    std::size_t next = 0;
    for (const auto& img : v.images) {
        fuzz::require(img.offset == next, "images follow each other");
        fuzz::require(img.length > 0 && img.offset + img.length <= size, "an image lies inside the file");
        next = img.offset + img.length;
    }
    if (v.ok()) {
        fuzz::require(!v.images.empty() && v.images.back().last, "an accepted ROM ends with its last image");
        (void)v.summary();
        if (!v.images.empty()) {
            const auto& first = v.images.front();
            fuzz::require(rom::check_for(bytes, first.vendor, first.device).ok(), "an accepted ROM is for its own first id");
        }
    }
    return 0;
}
