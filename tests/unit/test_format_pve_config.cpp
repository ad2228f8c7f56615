// SPDX-License-Identifier: GPL-2.0-or-later
// The hand-written matchers of host input (no std::regex in src/, see
// src/util/lex.hpp) agree with the regular expressions they replace on every
// short string over each grammar's alphabet, and hold up on a line of any length.
// std::regex is used here only as the reference, on strings of <= 9 characters.
#include <doctest/doctest.h>

#include <random>
#include <regex>
#include <string>

#include "format/pve_config.hpp"
#include "format/pve_mapping.hpp"

using namespace passthru::format::pve;

namespace {

// `count` random strings of length 0..max_len over `alphabet` (fixed seed).
std::vector<std::string> samples(std::string_view alphabet, std::size_t max_len, int count)
{
    std::mt19937 rng(1234);
    std::uniform_int_distribution<std::size_t> len(0, max_len);
    std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
    std::vector<std::string> out;
    for (int i = 0; i < count; ++i) {
        std::string s;
        for (std::size_t n = len(rng); n > 0; --n) {
            s += alphabet[pick(rng)];
        }
        out.push_back(std::move(s));
    }
    return out;
}

template<class F>
void agrees(const std::regex& re, F matcher, std::string_view alphabet, std::size_t max_len)
{
    for (const auto& s : samples(alphabet, max_len, 40000)) {
        INFO("input: '" << s << "'");
        CHECK(matcher(s) == std::regex_match(s, re));
    }
}

const std::string k_long(60000, 'A');

} // namespace

TEST_SUITE("format::pve_config")
{
    TEST_CASE("key, hostpci id and q35 grammars agree with PVE's regular expressions")
    {
        agrees(std::regex(R"(^[a-z][a-z_\-]*\d*$)"), valid_key, "az_-09:A ", 7);
        agrees(std::regex(R"(^(?:[a-f0-9]{4,}:)?[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?$)"), valid_hostpci_id, "0af:.g", 14);
        agrees(std::regex(R"(^(q35|pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?)$)"), valid_q35_machine, "pc-q35.1+vexq", 16);
        CHECK(valid_q35_machine("pc-q35-8.1+pve0.pxe"));
        CHECK(valid_hostpci_id("0000:01:00.0"));
    }

    TEST_CASE("line classification agrees with the key-line and section regular expressions")
    {
        const std::regex key_line(R"(^([a-z][a-z_\-]*\d*):\s*(.+?)\s*$)");
        const std::regex section(R"(^\[([^\]]+)\]\s*$)");
        for (const auto& s : samples("a1_:[] \t\rx#", 9, 40000)) {
            INFO("line: '" << s << "'");
            const VmConfig c = VmConfig::parse(s + "\n");
            std::smatch m;
            if (!s.empty() && s.front() != '#' && std::regex_match(s, m, section) && !std::string_view(s).starts_with("[ ")) {
                // a section header that is not all white space inside
                bool blank = s.find_first_not_of(" \t\r\n\v\f") == std::string::npos;
                if (!blank) {
                    CHECK(c.has_section(m[1].str()));
                }
            } else if (!s.empty() && s.front() != '#' && std::regex_match(s, m, key_line)) {
                CHECK(c.get(m[1].str()) == m[2].str());
            } else {
                CHECK(c.entries().empty());
            }
        }
    }

    TEST_CASE("a 60 KB line parses in bounded stack, in the config and in [PENDING]")
    {
        const VmConfig c = VmConfig::parse("description: " + k_long + "\nname: a\n\n[PENDING]\ndescription: " + k_long + "\n");
        CHECK(c.get("description") == k_long);
        CHECK(c.get("description", "PENDING") == k_long);
        CHECK(c.get("name") == "a");
        CHECK(c.str().size() > 120000);
        CHECK_FALSE(valid_key(k_long + ":"));
    }
}

TEST_SUITE("format::pve_mapping")
{
    TEST_CASE("config id and map path grammars agree with pve-common's regular expressions")
    {
        agrees(std::regex(R"(^[a-z][a-z0-9_-]+$)", std::regex::icase), valid_config_id, "aZ0_-.", 6);
        agrees(
            std::regex(R"(^(?:[a-f0-9]{4,}:[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?;)*[a-f0-9]{4,}:[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?$)"),
            valid_map_path, "0a:.;", 30);
        CHECK(valid_map_path("0000:01:00.0;0000:01:00.1"));
        CHECK_FALSE(valid_map_path("0000:01:00.0;;0000:01:00.1"));
    }

    TEST_CASE("a 60 KB property or header line parses in bounded stack")
    {
        const auto f = PciMappingFile::parse("gpu\n\tmap id=10de:1e07,node=pve,path=0000:01:00.0\n\tdescription " + k_long + "\n\n" + k_long
                                             + "\n\tmap node=pve,path=0000:02:00.0\n");
        REQUIRE(f.sections().size() == 2);
        CHECK(f.sections()[0].maps.size() == 1);
        CHECK(f.sections()[1].id == k_long);
    }
}
