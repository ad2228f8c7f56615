// SPDX-License-Identifier: GPL-2.0-or-later
// scan on sysfs trees a real Linux kernel wrote: the captures of the
// real-kernel test (tests/vm), Debian 12's kernel under QEMU with Intel VT-d,
// AMD-Vi and no IOMMU. The expectations come from the topology QEMU was given
// (tests/vm/run.sh), not from earlier scan output.
#include <doctest/doctest.h>

#include <string>

#include "../support/shipped_data.hpp"
#include "scan/scanner.hpp"

using namespace passthru;

namespace {

scan::Inventory scan_fixture(const std::string& name)
{
    auto fs = util::HostFs::open(std::string(PASSTHRU_FIXTURES_DIR) + "/hosts/" + name);
    REQUIRE(fs);
    util::CommandRunner runner(util::RunMode::record);
    auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
    REQUIRE(inv);
    return std::move(*inv);
}

const scan::PciDevice& device(const scan::Inventory& inv, const char* addr)
{
    const auto* dev = inv.find(*scan::PciAddress::parse(addr));
    REQUIRE(dev != nullptr);
    return *dev;
}

// Facts both IOMMU runs share: root ports with ACS each get a group, the
// endpoint behind each port its own, the display + HDA pair one group, and
// the PCIe-to-PCI bridge one group with the conventional devices behind it.
void check_common_topology(const scan::Inventory& inv)
{
    CHECK(inv.host.iommu.enabled);
    CHECK(inv.host.iommu.groups == 15);
    CHECK(inv.host.iommu.interrupt_remapping == true);
    CHECK(inv.host.kernel.value_or("").rfind("6.1.0-", 0) == 0);
    CHECK(device(inv, "0000:01:00.0").driver == "e1000e");
    CHECK(device(inv, "0000:03:00.0").driver == "nvme");
    CHECK(device(inv, "0000:03:00.0").is_storage());
    CHECK(device(inv, "0000:00:02.0").is_bridge);
    CHECK(device(inv, "0000:00:02.0").has_acs);
    const auto& bridge = device(inv, "0000:05:00.0");
    CHECK(bridge.is_bridge);
    CHECK(device(inv, "0000:06:01.0").iommu_group == bridge.iommu_group);
    CHECK(device(inv, "0000:06:02.0").iommu_group == bridge.iommu_group);
    CHECK(device(inv, "0000:06:01.0").parent == scan::PciAddress::parse("0000:05:00.0"));
    const auto* card = inv.find_gpu("0000:04:00");
    REQUIRE(card != nullptr);
    CHECK(card->functions.size() == 2);
    CHECK(card->iommu_groups.size() == 1);
    CHECK(card->isolation == scan::Isolation::clean);
    CHECK_FALSE(card->boot_vga);
    CHECK(card->vendor_row == nullptr); // no vendor of profiles/host/vendors.json
    CHECK(device(inv, "0000:04:00.0").class16() == 0x0380);
    CHECK(device(inv, "0000:04:00.1").vendor_device() == "8086:293e");
    CHECK(device(inv, "0000:00:1b.0").vendor_device() == "8086:293e");
    // QEMU's xhci is a root-complex integrated endpoint: no link registers,
    // so the kernel's "Unknown", width 0 and maximum width 255 are no link.
    CHECK_FALSE(device(inv, "0000:00:07.0").link.has_value());
}

} // namespace

TEST_SUITE("scan::real_kernel")
{
    TEST_CASE("Intel VT-d: groups, card, boot VGA")
    {
        const auto inv = scan_fixture("qemu-intel");
        check_common_topology(inv);
        CHECK(inv.host.is_intel());
        CHECK(inv.host.iommu.units == std::vector<std::string>{"dmar0"});
        CHECK(device(inv, "0000:00:01.0").boot_vga);
        CHECK(device(inv, "0000:04:00.0").driver == "bochs-drm");
        CHECK(device(inv, "0000:04:00.1").driver == "snd_hda_intel");
        // The ICH9 functions share one group: no ACS on the root bus.
        CHECK(device(inv, "0000:00:1f.0").iommu_group == device(inv, "0000:00:1f.2").iommu_group);
    }

    TEST_CASE("AMD-Vi: the IOMMU's own function has no group; the VGA moved to 00:08.0")
    {
        const auto inv = scan_fixture("qemu-amd");
        check_common_topology(inv);
        CHECK(inv.host.is_amd());
        CHECK(inv.host.iommu.units == std::vector<std::string>{"ivhd0"});
        CHECK_FALSE(device(inv, "0000:00:01.0").iommu_group.has_value());
        CHECK(device(inv, "0000:00:08.0").boot_vga);
    }

    TEST_CASE("no IOMMU: no groups, isolation unknown, the fix is reported")
    {
        const auto inv = scan_fixture("qemu-noiommu");
        CHECK_FALSE(inv.host.iommu.enabled);
        CHECK(inv.groups.empty());
        const auto* card = inv.find_gpu("0000:04:00");
        REQUIRE(card != nullptr);
        CHECK(card->isolation == scan::Isolation::unknown);
        bool reported = false;
        for (const auto& p : inv.problems) {
            reported = reported || (p.severity == scan::Severity::error && p.message.find("no IOMMU groups") != std::string::npos);
        }
        CHECK(reported);
    }

    TEST_CASE("after apply and a boot: both card functions on vfio-pci, the host's HDA untouched")
    {
        for (const char* name : {"qemu-intel-vfio", "qemu-amd-vfio"}) {
            CAPTURE(name);
            const auto inv = scan_fixture(name);
            CHECK(device(inv, "0000:04:00.0").driver == "vfio-pci");
            CHECK(device(inv, "0000:04:00.1").driver == "vfio-pci");
            CHECK(device(inv, "0000:00:1b.0").driver == "snd_hda_intel");
        }
    }
}
