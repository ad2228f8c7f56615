// SPDX-License-Identifier: GPL-2.0-or-later
// profiles/host/vendors.json: the shipped file loads with NVIDIA's row, a second
// vendor is one more row, and each way of breaking the schema is one error
// naming the file and the field.
#include <doctest/doctest.h>

#include "../support/shipped_data.hpp"
#include "../support/temp_dir.hpp"
#include "../support/usage_error.hpp"
#include "data/gpu_vendors.hpp"

using namespace passthru;

namespace {

std::string vendors_error_of(std::string_view text)
{
    return test::usage_error(data::parse_gpu_vendors(text, "v.json"));
}

constexpr std::string_view k_two = R"({"schema": "passthru.gpu-vendors/1", "comment": "c", "vendors": [
  {"id": "10de", "name": "NVIDIA", "gpus_all": true, "drivers": "nouveau/nvidia", "switch_class": "0680", "vgpu": true, "hidden_audio": true},
  {"id": "1002", "name": "AMD", "gpus_all": true, "drivers": "amdgpu/radeon"}]})";

// k_two with the second row's `field` replaced by `value` (JSON text).
std::string second_with(const std::string& field, const std::string& value)
{
    return R"({"schema": "passthru.gpu-vendors/1", "vendors": [{"id": "1002", "name": "AMD", "drivers": "amdgpu", ")" + field
           + "\": " + value + "}]}";
}

} // namespace

TEST_SUITE("data::gpu_vendors")
{
    TEST_CASE("the shipped file has NVIDIA's row and no other")
    {
        test::TempDir root;
        auto fs = util::HostFs::open(root.path());
        REQUIRE(fs);
        const auto vendors = test::shipped_scan_data(*fs).vendors;
        REQUIRE(vendors.rows.size() == 1);
        const auto nvidia = vendors.find(0x10de);
        REQUIRE(nvidia != nullptr);
        CHECK(nvidia->name == "NVIDIA");
        CHECK(nvidia->gpus_all);
        CHECK(nvidia->drivers == "nouveau/nvidia");
        CHECK(nvidia->switch_class == std::uint16_t{0x0680});
        CHECK(nvidia->vgpu);
        CHECK(nvidia->hidden_audio);
        CHECK(vendors.find(0x1002) == nullptr);
        CHECK(vendors.find(std::nullopt) == nullptr);
        CHECK(vendors.gpus_all_names() == "NVIDIA");
    }

    TEST_CASE("a second vendor is one more row")
    {
        const auto vendors = data::parse_gpu_vendors(k_two, "v.json");
        REQUIRE(vendors);
        REQUIRE(vendors->rows.size() == 2);
        const auto amd = vendors->find(0x1002);
        REQUIRE(amd != nullptr);
        CHECK(amd->name == "AMD");
        CHECK(amd->gpus_all);
        CHECK_FALSE(amd->switch_class);
        CHECK_FALSE(amd->vgpu);
        CHECK_FALSE(amd->hidden_audio);
        CHECK(vendors->gpus_all_names() == "NVIDIA or AMD");
        CHECK(vendors->is_switch(0x10de, 0x0680));
        CHECK_FALSE(vendors->is_switch(0x1002, 0x0680));
        CHECK_FALSE(vendors->is_switch(0x10de, 0x0300));
        CHECK_FALSE(vendors->is_switch(std::nullopt, 0x0680));
    }

    TEST_CASE("an override under the root replaces the shipped file")
    {
        test::TempDir root;
        root.write("etc/passthru/profiles/host/vendors.json", std::string(k_two));
        auto fs = util::HostFs::open(root.path());
        REQUIRE(fs);
        CHECK(test::shipped_scan_data(*fs).vendors.find(0x1002) != nullptr);
    }

    TEST_CASE("every break of the schema names the file and the field")
    {
        CHECK(vendors_error_of("{") == "v.json: not a JSON document");
        CHECK(vendors_error_of(R"({"schema": "passthru.gpu-vendors/2", "vendors": []})")
              == "v.json: schema must be \"passthru.gpu-vendors/1\"");
        CHECK(vendors_error_of(R"({"schema": "passthru.gpu-vendors/1"})") == "v.json: vendors is missing");
        CHECK(vendors_error_of(R"({"schema": "passthru.gpu-vendors/1", "vendors": [], "extra": 1})")
              == "v.json: extra is not a field of passthru.gpu-vendors/1");
        CHECK(vendors_error_of(second_with("colour", "\"red\"")) == "v.json: vendors[0].colour is not a field of a GPU vendor");
        for (const char* bad : {"\"10DE\"", "\"10d\"", "\"010de\"", "\"0x10\"", "4318"}) {
            CAPTURE(bad);
            const std::string text =
                R"({"schema": "passthru.gpu-vendors/1", "vendors": [{"id": )" + std::string(bad) + R"(, "name": "N", "drivers": "d"}]})";
            CHECK(vendors_error_of(text) == "v.json: vendors[0].id must be 4 lower-case hex digits");
        }
        CHECK(vendors_error_of(second_with("switch_class", "\"68\"")) == "v.json: vendors[0].switch_class must be 4 lower-case hex digits");
        CHECK(vendors_error_of(second_with("gpus_all", "1")) == "v.json: vendors[0].gpus_all: expected true or false");
        CHECK(vendors_error_of(R"({"schema": "passthru.gpu-vendors/1", "vendors": [{"id": "1002", "drivers": "d"}]})")
              == "v.json: vendors[0].name is missing");
        CHECK(vendors_error_of(R"({"schema": "passthru.gpu-vendors/1", "vendors": [{"id": "1002", "name": "", "drivers": "d"}]})")
              == "v.json: vendors[0].name: expected a non-empty string");
        CHECK(vendors_error_of(R"({"schema": "passthru.gpu-vendors/1", "vendors": [{"id": "1002", "name": "A", "drivers": "d"},
              {"id": "1002", "name": "B", "drivers": "d"}]})")
              == "v.json: vendors[1].id names a vendor listed before");
    }

    TEST_CASE("a name or driver word with a line break is refused: it goes into messages and plan reasons")
    {
        for (const char* field : {"name", "drivers"}) {
            CAPTURE(field);
            std::string row = R"({"id": "1002", "name": "AMD", "drivers": "amdgpu"})";
            const std::string key = std::string("\"") + field + "\": \"";
            row.insert(row.find(key) + key.size(), "x\\ninstall vfio-pci /bin/sh\\n");
            const auto parsed = data::parse_gpu_vendors(R"({"schema": "passthru.gpu-vendors/1", "vendors": [)" + row + "]}", "v.json");
            REQUIRE_FALSE(parsed);
            CHECK(parsed.error().code() == Errc::precondition);
            CHECK(std::string(parsed.error().what())
                  == "refused: v.json: vendors[0]." + std::string(field)
                         + " must be one line of text: no line break or other control character");
        }
    }

    TEST_CASE("a switch_class of a storage, network, display, bridge or USB class is refused, and never makes a switch")
    {
        for (const char* cls : {"0108", "0106", "0200", "0300", "0302", "0604", "0600", "0806", "0c03", "0c05"}) {
            CAPTURE(cls);
            const auto parsed =
                data::parse_gpu_vendors(std::string(R"({"schema": "passthru.gpu-vendors/1", "vendors": [)")
                                            + R"({"id": "1e0f", "name": "K", "drivers": "nvme", "switch_class": ")" + cls + "\"}]}",
                                        "v.json");
            REQUIRE_FALSE(parsed);
            CHECK(std::string(parsed.error().what()).find("v.json: vendors[0].switch_class") != std::string::npos);
            // A table made without the loader cannot do it either: the device's class decides first.
            data::GpuVendors table;
            data::GpuVendor row;
            row.id = 0x1e0f;
            row.switch_class = static_cast<std::uint16_t>(std::stoul(cls, nullptr, 16));
            table.rows.push_back(std::make_shared<const data::GpuVendor>(row));
            CHECK_FALSE(table.is_switch(std::uint16_t{0x1e0f}, row.switch_class));
        }
        const auto nvswitch = data::parse_gpu_vendors(
            R"({"schema": "passthru.gpu-vendors/1", "vendors": [{"id": "10de", "name": "NVIDIA", "drivers": "n", "switch_class": "0680"}]})",
            "v.json");
        REQUIRE(nvswitch);
        CHECK(nvswitch->is_switch(std::uint16_t{0x10de}, std::uint16_t{0x0680}));
    }

    TEST_CASE("an empty vendors list is refused: --gpus all would name no vendor")
    {
        const auto parsed = data::parse_gpu_vendors(R"({"schema": "passthru.gpu-vendors/1", "vendors": []})", "v.json");
        REQUIRE_FALSE(parsed);
        CHECK(std::string(parsed.error().what()).find("v.json: vendors lists no vendor") != std::string::npos);
    }
}
