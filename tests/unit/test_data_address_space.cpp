// SPDX-License-Identifier: GPL-2.0-or-later
// data/address_space: profiles/host/address-space.json through data/schema. A
// missing or mistyped field is named by its path, an unknown field is refused.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "../support/usage_error.hpp"
#include "data/address_space.hpp"

using namespace passthru;

namespace {

// profiles/host/address-space.json of the source tree, as JSON to break field by field.
nlohmann::json address_space_document()
{
    const auto path = std::filesystem::path(PASSTHRU_FIXTURES_DIR).parent_path().parent_path() / "profiles" / "host" / "address-space.json";
    std::ifstream in(path);
    REQUIRE(in.good());
    std::ostringstream s;
    s << in.rdbuf();
    return nlohmann::json::parse(s.str());
}

std::string address_space_error(const nlohmann::json& doc)
{
    return test::usage_error(data::parse_address_limits(doc.dump(), "a.json"));
}

} // namespace

TEST_SUITE("data::address_space")
{
    TEST_CASE("the shipped file loads")
    {
        const auto limits = data::parse_address_limits(address_space_document().dump(), "a.json");
        REQUIRE(limits);
        CHECK(limits->qemu_default_phys_bits == 40);
        CHECK(limits->ovmf_trusted_bits_by_vendor.at("Intel") == std::vector<int>{36, 39});
    }

    TEST_CASE("a broken field is named by its path")
    {
        auto doc = address_space_document();
        doc["schema"] = "passthru.address-space/2";
        CHECK(address_space_error(doc) == "a.json: schema must be \"passthru.address-space/1\"");
        doc = address_space_document();
        doc.erase("ram_start_mib");
        CHECK(address_space_error(doc) == "a.json: ram_start_mib is missing");
        doc = address_space_document();
        doc["ovmf_trusted_bits_by_vendor"]["AMD"][0] = "40";
        CHECK(address_space_error(doc) == "a.json: ovmf_trusted_bits_by_vendor.AMD[0]: expected an integer");
        doc = address_space_document();
        doc["qemu64_models"][1] = "kvm 64";
        CHECK(address_space_error(doc) == "a.json: qemu64_models[1] is not a CPU model name: 'kvm 64'");
        doc = address_space_document();
        doc["headroom_mib"] = (std::uint64_t{1} << 36) + 1;
        CHECK(address_space_error(doc) == "a.json: headroom_mib must be 0 to 2^36 (MiB)");
        doc = address_space_document();
        doc["default_model"] = "host";
        CHECK(address_space_error(doc) == "a.json: default_model must be one of qemu64_models");
        doc = address_space_document();
        doc["ovmf_window_fraction_shift"] = 17;
        CHECK(address_space_error(doc) == "a.json: ovmf_window_fraction_shift must be 1-16");
    }

    TEST_CASE("a field the schema does not have is refused")
    {
        auto doc = address_space_document();
        doc["ovmf_max_bits"] = 46;
        CHECK(address_space_error(doc) == "a.json: ovmf_max_bits is not a field of passthru.address-space/1");
    }
}
