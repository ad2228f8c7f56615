// SPDX-License-Identifier: GPL-2.0-or-later
// make-rom FILE VENDOR DEVICE [gop|bad-checksum]: writes a ROM image for the card
// VENDOR:DEVICE (hex) that tests/support/rom_image.hpp builds, for the integration
// tests of --romfile: a legacy x86 image, with "gop" also a UEFI GOP image after it,
// with "bad-checksum" a legacy image with one byte changed. Never installed.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rom_image.hpp"

int main(int argc, char** argv)
{
    if (argc < 4 || argc > 5) {
        std::fputs("usage: make-rom FILE VENDOR DEVICE [gop|bad-checksum]\n", stderr);
        return 2;
    }
    const std::string_view kind = argc == 5 ? argv[4] : "";
    passthru::testing::RomImage legacy;
    legacy.vendor = static_cast<std::uint16_t>(std::strtoul(argv[2], nullptr, 16));
    legacy.device = static_cast<std::uint16_t>(std::strtoul(argv[3], nullptr, 16));
    std::string bytes;
    if (kind == "gop") {
        passthru::testing::RomImage gop = legacy;
        gop.code_type = 3;
        legacy.last = false;
        bytes = legacy.bytes() + gop.bytes();
    } else {
        bytes = legacy.bytes();
        if (kind == "bad-checksum") {
            bytes[0x100] = static_cast<char>(bytes[0x100] + 1);
        } else if (!kind.empty()) {
            std::fputs("make-rom: the kind is gop or bad-checksum\n", stderr);
            return 2;
        }
    }
    std::FILE* out = std::fopen(argv[1], "wb");
    if (out == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size() || std::fclose(out) != 0) {
        std::perror(argv[1]);
        return 1;
    }
    return 0;
}
