// SPDX-License-Identifier: GPL-2.0-or-later
// The module-list planner (plan/host/modules.cpp) on small fake trees:
// modules-load.d and the initramfs list, and vfio_virqfd by the target kernel
// (libkmod when its module tree is there, the data's release otherwise).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

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

struct ModulesPlanned
{
    plan::Plan plan;
    plan::detail::HostInputs in;
};

ModulesPlanned run_modules(const FakeHost& host, const std::function<void(scan::Inventory&)>& tweak = {})
{
    auto fs = util::HostFs::open(host.dir.path());
    REQUIRE(fs);
    util::CommandRunner runner(util::RunMode::record);
    auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
    REQUIRE(inv);
    if (tweak) {
        tweak(*inv);
    }
    const data::DataDir data(*fs, std::nullopt);
    const plan::Request request = test::vm_request();
    plan::PlanContext ctx{.inventory = *inv, .fs = *fs, .data = data, .request = request};
    ModulesPlanned out;
    out.in.kernel_release = inv->host.kernel;
    out.in.kernel_version = util::major_minor(inv->host.kernel.value_or(""));
    plan::detail::plan_modules(ctx, out.plan, out.in);
    return out;
}

void host_with_kernel(FakeHost& host, const std::string& kernel)
{
    host.add("0000:01:00.0").ids(0x10de, 0x2204).pci_class(0x030000).group(1).driver("nouveau");
    host.dir.write("proc/sys/kernel/osrelease", kernel + "\n");
}

std::string after_of(const plan::Plan& p, const std::string& path)
{
    auto it = std::find_if(p.files.begin(), p.files.end(), [&](const plan::FileChange& f) { return f.path == path; });
    REQUIRE(it != p.files.end());
    return it->after.value_or("");
}

// The after-steps the plan's files call for (plan/after_step.cpp).
std::vector<plan::StepKind> modules_steps(const plan::Plan& p)
{
    std::vector<std::string> paths;
    paths.reserve(p.files.size());
    for (const auto& f : p.files) {
        paths.push_back(f.path);
    }
    return plan::steps_for_files(paths, scan::Bootloader::grub);
}

bool lists(const std::string& text, const std::string& module)
{
    for (std::size_t pos = 0; (pos = text.find(module, pos)) != std::string::npos; pos += module.size()) {
        const bool starts = pos == 0 || text[pos - 1] == '\n';
        const bool ends = pos + module.size() == text.size() || text[pos + module.size()] == '\n';
        if (starts && ends) {
            return true;
        }
    }
    return false;
}

} // namespace

TEST_SUITE("plan::host::modules")
{
    TEST_CASE("a current kernel: the vfio modules in modules-load.d and the initramfs, no vfio_virqfd")
    {
        FakeHost host;
        host_with_kernel(host, "6.8.12-4-pve");
        const auto r = run_modules(host);
        REQUIRE_FALSE(r.plan.refused());
        const auto load = after_of(r.plan, "/etc/modules-load.d/vfio.conf");
        for (const char* m : {"vfio", "vfio_iommu_type1", "vfio_pci"}) {
            CAPTURE(m);
            CHECK(lists(load, m));
        }
        CHECK_FALSE(lists(load, "vfio_virqfd"));
        const auto init = after_of(r.plan, "/etc/initramfs-tools/modules");
        CHECK(lists(init, "vfio_pci"));
        CHECK(modules_steps(r.plan) == std::vector<plan::StepKind>{plan::StepKind::update_initramfs});
    }

    TEST_CASE("an old kernel without a module tree: vfio_virqfd by the data's release, with a note")
    {
        FakeHost host;
        host_with_kernel(host, "6.1.0-56-amd64");
        const auto r = run_modules(host);
        CHECK(lists(after_of(r.plan, "/etc/modules-load.d/vfio.conf"), "vfio_virqfd"));
        CHECK(std::any_of(r.plan.notes.begin(), r.plan.notes.end(),
                          [](const std::string& n) { return n.find("after an upgrade to a 6.2+ kernel") != std::string::npos; }));
        // The release is data: move it below 6.1 and the same kernel needs no vfio_virqfd.
        const auto moved = run_modules(host, [](scan::Inventory& inv) { inv.kernel_cutoffs.vfio_virqfd_in_vfio = {6, 0}; });
        CHECK_FALSE(lists(after_of(moved.plan, "/etc/modules-load.d/vfio.conf"), "vfio_virqfd"));
        CHECK(moved.plan.notes.empty());
    }

    TEST_CASE("a second bootable kernel that folded vfio_virqfd into vfio: not listed for the old one either")
    {
        FakeHost host;
        host_with_kernel(host, "6.1.0-57-amd64"); // no module tree: listed by the data's release
        CHECK(lists(after_of(run_modules(host).plan, "/etc/modules-load.d/vfio.conf"), "vfio_virqfd"));
        // a 6.14 kernel beside it whose module tree (the real depmod's indexes of a fixture
        // host) has vfio and no vfio_virqfd: left out for both, the reason names that kernel
        const std::string k2 = "6.14.8-2-pve";
        const auto index = std::filesystem::path(PASSTHRU_FIXTURES_DIR) / "modindex" / "pve90-t180-4xv100";
        for (const auto& e : std::filesystem::directory_iterator(index)) {
            std::ifstream in(e.path(), std::ios::binary);
            host.dir.write("lib/modules/" + k2 + "/" + e.path().filename().string(), std::string(std::istreambuf_iterator<char>(in), {}));
        }
        // installed but not bootable (no image): it does not count
        CHECK(lists(after_of(run_modules(host).plan, "/etc/modules-load.d/vfio.conf"), "vfio_virqfd"));
        host.dir.write("boot/vmlinuz-" + k2, "");
        const auto both = run_modules(host);
        CHECK_FALSE(lists(after_of(both.plan, "/etc/modules-load.d/vfio.conf"), "vfio_virqfd"));
        CHECK_FALSE(lists(after_of(both.plan, "/etc/initramfs-tools/modules"), "vfio_virqfd"));
        CHECK(lists(after_of(both.plan, "/etc/modules-load.d/vfio.conf"), "vfio_pci"));
    }

    TEST_CASE("old vfio_virqfd lines are removed on a kernel that folded it into vfio; other lines stay")
    {
        FakeHost host;
        host_with_kernel(host, "6.8.12-4-pve");
        host.dir.write("etc/modules", "# /etc/modules\nloop\nvfio_virqfd\n");
        host.dir.write("etc/initramfs-tools/modules", "# list\nzfs\nvfio_virqfd\nvfio\n");
        const auto r = run_modules(host);
        CHECK(after_of(r.plan, "/etc/modules") == "# /etc/modules\nloop\n");
        const auto init = after_of(r.plan, "/etc/initramfs-tools/modules");
        CHECK(init.find("# list\nzfs\nvfio\n") == 0);
        CHECK_FALSE(lists(init, "vfio_virqfd"));
        CHECK(lists(init, "vfio_pci"));
    }
}
