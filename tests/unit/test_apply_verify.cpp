// SPDX-License-Identifier: GPL-2.0-or-later
// verify (apply/verify.cpp) on small fake trees: the IOMMU, the kernel
// arguments with the boot loader's reading of a miss, the binding of every
// function, the /dev/vfio nodes and group viability, and the VM config.
#include <doctest/doctest.h>

#include <algorithm>

#include "../support/fake_host.hpp"
#include "../support/shipped_data.hpp"
#include "apply/verify.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"

using namespace passthru;
using passthru::test::FakeHost;

namespace {

struct Verified
{
    apply::VerifyReport report;

    const apply::VerifyCheck* find(std::string_view what) const
    {
        auto it = std::find_if(report.checks.begin(), report.checks.end(),
                               [&](const apply::VerifyCheck& c) { return c.what.find(what) != std::string::npos; });
        return it == report.checks.end() ? nullptr : &*it;
    }
};

Verified verify(const FakeHost& host, const apply::VerifyTarget& target)
{
    auto fs = util::HostFs::open(host.dir.path());
    REQUIRE(fs);
    util::CommandRunner runner(util::RunMode::record);
    auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
    REQUIRE(inv);
    return {apply::verify_host(*inv, *fs, target)};
}

apply::VerifyTarget card_target()
{
    apply::VerifyTarget t;
    t.functions = {*scan::PciAddress::parse("0000:01:00.0"), *scan::PciAddress::parse("0000:01:00.1")};
    t.kernel_args = {"iommu=pt"};
    t.source = "test";
    return t;
}

// A card in group 1 on plain GRUB, with the given drivers.
void grub_host(FakeHost& host, const std::string& vga_driver, const std::string& audio_driver)
{
    host.add("0000:01:00.0").ids(0x10de, 0x2204).pci_class(0x030000).group(1).driver(vga_driver);
    host.add("0000:01:00.1").ids(0x10de, 0x1aef).pci_class(0x040300).group(1).driver(audio_driver);
    host.dir.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu svm\n");
    host.dir.write("proc/sys/kernel/osrelease", "6.8.12-4-pve\n");
    host.dir.write("etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n");
}

} // namespace

TEST_SUITE("apply::verify")
{
    TEST_CASE("no IOMMU: one failing check and nothing else")
    {
        FakeHost host;
        host.add("0000:01:00.0").ids(0x10de, 0x2204).pci_class(0x030000).driver("nouveau");
        host.dir.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vmx\n");
        const auto v = verify(host, card_target());
        CHECK_FALSE(v.report.iommu_on);
        CHECK_FALSE(v.report.all_ok());
        REQUIRE(v.report.checks.size() == 1);
        CHECK(v.report.checks[0].fix.find("intel_iommu=on") != std::string::npos);
    }

    TEST_CASE("after the reboot: every function on vfio-pci, the group node present, the arguments active")
    {
        FakeHost host;
        grub_host(host, "vfio-pci", "vfio-pci");
        host.dir.write("dev/vfio/1", "");
        host.dir.write("proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro quiet iommu=pt\n");
        const auto v = verify(host, card_target());
        CHECK(v.report.all_ok());
        CHECK(v.find("the kernel command line carries iommu=pt"));
        CHECK(v.find("/dev/vfio/1 exists"));
    }

    TEST_CASE("before the reboot: host drivers, the missing node, and the kernel arguments are failures with fixes")
    {
        FakeHost host;
        grub_host(host, "nouveau", "snd_hda_intel");
        host.dir.write("proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro quiet\n");
        const auto v = verify(host, card_target());
        CHECK_FALSE(v.report.all_ok());
        const auto* drv = v.find("0000:01:00.1 is bound to the host driver snd_hda_intel");
        REQUIRE(drv);
        CHECK_FALSE(drv->ok);
        CHECK(drv->fix.find("softdep") != std::string::npos);
        const auto* node = v.find("/dev/vfio/1 is missing");
        REQUIRE(node);
        CHECK_FALSE(node->ok);
        const auto* args = v.find("lacks iommu=pt");
        REQUIRE(args);
        // No grub.cfg under the root: verify cannot tell which step is missing.
        CHECK(args->fix.find("was not refreshed or the host was not rebooted") != std::string::npos);
    }

    TEST_CASE("the boot loader's reading of a miss: grub.cfg without the argument means update-grub did not run")
    {
        FakeHost host;
        grub_host(host, "vfio-pci", "vfio-pci");
        host.dir.write("dev/vfio/1", "");
        host.dir.write("proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro quiet\n");
        host.dir.write("boot/grub/grub.cfg", "menuentry 'Proxmox VE' {\n\tlinux\t/boot/vmlinuz root=/dev/sda1 ro quiet\n}\n");
        auto v = verify(host, card_target());
        const auto* args = v.find("lacks iommu=pt");
        REQUIRE(args);
        CHECK(args->fix.find("refresh not run") == 0);
        CHECK(args->fix.find("run 'update-grub'") != std::string::npos);

        host.dir.write("boot/grub/grub.cfg", "menuentry 'Proxmox VE' {\n\tlinux\t/boot/vmlinuz root=/dev/sda1 ro quiet iommu=pt\n}\n");
        v = verify(host, card_target());
        args = v.find("lacks iommu=pt");
        REQUIRE(args);
        CHECK(args->fix.find("not rebooted") == 0);
    }

    TEST_CASE("a group shared with a device on a host driver is not viable")
    {
        FakeHost host;
        grub_host(host, "vfio-pci", "vfio-pci");
        host.add("0000:02:00.0").ids(0x8086, 0x1533).pci_class(0x020000).group(1).driver("igb");
        host.dir.write("dev/vfio/1", "");
        apply::VerifyTarget t = card_target();
        t.kernel_args.clear();
        const auto v = verify(host, t);
        const auto* shared = v.find("IOMMU group 1 also holds 0000:02:00.0 on the host driver igb");
        REQUIRE(shared);
        CHECK_FALSE(shared->ok);
        CHECK_FALSE(v.report.all_ok());
    }

    TEST_CASE("the VM config must pass every selected function")
    {
        FakeHost host;
        grub_host(host, "vfio-pci", "vfio-pci");
        host.dir.write("dev/vfio/1", "");
        host.dir.write("etc/pve/qemu-server/101.conf", "memory: 4096\nhostpci0: 0000:01:00.0,pcie=1\n");
        apply::VerifyTarget t = card_target();
        t.kernel_args.clear();
        t.vmid = 101;
        auto v = verify(host, t);
        const auto* vm = v.find("VM 101's config does not pass 0000:01:00.1");
        REQUIRE(vm);
        CHECK_FALSE(vm->ok);

        host.dir.write("etc/pve/qemu-server/101.conf", "memory: 4096\nhostpci0: 0000:01:00,pcie=1\n");
        v = verify(host, t);
        CHECK(v.find("VM 101 passes every selected function"));
        CHECK(v.report.all_ok());
    }

    TEST_CASE("a generation's target: each function once, its arguments, its request's VM")
    {
        apply::Manifest m;
        m.id = 7;
        m.kernel_args = {"iommu=pt"};
        m.gpus = {plan::SelectedGpu{"0000:01:00", "", {"0000:01:00.0", "0000:01:00.1"}, {}, {}, false},
                  plan::SelectedGpu{"0000:01:00", "", {"0000:01:00.1", "not-an-address"}, {}, {}, false}};
        m.request = plan::Request{};
        m.request->vm = "101";
        m.request->vmid = 101;
        auto t = apply::target_of_generation(m);
        CHECK(t.source == "generation 7");
        CHECK(t.kernel_args == std::vector<std::string>{"iommu=pt"});
        REQUIRE(t.functions.size() == 2);
        CHECK(t.functions[1].str() == "0000:01:00.1");
        REQUIRE(t.vmid);
        CHECK(*t.vmid == 101);

        m.request.reset(); // a rollback's: no VM
        m.rollback_to_before = 3;
        CHECK_FALSE(apply::target_of_generation(m).vmid);
    }
}
