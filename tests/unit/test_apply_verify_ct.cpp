// SPDX-License-Identifier: GPL-2.0-or-later
// verify --ct (apply/verify_ct.cpp): the host module's version, the userspace
// library versions, and the checks inside a running container through a fake
// pct exec: a node that opens, one the cgroup denies (EPERM), one no driver
// answers (ENXIO), the userspace of the host's version, of another, or none.
// The device nodes are made with mknod (root only; without it those cases say so).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>

#include "../support/temp_dir.hpp"
#include "apply/verify_ct.hpp"
#include "scan/card_users.hpp"

using namespace passthru;

namespace {

constexpr std::string_view k_version = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.163.01  Tue Apr  8 12:43:10 UTC 2025\n"
                                       "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";

struct CtHost
{
    test::TempDir dir;
    scan::Inventory inv;
    bool nodes = false; // mknod worked

    CtHost()
    {
        dir.write("etc/pve/lxc/105.conf", "arch: amd64\ndev0: /dev/nvidia1,gid=44\ndev1: /dev/nvidiactl,gid=44\nunprivileged: 1\n");
        dir.write("proc/driver/nvidia/version", std::string(k_version));
        inv.host.nvidia_loaded = true; // as scan reads that file
        inv.host.nvidia_version = scan::nvidia_module_version(k_version);
        scan::GpuCard card;
        card.slot = "0000:82:00";
        card.nvidia_minor = 1;
        inv.gpus.push_back(card);
        inv.host.char_majors = {{"nvidia", 195}, {"nvidia-uvm", 238}};
        inv.runtime.running_containers = {"105"};
        dir.write("dev/.keep", "");
        const auto dev = dir.path() / "dev";
        nodes = ::mknod((dev / "nvidia1").c_str(), S_IFCHR | 0666, makedev(195, 1)) == 0
                && ::mknod((dev / "nvidiactl").c_str(), S_IFCHR | 0666, makedev(195, 255)) == 0;
    }

    apply::VerifyReport verify(const apply::CtExec& exec) const
    {
        auto fs = util::HostFs::open(dir.path());
        REQUIRE(fs);
        auto rep = apply::verify_container(inv, *fs, 105, exec);
        REQUIRE(rep);
        return *rep;
    }
};

const apply::VerifyCheck* find(const apply::VerifyReport& rep, std::string_view what)
{
    const auto it = std::find_if(rep.checks.begin(), rep.checks.end(),
                                 [&](const apply::VerifyCheck& c) { return c.what.find(what) != std::string::npos; });
    return it == rep.checks.end() ? nullptr : &*it;
}

// A container whose dd answers per node and whose userspace listing is `libs`.
apply::CtExec fake_ct(std::map<std::string, std::string> dd_errors, std::string libs)
{
    return [dd_errors = std::move(dd_errors), libs = std::move(libs)](const std::vector<std::string>& argv) -> Result<util::CommandResult> {
        if (argv.at(0) == "dd") {
            const std::string node = argv.at(1).substr(3);
            const auto it = dd_errors.find(node);
            if (it == dd_errors.end()) {
                return util::CommandResult{0, "0+0 records in\n0+0 records out\n"};
            }
            return util::CommandResult{1, "dd: failed to open '" + node + "': " + it->second + "\n"};
        }
        CHECK(argv == apply::k_ct_userspace_probe);
        return util::CommandResult{0, libs};
    };
}

} // namespace

TEST_CASE("verify_ct: the host module's version and the userspace library versions")
{
    CHECK(scan::nvidia_module_version(k_version) == "550.163.01");
    CHECK(scan::nvidia_module_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n")
          == "570.86.15");
    CHECK(scan::nvidia_module_version("GCC version: 12\n") == std::nullopt);
    CHECK(scan::nvidia_module_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  x.y  Tue\n") == std::nullopt);
    CHECK(apply::nvml_library_versions("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.163.01\n/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\n"
                                       "/usr/lib64/libnvidia-ml.so.550.163.01\n/usr/lib/libnvidia-ml.so.535.104.05\n")
          == std::vector<std::string>{"550.163.01", "535.104.05"});
    CHECK(apply::nvml_library_versions("/usr/lib/libnvidia-ml.so.*\n").empty()); // the shell's unmatched glob
}

TEST_CASE("verify_ct: inside a running container, nodes that open and the host's userspace pass")
{
    const CtHost host;
    if (!host.nodes) {
        MESSAGE("mknod is not permitted here (not root): the device-node cases are left out");
        return;
    }
    const auto rep = host.verify(fake_ct({}, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.163.01\n"));
    CHECK(rep.all_ok());
    REQUIRE(find(rep, "/dev/nvidia1 (dev0 (line 2)) is c 195:1 on the host, card 0000:82:00") != nullptr);
    REQUIRE(find(rep, "/dev/nvidia1 inside container 105 opens") != nullptr);
    REQUIRE(find(rep, "/dev/nvidiactl inside container 105 opens") != nullptr);
    REQUIRE(find(rep, "is 550.163.01, the host module's version") != nullptr);
}

TEST_CASE("verify_ct: a node the cgroup denies (EPERM) and one no driver answers (ENXIO) fail with their fixes")
{
    const CtHost host;
    if (!host.nodes) {
        MESSAGE("mknod is not permitted here (not root): the device-node cases are left out");
        return;
    }
    const auto rep = host.verify(fake_ct({{"/dev/nvidia1", "Operation not permitted"}, {"/dev/nvidiactl", "No such device or address"}},
                                         "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.163.01\n"));
    CHECK(!rep.all_ok());
    const auto* eperm = find(rep, "/dev/nvidia1 inside container 105 does not open");
    REQUIRE(eperm != nullptr);
    CHECK(!eperm->ok);
    CHECK(eperm->fix.find("device cgroup denies it (EPERM)") != std::string::npos);
    CHECK(eperm->fix.find("pct reboot 105") != std::string::npos);
    const auto* enxio = find(rep, "/dev/nvidiactl inside container 105 does not open");
    REQUIRE(enxio != nullptr);
    CHECK(enxio->fix.find("no driver answers its numbers (ENXIO)") != std::string::npos);
}

TEST_CASE("verify_ct: userspace of another version, or none, fails naming the host's version")
{
    const CtHost host;
    if (!host.nodes) {
        MESSAGE("mknod is not permitted here (not root): the device-node cases are left out");
        return;
    }
    auto rep = host.verify(fake_ct({}, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.104.05\n"));
    const auto* other = find(rep, "the NVIDIA userspace inside container 105 is 535.104.05, the host module is 550.163.01");
    REQUIRE(other != nullptr);
    CHECK(!other->ok);
    CHECK(other->fix.find("NVIDIA-Linux-x86_64-550.163.01.run --no-kernel-module") != std::string::npos);
    rep = host.verify(fake_ct({}, ""));
    const auto* none = find(rep, "container 105 has no NVIDIA userspace");
    REQUIRE(none != nullptr);
    CHECK(!none->ok);
}

TEST_CASE("verify_ct: a stopped container, or no way inside, is a note, not a pass")
{
    CtHost host;
    if (!host.nodes) {
        MESSAGE("mknod is not permitted here (not root): the device-node cases are left out");
        return;
    }
    auto rep = host.verify({});
    const auto* note = find(rep, "runs, but its inside is not checked under --root");
    REQUIRE(note != nullptr);
    CHECK(note->note);
    host.inv.runtime.running_containers.clear();
    bool called = false;
    rep = host.verify([&](const std::vector<std::string>&) -> Result<util::CommandResult> {
        called = true;
        return util::CommandResult{};
    });
    CHECK(!called);
    REQUIRE(find(rep, "container 105 is not running") != nullptr);
}
