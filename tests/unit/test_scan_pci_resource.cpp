// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include "../support/fake_host.hpp"
#include "../support/shipped_data.hpp"
#include "scan/pci_resource.hpp"
#include "scan/scanner.hpp"

using namespace passthru;
using passthru::test::FakeHost;

namespace {

// A Tesla V100 32 GB as the kernel prints its resource file: BAR0 16 MiB
// 32-bit, BAR1 32 GiB 64-bit prefetchable, BAR3 32 MiB 64-bit prefetchable,
// BAR5 I/O ports, the ROM, then 6 unused SR-IOV lines.
const char* const k_v100_32gb = "0x00000000c5000000 0x00000000c5ffffff 0x0000000000040200\n"
                                "0x0000038000000000 0x00000387ffffffff 0x000000000014220c\n"
                                "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
                                "0x0000038800000000 0x0000038801ffffff 0x000000000014220c\n"
                                "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
                                "0x000000000000e000 0x000000000000e07f 0x0000000000040101\n"
                                "0x00000000c6000000 0x00000000c607ffff 0x0000000000046200\n"
                                "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";

constexpr std::uint64_t k_resource_gib = 1ULL << 30;
constexpr std::uint64_t k_resource_mib = 1ULL << 20;

} // namespace

TEST_SUITE("scan::pci_resource")
{
    TEST_CASE("the memory BARs of a resource file: sizes, 64-bit and prefetchable flags; I/O and ROM left out")
    {
        const auto bars = scan::parse_pci_resource(k_v100_32gb);
        REQUIRE(bars);
        REQUIRE(bars->size() == 3);
        CHECK((*bars)[0].index == 0);
        CHECK((*bars)[0].size == 16 * k_resource_mib);
        CHECK_FALSE((*bars)[0].is_64bit);
        CHECK_FALSE((*bars)[0].prefetchable);
        CHECK((*bars)[1].index == 1);
        CHECK((*bars)[1].size == 32 * k_resource_gib);
        CHECK((*bars)[1].is_64bit);
        CHECK((*bars)[1].prefetchable);
        CHECK((*bars)[2].index == 3);
        CHECK((*bars)[2].size == 32 * k_resource_mib);
        CHECK(scan::prefetchable64_bytes(*bars) == 32 * k_resource_gib + 32 * k_resource_mib);
    }

    TEST_CASE("garbage lines are skipped; a file without one well-formed line is nullopt")
    {
        CHECK_FALSE(scan::parse_pci_resource(""));
        CHECK_FALSE(scan::parse_pci_resource("garbage\n0x1 0x2\n"));
        const auto bars = scan::parse_pci_resource("junk\n0x0000038000000000 0x00000383ffffffff 0x000000000014220c\n");
        REQUIRE(bars);
        REQUIRE(bars->size() == 1);
        CHECK(bars->front().index == 1);
        CHECK(bars->front().size == 16 * k_resource_gib);
        // the SR-IOV lines (7-12) are not BARs of the function itself
        std::string vf_bar_only;
        for (int i = 0; i < 7; ++i) {
            vf_bar_only += "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";
        }
        vf_bar_only += "0x0000030000000000 0x00000300ffffffff 0x000000000014220c\n";
        REQUIRE(scan::parse_pci_resource(vf_bar_only));
        CHECK(scan::parse_pci_resource(vf_bar_only)->empty());
    }

    TEST_CASE("scan reads the BARs of GPU functions and the CPU's address bits and 1 GiB pages")
    {
        FakeHost host;
        host.add("0000:00:03.1").ids(0x1022, 0x1483).pci_class(0x060400).group(11).driver("pcieport");
        host.add("0000:01:00.0", "pci0000:00/0000:00:03.1").ids(0x10de, 0x1db5).pci_class(0x030200).group(12).attr("resource", k_v100_32gb);
        host.add("0000:02:00.0").ids(0x8086, 0x1521).pci_class(0x020000).group(13).attr("resource", k_v100_32gb);
        host.dir.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vmx pdpe1gb lm\n"
                                       "address sizes\t: 46 bits physical, 48 bits virtual\n\n"
                                       "processor\t: 1\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vmx lm\n"
                                       "address sizes\t: 39 bits physical, 48 bits virtual\n");
        auto fs = util::HostFs::open(host.dir.path());
        REQUIRE(fs);
        util::CommandRunner runner(util::RunMode::record);
        const auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
        REQUIRE(inv);
        const auto* gpu = inv->find(*scan::PciAddress::parse("0000:01:00.0"));
        REQUIRE(gpu != nullptr);
        CHECK(scan::prefetchable64_bytes(gpu->mem_bars) == 32 * k_resource_gib + 32 * k_resource_mib);
        const auto* nic = inv->find(*scan::PciAddress::parse("0000:02:00.0"));
        REQUIRE(nic != nullptr);
        CHECK(nic->mem_bars.empty()); // not read: scan stays cheap
        CHECK(inv->host.phys_address_bits == 46);
        CHECK(inv->host.pdpe1gb == true);
    }

    TEST_CASE("a CPU without pdpe1gb and without an address-size line")
    {
        FakeHost host;
        host.dir.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu svm lm\n");
        host.add("0000:00:00.0").ids(0x1022, 0x1480).pci_class(0x060000).group(0);
        auto fs = util::HostFs::open(host.dir.path());
        REQUIRE(fs);
        util::CommandRunner runner(util::RunMode::record);
        const auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
        REQUIRE(inv);
        CHECK(inv->host.pdpe1gb == false);
        CHECK_FALSE(inv->host.phys_address_bits);
    }
}
