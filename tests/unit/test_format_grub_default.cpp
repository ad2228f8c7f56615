// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include "format/grub_default.hpp"

using passthru::format::parse_grub_file;

TEST_SUITE("format::grub_default")
{
    TEST_CASE("the kernel-argument assignments, quoted, unquoted and exported")
    {
        const auto f = parse_grub_file("/etc/default/grub", "GRUB_DEFAULT=0\n"
                                                            "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet iommu=pt\"\n"
                                                            "  export GRUB_CMDLINE_LINUX='console=ttyS0'  # serial\n"
                                                            "# GRUB_CMDLINE_LINUX=\"commented\"\n"
                                                            "GRUB_CMDLINE_LINUX=plain;\n");
        REQUIRE(f.assignments.size() == 3);
        CHECK(f.assignments[0].variable == "GRUB_CMDLINE_LINUX_DEFAULT");
        CHECK(f.assignments[0].value == "quiet iommu=pt");
        CHECK(f.assignments[0].quote == '"');
        CHECK(f.assignments[0].line == 1);
        CHECK(f.assignments[1].prefix == "  export GRUB_CMDLINE_LINUX=");
        CHECK(f.assignments[1].value == "console=ttyS0");
        CHECK(f.assignments[1].suffix == "  # serial");
        CHECK(f.assignments[2].value == "plain");
        CHECK(f.assignments[2].suffix == ";");
        CHECK(f.assignments[2].parsed);
    }

    TEST_CASE("values sh would read differently are marked as not parsed")
    {
        CHECK_FALSE(parse_grub_file("f", "GRUB_CMDLINE_LINUX=\"open quote\n").assignments.at(0).parsed);
        CHECK_FALSE(parse_grub_file("f", "GRUB_CMDLINE_LINUX=a\\ b\n").assignments.at(0).parsed);
        CHECK(parse_grub_file("f", "GRUB_CMDLINE_LINUX=\"a \\\" b\"\n").assignments.at(0).value == "a \\\" b");
    }

    TEST_CASE("join gives the text back byte for byte")
    {
        for (const char* text : {"", "a\n", "GRUB_CMDLINE_LINUX=\"x\"", "\n\nGRUB_CMDLINE_LINUX_DEFAULT=\"\"\n"}) {
            CHECK(parse_grub_file("f", text).join() == text);
        }
    }
}
