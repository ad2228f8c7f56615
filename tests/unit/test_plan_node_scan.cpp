// SPDX-License-Identifier: GPL-2.0-or-later
// Another node's 'passthru scan --json' read back for a cluster mapping
// (--node-scan): what it keeps of the scan, and the hostile documents it refuses.
#include <doctest/doctest.h>

#include <filesystem>

#include "../support/shipped_data.hpp"
#include "cli/scan_json.hpp"
#include "plan/node_scan.hpp"
#include "plan/planner.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"

using namespace passthru;
using nlohmann::json;

namespace {

scan::Inventory fixture_scan(const std::string& name)
{
    auto scanned = test::scan_fixture(name);
    REQUIRE(scanned);
    return std::move(scanned->inventory);
}

// The error a document gives, or "" when it is accepted.
std::string error_of(const json& doc)
{
    const auto inv = plan::inventory_from_scan_json(doc, "--node-scan n1=f", {});
    if (inv) {
        return "";
    }
    CHECK(inv.error().code() == Errc::usage);
    return inv.error().what();
}

} // namespace

TEST_SUITE("plan::node_scan")
{
    TEST_CASE("a scan document gives back the cards, groups and verdicts the planner uses")
    {
        for (const char* name : {"epyc-4x2080ti", "consumer-shared", "t180-4xv100", "identical-pair"}) {
            CAPTURE(name);
            const auto original = fixture_scan(name);
            const auto read = plan::inventory_from_scan_json(cli::scan_to_json(original), "scan", original.vendors);
            REQUIRE_MESSAGE(read, (read ? std::string() : std::string(read.error().what())));
            REQUIRE(read->gpus.size() == original.gpus.size());
            for (std::size_t k = 0; k < original.gpus.size(); ++k) {
                const auto& a = original.gpus[k];
                const auto& b = read->gpus[k];
                CHECK(a.slot == b.slot);
                CHECK(a.vendor == b.vendor);
                CHECK(a.functions == b.functions);
                CHECK(a.iommu_groups == b.iommu_groups);
                CHECK(a.isolation == b.isolation);
                CHECK(a.shares_with == b.shares_with);
                CHECK(a.other_endpoints == b.other_endpoints);
                CHECK(a.host_critical == b.host_critical);
                const auto* fa = original.find(a.functions.front());
                const auto* fb = read->find(b.functions.front());
                REQUIRE(fb != nullptr);
                CHECK(fa->vendor_device() == fb->vendor_device());
                CHECK(fa->subsystem_vendor == fb->subsystem_vendor);
                CHECK(fa->subsystem_device == fb->subsystem_device);
                CHECK(fa->iommu_group == fb->iommu_group);
            }
            CHECK(read->devices.size() == original.devices.size());
            CHECK(read->groups.size() == original.groups.size());
            CHECK(read->host.iommu.enabled == original.host.iommu.enabled);
            const auto a = plan::select_cards(original, "all");
            const auto b = plan::select_cards(*read, "all");
            REQUIRE(a.has_value() == b.has_value());
            if (a) {
                REQUIRE(a->size() == b->size());
                for (std::size_t k = 0; k < a->size(); ++k) {
                    CHECK((*a)[k]->slot == (*b)[k]->slot);
                }
            }
        }
    }

    TEST_CASE("a hostile document is refused with the file and the field named")
    {
        const json good = cli::scan_to_json(fixture_scan("epyc-4x2080ti"));
        CHECK(error_of(good).empty());

        CHECK(error_of(json::array()) == "--node-scan n1=f: (document) must be a JSON object");
        json doc = good;
        doc["schema"] = "passthru.plan/1";
        CHECK(error_of(doc) == "--node-scan n1=f: schema must be \"passthru.scan/1\"");
        doc.erase("schema");
        CHECK(error_of(doc) == "--node-scan n1=f: schema must be \"passthru.scan/1\"");
        doc = good;
        doc.erase("gpus");
        CHECK(error_of(doc) == "--node-scan n1=f: gpus is missing");
        doc = good;
        doc["devices"][0]["address"] = "0000:01:00";
        CHECK(error_of(doc).find("devices[0].address: expected a PCI address") != std::string::npos);
        doc = good;
        doc["devices"][0]["vendor"] = "10DE";
        CHECK(error_of(doc).find("devices[0].vendor: expected 4 lower-case hex digits") != std::string::npos);
        doc = good;
        doc["devices"][0]["iommu_group"] = -1;
        CHECK(error_of(doc).find("devices[0].iommu_group: expected a non-negative integer") != std::string::npos);
        doc = good;
        doc["devices"][1]["address"] = doc["devices"][0]["address"];
        CHECK(error_of(doc).find("is listed twice") != std::string::npos);
        doc = good;
        doc["gpus"][0]["isolation"] = "isolated";
        CHECK(error_of(doc).find("gpus[0].isolation: expected clean, shared-with-gpu, shared or unknown") != std::string::npos);
        doc = good;
        doc["gpus"][0]["functions"] = json::array({"0000:ee:00.0"});
        CHECK(error_of(doc).find("gpus[0].functions: 0000:ee:00.0 is not a device of slot") != std::string::npos);
        doc = good;
        doc["gpus"][0]["subsystem"] = nullptr; // not a field of a card: ignored
        doc["devices"][0]["subsystem"] = "1458:37A9";
        CHECK(error_of(doc).find("devices[0].subsystem") != std::string::npos);
        doc = good;
        doc["host"]["iommu"] = "on";
        CHECK(error_of(doc).find("host.iommu: expected an object") != std::string::npos);
        doc = good;
        doc["devices"][1]["sriov"]["virtfn"] = 0;
        CHECK(error_of(doc) == "--node-scan n1=f: devices[1].sriov.virtfn: expected true or false");
        doc = good;
        doc["iommu_groups"][0] = 3;
        CHECK(error_of(doc) == "--node-scan n1=f: iommu_groups[0]: expected an object");
        doc = good;
        doc["nvswitches"] = nullptr;
        CHECK(error_of(doc) == "--node-scan n1=f: nvswitches: expected an array");
    }

    TEST_CASE("fields plan does not read are left alone: a scan document carries many, and newer ones more")
    {
        json doc = cli::scan_to_json(fixture_scan("epyc-4x2080ti"));
        doc["added_later"] = json::object({{"x", 1}});
        doc["devices"][0]["added_later"] = true;
        doc["gpus"][0]["added_later"] = "text";
        CHECK(error_of(doc).empty());
    }

    TEST_CASE("an NVSwitch system's scan is refused: its switches are not mapped")
    {
        json doc = cli::scan_to_json(fixture_scan("hgx-h100"));
        const auto inv = plan::inventory_from_scan_json(doc, "--node-scan n1=f", {});
        REQUIRE_FALSE(inv);
        CHECK(inv.error().code() == Errc::precondition);
        CHECK(std::string(inv.error().what()).find("NVSwitch") != std::string::npos);
    }
}
