// SPDX-License-Identifier: GPL-2.0-or-later
// scan/rom_need: which cards are likely to need a ROM file, and that the reason says how
// to get one and how to give it to plan.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "../support/fake_host.hpp"
#include "../support/shipped_data.hpp"
#include "scan/rom_need.hpp"
#include "scan/scanner.hpp"

using namespace passthru;
using passthru::test::FakeHost;

namespace {

scan::Inventory rom_need_host(const FakeHost& host)
{
    auto scanned = test::scan_root(host.dir.path());
    REQUIRE(scanned);
    return std::move(scanned->inventory);
}

// One NVIDIA function at 0000:01:00.0 of CLASS, and with IGPU an Intel display at 00:02.0;
// the host's inventory.
scan::Inventory rom_host(std::uint32_t pci_class, bool igpu, bool boot_vga = false)
{
    FakeHost host;
    host.add("0000:00:01.0").ids(0x8086, 0x1901).pci_class(0x060400).group(1).driver("pcieport");
    auto gpu = host.add("0000:01:00.0", "pci0000:00/0000:00:01.0").ids(0x10de, 0x2520).pci_class(pci_class).group(1);
    if (boot_vga) {
        gpu.attr("boot_vga", "1");
    }
    if (igpu) {
        host.add("0000:00:02.0").ids(0x8086, 0x9a49).pci_class(0x030000).group(0).driver("i915").attr("boot_vga", "1");
    }
    return rom_need_host(host);
}

} // namespace

TEST_SUITE("scan::rom_need")
{
    TEST_CASE("a MUX-less laptop GPU (class 0302 beside an iGPU) needs one; the same part alone does not")
    {
        const auto laptop = rom_host(0x030200, true);
        const auto* card = laptop.find_gpu("0000:01:00"); // the iGPU is a card too
        REQUIRE(card != nullptr);
        const auto need = scan::rom_file_need(laptop, *card);
        REQUIRE(need);
        CHECK(need->find("3D controller (class 0302) beside another vendor's display") != std::string::npos);
        CHECK(need->find("--romfile 0000:01:00=FILE") != std::string::npos);
        const auto alone = rom_host(0x030200, false);
        CHECK_FALSE(scan::rom_file_need(alone, alone.gpus[0]));
    }

    TEST_CASE("the boot VGA card; a card whose profile says so, with its source")
    {
        const auto boot = rom_host(0x030000, false, true);
        const auto need = scan::rom_file_need(boot, boot.gpus[0]);
        REQUIRE(need);
        CHECK(need->find("is the boot VGA card") != std::string::npos);
        const auto plain = rom_host(0x030000, false);
        CHECK_FALSE(scan::rom_file_need(plain, plain.gpus[0]));
        data::GpuProfile model;
        model.name = "Modded Card";
        model.rom_file = data::RomFileNeed{"its flashed VBIOS is not what the guest driver expects", "https://example.org/rom"};
        auto modelled = plain.gpus[0];
        modelled.profile_row = std::make_shared<const data::GpuProfile>(model);
        const auto by_profile = scan::rom_file_need(plain, modelled);
        REQUIRE(by_profile);
        CHECK(by_profile->starts_with("0000:01:00 is a Modded Card: its flashed VBIOS is not what the guest driver expects "
                                      "(https://example.org/rom)"));
    }
}
