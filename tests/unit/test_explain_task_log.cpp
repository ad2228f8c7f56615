// SPDX-License-Identifier: GPL-2.0-or-later
// explain/task_log and format/kernel_log: the UPID grammar and the task log's
// place, the index and active files (hostile lines skipped), the newest start
// of a VM, and the kernel log's formats reduced to their messages.
#include <doctest/doctest.h>

#include <fstream>

#include "../support/temp_dir.hpp"
#include "explain/task_log.hpp"
#include "format/kernel_log.hpp"

using namespace passthru;

namespace {

constexpr std::string_view k_upid_old = "UPID:pve1:00001A2B:0001E240:65000000:qmstart:101:root@pam:";
constexpr std::string_view k_upid_new = "UPID:pve1:00001A2C:0001E241:6500001F:qmstart:101:root@pam:";

void put(const std::filesystem::path& path, std::string_view text)
{
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
}

} // namespace

TEST_SUITE("explain::task_log")
{
    TEST_CASE("a UPID is decoded as pve-common does, and its log lies under the last digit of the start time")
    {
        const auto u = explain::parse_upid(k_upid_new);
        REQUIRE(u);
        CHECK(u->node == "pve1");
        CHECK(u->pid == 0x1A2C);
        CHECK(u->starttime == 0x6500001F);
        CHECK(u->type == "qmstart");
        CHECK(u->id == "101");
        CHECK(u->user == "root@pam");
        CHECK(explain::task_log_path(*u) == std::string("/var/log/pve/tasks/F/") + std::string(k_upid_new));
        CHECK(explain::parse_upid("UPID:pve1:00001A2C:100000000:6500001F:qmstart:101:root@pam:")); // pstart of 9 digits
    }

    TEST_CASE("strings that are no UPID are refused")
    {
        CHECK_FALSE(explain::parse_upid("UPID:pve1:1A2C:0001E241:6500001F:qmstart:101:root@pam:"));      // pid not 8 digits
        CHECK_FALSE(explain::parse_upid("UPID:pve1:00001A2C:0001E241:6500001F:qmstart:101:root@pam"));   // no final ':'
        CHECK_FALSE(explain::parse_upid("UPID:-pve:00001A2C:0001E241:6500001F:qmstart:101:root@pam:"));  // node
        CHECK_FALSE(explain::parse_upid("UPID:pve1:00001A2C:0001E241:6500001G:qmstart:101:root@pam:"));  // not hex
        CHECK_FALSE(explain::parse_upid("UPID:pve1:00001A2C:0001E241:6500001F:qm/start:101:root@pam:")); // '/' in type
        CHECK_FALSE(explain::parse_upid(""));
    }

    TEST_CASE("the index and active files: entries read, garbage lines counted and skipped")
    {
        const std::string index = std::string(k_upid_old) + " 65000005 OK\n" + "garbage line\n\x01\x02\n" + std::string(k_upid_new)
                                  + " 65000020 start failed: QEMU exited with code 1\n";
        const auto parsed = explain::parse_task_index(index, false);
        REQUIRE(parsed.entries.size() == 2);
        CHECK(parsed.unreadable_lines == 2);
        CHECK(parsed.entries[1].status == "start failed: QEMU exited with code 1");
        CHECK(*parsed.entries[1].endtime == 0x65000020);
        const auto active =
            explain::parse_task_index(std::string(k_upid_new) + " 0\n" + std::string(k_upid_old) + " 1 65000005 OK\n", true);
        REQUIRE(active.entries.size() == 2);
        CHECK_FALSE(active.entries[0].endtime);
        CHECK(active.entries[1].status == "OK");
        CHECK(explain::parse_task_index(std::string(k_upid_new) + " 2\n", true).unreadable_lines == 1);
    }

    TEST_CASE("a status is an error unless OK or WARNINGS: N")
    {
        CHECK_FALSE(explain::status_is_error("OK"));
        CHECK_FALSE(explain::status_is_error("WARNINGS: 3"));
        CHECK(explain::status_is_error("WARNINGS: x"));
        CHECK(explain::status_is_error("start failed: QEMU exited with code 1"));
        CHECK(explain::status_is_error("unexpected status"));
    }

    TEST_CASE("the newest start of the VM wins across index and active")
    {
        const test::TempDir root;
        put(root.path() / "var/log/pve/tasks/index", std::string(k_upid_new) + " 65000020 start failed: x\n" + std::string(k_upid_old)
                                                         + " 65000005 OK\n"
                                                         + "UPID:pve1:00001A2D:0001E241:6500002F:qmstart:102:root@pam: 65000030 OK\n");
        put(root.path() / "var/log/pve/tasks/active", std::string(k_upid_new) + " 1 65000020 start failed: x\n");
        const auto fs = util::HostFs::open(root.path()).value();
        std::size_t unreadable = 0;
        const auto t = explain::latest_task(fs, "qmstart", "101", unreadable);
        REQUIRE(t);
        CHECK(t->upid.text == k_upid_new);
        CHECK(t->status == "start failed: x");
        CHECK_FALSE(explain::latest_task(fs, "qmstart", "103", unreadable));
    }

    TEST_CASE("log lines: control characters shown, huge lines cut, CR LF ends dropped")
    {
        const auto lines = explain::split_log_lines(std::string("a\x1b[31mb\r\n") + std::string(10000, 'x') + "\nlast");
        REQUIRE(lines.size() == 3);
        CHECK(lines[0] == "a?[31mb");
        CHECK(lines[1].size() < 4200);
        CHECK(lines[1].ends_with("[cut]"));
        CHECK(lines[2] == "last");
    }
}

TEST_SUITE("format::kernel_log")
{
    TEST_CASE("each captured format comes down to the message")
    {
        const std::string msg = "vfio-pci 0000:01:00.0: BAR 1: can't reserve [mem 0xc0000000-0xcfffffff 64bit pref]";
        CHECK(format::kernel_log::kernel_message(msg) == msg);
        CHECK(format::kernel_log::kernel_message("[    5.123456] " + msg) == msg);
        CHECK(format::kernel_log::kernel_message("kern  :warn  : [    5.123456] " + msg) == msg);
        CHECK(format::kernel_log::kernel_message("Nov 27 10:00:01 pve kernel: " + msg) == msg);
        CHECK(format::kernel_log::kernel_message("2026-11-27T10:00:01.123456+01:00 pve kernel: [    5.1] " + msg) == msg);
        CHECK(format::kernel_log::kernel_message("4,1234,5678901,-;" + msg) == msg);
        CHECK(format::kernel_log::kernel_message("4,1234,5678901,-,caller=T1;" + msg) == msg);
        CHECK_FALSE(format::kernel_log::kernel_message(" SUBSYSTEM=pci"));
        CHECK_FALSE(format::kernel_log::kernel_message("-- Boot 1234 --"));
    }

    TEST_CASE("a binary file is not a kernel log")
    {
        const auto r = format::kernel_log::kernel_messages(std::string("abc\0def", 7), "--kernel-log x");
        REQUIRE_FALSE(r);
        CHECK(r.error().code() == Errc::usage);
        CHECK(format::kernel_log::kernel_messages("a\nb\n", "x")->size() == 2);
    }
}
