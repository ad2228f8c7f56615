// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "../support/fake_host.hpp"
#include "../support/shipped_data.hpp"
#include "scan/card_state.hpp"
#include "scan/scanner.hpp"

using namespace passthru;
using passthru::test::FakeHost;

namespace {

scan::Inventory scan_card_state_host(const FakeHost& host)
{
    auto scanned = test::scan_root(host.dir.path());
    REQUIRE(scanned);
    return std::move(scanned->inventory);
}

const char* const k_port = "pci0000:00/0000:00:01.1";

// A GPU behind a root port, with the given power state and reset methods.
void card_host(FakeHost& host, const std::string& power, const std::string& resets, bool all_ones = false)
{
    host.add("0000:00:01.1").ids(0x1022, 0x1483).pci_class(0x060400).group(1).driver("pcieport");
    auto vga = host.add("0000:01:00.0", k_port).ids(0x10de, 0x2b85).pci_class(0x030000).group(1).attr("power_state", power);
    auto audio = host.add("0000:01:00.1", k_port).ids(0x10de, 0x22e8).pci_class(0x040300).group(1).attr("power_state", power);
    if (all_ones) {
        vga.attr("config", std::string(256, '\xff'));
    }
    if (!resets.empty()) {
        vga.attr("reset_method", resets);
        audio.attr("reset_method", resets);
    }
}

scan::CardState state_of(const scan::Inventory& inv)
{
    REQUIRE(inv.gpus.size() == 1);
    return scan::card_state(inv, inv.gpus[0]);
}

scan::CardState state_for(const std::string& power, const std::string& resets)
{
    FakeHost host;
    card_host(host, power, resets);
    return state_of(scan_card_state_host(host));
}

bool scan_names(const scan::Inventory& inv, const std::string& needle)
{
    for (const auto& p : inv.problems) {
        if (p.severity == scan::Severity::error && p.message.find(needle) != std::string::npos
            && p.fix.find("warm reboot does not reset") != std::string::npos) {
            return true;
        }
    }
    return false;
}

// tests/fixtures/kernel-log/NAME as the root's /var/log/kern.log.
void kernel_log(FakeHost& host, const std::string& name)
{
    std::ifstream in(std::string(PASSTHRU_FIXTURES_DIR) + "/kernel-log/" + name);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    host.dir.write("var/log/kern.log", text.str());
}

} // namespace

TEST_SUITE("scan::card_state")
{
    TEST_CASE("the kernel's give-up after FLR since boot: the card did not come back; the boot before does not count")
    {
        FakeHost host;
        card_host(host, "D0", "flr bus");
        kernel_log(host, "reset-timeouts.kern.log");
        const auto inv = scan_card_state_host(host);
        REQUIRE(inv.ready_timeouts.size() == 1); // 0000:41:00.0 is no card of this host
        const auto state = state_of(inv);
        REQUIRE(state.stuck.size() == 1);
        CHECK(state.stuck[0]
              == "0000:01:00.0 did not come back after FLR (kernel log since boot: \"vfio-pci 0000:01:00.0: not ready 65535ms after FLR; "
                 "giving up\")");
        CHECK(state.reset_timed_out);
        CHECK(scan_names(inv, "did not come back: 0000:01:00.0 did not come back after FLR"));
        // without the log, the same card came back
        FakeHost quiet;
        card_host(quiet, "D0", "flr bus");
        CHECK_FALSE(state_of(scan_card_state_host(quiet)).did_not_come_back());
    }

    TEST_CASE("the model's reset facts go into the fix with their source")
    {
        FakeHost host;
        card_host(host, "D3cold", "flr bus");
        const auto inv = scan_card_state_host(host);
        data::GpuProfile model;
        model.name = "GeForce RTX 5090";
        model.reset = data::ResetFacts{false, "stops answering after an FLR until a power cycle", "https://example.org/report"};
        auto modelled = inv.gpus[0];
        modelled.profile_row = std::make_shared<const data::GpuProfile>(model);
        const auto state = scan::card_state(inv, modelled);
        CHECK(state.fix.starts_with(scan::k_power_off_fix));
        CHECK(state.fix.find("the GeForce RTX 5090 is known for it: stops answering after an FLR until a power cycle "
                             "(https://example.org/report)")
              != std::string::npos);
        auto unknown = inv.gpus[0]; // a model no profile knows
        unknown.profile_row.reset();
        CHECK(scan::card_state(inv, unknown).fix == scan::k_power_off_fix);
    }

    TEST_CASE("a card in D0 came back; one in D3cold did not, and scan says so with the power-off fix")
    {
        FakeHost awake;
        card_host(awake, "D0", "flr bus");
        auto inv = scan_card_state_host(awake);
        CHECK_FALSE(state_of(inv).did_not_come_back());
        CHECK_FALSE(scan_names(inv, "did not come back"));
        FakeHost asleep;
        card_host(asleep, "D3cold", "flr bus");
        inv = scan_card_state_host(asleep);
        const auto state = state_of(inv);
        REQUIRE(state.did_not_come_back());
        CHECK(state.stuck[0] == "0000:01:00.0 is in D3cold (powered down) and does not wake");
        CHECK(scan_names(inv, "did not come back: 0000:01:00.0 is in D3cold"));
    }

    TEST_CASE("config space that reads all ones: the card does not answer")
    {
        FakeHost host;
        card_host(host, "D0", "flr", true);
        const auto inv = scan_card_state_host(host);
        const auto state = state_of(inv);
        REQUIRE(state.stuck.size() == 1);
        CHECK(state.stuck[0] == "0000:01:00.0's config space reads all ones: the function does not answer");
    }

    TEST_CASE("reset methods: FLR, PM, bus alone on its bus, bus that also resets another slot, none")
    {
        CHECK(state_for("D0", "flr").resets == "flr");
        CHECK(state_for("D0", "pm").resets == "pm");
        CHECK(state_for("D0", "bus").resets == "bus (the card alone on its bus)");
        FakeHost host;
        card_host(host, "D0", "flr bus");
        host.add("0000:01:01.0", k_port).ids(0x8086, 0x1539).pci_class(0x020000).group(1).driver("igb");
        const auto shared = state_of(scan_card_state_host(host));
        CHECK(shared.resets == "flr, bus (also resets 0000:01:01.0)");
        REQUIRE(shared.bus_siblings.size() == 1);
        const auto none = state_for("D0", "");
        CHECK(none.resets == "none");
        CHECK(none.no_reset);
    }
}
