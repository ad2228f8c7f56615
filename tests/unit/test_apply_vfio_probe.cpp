// SPDX-License-Identifier: GPL-2.0-or-later
// verify's reading of the kernel's VFIO answers (apply/verify.cpp with the
// calls of apply/vfio_probe.hpp behind a fake): a viable group attached to
// a type1 container with every planned function opened is one ok line; a
// group that is not viable names its devices on host drivers (id, driver,
// and the plan that binds them); EBUSY on the group's open or on
// VFIO_GROUP_SET_CONTAINER names the process that holds the group (its node
// or a member's iommufd cdev) and is not a failure; a function VFIO
// does not know, a refused region or a missing type1 IOMMU fail with the
// kernel's errno text; under --root VFIO is "not checked", never "ok".
#include <doctest/doctest.h>

#include <linux/vfio.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "../support/fake_host.hpp"
#include "../support/shipped_data.hpp"
#include "apply/verify.hpp"
#include "apply/vfio_probe.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"

using namespace passthru;
using passthru::test::FakeHost;

namespace {

// What the fake kernel answers; every call is logged in order.
struct FakeAnswers
{
    int open_err = 0;
    bool viable = true;
    int container_err = 0;
    int api_version = apply::vfio_api_version();
    bool type1v2 = true;
    bool type1 = true;
    int set_container_err = 0;
    int set_iommu_err = 0;
    std::map<std::string, int> device_err; // function -> errno of GET_DEVICE_FD
    std::map<std::string, int> region_err; // function -> errno of GET_REGION_INFO (region 2)
    std::vector<std::string> calls;
};

class FakeVfio final : public apply::VfioGroupCalls
{
public:
    explicit FakeVfio(FakeAnswers& a) : m_a(a) {}
    int open_group() override { return log("open_group", m_a.open_err); }
    int group_viable(bool& viable) override
    {
        viable = m_a.viable;
        return log("group_viable", 0);
    }
    int open_container(int& version) override
    {
        version = m_a.api_version;
        return log("open_container", m_a.container_err);
    }
    int has_iommu(apply::VfioIommu type, bool& offered) override
    {
        offered = type == apply::VfioIommu::type1v2 ? m_a.type1v2 : m_a.type1;
        return log(type == apply::VfioIommu::type1v2 ? "has_iommu type1v2" : "has_iommu type1", 0);
    }
    int set_container() override { return log("set_container", m_a.set_container_err); }
    int set_iommu(apply::VfioIommu type) override
    {
        return log(type == apply::VfioIommu::type1v2 ? "set_iommu type1v2" : "set_iommu type1", m_a.set_iommu_err);
    }
    int device(const std::string& name, apply::VfioDeviceInfo& info) override
    {
        info.regions = 9;
        info.irqs = 5;
        if (auto it = m_a.region_err.find(name); it != m_a.region_err.end()) {
            info.refused_region = 2;
            info.region_err = it->second;
        }
        auto it = m_a.device_err.find(name);
        return log("device " + name, it == m_a.device_err.end() ? 0 : it->second);
    }

private:
    int log(std::string call, int err)
    {
        m_a.calls.push_back(std::move(call));
        return err;
    }
    FakeAnswers& m_a;
};

// A card (two functions) in group 1 on vfio-pci, after the reboot.
void card_host(FakeHost& host)
{
    host.add("0000:01:00.0").ids(0x10de, 0x2204).pci_class(0x030000).group(1).driver("vfio-pci");
    host.add("0000:01:00.1").ids(0x10de, 0x1aef).pci_class(0x040300).group(1).driver("vfio-pci");
    host.dir.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu svm\n");
    host.dir.write("proc/sys/kernel/osrelease", "6.8.12-4-pve\n");
    host.dir.write("dev/vfio/1", "");
}

apply::VerifyTarget probe_card_target()
{
    apply::VerifyTarget t;
    t.functions = {*scan::PciAddress::parse("0000:01:00.0"), *scan::PciAddress::parse("0000:01:00.1")};
    t.source = "test";
    return t;
}

struct ProbeVerified
{
    apply::VerifyReport report;

    const apply::VerifyCheck* find(std::string_view what) const
    {
        auto it = std::find_if(report.checks.begin(), report.checks.end(),
                               [&](const apply::VerifyCheck& c) { return c.what.find(what) != std::string::npos; });
        return it == report.checks.end() ? nullptr : &*it;
    }
};

// verify with VFIO answered by `answers` (or not asked, when null).
ProbeVerified verify(const FakeHost& host, FakeAnswers* answers)
{
    auto fs = util::HostFs::open(host.dir.path());
    REQUIRE(fs);
    util::CommandRunner runner(util::RunMode::record);
    auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
    REQUIRE(inv);
    apply::VfioOpener opener;
    if (answers != nullptr) {
        opener = [answers](int group) {
            CHECK(group == 1);
            return std::make_unique<FakeVfio>(*answers);
        };
    }
    return {apply::verify_host(*inv, *fs, probe_card_target(), opener)};
}

} // namespace

TEST_SUITE("apply::vfio_probe")
{
    TEST_CASE("a viable group in a type1v2 container with every planned function opened is one ok line")
    {
        FakeHost host;
        card_host(host);
        FakeAnswers a;
        const auto v = verify(host, &a);
        const auto* ok = v.find("VFIO takes IOMMU group 1");
        REQUIRE(ok);
        CHECK(ok->ok);
        CHECK_FALSE(ok->note);
        CHECK(ok->what.find("0000:01:00.0 (9 regions, 5 interrupt types), 0000:01:00.1") != std::string::npos);
        CHECK(v.report.all_ok());
        CHECK(a.calls
              == std::vector<std::string>{"open_group", "group_viable", "open_container", "has_iommu type1v2", "set_container",
                                          "set_iommu type1v2", "device 0000:01:00.0", "device 0000:01:00.1"});
    }

    TEST_CASE("no type1v2: the container takes type1; neither: a failure that names the module")
    {
        FakeHost host;
        card_host(host);
        FakeAnswers a;
        a.type1v2 = false;
        auto v = verify(host, &a);
        CHECK(std::find(a.calls.begin(), a.calls.end(), "set_iommu type1") != a.calls.end());
        CHECK(v.report.all_ok());

        FakeAnswers none;
        none.type1v2 = false;
        none.type1 = false;
        v = verify(host, &none);
        const auto* fail = v.find("the container offers no type1 IOMMU");
        REQUIRE(fail);
        CHECK_FALSE(fail->ok);
        CHECK(fail->fix.find("modprobe vfio_iommu_type1") != std::string::npos);
        CHECK(std::find(none.calls.begin(), none.calls.end(), "set_container") == none.calls.end());
    }

    TEST_CASE("not viable: every device of the group on a host driver is named with its driver")
    {
        FakeHost host;
        card_host(host);
        host.add("0000:02:00.0").ids(0x8086, 0x1533).pci_class(0x020000).group(1).driver("igb");
        host.add("0000:00:01.0").ids(0x8086, 0x1901).pci_class(0x060400).group(1).driver("pcieport");
        FakeAnswers a;
        a.viable = false;
        const auto v = verify(host, &a);
        const auto* fail = v.find("VFIO cannot take IOMMU group 1: the group is not viable");
        REQUIRE(fail);
        CHECK_FALSE(fail->ok);
        CHECK(fail->what.find("0000:02:00.0 [8086:1533] on igb") != std::string::npos);
        CHECK(fail->what.find("0000:00:01.0") == std::string::npos); // pcieport leaves a group viable
        CHECK(fail->what.find("0000:01:00.0") == std::string::npos); // on vfio-pci
        CHECK(fail->fix.find("bind 0000:02:00.0 to vfio-pci") != std::string::npos);
        CHECK(fail->fix.find("'passthru plan --vm VMID --gpus 0000:01:00'") != std::string::npos);
        CHECK_FALSE(v.report.all_ok());
        CHECK(a.calls == std::vector<std::string>{"open_group", "group_viable"});
    }

    TEST_CASE("EBUSY: the group is held by a running VM, named from /proc, and that is not a failure")
    {
        FakeHost host;
        card_host(host);
        host.dir.symlink("proc/4242/fd/0", "/dev/null");
        host.dir.symlink("proc/4242/fd/31", "/dev/vfio/1");
        host.dir.write("proc/4242/comm", "kvm\n");
        host.dir.write("proc/4242/cmdline", std::string("/usr/bin/kvm\0-id\0"
                                                        "101\0-name\0win11\0",
                                                        33));
        host.dir.symlink("proc/77/fd/3", "/dev/vfio/10");
        host.dir.write("proc/77/comm", "qemu-system-x86\n");
        FakeAnswers a;
        a.open_err = EBUSY;
        auto v = verify(host, &a);
        const auto* busy = v.find("/dev/vfio/1 is in use by process 4242 (kvm, VM 101, win11) (open: Device or resource busy)");
        REQUIRE(busy);
        CHECK(busy->note);
        CHECK(busy->ok);
        CHECK(busy->what.find("this is what a running VM looks like") != std::string::npos);
        CHECK(busy->what.find("process 77") == std::string::npos);
        CHECK(v.report.all_ok());
        CHECK(a.calls == std::vector<std::string>{"open_group"});

        std::filesystem::remove(host.dir.path() / "proc/4242/fd/31");
        host.dir.symlink("proc/4242/fd/31", "/dev/vfio/9"); // replaced: nobody visible holds group 1
        FakeAnswers b;
        b.open_err = EBUSY;
        v = verify(host, &b);
        CHECK(v.find("/dev/vfio/1 is in use by another process"));
    }

    TEST_CASE("a function VFIO does not know, or a region it refuses, fails with the kernel's errno text")
    {
        FakeHost host;
        card_host(host);
        FakeAnswers a;
        a.device_err["0000:01:00.1"] = ENODEV;
        auto v = verify(host, &a);
        const auto* fail = v.find("VFIO cannot open 0000:01:00.1 in IOMMU group 1: No such device");
        REQUIRE(fail);
        CHECK_FALSE(fail->ok);
        CHECK(fail->fix.find("bind it to vfio-pci") != std::string::npos);
        CHECK_FALSE(v.find("VFIO takes IOMMU group 1"));
        CHECK_FALSE(v.report.all_ok());

        FakeAnswers r;
        r.region_err["0000:01:00.0"] = EINVAL;
        v = verify(host, &r);
        const auto* region = v.find("VFIO refuses region 2 of 0000:01:00.0: Invalid argument");
        REQUIRE(region);
        CHECK_FALSE(region->ok);
        CHECK(std::find(r.calls.begin(), r.calls.end(), "device 0000:01:00.1") != r.calls.end()); // the rest still checked
    }

    TEST_CASE("an ioctl the kernel refuses on the group or the container fails with its errno text")
    {
        FakeHost host;
        card_host(host);
        FakeAnswers perm;
        perm.open_err = EACCES;
        auto v = verify(host, &perm);
        REQUIRE(v.find("opening /dev/vfio/1 fails: Permission denied"));
        CHECK_FALSE(v.report.all_ok());

        FakeAnswers set;
        set.set_container_err = EPERM;
        v = verify(host, &set);
        REQUIRE(v.find("VFIO_GROUP_SET_CONTAINER fails: Operation not permitted"));

        FakeAnswers iommu;
        iommu.set_iommu_err = ENODEV;
        v = verify(host, &iommu);
        REQUIRE(v.find("VFIO_SET_IOMMU fails: No such device"));

        FakeAnswers old;
        old.api_version = 7;
        v = verify(host, &old);
        REQUIRE(v.find("/dev/vfio/vfio speaks VFIO API version 7"));
        CHECK_FALSE(v.report.all_ok());
    }

    TEST_CASE("EBUSY from VFIO_GROUP_SET_CONTAINER: the group is in use, a note naming who holds its iommufd cdev")
    {
        FakeHost host;
        card_host(host);
        host.dir.write("sys/bus/pci/devices/0000:01:00.1/vfio-dev/vfio3/dev", "511:3\n");
        host.dir.symlink("proc/900/fd/12", "/dev/vfio/devices/vfio3");
        host.dir.write("proc/900/comm", "qemu-system-x86\n");
        host.dir.write("proc/900/cmdline", std::string("qemu-system-x86_64\0-name\0guest=lab,debug-threads=on\0", 52));
        FakeAnswers a;
        a.set_container_err = EBUSY;
        const auto v = verify(host, &a);
        const auto* busy =
            v.find("/dev/vfio/1 is in use by process 900 (qemu-system-x86, lab) (VFIO_GROUP_SET_CONTAINER: Device or resource busy)");
        REQUIRE(busy);
        CHECK(busy->note);
        CHECK(busy->what.find("this is what a running VM looks like, not a failure") != std::string::npos);
        CHECK(v.report.all_ok());
        CHECK(a.calls.back() == "set_container");

        FakeAnswers perm; // any other errno stays a failure
        perm.set_container_err = EINVAL;
        CHECK_FALSE(verify(host, &perm).report.all_ok());
    }

    TEST_CASE("not viable with every member on vfio-pci: in use through a cdev is a note, else a failure")
    {
        FakeHost host;
        card_host(host);
        FakeAnswers a;
        a.viable = false;
        auto v = verify(host, &a);
        const auto* fail = v.find("VFIO cannot take IOMMU group 1: the group is not viable, though no member is on a host driver");
        REQUIRE(fail);
        CHECK_FALSE(fail->ok);
        CHECK_FALSE(v.report.all_ok());

        host.dir.write("sys/bus/pci/devices/0000:01:00.0/vfio-dev/vfio0/dev", "511:0\n");
        host.dir.symlink("proc/4242/fd/31", "/dev/vfio/devices/vfio0");
        host.dir.write("proc/4242/comm", "kvm\n");
        FakeAnswers b;
        b.viable = false;
        v = verify(host, &b);
        const auto* busy =
            v.find("/dev/vfio/1 is in use by process 4242 (kvm) (not viable while its devices are open through the iommufd cdev)");
        REQUIRE(busy);
        CHECK(busy->note);
        CHECK(v.report.all_ok());
    }

    TEST_CASE("under --root VFIO is not asked: a note, never ok")
    {
        FakeHost host;
        card_host(host);
        const auto v = verify(host, nullptr);
        const auto* note = v.find("VFIO's answer for IOMMU group 1: not checked (--root)");
        REQUIRE(note);
        CHECK(note->note);
        CHECK_FALSE(v.find("VFIO takes"));
        CHECK(v.report.all_ok());
    }

    TEST_CASE("only the iommufd cdev: said so, the group node's absence is the failure")
    {
        FakeHost host;
        card_host(host);
        host.dir.write("dev/vfio/devices/vfio0", "");
        std::filesystem::remove(host.dir.path() / "dev/vfio/1");
        FakeAnswers a;
        const auto v = verify(host, &a);
        const auto* note = v.find("not checked: only the iommufd cdev (/dev/vfio/devices/vfio0");
        REQUIRE(note);
        CHECK(note->note);
        CHECK(a.calls.empty());
        CHECK(v.find("/dev/vfio/1 is missing"));
    }
}

TEST_CASE("apply::vfio_region_absent: only the VGA region refused with EINVAL is no region")
{
    CHECK(apply::vfio_region_absent(VFIO_PCI_VGA_REGION_INDEX, EINVAL));
    CHECK_FALSE(apply::vfio_region_absent(VFIO_PCI_VGA_REGION_INDEX, EIO));
    CHECK_FALSE(apply::vfio_region_absent(VFIO_PCI_BAR0_REGION_INDEX, EINVAL));
    CHECK_FALSE(apply::vfio_region_absent(VFIO_PCI_CONFIG_REGION_INDEX, EINVAL));
}
