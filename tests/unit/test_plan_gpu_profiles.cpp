// SPDX-License-Identifier: GPL-2.0-or-later
// profiles/gpus/*.json: the shipped profiles load, every field the schema has
// is read, and each way of breaking the schema is one error naming the file and
// the field; a selected card whose functions differ from its profile's layout
// gets a warning (a listed function missing or of another class) or a note.
#include <doctest/doctest.h>

#include "../support/fake_host.hpp"
#include "../support/shipped_data.hpp"
#include "../support/temp_dir.hpp"
#include "../support/usage_error.hpp"
#include "plan/plan_detail.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"

using namespace passthru;
using passthru::test::FakeHost;

namespace {

std::string error_of(std::string_view text)
{
    return test::usage_error(data::parse_gpu_profile(text, "p.json"));
}

// A valid profile with `extra` spliced in as further top-level fields.
std::string profile(std::string_view extra = "")
{
    return R"J({"schema": "passthru.gpu-profile/1", "name": "Card", "ids": ["10de:1e07"], "vram_gib": 11,
  "functions": [{"function": 1, "class": "0403", "role": "HDMI/DP audio"}, {"function": 0, "class": "0300", "role": "display (VGA)"}],
  "quirks": ["q"], "sources": ["s"])J"
           + std::string(extra) + "}";
}

} // namespace

TEST_SUITE("plan::gpu_profiles")
{
    TEST_CASE("every shipped profile loads, with its function layout")
    {
        test::TempDir root;
        auto fs = util::HostFs::open(root.path());
        REQUIRE(fs);
        const data::DataDir data(*fs, std::nullopt);
        const auto profiles = data::load_gpu_profiles(data);
        REQUIRE(profiles);
        CHECK(profiles->size() == data.list("profiles", "gpus").size());
        for (const auto& p : *profiles) {
            CAPTURE(p.file);
            CHECK(p.vram_gib);
            REQUIRE_FALSE(p.functions.empty());
            CHECK(p.functions.front().function == 0);
        }
        const auto* turing = data::find_profile(*profiles, "10de:1e07");
        REQUIRE(turing != nullptr);
        REQUIRE(turing->functions.size() == 4);
        CHECK(turing->functions[1].class16 == 0x0403);
        CHECK(turing->functions[3].class16 == 0x0c80);
        const auto* v100 = data::find_profile(*profiles, "10de:1db1");
        REQUIRE(v100 != nullptr);
        REQUIRE(v100->functions.size() == 1);
        CHECK(v100->functions[0].class16 == 0x0302);
    }

    TEST_CASE("a valid profile: functions sorted by number, class as a number")
    {
        const auto p = data::parse_gpu_profile(profile(), "p.json");
        REQUIRE(p);
        CHECK(p->name == "Card");
        CHECK(p->ids == std::vector<std::string>{"10de:1e07"});
        REQUIRE(p->functions.size() == 2);
        CHECK(p->functions[0].function == 0);
        CHECK(p->functions[0].class16 == 0x0300);
        CHECK(p->functions[1].role == "HDMI/DP audio");
        CHECK(p->quirks == std::vector<std::string>{"q"});
    }

    TEST_CASE("fields of earlier releases are accepted and ignored, so old copies under /etc/passthru keep loading")
    {
        CHECK(data::parse_gpu_profile(profile(R"J(, "vendor": "10de", "architecture": "Turing", "chip": "TU102", "tdp_watts": 250)J"),
                                      "p.json"));
        CHECK(data::parse_gpu_profile(
            R"J({"schema": "passthru.gpu-profile/1", "name": "C", "ids": ["10de:1e07"],
                "functions": [{"function": 0, "class": "0300", "id": "10de:1e07", "role": "display (VGA)"}]})J",
            "p.json"));
    }

    TEST_CASE("reset facts and ROM need, each with the https URL of its source")
    {
        const auto p =
            data::parse_gpu_profile(profile(R"J(, "reset": {"warm_reboot_resets": false, "detail": "d", "source": "https://example.org/r"},
                       "rom_file": {"why": "w", "source": "https://example.org/w"})J"),
                                    "p.json");
        REQUIRE(p);
        REQUIRE(p->reset);
        CHECK_FALSE(p->reset->warm_reboot_resets);
        CHECK(p->reset->source == "https://example.org/r");
        REQUIRE(p->rom_file);
        CHECK(p->rom_file->why == "w");
        CHECK_FALSE(data::parse_gpu_profile(profile(), "p.json")->reset);
        CHECK(error_of(profile(R"J(, "reset": {"warm_reboot_resets": false, "detail": "d", "source": "a forum"})J"))
              == "p.json: reset.source must be the https URL of a public report");
        CHECK(error_of(profile(R"J(, "reset": {"warm_reboot_resets": "no", "detail": "d", "source": "https://x"})J"))
                  .find("reset.warm_reboot_resets")
              != std::string::npos);
        CHECK(error_of(profile(R"J(, "rom_file": {"why": "w", "source": "https://x", "vendor": "y"})J"))
                  .find("rom_file.vendor is not a field of")
              != std::string::npos);
        CHECK(error_of(profile(R"J(, "rom_file": {"source": "https://x"})J")).find("rom_file.why") != std::string::npos);
    }

    TEST_CASE("the schema is checked first, and a field it does not know is refused")
    {
        CHECK(error_of("{") == "p.json: not a JSON document");
        CHECK(error_of("[]") == "p.json: (document) must be a JSON object");
        CHECK(error_of(R"J({"name": "C", "ids": ["10de:1e07"]})J") == "p.json: schema must be \"passthru.gpu-profile/1\"");
        CHECK(error_of(R"J({"schema": "passthru.gpu-profile/2", "name": "C", "ids": ["10de:1e07"]})J")
              == "p.json: schema must be \"passthru.gpu-profile/1\"");
        CHECK(error_of(profile(R"J(, "vram_gb": 22)J")) == "p.json: vram_gb is not a field of passthru.gpu-profile/1");
    }

    TEST_CASE("each field's shape is checked, and the error names it")
    {
        const std::string head = R"J({"schema": "passthru.gpu-profile/1", )J";
        CHECK(error_of(head + R"J("ids": ["10de:1e07"]})J") == "p.json: name must be a non-empty string");
        CHECK(error_of(head + R"J("name": "C"})J").starts_with("p.json: ids must be a non-empty list"));
        CHECK(error_of(head + R"J("name": "C", "ids": []})J").starts_with("p.json: ids must be a non-empty list"));
        CHECK(error_of(head + R"J("name": "C", "ids": ["10DE:1E07"]})J").starts_with("p.json: ids[0] must be a vendor:device id"));
        CHECK(error_of(head + R"J("name": "C", "ids": ["10de:1e07", "10de-1e04"]})J").starts_with("p.json: ids[1] must be"));
        CHECK(error_of(head + R"J("name": "C", "ids": ["10de:1e07", "10de:1e07"]})J") == "p.json: ids[1] 10de:1e07 is listed twice");
        CHECK(error_of(profile(R"J(, "vram_note": "")J")) == "p.json: vram_note must be a non-empty string");
        CHECK(error_of(head + R"J("name": "C", "ids": ["10de:1e07"], "vram_gib": "11"})J")
              == "p.json: vram_gib must be a positive number (GiB)");
        CHECK(error_of(head + R"J("name": "C", "ids": ["10de:1e07"], "quirks": "q"})J") == "p.json: quirks must be a list of strings");
        CHECK(error_of(head + R"J("name": "C", "ids": ["10de:1e07"], "sources": ["ok", 3]})J")
              == "p.json: sources[1] must be a non-empty string");
    }

    TEST_CASE("known issues: issue, advice and at least one source each; other fields refused")
    {
        const auto p =
            data::parse_gpu_profile(profile(R"J(, "known_issues": [{"issue": "i", "advice": "a", "sources": ["r1", "r2"]}])J"), "p.json");
        REQUIRE(p);
        REQUIRE(p->known_issues.size() == 1);
        CHECK(p->known_issues[0].issue == "i");
        CHECK(p->known_issues[0].advice == "a");
        CHECK(p->known_issues[0].sources == std::vector<std::string>{"r1", "r2"});
        CHECK(error_of(profile(R"J(, "known_issues": {"issue": "i"})J"))
              == "p.json: known_issues must be a list of {issue, advice, sources}");
        CHECK(error_of(profile(R"J(, "known_issues": [{"issue": "i", "advice": "a", "sources": []}])J"))
              == "p.json: known_issues[0].sources must name at least one public report");
        CHECK(error_of(profile(R"J(, "known_issues": [{"issue": "i", "sources": ["r"]}])J"))
              == "p.json: known_issues[0].advice must be a non-empty string");
        CHECK(error_of(profile(R"J(, "known_issues": [{"issue": "i", "advice": "a", "sources": ["r"], "fix": "x"}])J"))
              == "p.json: known_issues[0].fix is not a field of a known issue (issue, advice, sources)");
    }

    TEST_CASE("the new models load with their ids, memory and layout")
    {
        test::TempDir root;
        auto fs = util::HostFs::open(root.path());
        REQUIRE(fs);
        const data::DataDir data(*fs, std::nullopt);
        const auto profiles = data::load_gpu_profiles(data);
        REQUIRE(profiles);
        struct Want
        {
            const char* id;
            const char* name;
            double vram;
            std::uint16_t class0;
            std::size_t functions;
            bool reset_issue;
        };
        const Want wants[] = {
            {"10de:2b85", "GeForce RTX 5090", 32, 0x0300, 2, true},
            {"10de:2c02", "GeForce RTX 5080", 16, 0x0300, 2, false},
            {"10de:2c05", "GeForce RTX 5070 Ti", 16, 0x0300, 2, false},
            {"10de:2bb1", "RTX PRO 6000 Blackwell Workstation Edition", 96, 0x0300, 2, true},
            {"10de:2bb5", "RTX PRO 6000 Blackwell Server Edition", 96, 0x0302, 1, true},
            {"10de:26b9", "L40S", 48, 0x0302, 1, false},
            {"10de:27b8", "L4", 24, 0x0302, 1, false},
            {"10de:2335", "H200 SXM 141GB", 141, 0x0302, 1, false},
            {"10de:233b", "H200 NVL", 141, 0x0302, 1, false},
            {"10de:2901", "B200", 180, 0x0302, 1, false},
            {"10de:2235", "A40", 48, 0x0302, 1, false},
            {"10de:2236", "A10", 24, 0x0302, 1, false},
        };
        for (const auto& w : wants) {
            CAPTURE(w.id);
            const auto* p = data::find_profile(*profiles, w.id);
            REQUIRE(p != nullptr);
            CHECK(p->name == w.name);
            CHECK(p->vram_gib == w.vram);
            REQUIRE(p->functions.size() == w.functions);
            CHECK(p->functions[0].class16 == w.class0);
            CHECK(p->known_issues.empty() != w.reset_issue);
        }
    }

    TEST_CASE("the function layout: numbers 0-7 once each, function 0 present, class as 4 hex digits, a role")
    {
        const std::string head = R"J({"schema": "passthru.gpu-profile/1", "name": "C", "ids": ["10de:1e07"], "functions": )J";
        CHECK(error_of(head + "[]}").starts_with("p.json: functions must be a non-empty list"));
        CHECK(error_of(head + R"J([{"function": 1, "class": "0403", "role": "audio"}]})J")
              == "p.json: functions must list function 0 (the function the ids name)");
        CHECK(error_of(head + R"J([{"function": 8, "class": "0300", "role": "v"}]})J")
              == "p.json: functions[0].function must be the PCI function number, 0 to 7");
        CHECK(error_of(head + R"J([{"function": 0, "class": "030000", "role": "v"}]})J").starts_with("p.json: functions[0].class must be"));
        CHECK(error_of(head + R"J([{"function": 0, "class": "0300"}]})J") == "p.json: functions[0].role must be a non-empty string");
        CHECK(error_of(head + R"J([{"function": 0, "class": "0300", "role": "v", "bar": 1}]})J")
              == "p.json: functions[0].bar is not a field of a function (function, class, role)");
        CHECK(error_of(head + R"J([{"function": 0, "class": "0300", "role": "v"}, {"function": 0, "class": "0403", "role": "a"}]})J")
              == "p.json: functions[1].function function 0 is listed twice");
    }

    TEST_CASE("a broken override, or two profiles that claim one id, stops the load naming the file")
    {
        test::TempDir root;
        auto fs = util::HostFs::open(root.path());
        REQUIRE(fs);
        // A fresh data::DataDir per load, as each command has its own.
        auto load = [&] { return data::load_gpu_profiles(data::DataDir(*fs, std::nullopt)); };
        root.write("etc/passthru/profiles/gpus/rtx-2080-ti.json", profile(R"J(, "vram_gb": 22)J"));
        auto loaded = load();
        REQUIRE_FALSE(loaded);
        CHECK(loaded.error().code() == Errc::usage);
        CHECK(std::string(loaded.error().what())
                  .ends_with(
                      "/etc/passthru/profiles/gpus/rtx-2080-ti.json (under the root): vram_gb is not a field of passthru.gpu-profile/1"));

        root.write("etc/passthru/profiles/gpus/rtx-2080-ti.json", profile());
        loaded = load();
        CHECK_MESSAGE(loaded, (loaded ? std::string() : std::string(loaded.error().what())));
        root.write("etc/passthru/profiles/gpus/my-2080-ti-22g.json", profile());
        loaded = load();
        REQUIRE_FALSE(loaded);
        CHECK(std::string(loaded.error().what())
                  .ends_with("rtx-2080-ti.json (under the root): ids 10de:1e07 is also claimed by my-2080-ti-22g.json (one profile per "
                             "card model)"));
    }
}

namespace {

// A host with one card of the given functions (number, vendor:device, class), scanned, and the
// layout check run with the shipped profiles.
struct Fn
{
    int function;
    std::uint16_t device;
    std::uint32_t pci_class;
};

plan::Plan run_layout(const std::vector<Fn>& fns)
{
    FakeHost host;
    for (const auto& f : fns) {
        host.add("0000:01:00." + std::to_string(f.function)).ids(0x10de, f.device).pci_class(f.pci_class).group(1);
    }
    auto fs = util::HostFs::open(host.dir.path());
    REQUIRE(fs);
    util::CommandRunner runner(util::RunMode::record);
    auto inv = scan::scan_host(*fs, runner, test::shipped_scan_data(*fs));
    REQUIRE(inv);
    REQUIRE(inv->gpus.size() == 1);
    plan::Plan p;
    plan::detail::check_function_layout(*inv, inv->gpus[0], "GPU 0000:01:00", p);
    return p;
}

} // namespace

TEST_SUITE("plan::gpu_profiles")
{
    TEST_CASE("a card that shows its profile's layout gives no warning or note")
    {
        const auto turing = run_layout({{0, 0x1e07, 0x030000}, {1, 0x10f7, 0x040300}, {2, 0x1ad6, 0x0c0330}, {3, 0x1ad7, 0x0c8000}});
        CHECK(turing.warnings.empty());
        CHECK(turing.notes.empty());
        const auto v100 = run_layout({{0, 0x1db1, 0x030200}});
        CHECK(v100.warnings.empty());
        CHECK(v100.notes.empty());
        const auto unknown = run_layout({{0, 0x0fff, 0x030000}});
        CHECK(unknown.warnings.empty());
        CHECK(unknown.notes.empty());
    }

    TEST_CASE("a hidden or removed audio function is a warning that says what it means and what to do")
    {
        const auto p = run_layout({{0, 0x2204, 0x030000}});
        REQUIRE(p.warnings.size() == 1);
        const auto& w = p.warnings[0];
        CHECK(w.starts_with("GPU 0000:01:00: the profile rtx-3090.json lists function 1 (HDMI/DP audio, class 0403), but the host "
                            "shows no 0000:01:00.1, so the VM will not get it."));
        CHECK(w.find("Linux 5.3 and later expose an NVIDIA audio function that the firmware hid") != std::string::npos);
        CHECK(w.find("'echo 1 > /sys/bus/pci/rescan'") != std::string::npos);
        CHECK(p.notes.empty());
    }

    TEST_CASE("a missing USB function of a Turing card, a function of another class, and an extra function")
    {
        const auto usb = run_layout({{0, 0x1e07, 0x030000}, {1, 0x10f7, 0x040300}, {3, 0x1ad7, 0x0c8000}});
        REQUIRE(usb.warnings.size() == 1);
        CHECK(usb.warnings[0].find("lists function 2 (USB 3.1 xHCI (VirtualLink), class 0c03), but the host shows no 0000:01:00.2")
              != std::string::npos);
        CHECK(usb.warnings[0].find("This board may not have it, or it was removed through sysfs.") != std::string::npos);

        const auto compute = run_layout({{0, 0x2230, 0x030200}, {1, 0x1aef, 0x040300}});
        REQUIRE(compute.warnings.size() == 1);
        CHECK(compute.warnings[0].starts_with(
            "GPU 0000:01:00: 0000:01:00.0 is class 0302 where the profile rtx-a6000.json lists function 0 (display (VGA), class 0300)"));

        const auto extra = run_layout({{0, 0x1db1, 0x030200}, {1, 0x10f7, 0x040300}});
        CHECK(extra.warnings.empty());
        REQUIRE(extra.notes.size() == 1);
        CHECK(extra.notes[0].starts_with("GPU 0000:01:00: the host shows 0000:01:00.1 (class 0403), which the profile v100-sxm2-16gb.json "
                                         "does not list"));
    }
}
