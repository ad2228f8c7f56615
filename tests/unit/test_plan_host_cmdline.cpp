// SPDX-License-Identifier: GPL-2.0-or-later
// The kernel command-line planner (plan/host/cmdline.cpp) on small fake trees:
// which arguments a CPU and kernel need, where each boot loader of the table
// gets them, and the kernel releases taken from the data.
#include <doctest/doctest.h>

#include <algorithm>

#include "../support/fake_host.hpp"
#include "../support/shipped_data.hpp"
#include "plan/after_step.hpp"
#include "plan/host/host_detail.hpp"
#include "plan/planner.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"

using namespace passthru;
using passthru::test::FakeHost;

namespace {

// One NVIDIA card on a host of the given CPU vendor and kernel.
void base_host(FakeHost& host, const std::string& cpu_vendor, const std::string& kernel)
{
    host.add("0000:01:00.0").ids(0x10de, 0x2204).pci_class(0x030000).group(1).driver("nouveau").attr("boot_vga", "0");
    host.add("0000:01:00.1").ids(0x10de, 0x1aef).pci_class(0x040300).group(1).driver("snd_hda_intel");
    host.dir.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: " + cpu_vendor + "\nflags\t\t: fpu vmx svm\n");
    host.dir.write("proc/sys/kernel/osrelease", kernel + "\n");
    host.dir.write("proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro quiet\n");
}

struct Planned
{
    scan::Inventory inventory;
    plan::Plan plan;
    plan::detail::HostInputs in;
};

// Runs plan_cmdline; `tweak` may change the inventory (e.g. its kernel cut-offs) first.
Planned run_cmdline(const FakeHost& host, bool boot_vga = false, const std::function<void(scan::Inventory&)>& tweak = {})
{
    auto fs = util::HostFs::open(host.dir.path());
    REQUIRE(fs);
    util::CommandRunner runner(util::RunMode::record);
    auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
    REQUIRE(inv);
    Planned out{std::move(*inv), {}, {}};
    if (tweak) {
        tweak(out.inventory);
    }
    const data::DataDir data(*fs, std::nullopt);
    const plan::Request request = test::vm_request();
    plan::PlanContext ctx{.inventory = out.inventory, .fs = *fs, .data = data, .request = request};
    out.in.kernel_release = out.inventory.host.kernel;
    out.in.kernel_version = util::major_minor(out.inventory.host.kernel.value_or(""));
    out.in.boot_vga_selected = boot_vga;
    plan::detail::plan_cmdline(ctx, out.plan, out.in);
    return out;
}

const plan::FileChange* file(const plan::Plan& p, const std::string& path)
{
    auto it = std::find_if(p.files.begin(), p.files.end(), [&](const plan::FileChange& f) { return f.path == path; });
    return it == p.files.end() ? nullptr : &*it;
}

// The after-steps the plan's files call for (plan/after_step.cpp).
std::vector<plan::StepKind> cmdline_steps(const Planned& r)
{
    std::vector<std::string> paths;
    paths.reserve(r.plan.files.size());
    for (const auto& f : r.plan.files) {
        paths.push_back(f.path);
    }
    return plan::steps_for_files(paths, r.inventory.host.bootloader);
}

bool adds(const plan::Plan& p, const std::string& token)
{
    return std::find(p.kernel_args.add.begin(), p.kernel_args.add.end(), token) != p.kernel_args.add.end();
}

} // namespace

TEST_SUITE("plan::host::cmdline")
{
    TEST_CASE("GRUB: the drop-in appends, and amd_iommu=on goes from the file that carries it")
    {
        FakeHost host;
        base_host(host, "AuthenticAMD", "6.8.12-4-pve");
        host.dir.write("etc/default/grub", "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet amd_iommu=on\"\nGRUB_CMDLINE_LINUX=\"\"\n");
        const auto r = run_cmdline(host);
        REQUIRE_FALSE(r.plan.refused());
        CHECK(r.inventory.host.bootloader == scan::Bootloader::grub);
        CHECK(r.plan.kernel_args.add == std::vector<std::string>{"iommu=pt"});
        CHECK(r.plan.kernel_args.remove == std::vector<std::string>{"amd_iommu=on"});
        const auto* dropin = file(r.plan, "/etc/default/grub.d/passthru.cfg");
        REQUIRE(dropin);
        REQUIRE(dropin->after);
        CHECK(dropin->after->find("GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT iommu=pt\"") != std::string::npos);
        const auto* main = file(r.plan, "/etc/default/grub");
        REQUIRE(main);
        CHECK(main->after == std::optional<std::string>("GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX=\"\"\n"));
        CHECK(cmdline_steps(r) == std::vector<plan::StepKind>{plan::StepKind::boot_refresh});
    }

    TEST_CASE("a later drop-in that overwrites GRUB_CMDLINE_LINUX_DEFAULT is refused")
    {
        FakeHost host;
        base_host(host, "AuthenticAMD", "6.8.12-4-pve");
        host.dir.write("etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n");
        host.dir.write("etc/default/grub.d/zz-local.cfg", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\n");
        const auto r = run_cmdline(host);
        REQUIRE(r.plan.refused());
        CHECK(r.plan.refusals.front().message.find("/etc/default/grub.d/zz-local.cfg is sourced after") == 0);
        CHECK(r.plan.files.empty());
    }

    TEST_CASE("systemd-boot: /etc/kernel/cmdline is edited in place as one line with root=")
    {
        FakeHost host;
        base_host(host, "GenuineIntel", "6.5.13-5-pve");
        host.dir.write("sys/firmware/efi/.keep", "");
        host.dir.write("etc/kernel/proxmox-boot-uuids", "1A2B-3C4D\n");
        host.dir.write("etc/kernel/cmdline", "root=ZFS=rpool/ROOT/pve-1 boot=zfs\nstale second line\n");
        const auto r = run_cmdline(host);
        REQUIRE_FALSE(r.plan.refused());
        CHECK(r.inventory.host.bootloader == scan::Bootloader::systemd_boot);
        const auto* f = file(r.plan, "/etc/kernel/cmdline");
        REQUIRE(f);
        CHECK(f->after == std::optional<std::string>("root=ZFS=rpool/ROOT/pve-1 boot=zfs intel_iommu=on iommu=pt\n"));
        CHECK(std::any_of(f->reasons.begin(), f->reasons.end(),
                          [](const std::string& s) { return s.find("proxmox-boot-tool reads only the first line") != std::string::npos; }));
        CHECK(file(r.plan, "/etc/default/grub.d/passthru.cfg") == nullptr);
    }

    TEST_CASE("systemd-boot without root= is refused, naming the refresh command of the table")
    {
        FakeHost host;
        base_host(host, "AuthenticAMD", "6.8.12-4-pve");
        host.dir.write("sys/firmware/efi/.keep", "");
        host.dir.write("etc/kernel/proxmox-boot-uuids", "1A2B-3C4D\n");
        host.dir.write("etc/kernel/cmdline", "boot=zfs\n");
        const auto r = run_cmdline(host);
        REQUIRE(r.plan.refused());
        CHECK(r.plan.refusals.front().message.find("/etc/kernel/cmdline has no root= argument: proxmox-boot-tool refresh would fail") == 0);
    }

    TEST_CASE("an unknown boot loader is refused with what each known one needs")
    {
        FakeHost host;
        base_host(host, "AuthenticAMD", "6.8.12-4-pve");
        const auto r = run_cmdline(host);
        REQUIRE(r.plan.refused());
        REQUIRE_FALSE(r.plan.refusals.front().hints.empty());
        CHECK(r.plan.refusals.front().hints.front()
              == "run 'proxmox-boot-tool status' and 'efibootmgr -v' on the host; GRUB needs /etc/default/grub, "
                 "systemd-boot needs /etc/kernel/proxmox-boot-uuids and /etc/kernel/cmdline");
    }

    TEST_CASE("the Intel IOMMU release comes from the data, not the code")
    {
        FakeHost host;
        base_host(host, "GenuineIntel", "6.8.12-4-pve");
        host.dir.write("etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n");
        CHECK_FALSE(adds(run_cmdline(host).plan, "intel_iommu=on"));
        const auto later = run_cmdline(host, false, [](scan::Inventory& inv) { inv.kernel_cutoffs.intel_iommu_default_on = {6, 9}; });
        CHECK(adds(later.plan, "intel_iommu=on"));
        const auto* dropin = file(later.plan, "/etc/default/grub.d/passthru.cfg");
        REQUIRE(dropin);
        CHECK(std::any_of(dropin->reasons.begin(), dropin->reasons.end(),
                          [](const std::string& s) { return s.find("kernels before 6.9 leave off by default") != std::string::npos; }));
    }

    TEST_CASE("the kernel's own config decides whether VT-d is on by default, over its release")
    {
        // Debian 13's 6.12 leaves CONFIG_INTEL_IOMMU_DEFAULT_ON unset although 6.12 is past the
        // release at which Proxmox's kernels turn it on (docs/facts.md: iommu).
        FakeHost host;
        base_host(host, "GenuineIntel", "6.12.118+deb13-amd64");
        host.dir.write("etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n");
        const auto release_only = run_cmdline(host);
        CHECK_FALSE(release_only.inventory.host.intel_iommu_default_on_config.has_value());
        CHECK_FALSE(adds(release_only.plan, "intel_iommu=on"));

        host.dir.write("boot/config-6.12.118+deb13-amd64",
                       "CONFIG_INTEL_IOMMU=y\n# CONFIG_INTEL_IOMMU_DEFAULT_ON is not set\nCONFIG_INTEL_IOMMU_DEFAULT_ON_INTGPU_OFF=y\n");
        const auto debian = run_cmdline(host);
        CHECK(debian.inventory.host.intel_iommu_default_on_config == std::optional<bool>(false));
        CHECK(adds(debian.plan, "intel_iommu=on"));
        const auto* dropin = file(debian.plan, "/etc/default/grub.d/passthru.cfg");
        REQUIRE(dropin);
        CHECK(std::any_of(dropin->reasons.begin(), dropin->reasons.end(), [](const std::string& s) {
            return s.find("(/boot/config-6.12.118+deb13-amd64) has CONFIG_INTEL_IOMMU_DEFAULT_ON unset") != std::string::npos;
        }));
        CHECK(scan::intel_iommu_default(debian.inventory).on == false);

        // A kernel before the release whose config turns VT-d on needs no intel_iommu=on.
        FakeHost old;
        base_host(old, "GenuineIntel", "6.5.13-5-pve");
        old.dir.write("etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n");
        CHECK(adds(run_cmdline(old).plan, "intel_iommu=on"));
        old.dir.write("boot/config-6.5.13-5-pve", "CONFIG_INTEL_IOMMU=y\nCONFIG_INTEL_IOMMU_DEFAULT_ON=y\n");
        const auto on = run_cmdline(old);
        CHECK(on.inventory.host.intel_iommu_default_on_config == std::optional<bool>(true));
        CHECK_FALSE(adds(on.plan, "intel_iommu=on"));
        CHECK(scan::intel_iommu_default(on.inventory).why
              == "kernel 6.5.13-5-pve's config (/boot/config-6.5.13-5-pve) has CONFIG_INTEL_IOMMU_DEFAULT_ON=y");

        // A config without the line (an AMD-only build) leaves the release to decide.
        old.dir.write("boot/config-6.5.13-5-pve", "CONFIG_AMD_IOMMU=y\n");
        CHECK_FALSE(run_cmdline(old).inventory.host.intel_iommu_default_on_config.has_value());
    }

    TEST_CASE("the boot framebuffer argument follows the sysfb release of the data")
    {
        FakeHost host;
        base_host(host, "AuthenticAMD", "5.15.158-2-pve");
        host.dir.write("etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n");
        const auto now = run_cmdline(host, true);
        CHECK(adds(now.plan, "initcall_blacklist=sysfb_init"));
        CHECK_FALSE(adds(now.plan, "video=vesafb:off"));
        const auto later = run_cmdline(host, true, [](scan::Inventory& inv) { inv.kernel_cutoffs.sysfb_simple_framebuffer = {5, 16}; });
        CHECK(adds(later.plan, "video=vesafb:off")); // legacy BIOS tree: vesafb
        CHECK_FALSE(adds(later.plan, "initcall_blacklist=sysfb_init"));
    }
}
