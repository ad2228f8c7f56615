// SPDX-License-Identifier: GPL-2.0-or-later
// Proxmox VE container configs: every line back byte for byte, the PVE keys,
// raw lxc.* keys in both spellings, sections, devN: entries as pve-container's
// $dev_desc accepts them, mount entries and cgroup2 device rules.
#include <doctest/doctest.h>

#include <string>

#include "format/lxc_config.hpp"

using namespace passthru::format::lxc;

namespace {

const char* const k_ct105 = "arch: amd64\n"
                            "cores: 4\n"
                            "dev0: /dev/nvidia0,gid=44\n"
                            "dev1: /dev/nvidiactl\n"
                            "hostname: ollama\n"
                            "#GPU container\n"
                            "unprivileged: 1\n"
                            "lxc.cgroup2.devices.allow: c 195:* rwm\n"
                            "lxc.mount.entry = /dev/nvidia0 dev/nvidia0 none bind,optional,create=file\n"
                            "\n"
                            "[pve:pending]\n"
                            "dev2: /dev/nvidia-uvm\n"
                            "\n"
                            "[before-gpu]\n"
                            "cores: 2\n";

} // namespace

TEST_CASE("lxc_config: the text comes back byte for byte")
{
    for (const std::string& text : {std::string(k_ct105), std::string("cores: 2"), std::string(), std::string("\n\n"),
                                    std::string("garbage line\r\nlxc.x=\r\n[bad name]\n")}) {
        CHECK(CtConfig::parse(text).str() == text);
    }
}

TEST_CASE("lxc_config: keys, raw lxc keys and sections")
{
    const auto config = CtConfig::parse(k_ct105);
    CHECK(config.get("cores") == "4");
    CHECK(config.get("cores", "before-gpu") == "2");
    CHECK(config.get("dev2") == std::nullopt);
    CHECK(config.get("dev2", k_pending_section) == "/dev/nvidia-uvm");
    CHECK(config.unprivileged());
    int raw = 0;
    for (const auto& line : config.lines()) {
        if (line.kind == LineKind::raw_lxc) {
            ++raw;
            CHECK(line.section.empty());
        }
    }
    CHECK(raw == 2);
    const auto& mount = config.lines()[8];
    CHECK(mount.kind == LineKind::raw_lxc);
    CHECK(mount.key == "lxc.mount.entry");
    CHECK(mount.number == 9);
    CHECK(mount_entry_source(mount.value) == "/dev/nvidia0");
    CHECK(config.lines()[5].kind == LineKind::comment);
    CHECK(CtConfig::parse("[PVE:Pending]\ndev0: /dev/a\n").get("dev0", k_pending_section) == "/dev/a");
    CHECK(CtConfig::parse("Cores: 2\n").lines()[0].kind == LineKind::unknown);
    CHECK(CtConfig::parse("dev-x: 2\n").lines()[0].kind == LineKind::unknown); // no '-' in PVE's container keys
    CHECK(!CtConfig::parse("unprivileged: 0\n").unprivileged());
    CHECK(!CtConfig::parse("cores: 1\n").unprivileged());
}

TEST_CASE("lxc_config: devN entries as $dev_desc reads them")
{
    CHECK(dev_index("dev0") == 0);
    CHECK(dev_index("dev255") == 255);
    CHECK(dev_index("dev256") == std::nullopt);
    CHECK(dev_index("dev01") == std::nullopt);
    CHECK(dev_index("dev") == std::nullopt);
    CHECK(dev_index("mp0") == std::nullopt);

    const auto e = DevEntry::parse("/dev/nvidia2,gid=44,mode=0666,uid=0,deny-write=1");
    REQUIRE(e);
    CHECK(e->path == "/dev/nvidia2");
    CHECK(e->gid == 44U);
    CHECK(e->uid == 0U);
    CHECK(e->mode == "0666");
    CHECK(e->deny_write);
    CHECK(DevEntry::parse("path=/dev/dri/renderD128")->path == "/dev/dri/renderD128");
    CHECK(!DevEntry::parse("gid=44"));                // "Path has to be defined"
    CHECK(!DevEntry::parse("/tmp/x"));                // not below /dev/
    CHECK(!DevEntry::parse("/dev/../etc/shadow"));    // a /../ component
    CHECK(!DevEntry::parse("/dev/nvidia0/."));        // a trailing /.
    CHECK(DevEntry::parse("/dev/.hidden"));           // a dot name is not /./
    CHECK(!DevEntry::parse("/dev/nvidia0,mode=666")); // 0[0-7]{3}
    CHECK(!DevEntry::parse("/dev/nvidia0,gid=-1"));
    CHECK(!DevEntry::parse("/dev/nvidia0,color=red"));
}

TEST_CASE("lxc_config: cgroup2 device rules")
{
    const auto all_nvidia = DeviceRule::parse("c 195:* rwm");
    REQUIRE(all_nvidia);
    CHECK(all_nvidia->covers_char(195, 2));
    CHECK(!all_nvidia->covers_char(226, 0));
    const auto one = DeviceRule::parse("c 195:1 rw");
    REQUIRE(one);
    CHECK(one->covers_char(195, 1));
    CHECK(!one->covers_char(195, 0));
    CHECK(DeviceRule::parse("a")->covers_char(1, 1));
    CHECK(!DeviceRule::parse("b 8:* rwm")->covers_char(8, 0));
    CHECK(!DeviceRule::parse("c 195 rwm"));
    CHECK(!DeviceRule::parse("c x:1 rwm"));
    CHECK(!DeviceRule::parse("c 195:1 rwx"));
    CHECK(!DeviceRule::parse(""));
}

TEST_CASE("new devN: lines go where Proxmox VE writes them; every other line stays")
{
    const auto with_dev = CtConfig::parse(k_ct105);
    // after the current config's last devN: line, not the pending section's
    const auto at = with_dev.dev_insert_point();
    CHECK(at == 4);
    const std::string edited = with_dev.with_inserted(at, {"dev3: /dev/nvidia-uvm-tools,gid=44"});
    std::string want = k_ct105;
    want.insert(want.find("hostname:"), "dev3: /dev/nvidia-uvm-tools,gid=44\n");
    CHECK(edited == want);
    // no devN: yet: before the first key that sorts after "dev"
    const auto plain = CtConfig::parse("#desc\narch: amd64\ncores: 4\nhostname: a\n\n[snap]\ndev0: /dev/x\n");
    CHECK(plain.dev_insert_point() == 3);
    // only keys before "dev": after the last line that is not blank, before the sections
    const auto early = CtConfig::parse("arch: amd64\ncores: 4\n\n[snap]\ncores: 2\n");
    CHECK(early.dev_insert_point() == 2);
    CHECK(early.with_inserted(2, {"dev0: /dev/nvidia0"}) == "arch: amd64\ncores: 4\ndev0: /dev/nvidia0\n\n[snap]\ncores: 2\n");
    // a file without its last line feed keeps that unless the new line comes last
    const auto bare = CtConfig::parse("arch: amd64\nhostname: a");
    CHECK(bare.with_inserted(1, {"dev0: /dev/nvidia0"}) == "arch: amd64\ndev0: /dev/nvidia0\nhostname: a");
    CHECK(bare.with_inserted(2, {"dev0: /dev/nvidia0"}) == "arch: amd64\nhostname: a\ndev0: /dev/nvidia0\n");
    CHECK(CtConfig::parse("").with_inserted(0, {"dev0: /dev/nvidia0"}) == "dev0: /dev/nvidia0\n");
}
