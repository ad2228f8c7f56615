// SPDX-License-Identifier: GPL-2.0-or-later
// The readiness notes of the host planner (plan/host/readiness.cpp): host RAM
// against the VRAM of the selected cards, from the GPU profiles.
#include <doctest/doctest.h>

#include <algorithm>

#include "../support/fake_host.hpp"
#include "../support/shipped_data.hpp"
#include "plan/host/host_detail.hpp"
#include "plan/planner.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"

using namespace passthru;
using passthru::test::FakeHost;

namespace {

plan::Plan run_readiness(std::uint16_t device, const std::string& mem_kib)
{
    FakeHost host;
    host.add("0000:01:00.0").ids(0x10de, device).pci_class(0x030000).group(1);
    host.dir.write("proc/meminfo", "MemTotal:       " + mem_kib + " kB\n");
    auto fs = util::HostFs::open(host.dir.path());
    REQUIRE(fs);
    util::CommandRunner runner(util::RunMode::record);
    auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
    REQUIRE(inv);
    REQUIRE(inv->gpus.size() == 1);
    const data::DataDir data(*fs, std::nullopt);
    plan::Request request;
    request.vm = "101";
    const plan::PlanContext ctx{.inventory = *inv, .fs = *fs, .data = data, .request = request, .selected = {&inv->gpus[0]}};
    plan::Plan p;
    plan::detail::plan_readiness(ctx, p, plan::detail::HostInputs{});
    return p;
}

bool any_has(const std::vector<std::string>& lines, std::string_view needle)
{
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

} // namespace

TEST_SUITE("plan::host::readiness")
{
    TEST_CASE("an RTX 3090 (24 GiB) on 32 GiB of RAM is below 2x: a warning")
    {
        const auto p = run_readiness(0x2204, "33554432");
        CHECK(any_has(p.warnings, "the host has 32 GiB of RAM for 24 GiB of VRAM"));
        CHECK(any_has(p.warnings, "below 2x"));
    }

    TEST_CASE("the same card on 128 GiB is enough: a note")
    {
        const auto p = run_readiness(0x2204, "134217728");
        CHECK(p.warnings.empty());
        CHECK(any_has(p.notes, "of VRAM passed through"));
        CHECK(any_has(p.notes, ": enough"));
    }

    TEST_CASE("a card no profile knows skips the check and says how to add one")
    {
        const auto p = run_readiness(0x0fff, "134217728");
        CHECK(p.warnings.empty());
        CHECK(any_has(p.notes, "no GPU profile (profiles/gpus) knows the card(s) at 0000:01:00"));
    }

    TEST_CASE("a model with a known reset problem is a warning with what to do and the reports; one without is not")
    {
        const auto rtx5090 = run_readiness(0x2b85, "134217728");
        REQUIRE(std::count_if(rtx5090.warnings.begin(), rtx5090.warnings.end(),
                              [](const std::string& w) { return w.find("known issue") != std::string::npos; })
                == 1);
        CHECK(any_has(rtx5090.warnings, "GeForce RTX 5090 (0000:01:00): known issue: after a VM that used the card stops"));
        CHECK(any_has(rtx5090.warnings, "What to do: keep the Proxmox kernel"));
        CHECK(any_has(rtx5090.warnings, "reported in: "));
        CHECK(any_has(rtx5090.warnings, "profiles/gpus/rtx-5090.json"));
        const auto rtx5080 = run_readiness(0x2c02, "134217728");
        CHECK(rtx5080.warnings.empty());
        CHECK(any_has(rtx5080.notes, "GeForce RTX 5080 (0000:01:00)"));
    }
}
