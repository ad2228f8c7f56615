// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include <algorithm>

#include "../support/fake_host.hpp"
#include "../support/shipped_data.hpp"
#include "scan/scanner.hpp"
#include "util/strings.hpp"

using namespace passthru;
using passthru::test::FakeHost;

namespace {

scan::Inventory scan_of(const FakeHost& host)
{
    auto fs = util::HostFs::open(host.dir.path());
    REQUIRE(fs);
    util::CommandRunner runner(util::RunMode::record);
    auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
    REQUIRE(inv);
    return std::move(*inv);
}

bool has_problem(const scan::Inventory& inv, std::string_view needle)
{
    return std::any_of(inv.problems.begin(), inv.problems.end(),
                       [&](const scan::Problem& p) { return p.message.find(needle) != std::string::npos; });
}

void add_root_port(FakeHost& host, const std::string& addr, int group)
{
    host.add(addr).ids(0x1022, 0x1483).pci_class(0x060400).group(group).driver("pcieport");
}

} // namespace

TEST_SUITE("scan::scanner")
{
    TEST_CASE("a Turing card's four functions form one clean card")
    {
        FakeHost host;
        add_root_port(host, "0000:00:03.1", 11);
        const std::string port = "pci0000:00/0000:00:03.1";
        host.add("0000:01:00.0", port).ids(0x10de, 0x1e07).pci_class(0x030000).group(12).driver("nouveau").attr("boot_vga", "0");
        host.add("0000:01:00.1", port).ids(0x10de, 0x10f7).pci_class(0x040300).group(12).driver("snd_hda_intel");
        host.add("0000:01:00.2", port).ids(0x10de, 0x1ad6).pci_class(0x0c0330).group(12).driver("xhci_hcd");
        host.add("0000:01:00.3", port).ids(0x10de, 0x1ad7).pci_class(0x0c8000).group(12);
        const auto inv = scan_of(host);
        REQUIRE(inv.devices.size() == 5);
        REQUIRE(inv.gpus.size() == 1);
        const auto& gpu = inv.gpus[0];
        CHECK(gpu.slot == "0000:01:00");
        CHECK(gpu.functions.size() == 4);
        CHECK(gpu.iommu_groups == std::vector<int>{12});
        CHECK(gpu.isolation == scan::Isolation::clean);
        CHECK_FALSE(gpu.boot_vga);
        const auto* vga = inv.find(*scan::PciAddress::parse("0000:01:00.0"));
        REQUIRE(vga != nullptr);
        CHECK(vga->driver == "nouveau");
        CHECK(vga->class16() == 0x0300);
        CHECK(vga->parent == scan::PciAddress::parse("0000:00:03.1"));
        CHECK(vga->vendor_name == "NVIDIA Corporation");
        CHECK(inv.host.iommu.enabled);
        CHECK(inv.host.iommu.groups == 2);
    }

    TEST_CASE("a group shared with SATA and a NIC is 'shared' with host-critical devices named")
    {
        FakeHost host;
        host.add("0000:03:00.0").ids(0x10de, 0x1c03).pci_class(0x030000).group(15).driver("nouveau").attr("boot_vga", "1");
        host.add("0000:03:00.1").ids(0x10de, 0x10f1).pci_class(0x040300).group(15).driver("snd_hda_intel");
        host.add("0000:02:00.1").ids(0x1022, 0x43c8).pci_class(0x010601).group(15).driver("ahci");
        host.add("0000:04:00.0").ids(0x10ec, 0x8168).pci_class(0x020000).group(15).driver("r8169");
        host.add("0000:02:00.2").ids(0x1022, 0x43c6).pci_class(0x060400).group(15).driver("pcieport");
        const auto inv = scan_of(host);
        REQUIRE(inv.gpus.size() == 1);
        const auto& gpu = inv.gpus[0];
        CHECK(gpu.isolation == scan::Isolation::shared);
        CHECK(gpu.boot_vga);
        CHECK(gpu.other_endpoints.size() == 2);
        CHECK(gpu.host_critical.size() == 2);
        CHECK(has_problem(inv, "host-critical"));
        CHECK(has_problem(inv, "boot VGA"));
    }

    TEST_CASE("two cards in one group are shared-with-gpu; NVSwitch is not a GPU")
    {
        FakeHost host;
        host.add("0000:05:00.0").ids(0x10de, 0x1db1).pci_class(0x030200).group(20);
        host.add("0000:06:00.0").ids(0x10de, 0x1db1).pci_class(0x030200).group(20);
        host.add("0000:07:00.0").ids(0x10de, 0x1af1).pci_class(0x068000).group(21);
        const auto inv = scan_of(host);
        REQUIRE(inv.gpus.size() == 2);
        CHECK(inv.gpus[0].isolation == scan::Isolation::shared_with_gpu);
        CHECK(inv.gpus[0].shares_with == std::vector<scan::PciAddress>{*scan::PciAddress::parse("0000:06:00.0")});
        CHECK(inv.gpus[0].functions.size() == 1);
    }

    TEST_CASE("one read of uevent gives ids, class, subsystem and driver; attributes stay the fallback")
    {
        FakeHost host;
        // No vendor/device/class/subsystem attributes and no driver link: only uevent has them.
        host.add("0000:01:00.0")
            .group(4)
            .attr("uevent", "DRIVER=vfio-pci\nPCI_CLASS=30000\nPCI_ID=10DE:1E07\nPCI_SUBSYS_ID=1458:37A9\n"
                            "PCI_SLOT_NAME=0000:01:00.0\nMODALIAS=pci:v000010DEd00001E07sv00001458sd000037A9bc03sc00i00");
        // uevent without DRIVER: no driver, even with a stale link.
        host.add("0000:02:00.0").group(5).driver("nouveau").attr("uevent", "PCI_CLASS=40300\nPCI_ID=10DE:10F7\nPCI_SUBSYS_ID=0000:0000");
        // A garbled uevent is no evidence: attributes and link as before.
        host.add("0000:03:00.0").ids(0x8086, 0x1533).pci_class(0x020000).group(6).driver("igb").attr("uevent", "PCI_ID=zz");
        const auto inv = scan_of(host);
        REQUIRE(inv.devices.size() == 3);
        const auto& gpu = inv.devices[0];
        CHECK(gpu.vendor == 0x10de);
        CHECK(gpu.device == 0x1e07);
        CHECK(gpu.class_code == 0x030000u);
        CHECK(gpu.subsystem_vendor == 0x1458);
        CHECK(gpu.subsystem_device == 0x37a9);
        CHECK(gpu.driver == "vfio-pci");
        CHECK_FALSE(has_problem(inv, "0000:01:00.0: sysfs attribute"));
        CHECK(inv.devices[1].class_code == 0x040300u);
        CHECK_FALSE(inv.devices[1].driver.has_value());
        CHECK(inv.devices[2].vendor == 0x8086);
        CHECK(inv.devices[2].driver == "igb");
        REQUIRE(inv.gpus.size() == 1);
    }

    TEST_CASE("a GPU's group lists a function sysfs does not show: still host-critical")
    {
        // scan reads the devices/ listing of GPU groups even when every function has its link.
        FakeHost host;
        host.add("0000:01:00.0").ids(0x10de, 0x1e07).pci_class(0x030000).group(7);
        host.add("0000:05:00.0").ids(0x8086, 0x1533).pci_class(0x020000).group(8);
        host.dir.symlink("sys/kernel/iommu_groups/7/devices/0000:02:00.0", "../../../../devices/pci0000:00/0000:02:00.0");
        const auto inv = scan_of(host);
        REQUIRE(inv.gpus.size() == 1);
        CHECK(inv.gpus[0].isolation == scan::Isolation::shared);
        CHECK(inv.gpus[0].host_critical == std::vector<scan::PciAddress>{*scan::PciAddress::parse("0000:02:00.0")});
        CHECK(inv.groups.at(8).devices == std::vector<scan::PciAddress>{*scan::PciAddress::parse("0000:05:00.0")});
        CHECK(inv.groups.at(8).type == "DMA");
    }

    TEST_CASE("missing and garbage attributes leave the device listed with empty fields")
    {
        FakeHost host;
        host.add("0000:01:00.0").ids(0x10de, 0x2204).attr("class", "zzz").group(3);
        host.add("0000:02:00.0").pci_class(0x020000).attr("numa_node", "banana");
        const auto inv = scan_of(host);
        REQUIRE(inv.devices.size() == 2);
        CHECK_FALSE(inv.devices[0].class_code.has_value());
        CHECK(inv.devices[0].vendor == 0x10de);
        CHECK_FALSE(inv.devices[1].vendor.has_value());
        CHECK_FALSE(inv.devices[1].numa_node.has_value());
        CHECK_FALSE(inv.devices[1].iommu_group.has_value());
        CHECK(has_problem(inv, "cannot parse sysfs attribute 'class'"));
        CHECK(has_problem(inv, "'vendor' is missing"));
        CHECK(inv.gpus.empty());
    }

    TEST_CASE("no IOMMU groups: the scan succeeds and says how to turn the IOMMU on")
    {
        FakeHost host;
        host.add("0000:01:00.0").ids(0x10de, 0x2230).pci_class(0x030000).driver("nvidia");
        host.dir.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu svm\n");
        host.dir.write("proc/sys/kernel/osrelease", "6.8.12-4-pve\n");
        host.dir.write("etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n");
        const auto inv = scan_of(host);
        CHECK_FALSE(inv.host.iommu.enabled);
        REQUIRE(inv.gpus.size() == 1);
        CHECK(inv.gpus[0].isolation == scan::Isolation::unknown);
        const auto it = std::find_if(inv.problems.begin(), inv.problems.end(),
                                     [](const scan::Problem& p) { return p.message.find("no IOMMU groups") != std::string::npos; });
        REQUIRE(it != inv.problems.end());
        CHECK(it->severity == scan::Severity::error);
        CHECK(it->fix.find("there is no amd_iommu=on option") != std::string::npos);
        CHECK(inv.host.bootloader == scan::Bootloader::grub);
    }

    TEST_CASE("Intel before 6.8 on systemd-boot: the fix names intel_iommu=on and /etc/kernel/cmdline")
    {
        FakeHost host;
        host.add("0000:01:00.0").ids(0x10de, 0x2230).pci_class(0x030000);
        host.dir.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vmx\n");
        host.dir.write("proc/sys/kernel/osrelease", "6.5.13-5-pve\n");
        host.dir.write("etc/kernel/proxmox-boot-uuids", "1A2B-3C4D\n");
        host.dir.write("etc/kernel/cmdline", "root=ZFS=rpool/ROOT/pve-1 boot=zfs\n");
        host.dir.write("sys/firmware/efi/.keep", "");
        const auto inv = scan_of(host);
        CHECK(inv.host.bootloader == scan::Bootloader::systemd_boot);
        CHECK(inv.host.bootloader_evidence.find("proxmox-boot-uuids") != std::string::npos);
        const auto it = std::find_if(inv.problems.begin(), inv.problems.end(),
                                     [](const scan::Problem& p) { return p.message.find("no IOMMU groups") != std::string::npos; });
        REQUIRE(it != inv.problems.end());
        CHECK(it->fix.find("intel_iommu=on") != std::string::npos);
        CHECK(it->fix.find("/etc/kernel/cmdline") != std::string::npos);
    }

    TEST_CASE("link width below the maximum is flagged; interrupt remapping is read from /proc/interrupts")
    {
        FakeHost host;
        host.add("0000:01:00.0")
            .ids(0x10de, 0x2204)
            .pci_class(0x030000)
            .group(1)
            .attr("current_link_width", "1")
            .attr("max_link_width", "16")
            .attr("current_link_speed", "2.5 GT/s PCIe")
            .attr("max_link_speed", "16.0 GT/s PCIe");
        host.dir.write("proc/interrupts", "  24:  0  PCI-MSI 524288-edge  nvidia\n");
        const auto inv = scan_of(host);
        CHECK(inv.host.iommu.interrupt_remapping == false);
        CHECK(has_problem(inv, "runs at PCIe x1 of x16"));
        CHECK(has_problem(inv, "interrupt remapping is not available"));
    }

    TEST_CASE("the CPU count is the processor entries of /proc/cpuinfo; huge page sizes come from /sys/kernel/mm/hugepages")
    {
        FakeHost host;
        host.add("0000:01:00.0").ids(0x10de, 0x2204).pci_class(0x030000).group(1);
        std::string cpuinfo;
        for (int p = 0; p < 6; ++p) {
            cpuinfo += "processor\t: " + std::to_string(p) + "\nvendor_id\t: GenuineIntel\nsiblings\t: 6\ncpu cores\t: 6\n\n";
        }
        host.dir.write("proc/cpuinfo", cpuinfo);
        auto inv = scan_of(host);
        CHECK(inv.host.cpu_count == 6);
        CHECK_FALSE(inv.host.hugepage_sizes_kib); // no hugetlbfs directory under the root

        host.dir.write("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "0\n");
        host.dir.write("sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages", "0\n");
        host.dir.write("sys/kernel/mm/hugepages/README", "not a page size\n");
        inv = scan_of(host);
        REQUIRE(inv.host.hugepage_sizes_kib);
        CHECK(*inv.host.hugepage_sizes_kib == std::vector<std::uint64_t>{2048, 1048576});
    }

    TEST_CASE("a root without sysfs is a usage error")
    {
        passthru::test::TempDir empty;
        auto fs = util::HostFs::open(empty.path());
        REQUIRE(fs);
        util::CommandRunner runner(util::RunMode::record);
        auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
        REQUIRE_FALSE(inv);
        CHECK(inv.error().code() == Errc::usage);
    }

    TEST_CASE("PCI addresses parse strictly")
    {
        CHECK(scan::PciAddress::parse("0000:01:00.0")->str() == "0000:01:00.0");
        CHECK(scan::PciAddress::parse("41:00.3")->str() == "0000:41:00.3");
        CHECK(scan::PciAddress::parse("0000:0A:1f.7")->str() == "0000:0a:1f.7");
        CHECK_FALSE(scan::PciAddress::parse("0000:01:20.0"));
        CHECK_FALSE(scan::PciAddress::parse("0000:01:00.8"));
        CHECK_FALSE(scan::PciAddress::parse("01:00"));
        CHECK(scan::parse_slot("01:00")->slot() == "0000:01:00");
        CHECK(util::major_minor("6.2.16-3-pve") == std::pair<int, int>{6, 2});
    }
}
