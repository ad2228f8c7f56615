// SPDX-License-Identifier: GPL-2.0-or-later
// util/json: every JSON document passthru reads is parsed with a bound on its
// nesting, so a hostile journal manifest or plan cannot exhaust the stack.
#include <doctest/doctest.h>

#include <string>

#include "util/json.hpp"

using namespace passthru;

namespace {

std::string nested(int depth)
{
    return "{\"id\": 1, \"deep\": " + std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']')
           + "}";
}

} // namespace

TEST_SUITE("util::json")
{
    TEST_CASE("a document within the bound parses as nlohmann's parser does")
    {
        const auto doc = util::parse_json(R"({"schema": "passthru.plan/1", "files": [{"path": "/etc/x", "mode": "0644"}]})", "the plan");
        REQUIRE(doc);
        CHECK((*doc)["files"][0]["path"] == "/etc/x");
        // the outer object plus k_json_max_depth - 1 arrays: exactly at the bound
        CHECK(util::parse_json(nested(util::k_json_max_depth - 1), "x"));
    }

    TEST_CASE("one level deeper than the bound is refused, and so is a manifest nested 200,000 levels")
    {
        for (const int depth : {util::k_json_max_depth, 200000}) {
            const auto doc = util::parse_json(nested(depth), "the manifest of generation 1");
            REQUIRE_FALSE(doc);
            CHECK(doc.error().code() == Errc::precondition);
            CHECK(std::string(doc.error().what())
                  == "refused: the manifest of generation 1 is nested deeper than " + std::to_string(util::k_json_max_depth) + " levels");
        }
    }

    TEST_CASE("text that is not JSON: the caller's error code, naming what it is")
    {
        const auto doc = util::parse_json("{\"files\": [", "--plan p.json", Errc::usage);
        REQUIRE_FALSE(doc);
        CHECK(doc.error().code() == Errc::usage);
        CHECK(std::string(doc.error().what()) == "--plan p.json: not a JSON document");
        // unbalanced and deep: still refused as too deep, never parsed further
        CHECK(util::parse_json(std::string(100000, '['), "x").error().code() == Errc::precondition);
    }
}
