// SPDX-License-Identifier: GPL-2.0-or-later
// scan/runtime_state.cpp: the running host's state that plan decides from
// (routes, qemu-server's pid files and their processes, node name,
// storage.cfg, .vmlist) is read from the root; and plan decides from what
// scan read, not from the tree again.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "../support/shipped_data.hpp"
#include "../support/temp_dir.hpp"
#include "plan/planner.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"

using namespace passthru;
using passthru::test::TempDir;

namespace {

const std::vector<std::string> k_qemu_101_args{"/usr/bin/kvm", "-id", "101", "-pidfile", "/var/run/qemu-server/101.pid"};

// /proc/PID/cmdline: every argument ended by a NUL.
std::string cmdline_text(const std::vector<std::string>& args)
{
    std::string text;
    for (const auto& a : args) {
        text += a;
        text += '\0';
    }
    return text;
}

scan::RuntimeState runtime_of(const TempDir& root)
{
    auto fs = util::HostFs::open(root.path());
    REQUIRE(fs);
    return scan::scan_runtime_state(*fs);
}

bool refused_as_running(const plan::Plan& p)
{
    return std::any_of(p.refusals.begin(), p.refusals.end(),
                       [](const plan::Refusal& r) { return r.message.find("VM 101 is running") != std::string::npos; });
}

} // namespace

TEST_SUITE("scan::scan_runtime_state")
{
    TEST_CASE("an empty root shows nothing, and is not this host")
    {
        TempDir root;
        const auto state = runtime_of(root);
        CHECK_FALSE(state.live);
        CHECK_FALSE(state.route_v4);
        CHECK_FALSE(state.route_v6);
        CHECK_FALSE(state.inet6_addresses);
        CHECK(state.qemu_pid_files.empty());
        CHECK_FALSE(state.node_name);
        CHECK_FALSE(state.storage_cfg);
        CHECK_FALSE(state.vmlist);
    }

    TEST_CASE("pid files, the processes they name, routes and PVE's files come from the root")
    {
        TempDir root;
        root.write("run/qemu-server/101.pid", "4242\n");
        root.write("proc/4242/cmdline", cmdline_text(k_qemu_101_args));
        root.write("run/qemu-server/102.pid", "not a pid\n");
        root.write("run/qemu-server/103.pid", "555\n"); // no /proc/555 under the root
        root.write("run/qemu-server/104.pid", "0\n");
        root.write("run/qemu-server/101.vnc", "");
        root.write("proc/net/route", "Iface\tDestination\n");
        root.write("proc/net/if_inet6", "fe800000000000000000000000000001 02 40 20 80 vmbr0\n");
        root.write("etc/hostname", "pve7.example.org\n");
        root.write("etc/pve/storage.cfg", "dir: local\n\tcontent images\n");
        root.write("etc/pve/.vmlist", "{\"ids\":{}}\n");
        const auto state = runtime_of(root);
        CHECK_FALSE(state.live);
        REQUIRE(state.qemu_pid_files.size() == 4);
        const auto& running = state.qemu_pid_files.at("101");
        CHECK(running.pid == 4242);
        REQUIRE(running.cmdline);
        CHECK(*running.cmdline == k_qemu_101_args);
        CHECK_FALSE(state.qemu_pid_files.at("102").pid);
        CHECK(state.qemu_pid_files.at("103").pid == 555);
        CHECK_FALSE(state.qemu_pid_files.at("103").cmdline);
        CHECK_FALSE(state.qemu_pid_files.at("104").pid);
        CHECK(state.route_v4 == "Iface\tDestination\n");
        CHECK_FALSE(state.route_v6);
        CHECK(state.inet6_addresses == "fe800000000000000000000000000001 02 40 20 80 vmbr0\n");
        CHECK(state.node_name == "pve7");
        CHECK(state.storage_cfg == "dir: local\n\tcontent images\n");
        CHECK(state.vmlist == "{\"ids\":{}}\n");
        CHECK(state.running_containers.empty());
    }

    TEST_CASE("running containers are those whose LXC command socket /proc/net/unix lists")
    {
        TempDir root;
        root.write("proc/net/unix", "Num       RefCount Protocol Flags    Type St Inode Path\n"
                                    "0000000000000000: 00000002 00000000 00010000 0001 01 41872 @/var/lib/lxc/106/command\n"
                                    "0000000000000000: 00000002 00000000 00010000 0001 01 41873 @/var/lib/lxc/105/command\n"
                                    "0000000000000000: 00000002 00000000 00010000 0001 01 41874 @/var/lib/lxc/105/command\n"
                                    "0000000000000000: 00000002 00000000 00010000 0001 01 41875 /var/lib/lxc/107/command\n"
                                    "0000000000000000: 00000002 00000000 00010000 0001 01 41876 @/var/lib/lxc/x1/command\n"
                                    "0000000000000000: 00000003 00000000 00000000 0001 03 41890\n");
        CHECK(runtime_of(root).running_containers == std::vector<std::string>{"105", "106"});
    }
}

TEST_SUITE("plan decides from the scan's runtime state")
{
    TEST_CASE("a VM that scan saw running is refused, though the tree no longer shows its pid file")
    {
        TempDir root;
        test::copy_tree(std::filesystem::path(PASSTHRU_FIXTURES_DIR) / "hosts" / "epyc-4x2080ti", root.path());
        root.write("etc/pve/qemu-server/101.conf", "cores: 4\n");
        auto fs = util::HostFs::open(root.path()).value();
        util::CommandRunner runner(util::RunMode::record);
        auto inv = scan::scan_host(fs, runner, test::shipped_scan_data(fs)).value();
        data::DataDir data(fs, std::nullopt);
        plan::Request req;
        req.vm = "101";
        req.vmid = 101;
        req.gpus = "all";
        const auto stopped = plan::make_plan(inv, fs, data, req);
        REQUIRE(stopped);
        CHECK_FALSE(refused_as_running(*stopped));

        scan::QemuPidFile pid_file;
        pid_file.pid = 4242;
        pid_file.cmdline = k_qemu_101_args;
        inv.runtime.qemu_pid_files.emplace("101", pid_file);
        const auto running = plan::make_plan(inv, fs, data, req);
        REQUIRE(running);
        CHECK(refused_as_running(*running));
    }
}
