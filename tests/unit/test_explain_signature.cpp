// SPDX-License-Identifier: GPL-2.0-or-later
// explain/signature: the bounded pattern matcher, its captures, and the schema
// of profiles/failures.json (the shipped file loads; each way of breaking it is
// one error naming the row).
#include <doctest/doctest.h>

#include <string>

#include "../support/temp_dir.hpp"
#include "../support/usage_error.hpp"
#include "explain/signature.hpp"
#include "plan/planner.hpp"

using namespace passthru;
using explain::Pattern;

namespace {

Pattern compiled(std::string_view text)
{
    auto p = Pattern::compile(text);
    REQUIRE(p);
    return std::move(*p);
}

std::string signatures_error_of(std::string_view text)
{
    return test::usage_error(explain::parse_signatures(text, "f.json"));
}

std::string one_row(std::string_view row)
{
    return R"({"schema": "passthru.failures/1", "failures": [)" + std::string(row) + "]}";
}

} // namespace

TEST_SUITE("explain::signature")
{
    TEST_CASE("a pattern matches anywhere in the line and captures by class")
    {
        const auto p = compiled("vfio {pci:pci}: group {group:num} is not viable");
        const auto m = p.match("kvm: -device vfio-pci,host=0000:01:00.0,id=hostpci0: vfio 0000:01:00.0: group 12 is not viable");
        REQUIRE(m);
        CHECK(m->at("pci") == "0000:01:00.0");
        CHECK(m->at("group") == "12");
        CHECK_FALSE(p.match("vfio 0000:01:00.0: group 12 is viable"));
        CHECK_FALSE(p.match("vfio 0000:01:00.0: group x is not viable"));
    }

    TEST_CASE("a short or upper-case PCI address is captured in its full lower-case form")
    {
        const auto p = compiled("{pci:pci}: not ready {ms:num}ms after FLR");
        const auto m = p.match("vfio-pci 41:00.0: not ready 65535ms after FLR; giving up");
        REQUIRE(m);
        CHECK(m->at("pci") == "0000:41:00.0");
        CHECK(m->at("ms") == "65535");
        CHECK(p.match("pci 0000:C1:00.0: not ready 1023ms after FLR")->at("pci") == "0000:c1:00.0");
        CHECK_FALSE(p.match("pci 0000:c1:00.9: not ready 1ms after FLR")); // function 0-7 only
    }

    TEST_CASE("gaps find later text, brackets and words capture their runs")
    {
        const auto p = compiled("EFI * image '*' not found");
        CHECK(p.match("EFI vars image '/usr/share/pve-edk2-firmware/OVMF_VARS_4M.fd' not found"));
        CHECK(p.match("EFI base image '/x' not found"));
        CHECK_FALSE(p.match("EFI vars image not found"));
        const auto b = compiled("BAR {bar:num}: can't reserve {range:bracket}");
        const auto m = b.match("vfio-pci 0000:01:00.0: BAR 1: can't reserve [mem 0xc0000000-0xcfffffff 64bit pref]");
        REQUIRE(m);
        CHECK(m->at("range") == "[mem 0xc0000000-0xcfffffff 64bit pref]");
        // A word stops at a quote, so a quoted name is captured without it.
        CHECK(compiled("cannot set up guest memory '{region:word}'").match("cannot set up guest memory 'pc.ram': x")->at("region")
              == "pc.ram");
    }

    TEST_CASE("a long hostile line is matched in bounded stack and time")
    {
        const auto p = compiled("vfio {pci:pci}: group {group:num} is not viable");
        std::string line(1 << 20, '*');
        line += "vfio 0000:01:00.0: group 7 is not viable";
        CHECK(p.match(line)->at("group") == "7");
        const std::string nearly(1 << 16, 'v');
        CHECK_FALSE(p.match(nearly + "vfio 0000:01:00.0: group 7 is not"));
    }

    TEST_CASE("patterns that are not patterns are refused")
    {
        CHECK_FALSE(Pattern::compile("{pci:pci}: x"));                  // too little literal text
        CHECK_FALSE(Pattern::compile("vfio {pci:pcie} is not viable")); // unknown class
        CHECK_FALSE(Pattern::compile("vfio {pci:pci is not viable"));   // unclosed
        CHECK_FALSE(Pattern::compile("vfio } is not viable"));
        CHECK_FALSE(Pattern::compile("vfio {a:num} and {a:num} not viable"));
    }

    TEST_CASE("placeholders are filled from captures and host facts, unknown ones stay")
    {
        CHECK(explain::fill_placeholders("group {group} of {pci}: {x} {", {{"group", "12"}, {"pci", "0000:01:00.0"}})
              == "group 12 of 0000:01:00.0: {x} {");
    }

    TEST_CASE("the shipped profiles/failures.json loads, every row with a pattern and a source")
    {
        const test::TempDir root;
        const auto fs = util::HostFs::open(root.path()).value();
        const data::DataDir data(fs, std::nullopt);
        auto sigs = explain::parse_signatures(data.read("profiles", "failures.json").value(), "failures.json");
        REQUIRE(sigs);
        CHECK(sigs->size() >= 19);
        for (const auto& s : *sigs) {
            CHECK_FALSE(s.source.empty());
        }
    }

    TEST_CASE("each way of breaking the schema names the row and the field")
    {
        const std::string good_row = R"({"id": "x-y", "where": "task_log", "pattern": "something failed {n:num}",
            "cause": "c {n} {vmid}", "fix": "f", "plan_option": null, "source": "s"})";
        CHECK(explain::parse_signatures(one_row(good_row), "f.json"));
        CHECK(signatures_error_of(R"({"schema": "passthru.failures/2", "failures": []})").find("schema must be") != std::string::npos);
        CHECK(signatures_error_of(R"({"schema": "passthru.failures/1", "failures": []})").find("non-empty array") != std::string::npos);
        CHECK(signatures_error_of(one_row(R"({"id": "x", "where": "elsewhere", "pattern": "something failed", "cause": "c",
            "fix": "f", "source": "s"})"))
                  .find("failures[0].where must be task_log or kernel_log")
              != std::string::npos);
        CHECK(signatures_error_of(one_row(R"({"id": "x", "where": "task_log", "pattern": "something failed", "cause": "c {nope}",
            "fix": "f", "source": "s"})"))
                  .find("{nope} is neither")
              != std::string::npos);
        CHECK(signatures_error_of(one_row(R"({"id": "x", "where": "task_log", "pattern": "something failed", "cause": "c",
            "fix": "f", "source": "s", "extra": 1})"))
                  .find("extra is not a field")
              != std::string::npos);
        CHECK(signatures_error_of(one_row(R"({"id": "x", "where": "task_log", "pattern": "something failed", "cause": "c",
            "fix": "f"})"))
                  .find("f.json: failures[0].source is missing")
              != std::string::npos);
        CHECK(signatures_error_of(one_row(good_row + "," + good_row)).find("used twice") != std::string::npos);
        CHECK(signatures_error_of(one_row(R"({"id": "x", "where": "task_log", "pattern": "something failed", "cause": "c",
            "fix": "f", "plan_option": "--acs-override", "plan_option_when": "sometimes", "source": "s"})"))
                  .find("plan_option_when must be always or other_devices_in_group")
              != std::string::npos);
    }

    TEST_CASE("the schema helper's phrasing: one schema message, typed fields named by path, unknown fields by name")
    {
        CHECK(signatures_error_of(R"({"schema": "passthru.failures/2", "failures": []})")
              == "f.json: schema must be \"passthru.failures/1\"");
        CHECK(signatures_error_of(R"({"failures": []})") == "f.json: schema must be \"passthru.failures/1\"");
        CHECK(signatures_error_of(R"({"schema": "passthru.failures/1", "failures": {}})") == "f.json: failures: expected an array");
        const std::string rest = R"("where": "task_log", "pattern": "something failed", "cause": "c", "fix": "f", "source": "s")";
        CHECK(signatures_error_of(one_row(R"({"id": 7, )" + rest + "}")) == "f.json: failures[0].id: expected a non-empty string");
        CHECK(signatures_error_of(one_row(R"({"id": "x", "plan_option": 1, )" + rest + "}"))
              == "f.json: failures[0].plan_option: expected a string or null");
        CHECK(signatures_error_of(one_row(R"({"id": "x", "plan_option_when": true, )" + rest + "}"))
              == "f.json: failures[0].plan_option_when: expected a string");
        CHECK(signatures_error_of(one_row(R"({"id": "x", "extra": 1, )" + rest + "}"))
              == "f.json: failures[0].extra is not a field of a failure");
        CHECK(signatures_error_of(R"({"schema": "passthru.failures/1", "rows": []})")
              == "f.json: rows is not a field of passthru.failures/1");
        CHECK(signatures_error_of(one_row(R"({"id": "x", "where": "task_log", "pattern": "something {a:nope} failed", "cause": "c",
            "fix": "f", "source": "s"})"))
                  .starts_with("f.json: failures[0].pattern: '{a:nope}' in pattern"));
    }

    TEST_CASE("plan_option_when: always by default, other_devices_in_group when the row says so")
    {
        const auto row = [](const std::string& when) {
            return R"({"id": "x", "where": "task_log", "pattern": "something failed", "cause": "c", "fix": "f",
                "plan_option": "--acs-override", )"
                   + when + R"("source": "s"})";
        };
        auto plain = explain::parse_signatures(one_row(row("")), "f.json");
        REQUIRE(plain);
        CHECK(plain->front().plan_option_when == explain::OptionWhen::always);
        auto other = explain::parse_signatures(one_row(row(R"("plan_option_when": "other_devices_in_group", )")), "f.json");
        REQUIRE(other);
        CHECK(other->front().plan_option_when == explain::OptionWhen::other_devices_in_group);
    }
}
