// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "../support/fake_host.hpp"
#include "../support/shipped_data.hpp"
#include "scan/group_rule.hpp"
#include "scan/pci_resource.hpp"
#include "scan/scanner.hpp"

using namespace passthru;
using passthru::test::FakeHost;

namespace {

std::string zero_lines(int n)
{
    std::string text;
    for (int i = 0; i < n; ++i) {
        text += "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";
    }
    return text;
}

// AMD's "Starship/Matisse PCIe Dummy Host Bridge" as sysfs shows it.
scan::PciDevice dummy_bridge()
{
    scan::PciDevice d;
    d.vendor = 0x1022;
    d.device = 0x1482;
    d.class_code = 0x060000;
    d.has_bars = false;
    return d;
}

scan::Inventory scan_group_rule_host(const FakeHost& host)
{
    auto scanned = test::scan_root(host.dir.path());
    REQUIRE(scanned);
    return std::move(scanned->inventory);
}

} // namespace

TEST_SUITE("scan::group_rule")
{
    TEST_CASE("a resource file with any BAR0-5 line in use has BARs; the ROM and SR-IOV lines do not count")
    {
        CHECK(scan::any_assigned_bar(zero_lines(13)) == false);
        CHECK(scan::any_assigned_bar("0x000000000000e000 0x000000000000e07f 0x0000000000040101\n" + zero_lines(12)) == true);
        CHECK(scan::any_assigned_bar(zero_lines(2) + "0x00000000f0000000 0x00000000f0003fff 0x0000000000040200\n") == true);
        // declared but not assigned: still a BAR
        CHECK(scan::any_assigned_bar(zero_lines(1) + "0x0000000000000000 0x0000000000000000 0x0000000000040200\n") == true);
        CHECK(scan::any_assigned_bar(zero_lines(6) + "0x00000000c6000000 0x00000000c607ffff 0x0000000000046200\n") == false);
        CHECK_FALSE(scan::any_assigned_bar("").has_value());
        CHECK_FALSE(scan::any_assigned_bar("garbage\n").has_value());
    }

    TEST_CASE("a driverless, BAR-less host bridge goes along; a driver, BARs, an unread resource file or another class do not")
    {
        CHECK(scan::group_member(nullptr) == scan::GroupMember::endpoint);
        auto d = dummy_bridge();
        CHECK(scan::group_member(&d) == scan::GroupMember::goes_along);
        d.driver = "k10temp";
        CHECK(scan::group_member(&d) == scan::GroupMember::endpoint);
        d = dummy_bridge();
        d.has_bars = true;
        CHECK(scan::group_member(&d) == scan::GroupMember::endpoint);
        d.has_bars.reset();
        CHECK(scan::group_member(&d) == scan::GroupMember::endpoint);
        d = dummy_bridge();
        d.class_code = 0x020000; // a NIC without driver or BARs is still a device that can do DMA
        CHECK(scan::group_member(&d) == scan::GroupMember::endpoint);
        d.class_code = 0x0c0330;
        CHECK(scan::group_member(&d) == scan::GroupMember::endpoint);
        d.class_code = 0x030000;
        CHECK(scan::group_member(&d) == scan::GroupMember::endpoint);
        d = dummy_bridge();
        d.class_code = 0x060400;
        d.is_bridge = true;
        CHECK(scan::group_member(&d) == scan::GroupMember::bridge);
    }

    TEST_CASE("scan: the dummy bridge in a GPU's group goes along and the group is clean; with a NIC beside it, shared")
    {
        FakeHost host;
        host.add("0000:00:03.0").ids(0x1022, 0x1482).pci_class(0x060000).group(2).attr("resource", zero_lines(13));
        host.add("0000:00:03.1").ids(0x1022, 0x1483).pci_class(0x060400).group(2).driver("pcieport");
        host.add("0000:02:00.0").ids(0x10de, 0x2484).pci_class(0x030000).group(2).driver("nouveau");
        host.add("0000:02:00.1").ids(0x10de, 0x228b).pci_class(0x040300).group(2).driver("snd_hda_intel");
        auto inv = scan_group_rule_host(host);
        REQUIRE(inv.gpus.size() == 1);
        CHECK(inv.gpus[0].isolation == scan::Isolation::clean);
        REQUIRE(inv.gpus[0].goes_along.size() == 1);
        CHECK(inv.gpus[0].goes_along[0].str() == "0000:00:03.0");
        CHECK(inv.gpus[0].other_endpoints.empty());

        host.add("0000:04:00.0").ids(0x8086, 0x1539).pci_class(0x020000).group(2).driver("igb");
        inv = scan_group_rule_host(host);
        REQUIRE(inv.gpus.size() == 1);
        CHECK(inv.gpus[0].isolation == scan::Isolation::shared);
        CHECK(inv.gpus[0].goes_along.size() == 1);
        REQUIRE(inv.gpus[0].host_critical.size() == 1);
        CHECK(inv.gpus[0].host_critical[0].str() == "0000:04:00.0");
    }

    TEST_CASE("scan: a host bridge with BARs, or whose resource file is missing, stays an endpoint")
    {
        FakeHost host;
        host.add("0000:00:03.0")
            .ids(0x1022, 0x1482)
            .pci_class(0x060000)
            .group(2)
            .attr("resource", "0x00000000f0000000 0x00000000f0003fff 0x0000000000040200\n" + zero_lines(12));
        host.add("0000:00:03.2").ids(0x1022, 0x1482).pci_class(0x060000).group(2);
        host.add("0000:02:00.0").ids(0x10de, 0x2484).pci_class(0x030000).group(2).driver("nouveau");
        const auto inv = scan_group_rule_host(host);
        REQUIRE(inv.gpus.size() == 1);
        CHECK(inv.gpus[0].isolation == scan::Isolation::shared);
        CHECK(inv.gpus[0].goes_along.empty());
        CHECK(inv.gpus[0].other_endpoints.size() == 2);
    }
}
