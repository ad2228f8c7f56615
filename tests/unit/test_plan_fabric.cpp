// SPDX-License-Identifier: GPL-2.0-or-later
// NVSwitch systems (docs/facts.md: nvswitch): scan finds the switches of the HGX H100
// fixture, and plan follows the full-passthrough model: the whole board goes with its
// switches, one GPU goes alone, anything else is refused unless --no-fabric.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "../support/shipped_data.hpp"
#include "plan/plan_detail.hpp"
#include "plan/planner.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"

using namespace passthru;

namespace {

struct Host
{
    util::HostFs fs;
    scan::Inventory inv;
};

Host fixture(const std::string& name)
{
    auto fs = util::HostFs::open(std::filesystem::path(PASSTHRU_FIXTURES_DIR) / "hosts" / name);
    REQUIRE(fs);
    util::CommandRunner runner(util::RunMode::record);
    auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
    REQUIRE(inv);
    return {std::move(*fs), std::move(*inv)};
}

plan::Plan make(const Host& host, const std::string& gpus, plan::NoFabric no_fabric = plan::NoFabric::no)
{
    const data::DataDir data(host.fs, std::nullopt);
    auto request = test::vm_request(101, gpus);
    request.no_fabric = no_fabric;
    auto p = plan::make_plan(host.inv, host.fs, data, request);
    REQUIRE(p);
    return std::move(*p);
}

bool any_contains(const std::vector<std::string>& lines, const std::string& needle)
{
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

std::string planned(const plan::Plan& p, const std::string& path)
{
    for (const auto& f : p.files) {
        if (f.path == path) {
            return f.after.value_or("");
        }
    }
    return {};
}

} // namespace

TEST_SUITE("plan::fabric")
{
    TEST_CASE("scan: the HGX H100 fixture is an NVSwitch system of four switches in one group")
    {
        const auto host = fixture("hgx-h100");
        REQUIRE(host.inv.nvswitch_system());
        REQUIRE(host.inv.nvswitches.size() == 4);
        for (const auto& sw : host.inv.nvswitches) {
            CHECK(sw.iommu_groups == std::vector<int>{1});
            // the other three switches are peers, not foreign endpoints
            CHECK(sw.isolation == scan::Isolation::shared_with_gpu);
            CHECK(sw.shares_with.size() == 3);
            CHECK(sw.other_endpoints.empty());
        }
        CHECK(std::count_if(host.inv.gpus.begin(), host.inv.gpus.end(),
                            [](const auto& g) { return g.vendor_row != nullptr && g.vendor_row->name == "NVIDIA"; })
              == 8);
        CHECK(host.inv.nvswitch_of(scan::PciAddress::parse("0000:05:00.0").value()) != nullptr);
        CHECK_FALSE(fixture("t180-4xv100").inv.nvswitch_system());
    }

    TEST_CASE("--gpus all passes the eight GPUs and the four NVSwitches, with the guest's needs")
    {
        const auto host = fixture("hgx-h100");
        const auto p = make(host, "all");
        REQUIRE_FALSE(p.refused());
        CHECK(p.gpus.size() == 8);
        REQUIRE(p.nvswitches.size() == 4);
        CHECK(p.nvswitches.front().slot == "0000:03:00");
        CHECK(any_contains(p.notes, "full passthrough"));
        CHECK(any_contains(p.notes, "Fabric Manager of the same version"));
        CHECK(std::find(p.vfio_ids.begin(), p.vfio_ids.end(), "10de:22a3") != p.vfio_ids.end());
        CHECK(std::find(p.vfio_ids.begin(), p.vfio_ids.end(), "10de:2330") != p.vfio_ids.end());
        const auto conf = planned(p, "/etc/pve/qemu-server/101.conf");
        for (const char* slot : {"0000:03:00", "0000:06:00", "0000:09:00", "0000:86:00"}) {
            CHECK_MESSAGE(conf.find(slot) != std::string::npos, slot);
        }
        CHECK(std::count(conf.begin(), conf.end(), '\n') > 12);
        CHECK(conf.find("hostpci11:") != std::string::npos);
        CHECK(conf.find("hostpci12:") == std::string::npos);
    }

    TEST_CASE("part of the board is refused, or passed without the switches with --no-fabric")
    {
        const auto host = fixture("hgx-h100");
        const auto refused = make(host, "0,1");
        REQUIRE(refused.refused());
        CHECK(refused.refusals.front().message.find("2 of the 8 GPUs of an NVSwitch system") != std::string::npos);
        CHECK(any_contains(refused.refusals.front().hints, "--no-fabric"));
        CHECK(refused.files.empty());

        const auto given_up = make(host, "0,1", plan::NoFabric::yes);
        REQUIRE_FALSE(given_up.refused());
        CHECK(given_up.nvswitches.empty());
        CHECK(any_contains(given_up.warnings, "--no-fabric"));
        CHECK(any_contains(given_up.warnings, "NVreg_NvLinkDisable=1"));
        CHECK(planned(given_up, "/etc/pve/qemu-server/101.conf").find("0000:03:00") == std::string::npos);

        // --no-fabric on the whole board: the user gives NVLink up there too
        const auto all_without = make(host, "all", plan::NoFabric::yes);
        REQUIRE_FALSE(all_without.refused());
        CHECK(all_without.nvswitches.empty());
        CHECK(any_contains(all_without.warnings, "--no-fabric"));
    }

    TEST_CASE("one GPU goes alone, without switches and without NVLink")
    {
        const auto host = fixture("hgx-h100");
        const auto p = make(host, "0");
        REQUIRE_FALSE(p.refused());
        CHECK(p.nvswitches.empty());
        CHECK(any_contains(p.notes, "one GPU"));
        CHECK(any_contains(p.notes, "NVreg_NvLinkDisable=1"));
    }

    TEST_CASE("a host without NVSwitches plans as before")
    {
        const auto host = fixture("t180-4xv100");
        const auto p = make(host, "0,1");
        CHECK_FALSE(p.refused());
        CHECK(p.nvswitches.empty());
        CHECK_FALSE(any_contains(p.notes, "NVSwitch"));
    }

    TEST_CASE("profiles/host/nvswitch.json is checked against its schema")
    {
        const std::string good = R"({"schema": "passthru.nvswitch/1", "generations": [
            {"name": "g", "ids": ["10DE:22A3"], "full_passthrough": ["whole-board", "single-gpu"], "guest_needs": ["fm"]}]})";
        const auto gens = data::parse_nvswitch_generations(good, "nv.json");
        REQUIRE(gens);
        REQUIRE(gens->size() == 1);
        CHECK(gens->front().ids == std::vector<std::string>{"10de:22a3"});
        CHECK(gens->front().shapes.size() == 2);

        const auto bad_shape = data::parse_nvswitch_generations(
            R"({"schema": "passthru.nvswitch/1", "generations": [{"name": "g", "ids": ["10de:22a3"], "full_passthrough": ["half"], "guest_needs": []}]})",
            "nv.json");
        REQUIRE_FALSE(bad_shape);
        CHECK(bad_shape.error().code() == Errc::usage);
        CHECK(std::string(bad_shape.error().what()).find("nv.json") != std::string::npos);
        CHECK(std::string(bad_shape.error().what()).find("half") != std::string::npos);

        const auto bad_id = data::parse_nvswitch_generations(
            R"({"schema": "passthru.nvswitch/1", "generations": [{"name": "g", "ids": ["nvswitch"], "full_passthrough": ["whole-board"], "guest_needs": []}]})",
            "nv.json");
        CHECK_FALSE(bad_id);
        CHECK_FALSE(data::parse_nvswitch_generations(R"({"schema": "other/1"})", "nv.json"));
    }
}

TEST_SUITE("plan::fabric schema")
{
    TEST_CASE("nvswitch.json: a field the schema does not have, or a mistyped one, is named by its path")
    {
        const auto extra = data::parse_nvswitch_generations(
            R"({"schema": "passthru.nvswitch/1", "generations": [{"name": "g", "ids": ["10de:22a3"], "full_passthrough": ["whole-board"], "guest_needs": [], "nvlink": 4}]})",
            "nv.json");
        REQUIRE_FALSE(extra);
        CHECK(std::string(extra.error().what()) == "nv.json: generations[0].nvlink is not a field of a generation");
        const auto typed = data::parse_nvswitch_generations(
            R"({"schema": "passthru.nvswitch/1", "generations": [{"name": "g", "ids": ["10de:22a3", 7], "full_passthrough": ["whole-board"], "guest_needs": []}]})",
            "nv.json");
        REQUIRE_FALSE(typed);
        CHECK(std::string(typed.error().what()) == "nv.json: generations[0].ids[1]: expected a string");
        const auto schema = data::parse_nvswitch_generations(R"({"schema": "passthru.nvswitch/2", "generations": []})", "nv.json");
        REQUIRE_FALSE(schema);
        CHECK(std::string(schema.error().what()) == "nv.json: schema must be \"passthru.nvswitch/1\"");
    }
}
