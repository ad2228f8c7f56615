// SPDX-License-Identifier: GPL-2.0-or-later
// Card selection (--gpus) on fixture trees: the one grammar of plan, apply
// and verify.
#include <doctest/doctest.h>

#include <filesystem>

#include "../support/shipped_data.hpp"
#include "plan/plan_detail.hpp"
#include "plan/planner.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"

using namespace passthru;

namespace {

scan::Inventory planner_fixture(const std::string& name)
{
    auto scanned = test::scan_fixture(name);
    REQUIRE(scanned);
    return std::move(scanned->inventory);
}

std::vector<std::string> slots(const scan::Inventory& inv, const std::string& spec)
{
    auto cards = plan::select_cards(inv, spec);
    REQUIRE(cards);
    std::vector<std::string> out;
    for (const auto* c : *cards) {
        out.push_back(c->slot);
    }
    return out;
}

std::string refusal(const scan::Inventory& inv, const std::string& spec)
{
    auto cards = plan::select_cards(inv, spec);
    REQUIRE_FALSE(cards);
    CHECK(cards.error().code() == Errc::usage);
    return cards.error().what();
}

} // namespace

TEST_SUITE("plan::planner")
{
    TEST_CASE("--gpus selects by all, index, slot or function, in inventory order")
    {
        const auto inv = planner_fixture("epyc-4x2080ti");
        const std::vector<std::string> all{"0000:01:00", "0000:41:00", "0000:81:00", "0000:82:00"};
        CHECK(slots(inv, "all") == all);
        CHECK(slots(inv, "2,0") == std::vector<std::string>{"0000:01:00", "0000:81:00"});
        CHECK(slots(inv, "0000:41:00") == std::vector<std::string>{"0000:41:00"});
        CHECK(slots(inv, "41:00") == std::vector<std::string>{"0000:41:00"});
        CHECK(slots(inv, "0000:01:00.3") == std::vector<std::string>{"0000:01:00"});
        CHECK(slots(inv, "0, 0000:01:00.0") == std::vector<std::string>{"0000:01:00"}); // the same card once
    }

    TEST_CASE("--gpus that selects nothing names the token and the way out")
    {
        const auto inv = planner_fixture("epyc-4x2080ti");
        CHECK(refusal(inv, "7").find("there is no GPU 7") != std::string::npos);
        CHECK(refusal(inv, "all,0").find("cannot be combined") != std::string::npos);
        CHECK(refusal(inv, "gpu0").find("neither an index, a slot address nor 'all'") != std::string::npos);
        CHECK(refusal(inv, "0000:42:00").find("not a display-class card") != std::string::npos); // the i350 NIC
        CHECK(refusal(inv, "0000:99:00").find("no display-class card at") != std::string::npos);
        CHECK(refusal(inv, "").find("--gpus is empty") != std::string::npos);
    }

    TEST_CASE("--gpus all takes NVIDIA cards only; other display cards go by slot")
    {
        const auto inv = planner_fixture("qemu-intel");
        CHECK(refusal(inv, "all").find("no NVIDIA GPU") != std::string::npos);
        CHECK(slots(inv, "0000:04:00") == std::vector<std::string>{"0000:04:00"});
        CHECK(slots(inv, "1") == std::vector<std::string>{"0000:04:00"});
    }

    TEST_CASE("plan loads no GPU profile itself: the rooms read each card's profile row that scan set (the readiness notes)")
    {
        const auto root = std::filesystem::path(PASSTHRU_FIXTURES_DIR) / "hosts" / "epyc-4x2080ti";
        auto fs = util::HostFs::open(root);
        REQUIRE(fs);
        const auto inv = planner_fixture("epyc-4x2080ti");
        const data::DataDir data(*fs, std::nullopt);
        plan::Request request;
        request.vm = "101";
        request.vmid = 101;
        request.gpus = "all";
        const auto before = data::gpu_profile_loads();
        const auto p = plan::make_plan(inv, *fs, data, request);
        REQUIRE(p);
        CHECK(data::gpu_profile_loads() - before == 0);
        REQUIRE(!inv.gpus.empty());
        REQUIRE(inv.gpus.front().profile_row != nullptr);
        CHECK(inv.gpus.front().profile_row->name == "GeForce RTX 2080 Ti");
        const bool noted =
            std::any_of(p->notes.begin(), p->notes.end(), [](const std::string& n) { return n.find("RTX 2080 Ti") != std::string::npos; });
        CHECK(noted);
    }

    TEST_CASE("on the vGPU fixture the card whose VFs serve vGPUs is refused with the way out; the other card is planned")
    {
        const auto root = std::filesystem::path(PASSTHRU_FIXTURES_DIR) / "hosts" / "vgpu-epyc";
        auto fs = util::HostFs::open(root);
        REQUIRE(fs);
        const auto inv = planner_fixture("vgpu-epyc");
        REQUIRE(inv.host.vgpu_host());
        CHECK(slots(inv, "all") == std::vector<std::string>{"0000:01:00", "0000:41:00"}); // VFs are no cards
        const data::DataDir data(*fs, std::nullopt);
        plan::Request request;
        request.vm = "101";
        request.vmid = 101;
        request.gpus = "0000:01:00";
        const auto refused = plan::make_plan(inv, *fs, data, request);
        REQUIRE(refused);
        REQUIRE(refused->refusals.size() == 1);
        CHECK(refused->refusals[0].message.find("0000:01:00.0 has 4 SR-IOV virtual functions enabled") != std::string::npos);
        CHECK(refused->files.empty());
        request.gpus = "0000:41:00";
        const auto passed = plan::make_plan(inv, *fs, data, request);
        REQUIRE(passed);
        CHECK(passed->refusals.empty());
        CHECK(passed->binding == "address");
    }
}
