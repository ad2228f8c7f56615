// SPDX-License-Identifier: GPL-2.0-or-later
// profiles/host/kernel-regressions.json: the shipped file loads and names the releases of the
// reports; a range holds what it says; each way of breaking the schema is one error.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "../support/usage_error.hpp"
#include "data/kernel_regressions.hpp"

using namespace passthru;

namespace {

std::string shipped_regressions()
{
    std::ifstream in(std::string(PASSTHRU_FIXTURES_DIR) + "/../../profiles/host/kernel-regressions.json");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string regression_row(std::string_view fields)
{
    return std::string(R"({"schema": "passthru.kernel-regressions/1", "regressions": [{"id": "r", "from": "6.8.12-12", )")
           + std::string(fields) + R"(, "symptom": "s", "fix": "f", "sources": ["x#1"]}]})";
}

std::string regression_error_of(const std::string& text)
{
    return test::usage_error(data::parse_kernel_regressions(text, "k.json"));
}

} // namespace

TEST_SUITE("data::kernel_regressions")
{
    TEST_CASE("release numbers and their order")
    {
        CHECK(*data::release_numbers("6.8.12-12-pve") == data::ReleaseNumbers{6, 8, 12, 12});
        CHECK(*data::release_numbers("6.14.8-1-bpo12-pve") == data::ReleaseNumbers{6, 14, 8, 1});
        CHECK(*data::release_numbers("6.1.0-13-amd64") == data::ReleaseNumbers{6, 1, 0, 13});
        CHECK_FALSE(data::release_numbers("pve-6.8"));
        CHECK(data::compare_releases({7, 0}, {7, 0, 0, 0}) == 0);
        CHECK(data::compare_releases({6, 8, 12, 12}, {6, 8, 12, 13}) < 0);
        CHECK(data::compare_releases({6, 17}, {6, 8, 12}) > 0);
    }

    TEST_CASE("the shipped file covers the reported releases and no other")
    {
        const auto r = data::parse_kernel_regressions(shipped_regressions(), "kernel-regressions.json");
        REQUIRE(r);
        auto covered = [&](std::string_view release) {
            int n = 0;
            for (const auto& x : r->rows) {
                n += x.covers(release) ? 1 : 0;
            }
            return n;
        };
        CHECK(covered("6.8.12-12-pve") == 1);
        CHECK(covered("6.8.12-13-pve") == 0);
        CHECK(covered("6.8.12-11-pve") == 0);
        CHECK(covered("6.14.8-1-bpo12-pve") == 1);
        CHECK(covered("6.14.8-2-pve") == 0);
        CHECK(covered("7.0.14-2-pve") == 1);
        CHECK(covered("7.0.14-3-pve") == 0);
        CHECK(covered("6.8.12-12-amd64") == 0); // the flavour
        for (const auto& x : r->rows) {
            CHECK_FALSE(x.sources.empty());
        }
    }

    TEST_CASE("a range without fixed holds every later release")
    {
        const auto r = data::parse_kernel_regressions(regression_row(R"("comment": "c")"), "k.json");
        REQUIRE(r);
        CHECK(r->rows[0].covers("6.8.12-12-pve"));
        CHECK(r->rows[0].covers("9.1-amd64"));
        CHECK_FALSE(r->rows[0].covers("6.8.12-11"));
    }

    TEST_CASE("each broken field is one error naming it")
    {
        CHECK(regression_error_of(regression_row(R"("fixed": "6.8.12-11")"))
              == "k.json: regressions[0].fixed must be a later release than from");
        CHECK(regression_error_of(regression_row(R"("fixed": "6.8.x")"))
              == "k.json: regressions[0].fixed must be a kernel release of numbers joined by '.' or '-' (e.g. \"6.8.12-12\")");
        CHECK(regression_error_of(regression_row(R"("vendor": "10de0")"))
              == "k.json: regressions[0].vendor must be a PCI vendor id of four hex digits (e.g. \"1002\")");
        CHECK(regression_error_of(regression_row(R"("flavour": "bpo-pve")"))
              == "k.json: regressions[0].flavour must be one word without '-' (e.g. \"pve\")");
        CHECK(regression_error_of(regression_row(R"("when": 1)")) == "k.json: regressions[0].when is not a field of a kernel regression");
        CHECK(regression_error_of(R"({"schema": "passthru.kernel-regressions/2", "regressions": []})").find("schema must be")
              != std::string::npos);
    }
}
