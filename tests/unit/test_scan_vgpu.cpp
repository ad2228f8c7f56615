// SPDX-License-Identifier: GPL-2.0-or-later
// scan/vgpu.cpp: a host set up for NVIDIA vGPU is recognised by the vGPU
// manager's units, an enabled pve-nvidia-sriov@ unit or SR-IOV VFs on an
// NVIDIA GPU; the GPUs nvidia holds only support that finding.
#include <doctest/doctest.h>

#include "../support/fake_host.hpp"
#include "../support/shipped_data.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"

using namespace passthru;
using passthru::test::FakeHost;

namespace {

std::vector<std::string> evidence(const FakeHost& host)
{
    auto fs = util::HostFs::open(host.dir.path());
    REQUIRE(fs);
    util::CommandRunner runner(util::RunMode::record);
    auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
    REQUIRE(inv);
    CHECK(inv->host.vgpu_host() == !inv->host.vgpu_evidence.empty());
    return inv->host.vgpu_evidence;
}

void card_on_nvidia(FakeHost& host)
{
    host.add("0000:41:00.0").ids(0x10de, 0x2235).pci_class(0x030200).group(3).driver("nvidia");
}

} // namespace

TEST_SUITE("scan::vgpu")
{
    TEST_CASE("a host whose GPU nvidia drives is no vGPU host by that alone")
    {
        FakeHost host;
        card_on_nvidia(host);
        CHECK(evidence(host).empty());
    }

    TEST_CASE("the vGPU manager's unit files, wherever systemd looks, make a vGPU host")
    {
        for (const char* dir : {"usr/lib/systemd/system", "lib/systemd/system", "etc/systemd/system"}) {
            CAPTURE(dir);
            FakeHost host;
            card_on_nvidia(host);
            host.dir.write(std::string(dir) + "/nvidia-vgpud.service", "[Unit]\n");
            const auto e = evidence(host);
            REQUIRE(e.size() == 2);
            CHECK(e[0] == "the NVIDIA vGPU manager's unit /" + std::string(dir) + "/nvidia-vgpud.service");
            CHECK(e[1] == "the nvidia driver holds 0000:41:00.0");
        }
    }

    TEST_CASE("Proxmox VE's pve-nvidia-sriov@ unit enabled, and only enabled, counts")
    {
        FakeHost host;
        card_on_nvidia(host);
        host.dir.write("usr/lib/systemd/system/pve-nvidia-sriov@.service", "[Unit]\n");
        CHECK(evidence(host).empty()); // installed with the package, not enabled
        host.dir.symlink("etc/systemd/system/multi-user.target.wants/pve-nvidia-sriov@ALL.service",
                         "../../../../usr/lib/systemd/system/pve-nvidia-sriov@.service");
        const auto e = evidence(host);
        REQUIRE(!e.empty());
        CHECK(e[0] == "Proxmox VE's pve-nvidia-sriov@ALL.service is enabled (/etc/systemd/system/multi-user.target.wants)");
    }

    TEST_CASE("SR-IOV virtual functions enabled on an NVIDIA GPU, not on a NIC and not merely possible")
    {
        FakeHost host;
        host.add("0000:01:00.0")
            .ids(0x10de, 0x2bb5)
            .pci_class(0x030200)
            .group(1)
            .driver("nvidia")
            .attr("sriov_totalvfs", "16")
            .attr("sriov_numvfs", "0");
        host.add("0000:42:00.0").ids(0x8086, 0x1521).pci_class(0x020000).group(2).attr("sriov_totalvfs", "7").attr("sriov_numvfs", "7");
        CHECK(evidence(host).empty());
        host.dir.write("sys/devices/pci0000:00/0000:01:00.0/sriov_numvfs", "4\n");
        const auto e = evidence(host);
        REQUIRE(e.size() == 2);
        CHECK(e[0] == "0000:01:00.0 has 4 SR-IOV virtual functions enabled");
        CHECK(e[1] == "the nvidia driver holds 0000:01:00.0");
    }
}
