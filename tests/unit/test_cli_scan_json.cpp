// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include <string>

#include "cli/scan_json.hpp"

using namespace passthru;

namespace {

// What write_scan_json printed before it wrote devices directly: the value's
// dump(2), every line after the first indented `level` steps more.
std::string dumped(const scan::PciDevice& d, int level)
{
    const std::string text = cli::device_to_json(d).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    std::string out;
    for (char c : text) {
        out += c;
        if (c == '\n') {
            out.append(static_cast<std::size_t>(level) * 2, ' ');
        }
    }
    return out;
}

std::string written(const scan::PciDevice& d, int level)
{
    std::string out = "prefix";
    cli::append_device_json(out, d, level);
    REQUIRE(out.starts_with("prefix"));
    return out.substr(6);
}

scan::PciDevice full_device()
{
    scan::PciDevice d;
    d.address = *scan::PciAddress::parse("0000:41:00.0");
    d.vendor = 0x10de;
    d.device = 0x1e07;
    d.class_code = 0x030000;
    d.subsystem_vendor = 0x1458;
    d.subsystem_device = 0x37a9;
    d.revision = 0xa1;
    d.vendor_name = "NVIDIA Corporation";
    d.device_name = "TU102 [GeForce RTX 2080 Ti Rev. A]";
    d.class_name = "VGA compatible controller";
    d.driver = "nvidia";
    d.driver_override = "vfio-pci";
    d.iommu_group = 42;
    d.numa_node = 1;
    d.boot_vga = true;
    d.link = scan::LinkInfo{"8.0 GT/s PCIe", "16.0 GT/s PCIe", 16, 16, 8.0, 16.0};
    d.reset_methods = {"flr", "bus"};
    d.parent = scan::PciAddress::parse("0000:40:01.1");
    d.is_bridge = false;
    d.has_acs = true;
    d.is_virtfn = true;
    d.physfn = scan::PciAddress::parse("0000:41:00.1");
    d.sriov_totalvfs = 0;
    d.sriov_numvfs = -1;
    d.net_interfaces = {"enp65s0f0", "enp65s0f1"};
    d.net_links = {{"enp65s0f0", "aa:bb:cc:dd:ee:ff", "aa:bb:cc:dd:ee:00", 7}, {"enp65s0f1", "", "", std::nullopt}};
    return d;
}

} // namespace

TEST_SUITE("cli::scan_json")
{
    TEST_CASE("a device is written as dump() prints its value, at every nesting level")
    {
        scan::PciDevice empty;
        empty.address = *scan::PciAddress::parse("0000:00:00.0");
        for (int level : {0, 1, 2, 3}) {
            CHECK(written(empty, level) == dumped(empty, level));
            CHECK(written(full_device(), level) == dumped(full_device(), level));
        }
        CHECK(written(full_device(), 2).find("\n      \"acs\": true,\n") != std::string::npos);
    }

    TEST_CASE("link without speeds, one net link, an empty reset list")
    {
        auto d = full_device();
        d.link = scan::LinkInfo{};
        d.net_links.resize(1);
        d.net_interfaces.clear();
        d.reset_methods.clear();
        d.vendor.reset();
        d.class_code.reset();
        d.subsystem_device.reset();
        CHECK(written(d, 2) == dumped(d, 2));
    }

    TEST_CASE("host strings are escaped as dump() escapes them, invalid UTF-8 as U+FFFD")
    {
        for (const std::string& s :
             {std::string("quote \" and back\\slash"), std::string("tab\tnew\nline\x01\x1f end"), std::string("del \x7f"),
              std::string("UTF-8 \xc3\xa9t\xc3\xa9"), std::string("bad \xff\xfe bytes"), std::string("cut \xe2\x82"), std::string()}) {
            auto d = full_device();
            d.driver = s;
            d.driver_override = s;
            d.device_name = s;
            d.reset_methods = {s, "flr"};
            d.net_interfaces = {s};
            d.net_links[0].mac = s;
            d.link->speed = s;
            CHECK(written(d, 2) == dumped(d, 2));
        }
        auto d = full_device();
        d.driver = "a\"b";
        CHECK(written(d, 0).find(R"("driver": "a\"b")") != std::string::npos);
    }
}
