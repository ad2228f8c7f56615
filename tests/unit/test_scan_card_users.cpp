// SPDX-License-Identifier: GPL-2.0-or-later
// The host files scan reads to say who uses a card: /proc/devices' majors, the
// nvidia driver's "Device Minor" line, and the minors the cards that stay on
// nvidia get when others leave it (first free minor at probe, in probe order).
#include <doctest/doctest.h>

#include "../support/temp_dir.hpp"
#include "plan/guest_users.hpp"
#include "scan/card_users.hpp"

using namespace passthru;

TEST_CASE("card_users: character majors of /proc/devices")
{
    const auto majors = scan::parse_char_majors("Character devices:\n  1 mem\n195 nvidia\n195 nvidiactl\n238 nvidia-uvm\n\n"
                                                "Block devices:\n  8 sd\n259 blkext\n");
    CHECK(majors.at("nvidia") == 195U);
    CHECK(majors.at("nvidiactl") == 195U);
    CHECK(majors.at("nvidia-uvm") == 238U);
    CHECK(!majors.contains("sd"));                          // a block device
    CHECK(scan::parse_char_majors("195 nvidia\n").empty()); // no section header
    CHECK(scan::parse_char_majors("Character devices:\nx nvidia\n99999 big\n").empty());
}

TEST_CASE("card_users: the Device Minor of the nvidia driver's information file")
{
    CHECK(scan::parse_nvidia_minor("Model: \t\t NVIDIA GeForce RTX 2080 Ti\nBus Location: \t 0000:82:00.0\nDevice Minor: \t 1\n") == 1U);
    CHECK(scan::parse_nvidia_minor("Device Minor: \t 247\n") == 247U);
    CHECK(scan::parse_nvidia_minor("Device Minor: \t 255\n") == std::nullopt); // nvidiactl's, never a GPU's
    CHECK(scan::parse_nvidia_minor("Device Minor: \t x\n") == std::nullopt);
    CHECK(scan::parse_nvidia_minor("Model: x\n") == std::nullopt);
}

TEST_CASE("card_users: scan reads the nvidia module's version once, for verify and explain")
{
    test::TempDir dir;
    dir.write("proc/devices", "Character devices:\n195 nvidia\n");
    auto fs = util::HostFs::open(dir.path());
    REQUIRE(fs);
    scan::Inventory none;
    scan::scan_card_users(*fs, none);
    CHECK(!none.host.nvidia_loaded);
    CHECK(none.host.nvidia_version == std::nullopt);
    dir.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n");
    scan::Inventory loaded;
    scan::scan_card_users(*fs, loaded);
    CHECK(loaded.host.nvidia_loaded);
    CHECK(loaded.host.nvidia_version == "570.86.15");
    dir.write("proc/driver/nvidia/version", "garbled\n");
    scan::Inventory garbled;
    scan::scan_card_users(*fs, garbled);
    CHECK(garbled.host.nvidia_loaded); // loaded, of a version it does not say
    CHECK(garbled.host.nvidia_version == std::nullopt);
}

TEST_CASE("card_users: the minors of the cards that stay on nvidia")
{
    scan::Inventory inv;
    for (const auto& [slot, minor] : std::vector<std::pair<std::string, std::optional<std::uint32_t>>>{
             {"0000:01:00", std::nullopt}, {"0000:81:00", 0U}, {"0000:82:00", 1U}, {"0000:83:00", 2U}}) {
        scan::GpuCard card;
        card.slot = slot;
        card.nvidia_minor = minor;
        inv.gpus.push_back(card);
    }
    // The card at minor 1 leaves: the one after it moves down, the one before stays.
    const auto after = plan::detail::minors_after(inv, {&inv.gpus[2]});
    REQUIRE(after.size() == 2);
    CHECK(after[0].first->slot == "0000:81:00");
    CHECK(after[0].second == 0U);
    CHECK(after[1].first->slot == "0000:83:00");
    CHECK(after[1].second == 1U);
    // A card on vfio-pci has no minor: taking it moves nothing.
    for (const auto& [card, minor] : plan::detail::minors_after(inv, {&inv.gpus[0]})) {
        CHECK(minor == *card->nvidia_minor);
    }
}
