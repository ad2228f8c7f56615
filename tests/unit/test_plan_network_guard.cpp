// SPDX-License-Identifier: GPL-2.0-or-later
// plan_network on a small host root (validation, staging, --apply-network and
// the lock-out check) and the confirm/restore guard.
#include <doctest/doctest.h>

#include "../support/temp_dir.hpp"
#include "apply/journal.hpp"
#include "apply/network_guard.hpp"
#include "plan/network/plan.hpp"
#include "plan/network/routes.hpp"
#include "plan/planner.hpp"
#include "scan/scanner.hpp"

using namespace passthru;
using passthru::test::TempDir;

namespace {

const char* k_fresh = "auto lo\niface lo inet loopback\n\niface enp66s0f0 inet manual\n\nauto vmbr0\niface vmbr0 inet static\n"
                      "\taddress 192.168.1.252/24\n\tgateway 192.168.1.1\n\tbridge-ports enp66s0f0\n\tbridge-stp off\n"
                      "\tbridge-fd 0\n\niface enp66s0f1 inet manual\n\n\nsource /etc/network/interfaces.d/*\n";

// /proc/net/route with the default route and the connected subnet on vmbr0.
const char* k_route_vmbr0 = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
                            "vmbr0\t00000000\t0101A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
                            "vmbr0\t0001A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
const char* k_route_other = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
                            "eno9\t00000000\t01000A0A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";

struct GuardHost
{
    TempDir root;
    scan::Inventory inventory;

    GuardHost()
    {
        root.write("etc/network/interfaces", k_fresh);
        int fn = 0;
        scan::PciDevice dev;
        for (const char* nic : {"enp66s0f0", "enp66s0f1"}) {
            const std::string addr = "0000:42:00." + std::to_string(fn++);
            const std::string dev_dir = "sys/devices/pci0000:40/0000:40:03.1/" + addr;
            root.write(dev_dir + "/net/" + nic + "/ifindex", "2\n");
            root.symlink(std::string("sys/class/net/") + nic, "../../devices/pci0000:40/0000:40:03.1/" + addr + "/net/" + nic);
            scan::PciDevice d;
            d.address = *scan::PciAddress::parse(addr);
            d.class_code = 0x020000;
            d.net_interfaces = {nic};
            inventory.devices.push_back(d);
        }
        // A NIC that is not on a PCI network function (a USB adapter, say).
        root.write("sys/devices/virtual/net/usb0/ifindex", "5\n");
        root.symlink("sys/class/net/usb0", "../../devices/virtual/net/usb0");
    }

    util::HostFs fs() const { return *util::HostFs::open(root.path()); }
};

plan::Request seed_request()
{
    plan::Request req;
    plan::NetworkRequest net;
    net.bond_slaves = {"enp66s0f0", "enp66s0f1"};
    net.bond_mode = "balance-alb";
    net.xmit_hash_policy = "layer2+3";
    net.address = "192.168.1.252/24";
    net.gateway = "192.168.1.1";
    req.network = net;
    return req;
}

plan::Plan run(const GuardHost& host, const plan::Request& req)
{
    const auto fs = host.fs();
    data::DataDir data(fs, std::nullopt);
    // The routes the test wrote under the root, as scan reads them.
    scan::Inventory inventory = host.inventory;
    inventory.runtime = scan::scan_runtime_state(fs);
    plan::PlanContext ctx{.inventory = inventory, .fs = fs, .data = data, .request = req};
    plan::Plan p;
    p.request = req;
    plan::plan_network(ctx, p);
    return p;
}

Errc usage_code(const GuardHost& host, const plan::Request& req)
{
    try {
        run(host, req);
    } catch (const Error& e) {
        return e.code();
    }
    return Errc::internal;
}

} // namespace

TEST_SUITE("plan::plan_network")
{
    TEST_CASE("bad input is a usage error and nothing is planned")
    {
        GuardHost host;
        auto req = seed_request();
        req.network->bond_slaves = {"enp66s0f0", "eth7"};
        CHECK(usage_code(host, req) == Errc::usage);
        req.network->bond_slaves = {"enp66s0f0", "usb0"}; // in /sys/class/net, not on a PCI network function
        CHECK(usage_code(host, req) == Errc::usage);
        req = seed_request();
        req.network->bond_slaves = {"enp66s0f0", "enp66s0f0"};
        CHECK(usage_code(host, req) == Errc::usage);
        req = seed_request();
        req.network->address = "192.168.1.252";
        CHECK(usage_code(host, req) == Errc::usage);
        req.network->address = "192.168.1.300/24";
        CHECK(usage_code(host, req) == Errc::usage);
        req.network->address = "192.168.1.0/24";
        CHECK(usage_code(host, req) == Errc::usage);
        req = seed_request();
        req.network->gateway = "10.0.0.1";
        CHECK(usage_code(host, req) == Errc::usage);
        req.network->gateway = "fd00::1";
        CHECK(usage_code(host, req) == Errc::usage);
        req = seed_request();
        req.network->bridge = "enp66s0f1";
        CHECK(usage_code(host, req) == Errc::usage);
        req = seed_request();
        req.network->xmit_hash_policy = "layer9";
        CHECK(usage_code(host, req) == Errc::usage);
        req = seed_request();
        req.network->confirm_timeout_seconds = 60; // without --apply-network
        CHECK(usage_code(host, req) == Errc::usage);
    }

    TEST_CASE("staged in interfaces.new, read from interfaces")
    {
        GuardHost host;
        const auto p = run(host, seed_request());
        REQUIRE_FALSE(p.refused());
        REQUIRE(p.files.size() == 1);
        CHECK(p.files[0].path == "/etc/network/interfaces.new");
        CHECK(p.files[0].action == plan::FileAction::create);
        CHECK_FALSE(p.files[0].before);
        REQUIRE(p.files[0].after);
        CHECK(p.files[0].after->find("\tbridge-ports bond0\n") != std::string::npos);
        CHECK(p.commands.empty());
        CHECK(host.root.read("etc/network/interfaces") == k_fresh); // planning writes nothing
    }

    TEST_CASE("an existing interfaces.new is the base, as in PVE")
    {
        GuardHost host;
        const std::string pending = std::string(k_fresh) + "\n# pending edit from the GUI\n";
        host.root.write("etc/network/interfaces.new", pending);
        const auto p = run(host, seed_request());
        REQUIRE(p.files.size() == 1);
        CHECK(p.files[0].action == plan::FileAction::modify);
        CHECK(p.files[0].before == pending);
        CHECK(p.files[0].after->find("# pending edit from the GUI\n") != std::string::npos);
        bool warned = false;
        for (const auto& w : p.warnings) {
            warned = warned || w.find("not applied yet") != std::string::npos;
        }
        CHECK(warned);
    }

    TEST_CASE("a bridge defined in a sourced file is refused")
    {
        GuardHost host;
        host.root.write("etc/network/interfaces.d/vmbr0", "auto vmbr0\niface vmbr0 inet manual\n");
        const auto p = run(host, seed_request());
        REQUIRE(p.refused());
        CHECK(p.refusals[0].message.find("/etc/network/interfaces.d/vmbr0") != std::string::npos);
        CHECK(p.files.empty());
    }

    TEST_CASE("a bridge defined in a file a sourced file sources is refused (nested source, relative, source-directory)")
    {
        for (const char* how : {"source /etc/network/nested.d/*\n", "source nested.d/b*\n", "source-directory /etc/network/nested.d\n"}) {
            CAPTURE(how);
            GuardHost host;
            host.root.write("etc/network/interfaces.d/mid", std::string("# sourced by interfaces\n") + how);
            host.root.write("etc/network/nested.d/bridge", "auto vmbr0\niface vmbr0 inet manual\n");
            const auto p = run(host, seed_request());
            REQUIRE(p.refused());
            CHECK(p.refusals[0].message.find("/etc/network/nested.d/bridge") != std::string::npos);
            CHECK(p.files.empty());
        }
    }

    TEST_CASE("source-directory reads only the names ifupdown2 reads")
    {
        GuardHost host;
        host.root.write("etc/network/interfaces.d/mid", "source-directory /etc/network/nested.d\n");
        host.root.write("etc/network/nested.d/vmbr0.bak", "auto vmbr0\niface vmbr0 inet manual\n");
        host.root.write("etc/network/nested.d/.hidden", "auto vmbr0\niface vmbr0 inet manual\n");
        CHECK_FALSE(run(host, seed_request()).refused());
    }

    TEST_CASE("sourced files in a loop, too deep or too many are refused, never followed for ever")
    {
        GuardHost host;
        host.root.write("etc/network/interfaces.d/a", "source /etc/network/interfaces.d/b\n");
        host.root.write("etc/network/interfaces.d/b", "source /etc/network/interfaces\n");
        auto p = run(host, seed_request());
        REQUIRE(p.refused());
        CHECK(p.refusals[0].message.find("in a loop") != std::string::npos);
        CHECK(p.refusals[0].message.find("/etc/network/interfaces.d/b -> /etc/network/interfaces") != std::string::npos);

        GuardHost deep;
        for (int i = 0; i < 12; ++i) {
            deep.root.write("etc/network/deep/" + std::to_string(i), "source /etc/network/deep/" + std::to_string(i + 1) + "\n");
        }
        deep.root.write("etc/network/interfaces.d/start", "source /etc/network/deep/0\n");
        p = run(deep, seed_request());
        REQUIRE(p.refused());
        CHECK(p.refusals[0].message.find("levels deep") != std::string::npos);

        // a file that sources a directory of files that all source the next
        // directory: no loop, but exponentially many reads
        GuardHost wide;
        for (int d = 0; d < 4; ++d) {
            for (int f = 0; f < 8; ++f) {
                wide.root.write("etc/network/w" + std::to_string(d) + "/f" + std::to_string(f),
                                "source /etc/network/w" + std::to_string(d + 1) + "/*\n");
            }
        }
        wide.root.write("etc/network/interfaces.d/start", "source /etc/network/w0/*\n");
        p = run(wide, seed_request());
        REQUIRE(p.refused());
        CHECK(p.refusals[0].message.find("256 files") != std::string::npos);
    }

    TEST_CASE("--apply-network touching the default route needs --confirm-timeout")
    {
        GuardHost host;
        host.root.write("proc/net/route", k_route_vmbr0);
        auto req = seed_request();
        req.network->apply = plan::ApplyNetwork::now;
        auto p = run(host, req);
        REQUIRE(p.refused());
        CHECK(p.refusals[0].message.find("default route goes through vmbr0") != std::string::npos);
        CHECK(p.files.empty());
        CHECK(p.commands.empty());

        req.network->confirm_timeout_seconds = 60;
        p = run(host, req);
        REQUIRE_FALSE(p.refused());
        REQUIRE(p.files.size() == 1);
        CHECK(p.files[0].path == "/etc/network/interfaces");
        CHECK(p.files[0].before == std::string(k_fresh));
        REQUIRE(p.commands.size() == 1);
        CHECK(p.commands[0].argv == std::vector<std::string>{"ifreload", "-a"});
    }

    TEST_CASE("--apply-network away from the default route needs no guard; unreadable routes do (fail closed)")
    {
        GuardHost host;
        host.root.write("proc/net/route", k_route_other);
        auto req = seed_request();
        req.network->apply = plan::ApplyNetwork::now;
        CHECK_FALSE(run(host, req).refused());
        std::filesystem::remove(host.root.path() / "proc/net/route");
        CHECK(run(host, req).refused());
    }

    TEST_CASE("--apply-network with a pending interfaces.new removes it")
    {
        GuardHost host;
        host.root.write("proc/net/route", k_route_other);
        host.root.write("etc/network/interfaces.new", k_fresh);
        auto req = seed_request();
        req.network->apply = plan::ApplyNetwork::now;
        const auto p = run(host, req);
        REQUIRE(p.files.size() == 2);
        CHECK(p.files[0].path == "/etc/network/interfaces");
        CHECK(p.files[1].path == "/etc/network/interfaces.new");
        CHECK(p.files[1].action == plan::FileAction::remove);
    }
}

TEST_SUITE("plan::assess_lockout")
{
    TEST_CASE("the SSH session's server address on a touched interface")
    {
        GuardHost host;
        host.root.write("proc/net/route", k_route_other);
        const auto state = scan::scan_runtime_state(host.fs());
        const auto file = format::InterfacesFile::parse(k_fresh);
        const std::vector<std::string> touched{"enp66s0f0", "enp66s0f1", "bond0", "vmbr0"};
        CHECK_FALSE(plan::assess_lockout(state, file, touched, std::nullopt).guard_needed);
        const auto r = plan::assess_lockout(state, file, touched, std::string("192.168.1.20 51234 192.168.1.252 22"));
        CHECK(r.guard_needed);
        REQUIRE_FALSE(r.reasons.empty());
        CHECK(r.reasons[0].find("192.168.1.252") != std::string::npos);
        CHECK_FALSE(plan::assess_lockout(state, file, touched, std::string("10.10.0.20 51234 10.10.0.5 22")).guard_needed);
    }

    TEST_CASE("/proc/net/route and ipv6_route parsing")
    {
        const auto routes = plan::parse_routes(k_route_vmbr0, "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
                                                              "fe800000000000000000000000000001 00000400 00000001 00000000 00000003 vmbr0\n"
                                                              "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
                                                              "00000000000000000000000000000000 ffffffff 00000001 00000000 00200200 lo\n");
        REQUIRE(routes.size() == 3);
        CHECK(routes[0].is_default);
        CHECK(routes[1].destination.prefix == 24);
        CHECK(plan::to_string(routes[1].destination.address) == "192.168.1.0");
        CHECK(routes[2].is_default);
        CHECK(routes[2].iface == "vmbr0");
    }
}

TEST_SUITE("apply::network_guard")
{
    struct FakeTime
    {
        std::chrono::steady_clock::time_point t{};
        apply::GuardHooks hooks(const std::function<void()>& on_sleep = {})
        {
            apply::GuardHooks h;
            h.now = [this] { return t; };
            h.sleep = [this, on_sleep](std::chrono::milliseconds d) {
                t += d;
                if (on_sleep) {
                    on_sleep();
                }
            };
            return h;
        }
    };

    TEST_CASE("without confirm the previous file is restored and ifreload -a runs again")
    {
        TempDir root;
        root.write("etc/network/interfaces", "new config\n");
        root.write("etc/network/interfaces.new", "");
        std::filesystem::remove(root.path() / "etc/network/interfaces.new");
        auto fs = *util::HostFs::open(root.path());
        util::CommandRunner runner(util::RunMode::record);
        REQUIRE(runner.run({"ifreload", "-a"})); // what apply runs after writing the files
        apply::NetworkGuardSpec spec;
        spec.previous = {{"/etc/network/interfaces.new", std::string("pending\n")},
                         {"/etc/network/interfaces", std::string("old config\n")}};
        FakeTime time;
        const auto out = apply::run_network_guard(fs, runner, spec, std::chrono::seconds(30), time.hooks());
        REQUIRE(out);
        CHECK(*out == apply::GuardOutcome::restored);
        CHECK(root.read("etc/network/interfaces") == "old config\n");
        CHECK(root.read("etc/network/interfaces.new") == "pending\n");
        REQUIRE(runner.recorded().size() == 2);
        CHECK(runner.recorded()[1] == std::vector<std::string>{"ifreload", "-a"});
        CHECK_FALSE(fs.exists(apply::k_confirm_pending));
        // Waited the whole timeout, not less.
        CHECK(time.t >= std::chrono::steady_clock::time_point{} + std::chrono::seconds(30));
    }

    TEST_CASE("with confirm the new file stays")
    {
        TempDir root;
        root.write("etc/network/interfaces", "new config\n");
        auto fs = *util::HostFs::open(root.path());
        // The applying passthru holds the journal's lock while its guard waits.
        const auto lock = apply::Journal(fs).lock();
        REQUIRE(lock);
        util::CommandRunner runner(util::RunMode::record);
        REQUIRE(runner.run({"ifreload", "-a"}));
        apply::NetworkGuardSpec spec;
        spec.previous = {{"/etc/network/interfaces", std::string("old config\n")}};
        FakeTime time;
        int sleeps = 0;
        auto hooks = time.hooks([&] {
            if (++sleeps == 4) {
                // `passthru confirm` from another connection.
                auto c = apply::confirm_network(fs, std::string("10.0.0.9 40000 192.168.1.252 22"));
                REQUIRE(c);
            }
        });
        const auto out = apply::run_network_guard(fs, runner, spec, std::chrono::seconds(30), hooks);
        REQUIRE(out);
        CHECK(*out == apply::GuardOutcome::confirmed);
        CHECK(root.read("etc/network/interfaces") == "new config\n");
        CHECK(runner.recorded().size() == 1);
        CHECK_FALSE(fs.exists(apply::k_confirm_pending));
        CHECK_FALSE(fs.exists(apply::k_confirm_ok));
    }

    TEST_CASE("a confirm as the deadline passes: exactly one side wins and both say which")
    {
        TempDir root;
        root.write("etc/network/interfaces", "new config\n");
        auto fs = *util::HostFs::open(root.path());
        const auto lock = apply::Journal(fs).lock();
        REQUIRE(lock);
        apply::NetworkGuardSpec spec;
        spec.previous = {{"/etc/network/interfaces", std::string("old config\n")}};
        {
            // confirm lands on the guard's last sleep, after its last look: the guard must keep the network.
            util::CommandRunner runner(util::RunMode::record);
            FakeTime time;
            std::optional<Result<void>> confirmed;
            auto hooks = time.hooks([&] {
                if (time.t >= std::chrono::steady_clock::time_point{} + std::chrono::seconds(30)) {
                    confirmed = apply::confirm_network(fs, std::nullopt);
                }
            });
            const auto out = apply::run_network_guard(fs, runner, spec, std::chrono::seconds(30), hooks);
            REQUIRE(confirmed.has_value());
            REQUIRE(*confirmed);
            REQUIRE(out);
            CHECK(*out == apply::GuardOutcome::confirmed);
            CHECK(root.read("etc/network/interfaces") == "new config\n");
            CHECK(runner.recorded().empty());
        }
        {
            // confirm after the guard decided to restore: confirm says too late, the guard restores.
            util::CommandRunner runner(util::RunMode::record);
            FakeTime time;
            auto hooks = time.hooks();
            std::optional<Result<void>> late;
            hooks.message = [&](std::string_view text) {
                if (text.find("restoring the previous") != std::string_view::npos) {
                    late = apply::confirm_network(fs, std::nullopt);
                }
            };
            const auto out = apply::run_network_guard(fs, runner, spec, std::chrono::seconds(30), hooks);
            REQUIRE(late.has_value());
            REQUIRE_FALSE(*late);
            CHECK(late->error().code() == Errc::precondition);
            CHECK(std::string(late->error().what()).find("too late") != std::string::npos);
            REQUIRE(out);
            CHECK(*out == apply::GuardOutcome::restored);
            CHECK(root.read("etc/network/interfaces") == "old config\n");
        }
    }

    TEST_CASE("confirm refuses when nothing waits and from the applying connection")
    {
        TempDir root;
        auto fs = *util::HostFs::open(root.path());
        auto none = apply::confirm_network(fs, std::nullopt);
        REQUIRE_FALSE(none);
        CHECK(none.error().code() == Errc::not_found);
        root.write("var/lib/passthru/network-confirm.pending", "token=abc\ndeadline=99999999999\nssh=10.0.0.9 40000 192.168.1.252 22\n");
        // A handshake whose apply ended (nobody holds the lock): nothing to confirm.
        auto stale = apply::confirm_network(fs, std::string("10.0.0.9 40001 192.168.1.252 22"));
        REQUIRE_FALSE(stale);
        CHECK(stale.error().code() == Errc::not_found);
        CHECK(std::string(stale.error().what()).find("nothing to confirm") != std::string::npos);
        CHECK_FALSE(fs.exists(apply::k_confirm_ok));
        const auto lock = apply::Journal(fs).lock();
        REQUIRE(lock);
        auto same = apply::confirm_network(fs, std::string("10.0.0.9 40000 192.168.1.252 22"));
        REQUIRE_FALSE(same);
        CHECK(same.error().code() == Errc::precondition);
        REQUIRE(apply::confirm_network(fs, std::string("10.0.0.9 40001 192.168.1.252 22")));
        // confirm's answer is the handshake itself, renamed: the one decision
        CHECK(root.read("var/lib/passthru/network-confirm.ok").find("token=abc\n") == 0);
        CHECK_FALSE(fs.exists(apply::k_confirm_pending));
    }

    TEST_CASE("the guard spec comes from the plan's network file changes")
    {
        plan::Plan p;
        p.files.push_back({"/etc/modprobe.d/x.conf", plan::FileAction::create, std::nullopt, "x", std::nullopt, 0644, {}});
        p.files.push_back({"/etc/network/interfaces", plan::FileAction::modify, "old", "new", std::nullopt, 0644, {}});
        const auto spec = apply::network_guard_spec(p);
        REQUIRE(spec.previous.size() == 1);
        CHECK(spec.previous[0].first == "/etc/network/interfaces");
        CHECK(spec.previous[0].second == "old");
    }
}
