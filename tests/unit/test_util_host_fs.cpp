// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "../support/temp_dir.hpp"
#include "util/host_fs.hpp"

using passthru::test::TempDir;
using namespace passthru::util;

TEST_SUITE("util::host_fs")
{
    TEST_CASE("a missing root is refused")
    {
        auto fs = HostFs::open("/nonexistent/passthru-root");
        REQUIRE_FALSE(fs);
        CHECK(fs.error().code() == passthru::Errc::not_found);
    }

    TEST_CASE("absolute and relative symlinks stay inside the root")
    {
        TempDir root;
        root.write("etc/real", "inside\n");
        root.symlink("etc/abs", "/etc/real");
        root.symlink("etc/up", "../../../../../../etc/real");
        root.symlink("etc/escape", "/etc/passwd");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        CHECK(fs->read_file("/etc/abs").value() == "inside\n");
        CHECK(fs->read_file("/etc/up").value() == "inside\n");
        // /etc/passwd of this machine must never be read: it resolves to <root>/etc/passwd.
        CHECK_FALSE(fs->read_file("/etc/escape"));
        CHECK(fs->resolve("/etc/../../../etc/real").value() == "/etc/real");
    }

    TEST_CASE("symlink loops fail instead of hanging")
    {
        TempDir root;
        root.symlink("a", "b");
        root.symlink("b", "a");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        CHECK_FALSE(fs->read_file("/a"));
    }

    TEST_CASE("atomic write keeps the mode of the replaced file and refuses symlinks")
    {
        TempDir root;
        root.write("etc/kernel/cmdline", "root=ZFS=rpool/ROOT/pve-1 boot=zfs\n");
        ::chmod((root.path() / "etc/kernel/cmdline").c_str(), 0600);
        root.symlink("etc/link", "/etc/kernel/cmdline");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        REQUIRE(fs->write_file_atomic("/etc/kernel/cmdline", "new\n", 0644, FsSync::yes));
        CHECK(root.read("etc/kernel/cmdline") == "new\n");
        CHECK(fs->stat("/etc/kernel/cmdline").mode == 0600);
        auto refused = fs->write_file_atomic("/etc/link", "x\n", 0644, FsSync::yes);
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code() == passthru::Errc::precondition);
        CHECK(root.read("etc/kernel/cmdline") == "new\n");
    }

    TEST_CASE("new files get the requested mode; directories are created inside the root")
    {
        TempDir root;
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        REQUIRE(fs->create_directories("/etc/modprobe.d"));
        REQUIRE(fs->write_file_atomic("/etc/modprobe.d/x.conf", "options kvm ignore_msrs=1\n", 0644, FsSync::no));
        CHECK(fs->stat("/etc/modprobe.d/x.conf").mode == 0644);
        CHECK(fs->stat("/etc/modprobe.d/x.conf").type == FileType::regular);
        REQUIRE(fs->remove_file("/etc/modprobe.d/x.conf"));
        CHECK(fs->stat("/etc/modprobe.d/x.conf").type == FileType::missing);
    }

    TEST_CASE("HostDir reads attributes and links by name")
    {
        TempDir root;
        root.write("sys/devices/pci0000:00/0000:00:01.0/vendor", "0x10de\n");
        root.symlink("sys/devices/pci0000:00/0000:00:01.0/driver", "../../../bus/pci/drivers/nouveau");
        root.symlink("sys/bus/pci/devices/0000:00:01.0", "../../../devices/pci0000:00/0000:00:01.0");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        auto dir = fs->open_dir("/sys/bus/pci/devices/0000:00:01.0");
        REQUIRE(dir);
        CHECK(dir->path() == "/sys/devices/pci0000:00/0000:00:01.0");
        CHECK(dir->attr("vendor").value() == "0x10de");
        CHECK(dir->link("driver").value() == "../../../bus/pci/drivers/nouveau");
        CHECK_FALSE(dir->attr("driver"));
        CHECK_FALSE(dir->attr("missing"));
    }

    TEST_CASE("HostDir reads relative paths below itself and never through a symlink")
    {
        TempDir root;
        root.write("sys/kernel/iommu_groups/12/type", "DMA\n");
        root.write("sys/kernel/iommu_groups/12/devices/0000:01:00.0", "");
        root.write("outside/secret", "no\n");
        root.write("sys/devices/pci0000:00/0000:00:01.0/vendor", "0x10de\n");
        root.symlink("sys/kernel/iommu_groups/13", "../../outside");
        root.symlink("sys/kernel/iommu_groups/14", "12");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        auto top = fs->open_dir("/sys/kernel/iommu_groups");
        REQUIRE(top);
        CHECK(top->attr("12/type").value() == "DMA");
        CHECK(top->list("12/devices") == std::vector<std::string>{"0000:01:00.0"});
        CHECK_FALSE(top->attr("13/secret")); // a symlink on the way is not followed
        CHECK_FALSE(top->attr("14/type"));   // not even one that stays inside
        CHECK_FALSE(top->attr("../../../outside/secret"));
        CHECK_FALSE(top->attr("12/../13/secret"));
        CHECK(top->list("13").empty());
        auto sys = fs->open_dir("/sys/devices");
        REQUIRE(sys);
        auto dev = sys->subdir("pci0000:00/0000:00:01.0");
        REQUIRE(dev);
        CHECK(dev->path() == "/sys/devices/pci0000:00/0000:00:01.0");
        CHECK(dev->attr("vendor").value() == "0x10de");
        CHECK_FALSE(top->subdir("13"));
        CHECK_FALSE(top->subdir("../iommu_groups"));
        CHECK_FALSE(top->subdir("/12"));
    }

    TEST_CASE("paths through '..' resolve while renames race elsewhere on the system")
    {
        // The kernel answers EAGAIN to an openat2 with RESOLVE_IN_ROOT whose ".." resolution
        // a rename anywhere raced; sysfs links are all "../..", so a scan under load lost devices.
        TempDir root;
        root.write("sys/devices/pci0000:00/0000:00:01.0/vendor", "0x10de\n");
        root.symlink("sys/bus/pci/devices/0000:00:01.0", "../../../devices/pci0000:00/0000:00:01.0");
        TempDir scratch;
        scratch.write("a", "x");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        std::atomic<bool> stop{false};
        std::thread renamer([&] {
            const std::string a = (scratch.path() / "a").string();
            const std::string b = (scratch.path() / "b").string();
            while (!stop.load()) {
                std::rename(a.c_str(), b.c_str());
                std::rename(b.c_str(), a.c_str());
            }
        });
        int failures = 0;
        for (int i = 0; i < 20000; ++i) {
            auto dir = fs->open_dir("/sys/bus/pci/devices/0000:00:01.0");
            if (!dir || !dir->attr("vendor")) {
                ++failures;
            }
        }
        stop = true;
        renamer.join();
        CHECK(failures == 0);
    }

    TEST_CASE("join_host_path works like the kernel's relative links")
    {
        CHECK(join_host_path("/sys/devices/pci0000:00/0000:00:01.0", "../../../bus/pci/drivers/x") == "/sys/bus/pci/drivers/x");
        CHECK(join_host_path("/a", "../../../b") == "/b");
        CHECK(join_host_path("/a/b", "/c") == "/c");
        CHECK(base_name("/sys/kernel/iommu_groups/12") == "12");
        CHECK(dir_name("/etc/kernel/cmdline") == "/etc/kernel");
    }
}
