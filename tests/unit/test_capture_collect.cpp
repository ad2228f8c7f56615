// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>

#include "../support/temp_dir.hpp"
#include "capture/collect.hpp"
#include "util/host_fs.hpp"

using passthru::test::TempDir;
using namespace passthru::capture;
using namespace passthru::util;

namespace {

std::map<std::string, Member> by_path(const std::vector<Member>& members)
{
    std::map<std::string, Member> out;
    for (const auto& m : members) {
        out.emplace(m.path, m);
    }
    return out;
}

} // namespace

TEST_SUITE("capture::collect_members")
{
    TEST_CASE("what HostFs and HostDir read is packed: links as links, files as read, listed ones empty")
    {
        TempDir root;
        root.write("sys/devices/pci0000:00/0000:00:01.0/vendor", "0x10de\n");
        root.write("sys/devices/pci0000:00/0000:00:01.0/resource0", "huge BAR, never read\n");
        root.symlink("sys/devices/pci0000:00/0000:00:01.0/driver", "../../../bus/pci/drivers/nouveau");
        root.symlink("sys/bus/pci/devices/0000:00:01.0", "../../../devices/pci0000:00/0000:00:01.0");
        root.write("etc/modprobe.d/a.conf", "options a b=1\n");
        root.write("etc/modprobe.d/b.conf", "secret, never read\n");
        root.write("etc/unrelated", "never touched\n");
        root.write("lib/modules/6.8.12-4-pve/modules.dep.bin", "index");
        root.write("lib/modules/6.8.12-4-pve/kernel/x.ko", "module, never packed");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        auto log = std::make_shared<ReadLog>();
        fs->record_reads(log);
        {
            auto dir = fs->open_dir("/sys/bus/pci/devices/0000:00:01.0");
            REQUIRE(dir);
            CHECK(dir->attr("vendor").value() == "0x10de");
            CHECK(dir->link("driver").value() == "../../../bus/pci/drivers/nouveau");
        }
        REQUIRE(fs->list_dir("/etc/modprobe.d"));
        REQUIRE(fs->read_file("/etc/modprobe.d/a.conf"));
        CHECK(fs->exists("/lib/modules/6.8.12-4-pve/modules.dep.bin"));
        fs->record_reads(nullptr);
        (void)fs->read_file("/etc/unrelated"); // not recording any more
        const auto entries = log->entries();
        CHECK(entries.at("/sys/devices/pci0000:00/0000:00:01.0/vendor").content.value() == "0x10de\n");
        CHECK(entries.at("/sys/devices/pci0000:00/0000:00:01.0/driver").access == static_cast<unsigned>(Access::link));
        CHECK_FALSE(entries.contains("/etc/unrelated"));

        const auto m = by_path(collect_members(*fs, entries));
        CHECK(m.at("/sys/bus/pci/devices/0000:00:01.0").type == MemberType::symlink);
        CHECK(m.at("/sys/bus/pci/devices/0000:00:01.0").data == "../../../devices/pci0000:00/0000:00:01.0");
        CHECK(m.at("/sys/devices/pci0000:00/0000:00:01.0").type == MemberType::directory);
        CHECK(m.at("/sys/devices/pci0000:00/0000:00:01.0/vendor").data == "0x10de\n");
        CHECK(m.at("/sys/devices/pci0000:00/0000:00:01.0/driver").type == MemberType::symlink);
        CHECK_FALSE(m.contains("/sys/bus/pci/drivers/nouveau")); // a link read is not followed
        CHECK_FALSE(m.contains("/sys/devices/pci0000:00/0000:00:01.0/resource0"));
        CHECK(m.at("/etc/modprobe.d/a.conf").data == "options a b=1\n");
        CHECK(m.at("/etc/modprobe.d/b.conf").placeholder);
        CHECK(m.at("/etc/modprobe.d/b.conf").data.empty());
        CHECK_FALSE(m.contains("/etc/unrelated"));
        CHECK(m.at("/lib/modules/6.8.12-4-pve/modules.dep.bin").data == "index");
        CHECK_FALSE(m.contains("/lib/modules/6.8.12-4-pve/kernel/x.ko"));
    }

    TEST_CASE("a link out of the tree is followed inside the root only")
    {
        TempDir root;
        root.write("data/real", "inside\n");
        root.symlink("etc/escape", "/../../../data/real");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        auto log = std::make_shared<ReadLog>();
        fs->record_reads(log);
        CHECK(fs->read_file("/etc/escape").value() == "inside\n");
        fs->record_reads(nullptr);
        const auto m = by_path(collect_members(*fs, log->entries()));
        CHECK(m.at("/etc/escape").type == MemberType::symlink);
        CHECK(m.at("/data/real").data == "inside\n");
        for (const auto& [path, member] : m) {
            CHECK(path.find("..") == std::string::npos);
        }
    }
}
