// SPDX-License-Identifier: GPL-2.0-or-later
// The modprobe.d side of the host planner: the host's effective configuration
// as libkmod reads it from files under the root (plan/host/modprobe_config.cpp),
// the line locator (format/modprobe_d.cpp), and what plan_modprobe does with
// lines of other files (plan/host/modprobe_fixes.cpp).
#include <doctest/doctest.h>

#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "../support/fake_host.hpp"
#include "../support/shipped_data.hpp"
#include "../support/temp_dir.hpp"
#include "format/modprobe_d.hpp"
#include "plan/host/host_detail.hpp"
#include "plan/host/modprobe_config.hpp"
#include "plan/planner.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"

using namespace passthru;
using passthru::plan::detail::ModprobeFile;
using passthru::test::FakeHost;
using passthru::test::TempDir;

namespace {

std::vector<ModprobeFile> read_config(const TempDir& root)
{
    auto fs = util::HostFs::open(root.path());
    REQUIRE(fs);
    return plan::detail::read_modprobe_config(*fs);
}

std::vector<std::string> paths_of(const std::vector<ModprobeFile>& files)
{
    std::vector<std::string> out;
    out.reserve(files.size());
    for (const auto& f : files) {
        out.push_back(f.path);
    }
    return out;
}

// "options vfio_pci ids=..." style summaries of every directive, in order.
std::vector<std::string> summary(const std::vector<ModprobeFile>& files)
{
    static const char* names[] = {"blacklist", "options", "install", "softdep", "alias"};
    std::vector<std::string> out;
    for (const auto& f : files) {
        for (const auto& d : f.directives) {
            out.push_back(std::string(names[static_cast<int>(d.kind)]) + " " + d.module + (d.value.empty() ? "" : " " + d.value));
        }
    }
    return out;
}

std::string joined(const std::vector<std::string>& v)
{
    return util::join(v, " | ");
}

// One NVIDIA card with its audio function, on a kernel without a module tree.
void nvidia_host(FakeHost& host)
{
    host.add("0000:01:00.0").ids(0x10de, 0x2204).pci_class(0x030000).group(1).driver("nouveau").attr("boot_vga", "0");
    host.add("0000:01:00.1").ids(0x10de, 0x1aef).pci_class(0x040300).group(1).driver("snd_hda_intel");
    host.dir.write("proc/sys/kernel/osrelease", "6.8.12-4-pve\n");
}

struct ModprobePlanned
{
    plan::Plan plan;
    std::string ours; // passthru-vfio.conf as planned
};

ModprobePlanned run_modprobe(const FakeHost& host)
{
    auto fs = util::HostFs::open(host.dir.path());
    REQUIRE(fs);
    util::CommandRunner runner(util::RunMode::record);
    auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
    REQUIRE(inv);
    const data::DataDir data(*fs, std::nullopt);
    const plan::Request request = test::vm_request();
    plan::PlanContext ctx{.inventory = *inv, .fs = *fs, .data = data, .request = request};
    plan::detail::HostInputs in;
    for (const auto& card : inv->gpus) {
        ctx.selected.push_back(&card);
    }
    in.kernel_release = inv->host.kernel;
    in.functions = {scan::PciAddress::parse("0000:01:00.0").value(), scan::PciAddress::parse("0000:01:00.1").value()};
    in.vfio_ids = {"10de:1aef", "10de:2204"};
    ModprobePlanned out;
    plan::detail::plan_modprobe(ctx, out.plan, in);
    for (const auto& f : out.plan.files) {
        if (f.path == plan::k_modprobe_conf) {
            out.ours = f.after.value_or("");
        }
    }
    return out;
}

const plan::FileChange* modprobe_change_of(const plan::Plan& p, const std::string& path)
{
    auto it = std::find_if(p.files.begin(), p.files.end(), [&](const plan::FileChange& f) { return f.path == path; });
    return it == p.files.end() ? nullptr : &*it;
}

bool warns_about(const plan::Plan& p, const std::string& text)
{
    return std::any_of(p.warnings.begin(), p.warnings.end(), [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

bool has_modprobe_line(const std::string& text, const std::string& line)
{
    const auto lines = util::split_lines(text);
    return std::find(lines.begin(), lines.end(), line) != lines.end();
}

} // namespace

TEST_SUITE("plan::host::modprobe")
{
    TEST_CASE("the effective configuration: every directory, a name in an earlier one shadows a later one, files by name")
    {
        TempDir root;
        root.write("etc/modprobe.d/b.conf", "options snd_hda_intel power_save=0\n");
        root.write("lib/modprobe.d/b.conf", "blacklist shadowed_by_etc\n");
        root.write("run/modprobe.d/a.conf", "blacklist from-run\n");
        root.write("usr/local/lib/modprobe.d/c.alias", "alias pci:v000010DEd* from_local\n");
        root.write("lib/modprobe.d/d.conf", "softdep nouveau pre: foo\n");
        root.write("lib/modprobe.d/e.txt", "blacklist not_a_conf_name\n");
        root.write("etc/modprobe.d/.hidden.conf", "blacklist hidden\n");
        const auto files = read_config(root);
        CHECK(paths_of(files)
              == std::vector<std::string>{"/run/modprobe.d/a.conf", "/etc/modprobe.d/b.conf", "/usr/local/lib/modprobe.d/c.alias",
                                          "/lib/modprobe.d/d.conf"});
        CHECK(joined(summary(files))
              == "blacklist from_run | options snd_hda_intel power_save=0 | alias pci:v000010DEd* from_local | softdep nouveau pre: foo");
    }

    TEST_CASE("/usr/lib/modprobe.d is read whatever kmod release built passthru, and shadows /lib")
    {
        TempDir root;
        root.write("usr/lib/modprobe.d/nvidia.conf", "options nvidia NVreg_DynamicPowerManagement=0x02\n");
        root.write("lib/modprobe.d/nvidia.conf", "blacklist nvidia\n");
        root.write("lib/modprobe.d/aliases.conf", "alias char-major-10-175 agpgart\n");
        const auto files = read_config(root);
        CHECK(paths_of(files) == std::vector<std::string>{"/lib/modprobe.d/aliases.conf", "/usr/lib/modprobe.d/nvidia.conf"});
        CHECK(joined(summary(files)) == "alias char_major_10_175 agpgart | options nvidia NVreg_DynamicPowerManagement=0x02");
    }

    TEST_CASE("a symlinked file is read inside the root, and a link to /dev/null masks a package's file")
    {
        TempDir root;
        root.write("opt/vendor/vfio.conf", "options vfio-pci ids=10de:2204\n");
        root.symlink("etc/modprobe.d/vfio.conf", "/opt/vendor/vfio.conf"); // absolute: re-anchored at the root
        root.symlink("etc/modprobe.d/nvidia.conf", "/dev/null");
        root.write("usr/lib/modprobe.d/nvidia.conf", "blacklist nouveau\n");
        const auto files = read_config(root);
        CHECK(paths_of(files) == std::vector<std::string>{"/etc/modprobe.d/nvidia.conf", "/etc/modprobe.d/vfio.conf"});
        CHECK(joined(summary(files)) == "options vfio_pci ids=10de:2204");
    }

    TEST_CASE("this machine's /proc/cmdline never shows in the configuration of a root")
    {
        // libkmod reads /proc/cmdline into every context. A private mount
        // namespace puts module options and a modprobe.blacklist= there.
        TempDir root;
        root.write("etc/modprobe.d/zfs.conf", "options zfs zfs_arc_max=1\n");
        root.write("cmdline", "BOOT_IMAGE=/vmlinuz modprobe.blacklist=nouveau,nvidia vfio_pci.ids=dead:beef kvm.ignore_msrs=0 quiet\n");
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            const int flags = ::geteuid() == 0 ? CLONE_NEWNS : CLONE_NEWUSER | CLONE_NEWNS;
            if (::unshare(flags) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0
                || ::mount((root.path() / "cmdline").c_str(), "/proc/cmdline", nullptr, MS_BIND, nullptr) != 0) {
                ::_exit(77);
            }
            auto fs = util::HostFs::open(root.path());
            if (!fs) {
                ::_exit(2);
            }
            const auto files = plan::detail::read_modprobe_config(*fs);
            ::_exit(summary(files) == std::vector<std::string>{"options zfs zfs_arc_max=1"} ? 0 : 1);
        }
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        REQUIRE(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77) {
            MESSAGE("skipped: a made-up /proc/cmdline needs a private mount namespace, which this machine refuses");
        } else {
            CHECK(WEXITSTATUS(status) == 0);
        }
        // And with this machine's own command line, whatever it holds.
        CHECK(joined(summary(read_config(root))) == "options zfs zfs_arc_max=1");
    }

    TEST_CASE("the locator finds the line of a directive, joined lines and '-'/'_' alike, and edits only it")
    {
        const std::string text = "# options vfio-pci ids=1:1\noptions vfio_pci \\\n  ids=10de:2204 disable_vga=1\nblacklist nouveau\n";
        const auto found =
            format::find_modprobe_lines(text, "options", "vfio-pci", std::vector<std::string>{"ids=10de:2204", "disable_vga=1"});
        REQUIRE(found.size() == 1);
        CHECK(found[0].first == 1);
        CHECK(found[0].last == 2);
        CHECK(format::find_modprobe_lines(text, "options", "vfio-pci", std::vector<std::string>{"ids=10de:2204"}).empty());
        CHECK(format::edit_modprobe_lines(text, {{1, 2, "options vfio_pci disable_vga=1"}})
              == "# options vfio-pci ids=1:1\noptions vfio_pci disable_vga=1\nblacklist nouveau\n");
        CHECK(format::edit_modprobe_lines("# only a comment\nblacklist x\n", {{1, 1, std::nullopt}}) == std::nullopt);
    }

    TEST_CASE("a conflicting ids= in another file of /etc/modprobe.d is removed, in a package's file reported")
    {
        FakeHost host;
        nvidia_host(host);
        host.dir.write("etc/modprobe.d/vfio.conf", "# mine\noptions vfio-pci ids=10de:2204 disable_vga=1\noptions zfs zfs_arc_max=1\n");
        host.dir.write("usr/lib/modprobe.d/gpu.conf", "options vfio_pci ids=10de:2204,10de:1aef\n");
        const auto p = run_modprobe(host).plan;
        const auto* c = modprobe_change_of(p, "/etc/modprobe.d/vfio.conf");
        REQUIRE(c != nullptr);
        CHECK(c->after == std::optional<std::string>("# mine\noptions vfio-pci disable_vga=1\noptions zfs zfs_arc_max=1\n"));
        CHECK(modprobe_change_of(p, "/usr/lib/modprobe.d/gpu.conf") == nullptr);
        CHECK(warns_about(p, "/usr/lib/modprobe.d/gpu.conf is left alone (it belongs to a package"));
    }

    TEST_CASE("a softdep of a module passthru gives one is merged, and a file shadowed by /etc is not read")
    {
        FakeHost host;
        nvidia_host(host);
        host.dir.write("etc/modprobe.d/audio.conf", "softdep snd_hda_intel pre: snd_foo post: snd_bar\n");
        host.dir.write("lib/modprobe.d/audio.conf", "softdep snd_hda_intel pre: never_read\n");
        const auto planned = run_modprobe(host);
        CHECK(has_modprobe_line(planned.ours, "softdep snd_hda_intel pre: vfio-pci snd_foo post: snd_bar"));
        const auto* c = modprobe_change_of(planned.plan, "/etc/modprobe.d/audio.conf");
        REQUIRE(c != nullptr);
        CHECK(!c->after.has_value());
        CHECK(planned.ours.find("never_read") == std::string::npos);
    }

    TEST_CASE("a blacklist in a package's directory counts, and passthru does not repeat it")
    {
        FakeHost host;
        nvidia_host(host);
        const auto before = run_modprobe(host);
        CHECK(has_modprobe_line(before.ours, "blacklist nouveau"));
        host.dir.write("lib/modprobe.d/nvidia-blacklists-nouveau.conf", "blacklist nouveau\n");
        const auto after = run_modprobe(host);
        CHECK(!has_modprobe_line(after.ours, "blacklist nouveau"));
        CHECK(modprobe_change_of(after.plan, "/lib/modprobe.d/nvidia-blacklists-nouveau.conf") == nullptr);
    }

    TEST_CASE("files Proxmox VE owns are never edited")
    {
        FakeHost host;
        nvidia_host(host);
        host.dir.write("etc/modprobe.d/pve-blacklist.conf", "blacklist nvidiafb\noptions vfio-pci ids=10de:2204\n");
        host.dir.write("usr/lib/modprobe.d/blacklist_proxmox-kernel-6.8.conf", "install vfio_pci /bin/true\n");
        const auto p = run_modprobe(host).plan;
        CHECK(modprobe_change_of(p, "/etc/modprobe.d/pve-blacklist.conf") == nullptr);
        CHECK(modprobe_change_of(p, "/usr/lib/modprobe.d/blacklist_proxmox-kernel-6.8.conf") == nullptr);
        CHECK(warns_about(p, "/etc/modprobe.d/pve-blacklist.conf is left alone (Proxmox VE owns it"));
        CHECK(warns_about(p, "/usr/lib/modprobe.d/blacklist_proxmox-kernel-6.8.conf is left alone (Proxmox VE's kernel package"));
    }

    TEST_CASE("on an NVIDIA vGPU host no line touches nvidia: no softdep, no blacklist, binding by address, and a note says why")
    {
        FakeHost host;
        nvidia_host(host);
        const auto plain = run_modprobe(host);
        CHECK(has_modprobe_line(plain.ours, "softdep nvidia pre: vfio-pci"));
        CHECK(has_modprobe_line(plain.ours, "blacklist nvidia"));
        CHECK(plain.plan.binding == "ids");
        host.dir.write("usr/lib/systemd/system/nvidia-vgpu-mgr.service", "[Unit]\n");
        const auto vgpu = run_modprobe(host);
        for (const auto& line : util::split_lines(vgpu.ours)) {
            CAPTURE(line);
            CHECK(line.find("nvidia") == std::string::npos);
            CHECK(line.find("NVIDIA GPU stays") == std::string::npos);
        }
        CHECK(has_modprobe_line(vgpu.ours, "softdep nouveau pre: vfio-pci"));
        CHECK(vgpu.plan.binding == "address");
        CHECK(vgpu.ours.find("echo vfio-pci > $p/driver_override") != std::string::npos);
        REQUIRE(std::any_of(vgpu.plan.notes.begin(), vgpu.plan.notes.end(), [](const std::string& n) {
            return n.starts_with("NVIDIA vGPU host (the NVIDIA vGPU manager's unit /usr/lib/systemd/system/nvidia-vgpu-mgr.service): "
                                 "passthru keeps the nvidia driver (no softdep for nvidia, nvidia_drm) and blacklists no NVIDIA driver");
        }));
        // Every NVIDIA GPU of the host goes to the VM: said, and still nothing for nvidia.
        CHECK(warns_about(vgpu.plan, "every NVIDIA GPU of this vGPU host goes to VM 101"));
    }
}
